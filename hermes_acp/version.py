"""The version of hermes-acp and the name of its distribution (kept in a leaf module so every layer may read it)."""

__all__ = ["DISTRIBUTION", "__version__"]

__version__ = "0.1.0"
DISTRIBUTION = "hermes-acp-server"
"""The name on PyPI (``uvx hermes-acp-server``); the import package is ``hermes_acp``."""
