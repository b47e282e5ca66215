"""Parts of ``hermes-acp --check`` (``hermes_acp.diagnostics`` runs them): where each effective setting came from
(``sources``), and whether a configured model can work, asking each provider when ``--probe`` says so
(``models``). Each part says its findings through the report's ``say`` and gives the same as data for ``--json``."""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
