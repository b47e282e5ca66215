"""What each stage of start-up imports (docs/architecture.md §2.4, §3), checked in a fresh interpreter.

Answering ``initialize`` needs only the dispatcher and the handshake; opening a session needs the app, but not the
turn machinery, the provider seam, HTTP, the MCP SDK, Pillow or the acp SDK; ``load_turn_modules`` then loads
everything a turn needs. Import hygiene is what start-up speed rests on, and a stray module-level import undoes it
silently: these tests name the module that came in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hermes_acp.sessions.turn_imports import TURN_MODULES

REPO = Path(__file__).resolve().parent.parent.parent
HEAVY_FOR_INITIALIZE = (
    "pydantic",
    "hermes_acp.config",
    "hermes_acp.app",
    "structlog",
    "sqlite3",
    "pathlib",
    "shutil",
    "tomllib",
)
"""Not needed to answer ``initialize``: the last three load only when there is a config file to read or a bare command
to look up on PATH."""
HEAVY_FOR_SESSION_NEW = (
    *TURN_MODULES,
    "hermes_acp.providers.base",
    "hermes_acp.providers.openai",
    "hermes_acp.providers.anthropic",
    "httpx",
    "mcp",
    "PIL",
    "acp",
    "rich",
)


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (as the server runs: rich kept out)."""
    listing = "print(json.dumps(sorted(name for name, module in sys.modules.items() if module is not None)))"
    script = f"import sys, json\nsys.modules.setdefault('rich', None)\n{code}\n{listing}"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stdout))


def _present(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in loaded]


def test_answering_initialize_loads_neither_pydantic_nor_the_server() -> None:
    loaded = _loaded_after("import hermes_acp.cli, hermes_acp.transports.stdio")
    assert _present(loaded, HEAVY_FOR_INITIALIZE) == []


def test_opening_a_session_loads_the_app_but_not_the_turn_machinery() -> None:
    loaded = _loaded_after("import hermes_acp.cli, hermes_acp.transports.stdio, hermes_acp.app")
    assert "hermes_acp.sessions.manager" in loaded
    assert _present(loaded, HEAVY_FOR_SESSION_NEW) == []


def test_load_turn_modules_loads_every_module_a_turn_needs() -> None:
    loaded = _loaded_after(
        "import hermes_acp.app\nfrom hermes_acp.sessions.turn_imports import load_turn_modules\nload_turn_modules()"
    )
    assert _present(loaded, TURN_MODULES) == list(TURN_MODULES)
    assert "hermes_acp.images.cache" in loaded  # computer_use's, loaded with it
    # What only some tool calls need loads with the first of them: the hard blocks with the first command,
    # pathspec with the first walk of a folder.
    assert _present(loaded, ("hermes_acp.exec.hard_blocks", "tree_sitter", "pathspec")) == []


def test_the_server_never_loads_httpx_command_line_client() -> None:
    loaded = _loaded_after("from hermes_acp import cli\ncli.load_app()\nimport hermes_acp.providers.openai")
    assert "httpx" in loaded
    assert _present(loaded, ("httpx._main", "pygments")) == []


def test_the_collector_is_back_on_once_the_server_has_loaded() -> None:
    """The server loads with the cyclic collector off (``cli._serve``); loading it turns it back on."""
    script = (
        "import gc\nfrom hermes_acp import cli\ngc.disable()\ncli.load_app()\n"
        "print(gc.isenabled(), gc.get_freeze_count() > 10_000)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"], "collection is on again, with the start-up objects frozen"


def test_loading_the_server_builds_no_model_schema() -> None:
    """Every model of ours builds its schema on first use: a model instance made while a module loads (a default
    value, a constant) would build it at import, tens of ms of start-up each time."""
    script = (
        "import sys\nsys.modules.setdefault('rich', None)\nimport hermes_acp.app\nfrom pydantic import BaseModel\n"
        "def subclasses(cls):\n    for sub in cls.__subclasses__():\n"
        "        yield sub\n        yield from subclasses(sub)\n"
        "built = {f'{m.__module__}.{m.__qualname__}' for m in subclasses(BaseModel)\n"
        "         if m.__module__.startswith('hermes_acp') and m.__dict__.get('__pydantic_complete__')}\n"
        "print(sorted(built))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"built while loading: {done.stdout.strip()}"


def test_the_front_door_loads_none_of_the_server_and_no_event_loop() -> None:
    """``hermes-acp --shared`` relays bytes: the standard library, ``transports.paths`` and the platform seam's small
    modules (which system, peers, sockets, stdio), nothing else of ours."""
    loaded = _loaded_after("import hermes_acp.cli, hermes_acp.transports.frontdoor, hermes_acp.transports.control")
    ours = sorted(name for name in loaded if name.startswith("hermes_acp"))
    assert ours == [
        "hermes_acp",
        "hermes_acp.cli",
        "hermes_acp.platform",
        "hermes_acp.platform._forced",
        "hermes_acp.platform.peers",
        "hermes_acp.platform.stdio",
        "hermes_acp.platform.system",
        "hermes_acp.platform.unix_sockets",
        "hermes_acp.transports",
        "hermes_acp.transports.control",
        "hermes_acp.transports.frontdoor",
        "hermes_acp.transports.paths",
        "hermes_acp.version",
    ]
    assert _present(loaded, ("asyncio", "anyio", "pydantic", "structlog", "subprocess", "pathlib", "tomllib")) == []


def test_the_remote_front_door_loads_none_of_the_server_and_no_event_loop() -> None:
    """``hermes-acp --connect`` relays frames over a WebSocket of its own: the standard library (no ``ssl`` for a
    ``ws://`` door), nothing else of ours but the version and the platform seam's stdio (threaded or not, and the
    protocol's stdout); its threads load only where stdio is threaded."""
    loaded = _loaded_after("import hermes_acp.cli, hermes_acp.transports.connect")
    ours = sorted(name for name in loaded if name.startswith("hermes_acp"))
    assert ours == [
        "hermes_acp",
        "hermes_acp.cli",
        "hermes_acp.platform",
        "hermes_acp.platform._forced",
        "hermes_acp.platform.stdio",
        "hermes_acp.transports",
        "hermes_acp.transports.connect",
        "hermes_acp.transports.connect_options",
        "hermes_acp.transports.wsclient",
        "hermes_acp.version",
    ]
    heavy: tuple[str, ...] = ("asyncio", "anyio", "pydantic", "structlog", "subprocess", "pathlib", "ssl")
    heavy += ("websockets", "threading", "hashlib", "urllib.parse", "dataclasses")
    assert _present(loaded, heavy) == []
