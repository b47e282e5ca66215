"""Images bound for the model or the editor: the one gate every image passes (``gate``), the one cache of image
files the agent writes (``cache``) and the Pillow adapter (``codec``, the only code that imports PIL).

The session builds the gate and injects it where images arise (tool results, MCP results, prompt attachments,
computer_use screenshots). It knows nothing about where images come from, about providers (the auxiliary vision
model is a ``Describer`` handed in) or about ACP; the package ``__init__`` loads nothing.
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
