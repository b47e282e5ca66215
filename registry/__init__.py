"""The ACP Registry entry of hermes-acp-server (``agent.json``, ``icon.svg``, the registry's schema) and the release
check that keeps it in step with the package (``release_check``)."""
