"""Remote readiness that does not depend on the protocol version: delivery cursors over the event log and the
host's server epoch (``cursors``), operations applied once (``operations``), and the ``_meta`` names both are
carried under until the ACP Remote drafts settle (``meta``)."""
