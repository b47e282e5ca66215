"""``python -m hermes_acp`` is the ``hermes-acp`` command."""

from hermes_acp.cli import main

main()
