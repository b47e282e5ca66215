"""Setting up a model provider: the in-editor setup through forms (``flow``), the terminal setup (the
``setup_wizard`` command), and what both share: the services they offer (``presets``), the question and answer shapes
of the forms (``forms``), what to tell a user whose key is not set (``key_help``) and the one way config.toml is
edited (``config_file``, with tomlkit: the user's comments and other keys stay).

The package imports nothing heavy when it is imported (``initialize`` and ``session/new`` never load it); it knows
config, the provider seam and the editor's ``Elicitor`` port, not ACP.
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
