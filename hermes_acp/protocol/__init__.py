"""The ACP surface: JSON-RPC over stdio, the dispatcher, and ACP's shapes as plain JSON and small pydantic models.

The server imports no acp SDK (``wire.py`` says why). Import the modules directly; this ``__init__`` stays empty so
that importing ``hermes_acp.protocol.stdio`` (the front door, which answers ``initialize`` before the rest of the
server has loaded: docs/architecture.md §3) pulls in nothing else.
"""
