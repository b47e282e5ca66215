"""Remote readiness that does not depend on the protocol version: delivery cursors over the event log and the
host's server epoch (``cursors``), operations applied once (``operations``), and the ``_meta`` names both are
carried under until the ACP Remote drafts settle (``meta``)."""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
