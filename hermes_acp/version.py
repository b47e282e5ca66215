"""The version of hermes-acp (kept in a leaf module so every layer may read it)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
