"""The built-in slash commands: each one's listing (name, description, input hint) and what it does.

``/help``, ``/mode``, ``/model``, ``/title``, ``/status``, ``/mcp`` and ``/compact`` (whose summary is a model call
of the compaction's own, stored with the command) are answered by the session (``Reply``). ``/mcp`` lists the MCP
servers with their state (ready, signing in, needs sign-in, failed and why) and reconnects one, signs in to one
(``login``: the page opened in the editor where it can open one, else its address in the answer) or out of it
(``logout``: its tokens deleted). ``/setup`` sets a model
provider up through the editor's forms when it can show them (``onboarding.flow``: nothing is written until a test
request worked, and the session uses the new model at once), and otherwise says how to run the terminal setup.
``/rewind [N]`` and ``/undo`` (``sessions.rewind``; the rewind is stored with the command) answer too: ``/rewind``
without a number asks which prompt to go back to with a form where an editor can show one, else lists them
numbered, newest first.
``/init`` and ``/review`` are model turns with a prompt of their own (``Ask``); ``/review`` answers by itself when
there is nothing to review (outside a git repository, no changes). ``BUILT_INS`` is the table the session runs
commands from: a command is an entry here, its handler a function of the session and the argument. Bad arguments get
an answer that says what is possible, never an error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes_acp.core.modes import MODES
from hermes_acp.errors import InvalidParamsError
from hermes_acp.mcp_client import NotConnected, SignInFailed
from hermes_acp.providers.effort import effort_choices

from .command_set import Ask, Command, Outcome, Reply
from .review import NothingToReview, collect_changes
from .status import session_status

if TYPE_CHECKING:
    from .view import CommandView

__all__ = ["BUILT_INS", "INIT_PROMPT", "BuiltIn"]

Handler = Callable[["CommandView", str], Awaitable[Outcome]]


@dataclass(frozen=True, slots=True)
class BuiltIn:
    command: Command
    run: Handler


INIT_PROMPT = """\
Write an AGENTS.md for this project: what a coding agent, or a new contributor, needs to know to work here.

First inspect the project: list its files, read the README, the build and package files, the CI configuration, the
test layout and a few representative source files. If an AGENTS.md or CLAUDE.md exists, read it and improve it
rather than starting over.

Then write AGENTS.md at the project root with write_file. Keep it concise and accurate: only what you verified in
the files. Cover what the project is (one or two lines); how to set it up, build it, run its tests and linters (the
exact commands); where things live; the conventions the code actually follows; and pitfalls. No generic advice, no
invented commands; aim for under 60 lines."""


async def _help(session: CommandView, argument: str) -> Reply:
    modes = "Modes: " + ", ".join(f"{m.id} ({m.description})" for m in MODES)
    return Reply(session.commands.set.help_text([modes]))


async def _mode(session: CommandView, argument: str) -> Reply:
    if not argument:
        return Reply(f"Mode: {session.options.mode}. Modes: " + ", ".join(m.id for m in MODES))
    try:
        await session.options.set_mode(argument)
    except InvalidParamsError as exc:
        return Reply(str(exc))
    return Reply(f"Mode set to {session.options.mode}.", mode_changed=True, config_changed=True)


async def _model(session: CommandView, argument: str) -> Reply:
    catalog = session.options.catalog
    if not argument:
        current = session.options.current_model()
        lines = [f"Model: {current.id if current else 'none'}" + _effort_note(session)]
        for m in catalog.models:
            notes = [] if m.usable else [f"needs {m.api_key_env}"]
            if m.efforts:
                notes.append("thinking efforts: " + ", ".join(effort_choices(m)))
            lines.append(f"- `{m.id}`" + (f" ({'; '.join(notes)})" if notes else ""))
        return Reply("\n".join(lines))
    try:
        await session.options.set_model(argument)
    except InvalidParamsError as exc:
        return Reply(str(exc))
    return Reply(f"Model set to {argument}{_effort_note(session)}.", config_changed=True)


def _effort_note(session: CommandView) -> str:
    effort = session.options.effort
    return f", thinking effort {effort}" if effort is not None else ""


async def _title(session: CommandView, argument: str) -> Reply:
    if not argument:
        return Reply(f"Title: {session.recorder.projection.title or '(none yet)'}")
    try:
        title = await session.options.set_title(argument)
    except InvalidParamsError as exc:
        return Reply(str(exc))
    return Reply(f"Session renamed to “{title}”.")


REWIND_LISTED = 20
"""How many recent prompts ``/rewind`` offers."""


async def _rewind(session: CommandView, argument: str) -> Reply:
    recent = list(reversed(await session.rewinds.points()))[:REWIND_LISTED]
    if not recent:
        return Reply("Nothing to rewind to yet: this session has no prompt the model answered.")
    if argument:
        number = int(argument) if argument.isdigit() else 0
        if not 1 <= number <= len(recent):
            return Reply(
                f"`/rewind N` takes the number of a prompt, 1 to {len(recent)} (1 is the latest); `/rewind` lists them."
            )
        return await _rewound(session, recent[number - 1].message_id)
    choices = [(point.message_id, f"{n}. {_brief(point.text)}") for n, point in enumerate(recent, start=1)]
    elicitor = session.audience.elicitor()
    if elicitor is None:
        lines = ["Prompts to rewind to, latest first (the session goes back to just before the one you pick):"]
        lines.extend(f"- {title}" for _, title in choices)
        lines.append("Type `/rewind N` to go back to before prompt N; `/undo` takes back the latest one.")
        return Reply("\n".join(lines))
    schema = {
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "title": "Rewind to before",
                "oneOf": [{"const": message_id, "title": title} for message_id, title in choices],
            }
        },
        "required": ["prompt"],
    }
    answer = await elicitor.ask(
        "Rewind the session to just before which prompt? What comes after it is kept as a session of its own;"
        " the files the agent changed since are put back.",
        schema,
        tool_call_id=None,
    )
    picked = (answer.content or {}).get("prompt") if answer.action == "accept" else None
    if not isinstance(picked, str) or picked not in {message_id for message_id, _ in choices}:
        return Reply("Not rewound.")
    return await _rewound(session, picked)


async def _undo(session: CommandView, argument: str) -> Reply:
    points = await session.rewinds.points()
    if not points:
        return Reply("Nothing to undo yet: this session has no prompt the model answered.")
    return await _rewound(session, points[-1].message_id)


async def _rewound(session: CommandView, message_id: str) -> Reply:
    turn_id = session.turn_id
    assert turn_id is not None, "commands run inside the session's command turn"
    return await session.rewinds.reply(message_id, turn_id=turn_id)


def _brief(text: str) -> str:
    words = " ".join(text.split())
    return words if len(words) <= 80 else words[:79] + "…"


async def _compact(session: CommandView, argument: str) -> Reply:
    turn_id = session.turn_id
    assert turn_id is not None, "commands run inside the session's command turn"
    return await session.wiring.compact(argument, turn_id=turn_id)


async def _status(session: CommandView, argument: str) -> Reply:
    return Reply(session_status(session))


async def _init(session: CommandView, argument: str) -> Ask:
    extra = f"\n\nAlso: {argument}" if argument else ""
    return Ask(INIT_PROMPT + extra)


async def _review(session: CommandView, argument: str) -> Outcome:
    changes = await collect_changes(session.workspace.cwd, session.wiring.sandbox.env_policy)
    if isinstance(changes, NothingToReview):
        return Reply(changes.reason)
    return Ask(changes.prompt(argument))


MCP_USAGE = "`/mcp` (list the servers), `/mcp reconnect NAME`, `/mcp login NAME` or `/mcp logout NAME`"


async def _mcp(session: CommandView, argument: str) -> Reply:
    servers = session.mcp
    action, _, rest = argument.partition(" ")
    if not argument:
        return Reply(_listing(session))
    if action not in ("reconnect", "login", "logout"):
        return Reply(f"Unknown /mcp argument {argument!r}. Usage: {MCP_USAGE}.")
    name, _, address = rest.strip().partition(" ")
    if not name or servers.connection(name) is None:
        names = [c.name for c in servers.connections]
        known = ", ".join(names) if names else "it has none"
        asked = f"No MCP server named {name!r} in this session" if name else f"Name the server to {action}"
        return Reply(f"{asked}; its servers: {known}.")
    if action == "login":
        return await _login(session, name, address.strip())
    if action == "logout":
        return await _logout(session, name)
    try:
        await servers.reconnect(name)
    except NotConnected as exc:
        return Reply(f"MCP server {name!r} could not be reconnected: {exc}")
    status = next(s for s in servers.status() if s.name == name)
    return Reply(f"Reconnected MCP server {name!r}: {status.state}, {len(status.tools)} tools.")


async def _login(session: CommandView, name: str, address: str) -> Reply:
    """Sign in to ``name``: the page opened in the editor where it can open one, else its address in the answer
    (the notice showed it once); ``address``: where the browser ended up, for a browser on another machine."""
    servers = session.mcp
    try:
        if address:
            if await servers.finish_sign_in(name, address):
                return Reply(f"Signed in to MCP server {name!r}; its tools are offered from the next turn.")
            return Reply(f"Took the address for MCP server {name!r}; its tools are offered once it has signed in.")
        url = await servers.sign_in(name)
    except SignInFailed as exc:
        return Reply(f"Signing in to MCP server {name!r} did not work: {exc}")
    except TimeoutError:
        return Reply(f"The sign-in page of MCP server {name!r} was not shown in time; `/mcp login {name}` tries again.")
    if url is None:
        return Reply(f"MCP server {name!r} is signed in (its stored tokens are good).")
    if session.audience.can_elicit("url"):
        return Reply(
            f"The sign-in page of MCP server {name!r} was opened: approve it in your browser, and its tools are"
            " offered from the next turn."
        )
    return Reply(
        f"To sign in to MCP server {name!r}, open this address in your browser and approve: {url}\n"
        "Its tools are offered from the next turn once you have. If the browser then ends on a page that does not"
        " load (the agent runs on another machine than your browser), copy that page's address and send"
        f" `/mcp login {name} ADDRESS`."
    )


async def _logout(session: CommandView, name: str) -> Reply:
    try:
        removed = await session.mcp.sign_out(name)
    except SignInFailed as exc:
        return Reply(f"MCP server {name!r}: {exc}")
    if not removed:
        return Reply(f"No sign-in of MCP server {name!r} is stored here.")
    return Reply(f"Signed out of MCP server {name!r}: its tokens are deleted; `/mcp login {name}` signs in again.")


async def _setup(session: CommandView, argument: str) -> Reply:
    elicitor = session.audience.elicitor()
    if elicitor is None:
        return Reply(
            'This editor cannot show forms, so the setup runs in a terminal: choose "Set up Hermes ACP" among the'
            " agent's authentication methods, or run `hermes-acp --setup`; or set a provider's key in the agent's"
            " environment (e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY, or HERMES_ACP_BASE_URL with HERMES_ACP_MODEL)."
        )
    from hermes_acp.onboarding.flow import SetupDone, run_setup_form  # loaded with the first /setup

    result = await run_setup_form(elicitor, session.services.providers, session.options.catalog)
    if not isinstance(result, SetupDone):
        return Reply(result.describe())
    await session.options.set_model(result.model_id)
    return Reply(result.describe(), config_changed=True)


def _listing(session: CommandView) -> str:
    statuses = session.mcp.status()
    if not statuses:
        return "This session has no MCP servers (the editor passes them when it opens the session)."
    lines = ["MCP servers of this session:"]
    for status in statuses:
        line = f"- {status.name} ({status.transport}): {status.state}"
        if status.error:
            line += f": {status.error}"
        if status.tools:
            line += f"; {len(status.tools)} tools: " + ", ".join(status.tools)
        lines.append(line)
    lines.append("`/mcp reconnect NAME` drops a server's connection and connects again.")
    if any(status.signs_in for status in statuses):
        lines.append("`/mcp login NAME` signs in to a server that needs it; `/mcp logout NAME` forgets its tokens.")
    return "\n".join(lines)


BUILT_INS: tuple[BuiltIn, ...] = (
    BuiltIn(Command("help", "List the slash commands."), _help),
    BuiltIn(Command("mode", "Show or switch the session mode.", " | ".join(m.id for m in MODES)), _mode),
    BuiltIn(Command("model", "Show or switch the model.", "<provider>:<model>"), _model),
    BuiltIn(Command("title", "Show or rename this session's title.", "<new title>"), _title),
    BuiltIn(
        Command(
            "compact", "Compact the conversation now: summarise it to free context.", "[what the summary should keep]"
        ),
        _compact,
    ),
    BuiltIn(Command("status", "Show the model, mode, context use, cost, MCP servers and directories."), _status),
    BuiltIn(Command("init", "Write an AGENTS.md for this project (asks before writing).", "[what to stress]"), _init),
    BuiltIn(Command("review", "Review the uncommitted changes (git diff against HEAD).", "[focus]"), _review),
    BuiltIn(
        Command(
            "mcp",
            "List the MCP servers, their state and tools; reconnect one, sign in to one or out of it.",
            "[reconnect|login|logout NAME]",
        ),
        _mcp,
    ),
    BuiltIn(Command("setup", "Set up a model provider (a form here, or how to run it in a terminal)."), _setup),
    BuiltIn(
        Command(
            "rewind",
            "Go back to before one of your prompts; the files the agent changed since are put back.",
            "[N: the prompt's number, 1 = the latest]",
        ),
        _rewind,
    ),
    BuiltIn(Command("undo", "Take back the latest prompt and what followed it; put its file changes back."), _undo),
)
"""The built-in commands, in the order ``/help`` and the editor list them."""
