"""The probe: a command-line ACP client that spawns any agent and runs named checks (``python -m probes.probe``)."""
