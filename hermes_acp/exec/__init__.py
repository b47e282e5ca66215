"""Command containment: everything between "the model wants this command run" and a process running it.

``sandbox`` (bubblewrap: what a command may see and reach), ``hard_blocks`` (commands refused in every mode, parsed
as bash parses them), ``environment`` (what a child process inherits) and ``process`` (running a command in its own
process group, streaming and bounding its output). The terminal tool, the editor's terminals, ``/review`` and the
MCP servers' environment use them. It knows nothing about tools, sessions or ACP; the package ``__init__`` loads
nothing, so importing one part does not load the others (the hard blocks' grammar is costly).
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
