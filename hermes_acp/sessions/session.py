"""``Session``: one live conversation — its state, its prompt queue and its cancel scopes.

Prompts and slash commands are serialised (docs/architecture.md §4.11): each registers its cancel scope before its
first await, then waits its turn on a FIFO lock, so a second prompt is answered when its own turn ends. ``cancel``
cancels the running turn and everything queued (docs/architecture.md §4.10); the next prompt is accepted at once.
Mode, model and thinking effort live here and in the store; the tool surface is derived from them for every model
request (docs/architecture.md §4.6).

A prompt that names one of the session's slash commands (``commands``: the built-in ones and the prompt files) runs
it: a reply the session stores itself, or a model turn with a prompt of the command's own. The prompt files are
rescanned when each prompt starts and when it ends; the editor is told when the list changed. ``compact`` and
``status`` are the behaviour of ``/compact`` and ``/status``; ``usage`` is the context meter a replay ends with.
No ACP here.

The turn machinery (``turns.loop``, ``turns.compaction``, ``turns.meter``), ``computer_use`` and the sandbox are
imported when first used, not when a session opens: ``session/new`` does not wait for them, and the agent warms
them up in the background as soon as a session opens (``turn_imports``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Literal, TypeVar

import anyio
import structlog

from hermes_acp.config import Effort, Settings
from hermes_acp.core import (
    DisplayBlock,
    ModeId,
    NoticeAdded,
    StopReason,
    TextBlock,
    TextPart,
    TitleSet,
    TurnEnded,
    Usage,
    UserMessage,
    UserPrompted,
    is_mode_id,
)
from hermes_acp.core.ids import new_compaction_id, new_message_id, new_turn_id
from hermes_acp.core.modes import MODES
from hermes_acp.core.notice import Notice
from hermes_acp.core.sanitize import clean_text
from hermes_acp.errors import InvalidParamsError, NoProviderError, ProviderError, SessionBusyError, UnknownModeError
from hermes_acp.mcp_client import McpServers
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.storage.base import SessionRecord, SessionStore, utc_now
from hermes_acp.tools.base import AnyTool
from hermes_acp.tools.context import Workspace
from hermes_acp.turns.ports import LiveCompaction, LiveUsage
from hermes_acp.turns.projection import SessionProjection
from hermes_acp.turns.recorder import EMIT_TIMEOUT_S, Recorder
from hermes_acp.turns.system_prompt import build_system_prompt

from ._runtime import SessionRuntime
from .builtin_commands import BUILT_INS
from .commands import Ask, Command, CommandSet, Invocation, Reply
from .effort import EFFORT_META_KEY, choose_effort, current_effort
from .instructions import InstructionFile
from .ports import ClientBridge
from .prompt_files import PromptFile, expand, load_prompt_files
from .recovery import STORE_FAILED_TEXT, recovery_events
from .skills import SkillShelf, skill_roots, skill_text
from .status import session_status
from .switches import AUTO_COMPACTION, SANDBOX_NETWORK, SWITCHES, switch_value
from .titles import title_from_prompt, title_with_model
from .tool_surface import why_unavailable
from .turn_imports import load_turn_modules

if TYPE_CHECKING:
    from hermes_acp.computer_use import ComputerUse
    from hermes_acp.exec.sandbox import Sandbox
    from hermes_acp.images.gate import SessionImageGate
    from hermes_acp.providers.echo import EchoMemory
    from hermes_acp.turns.loop import TurnDeps, TurnResult
    from hermes_acp.turns.meter import Meter
    from hermes_acp.turns.state import CompactionPolicy

__all__ = ["PromptResult", "Session", "SessionServices"]

T = TypeVar("T")
_HANDLERS = {built_in.command.name: built_in.run for built_in in BUILT_INS}
_log = structlog.get_logger("hermes_acp.sessions")


@dataclass(frozen=True, slots=True)
class SessionServices:
    """What every session shares: configuration, store, models, the client connection and the tool surface."""

    settings: Settings
    store: SessionStore
    catalog: ModelCatalog
    providers: ProviderRegistry
    client: ClientBridge
    tool_surface: Callable[[Session], Sequence[AnyTool]]


@dataclass(frozen=True, slots=True)
class PromptResult:
    """How one prompt ended, and what the editor should be told again."""

    stop_reason: StopReason
    usage: Usage | None = None
    """None when no model was asked (a command the session answered itself, or a cancel before the turn began)."""
    mode_changed: bool = False
    config_changed: bool = False
    """The mode, model or thinking effort changed (a command did it)."""


class Session:
    def __init__(
        self,
        record: SessionRecord,
        recorder: Recorder,
        runtime: SessionRuntime,
        services: SessionServices,
        *,
        workspace: Workspace,
        mcp_servers: list[dict[str, object]],
        mcp: McpServers,
        instructions: Sequence[InstructionFile] = (),
        prompt_files: Sequence[PromptFile] = (),
    ):
        self.record = record
        self.recorder = recorder
        self.runtime = runtime
        self.services = services
        self.workspace = workspace
        self.mcp_servers = mcp_servers
        """The editor's MCP server specs for this session (kept in memory only: they may carry secrets)."""
        self.mcp = mcp
        """The live connections to those servers (started by the manager in the owner task)."""
        self.instructions = tuple(instructions)
        """The project instruction files read when the session opened (``/status`` lists them)."""
        self.skills = SkillShelf(skill_roots(workspace, services.settings.home))
        """The session's skills: found in the background when it opens, rescanned around every prompt."""
        self._system_prompt: str | None = None
        self.commands = CommandSet([built_in.command for built_in in BUILT_INS], prompt_files)
        """The slash commands: the built-in ones, the prompt files, the skills (rescanned around every prompt)."""
        self.elicitor = services.client.elicitor(record.id)
        """Questions to the user through the editor (the ``ask_user`` tool), when the client can ask them."""
        self._told_once = False
        self._turn_id: str | None = None
        """The turn running now (a notice during it is stored in it for clients without notices)."""
        self._turn_lock = anyio.Lock()
        self._in_flight: list[anyio.CancelScope] = []
        self._running = False

    @cached_property
    def image_gate(self) -> SessionImageGate:
        """The one gate every image bound for the session's model passes (tool results, MCP images, prompt
        images), following the session's current model; a downgrade to text is told as a notice."""
        load_turn_modules()
        from hermes_acp.images.gate import SessionImageGate
        from hermes_acp.providers.describe import describer_for

        services = self.services
        gate = SessionImageGate(
            services.settings,
            model=self.current_model,
            describer=describer_for(services.settings, services.catalog, services.providers),
        )
        gate.notify = self._notify
        return gate

    @cached_property
    def computer_use(self) -> ComputerUse:
        """The session's computer_use tool (offered when the driver command resolves; the driver starts lazily in
        the owner task at the first call)."""
        load_turn_modules()
        from hermes_acp.computer_use import ComputerUse

        return ComputerUse.for_session(self.runtime, self.services.settings, gate=self.image_gate)

    @cached_property
    def echo(self) -> EchoMemory:
        """What this session learned about the reasoning fields its providers' servers take back (in memory)."""
        load_turn_modules()
        from hermes_acp.providers.echo import EchoMemory

        return EchoMemory()

    @cached_property
    def sandbox(self) -> Sandbox:
        """How the session's commands are contained (``[sandbox]``)."""
        load_turn_modules()
        from hermes_acp.exec.sandbox import Sandbox

        return replace(Sandbox.from_settings(self.services.settings), network=self.switch(SANDBOX_NETWORK))

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def system_prompt(self) -> str:
        """Fixed by the session's first model request, for its life in this process: byte-identical for every
        request (until then, what it would be now: for the context meter)."""
        if self._system_prompt is not None:
            return self._system_prompt
        return build_system_prompt(self.workspace, self.instructions, self.skills.skills)

    async def _fix_system_prompt(self) -> None:
        """Wait for the first scan of the skills (they are listed in it), then fix the system prompt."""
        if self._system_prompt is None:
            await self.skills.ensure()
            self._took_skills()
            self._system_prompt = build_system_prompt(self.workspace, self.instructions, self.skills.skills)

    @property
    def mode(self) -> ModeId:
        mode = self.record.mode_id
        return mode if is_mode_id(mode) else "default"  # type: ignore[return-value]

    @property
    def model_id(self) -> str | None:
        return self.record.model_id

    @property
    def effort(self) -> Effort | None:
        """The thinking effort the session's requests get (None: none is sent; see ``sessions.effort``)."""
        return current_effort(self.current_model(), self.chosen_effort)

    @property
    def chosen_effort(self) -> str | None:
        """The thinking effort chosen for the session, if any (kept even while the model does not take it)."""
        chosen = self.record.meta.get(EFFORT_META_KEY)
        return chosen if isinstance(chosen, str) else None

    def current_model(self) -> CatalogModel | None:
        """The session's model; the catalog's default when none is stored or the stored one left the catalog."""
        catalog = self.services.catalog
        model_id = self.model_id if self.model_id in catalog else catalog.default_id
        return catalog.get(model_id) if model_id is not None else None

    @property
    def busy(self) -> bool:
        return self._running

    @property
    def projection(self) -> SessionProjection:
        return self.recorder.projection

    async def prompt(self, display: list[DisplayBlock]) -> PromptResult:
        """Run (or queue, then run) one prompt: a model turn, or the slash command it names. A cancel while queued
        or running answers ``cancelled`` (a command that had not started does not run)."""
        result = await self._queued(lambda: self._prompt(display))
        if result is None:
            return PromptResult(stop_reason="cancelled")
        if self.projection.title is None and self.projection.first_prompt:
            self.runtime.submit(self._write_title, "title")
        return result

    async def _queued(self, work: Callable[[], Awaitable[T]]) -> T | None:
        """Run ``work`` when the turns queued before it have ended (docs/architecture.md §4.11); None when a cancel came
        first, whether it was waiting or running (docs/architecture.md §4.10). Its cancel scope is registered before the
        first await, so a cancel that follows finds it."""
        scope = anyio.CancelScope()
        self._in_flight.append(scope)
        try:
            with scope:
                async with self._turn_lock:
                    return await work()
            return None
        finally:
            self._in_flight.remove(scope)

    async def _prompt(self, display: list[DisplayBlock]) -> PromptResult:
        await self.refresh_commands()
        invocation = self.commands.find(display)
        result = await (self._turn(display) if invocation is None else self._command(invocation, display))
        await self.refresh_commands()
        return result

    async def _turn(self, display: list[DisplayBlock], prompt: str | None = None) -> PromptResult:
        self._running = True
        try:
            turn = await self._run(display, prompt)
        finally:
            self._running = False
        return PromptResult(stop_reason=turn.stop_reason, usage=turn.usage)

    @property
    def turn_id(self) -> str | None:
        """The turn or command running now (what a notice, or a command's own events, are stored in)."""
        return self._turn_id

    async def _command(self, invocation: Invocation, display: list[DisplayBlock]) -> PromptResult:
        """A slash command: a prompt file's text (its arguments in) or a built-in command's outcome."""
        if invocation.file is not None:
            outcome: Ask | Reply = Ask(expand(invocation.file.template, invocation.argument))
        elif invocation.skill is not None:
            text = await anyio.to_thread.run_sync(skill_text, invocation.skill)
            outcome = Ask(expand(f"Use this skill for the request.\n\n{text}", invocation.argument))
        else:
            self._turn_id = new_turn_id()
            try:
                outcome = await _HANDLERS[invocation.command.name](self, invocation.argument)
                if isinstance(outcome, Reply):
                    await self._reply(display, outcome, self._turn_id)
            finally:
                self._turn_id = None
        if isinstance(outcome, Ask):
            return await self._turn(display, outcome.prompt)
        return PromptResult("end_turn", mode_changed=outcome.mode_changed, config_changed=outcome.config_changed)

    async def _reply(self, display: list[DisplayBlock], reply: Reply, turn_id: str) -> None:
        """Store a command the session answered itself like a turn the model never sees, in one write: the user's
        line, the answer (which may quote servers' and files' words: it passes the sanitizer), what the command
        itself did that the log keeps (a compaction), the turn's end."""
        typed = "".join(b.text for b in display if isinstance(b, TextBlock))
        answer = [NoticeAdded(turn_id=turn_id, message_id=new_message_id(), text=clean_text(reply.text))]
        await self.recorder.record(
            UserPrompted(
                turn_id=turn_id,
                message_id=new_message_id(),
                display=display,
                message=UserMessage(parts=[TextPart(text=typed)]),
                for_model=False,
            ),
            *(answer if reply.text else []),
            *reply.events,
            TurnEnded(turn_id=turn_id, stop_reason="end_turn"),
        )

    async def refresh_commands(self) -> None:
        """Read the prompt files and the skills again; tell the editor (bounded) when the list of commands
        changed."""
        files = await load_prompt_files(self.workspace.cwd, self.services.settings.home)
        if self.skills.scanned:
            await self.skills.rescan()
        before = self.commands.listing
        self._took_skills(files)
        if self.commands.listing != before:
            with anyio.move_on_after(EMIT_TIMEOUT_S):
                await self.services.client.commands_changed(self.id, self.commands.listing)

    async def command_listing(self) -> Sequence[Command]:
        """The commands once the first scan of the skills is done (what the editor is first told)."""
        await self.skills.ensure()
        self._took_skills()
        return self.commands.listing

    def _took_skills(self, files: Sequence[PromptFile] | None = None) -> None:
        """The commands and the readable folders after a scan of the skills (and of the prompt files)."""
        self.commands = self.commands.with_files(self.commands.files if files is None else files, self.skills.skills)
        self.workspace = replace(self.workspace, readable=self.skills.global_folders())

    def cancel(self) -> None:
        """Cancel the running turn and every queued prompt."""
        for scope in list(self._in_flight):
            scope.cancel()

    async def _run(self, display: list[DisplayBlock], prompt: str | None) -> TurnResult:
        load_turn_modules()
        from hermes_acp.turns.loop import TurnState, run_turn

        await self._repair()
        await self._fix_system_prompt()
        deps = self._turn_deps()
        # Bounded: MCP servers still starting are reported, not awaited.
        mcp = [Notice("warning", text.removeprefix("⚠ ")) for text in await self.mcp.prepare_turn()]
        skills = [Notice("warning", problem.text()) for problem in self.skills.new_problems()]
        texts = await self._show_notices([*await self._once_notices(), *mcp, *skills])
        self._turn_id = new_turn_id()
        try:
            return await run_turn(TurnState(turn_id=self._turn_id), deps, display, notices=texts, prompt=prompt)
        finally:
            self._turn_id = None

    async def _repair(self) -> None:
        repairs = recovery_events(self.projection, text=STORE_FAILED_TEXT)
        if repairs:  # an earlier turn stopped on a failed write: settle what it left open, as a reload would
            await self.recorder.record(*repairs)

    def _model_or_raise(self) -> CatalogModel:
        model = self.current_model()
        if model is None:
            raise NoProviderError(
                "no model provider is configured: set HERMES_ACP_BASE_URL and HERMES_ACP_MODEL (any"
                " OpenAI-compatible server), or OPENAI_API_KEY / ANTHROPIC_API_KEY, or write"
                f" {self.services.settings.home / 'config.toml'} (run `hermes-acp --setup`)"
            )
        return model

    def _turn_deps(self) -> TurnDeps:
        """The wiring of one turn (or one ``/compact``): raises ``ProviderAuthError`` when the model lacks its key."""
        load_turn_modules()
        from hermes_acp.turns.loop import TurnDeps

        services = self.services
        model = self._model_or_raise()
        provider = self.echo.provider(services.providers.provider_for(model))
        client = services.client
        return TurnDeps(
            session_id=self.id,
            model=model,
            provider=provider,
            system_prompt=self.system_prompt,
            tool_surface=lambda: services.tool_surface(self),
            recorder=self.recorder,
            gate=client.gate(self.id),
            workspace=self.workspace,
            mode=lambda: self.mode,
            max_requests=services.settings.agent.max_turn_requests,
            permission_timeout_s=services.settings.permissions.timeout_s,
            cache_dir=services.settings.cache_dir,
            files=client.files(self.id),
            terminals=client.terminals(self.id),
            images=self.image_gate,
            sandbox=self.sandbox,
            compaction=self._compaction_policy(),
            models=self._configured_model,
            effort=self.effort,
            unavailable=lambda name: why_unavailable(self, name),
        )

    def _compaction_policy(self) -> CompactionPolicy:
        """``[agent] compaction_threshold`` and ``compaction_model`` (the session's model writes the summaries when
        that one is unset or its provider cannot be used)."""
        load_turn_modules()
        from hermes_acp.turns.state import CompactionPolicy

        agent = self.services.settings.agent
        automatic = self.switch(AUTO_COMPACTION)
        model = self._configured_model(agent.compaction_model) if agent.compaction_model else None
        if model is None:
            return CompactionPolicy(threshold=agent.compaction_threshold, automatic=automatic)
        try:
            provider = self.services.providers.provider_for(model)
        except ProviderError as exc:
            _log.warning("the compaction model cannot be used; the session's model summarises", error=str(exc))
            return CompactionPolicy(threshold=agent.compaction_threshold, automatic=automatic)
        provider = self.echo.provider(provider)
        return CompactionPolicy(
            threshold=agent.compaction_threshold, model=model, provider=provider, automatic=automatic
        )

    def _configured_model(self, model_id: str) -> CatalogModel | None:
        catalog = self.services.catalog
        return catalog.get(model_id) if model_id in catalog else None

    def meter(self, model: CatalogModel) -> Meter:
        """The context meter of this session with ``model``."""
        load_turn_modules()
        from hermes_acp.turns.meter import Meter

        native = self.image_gate.route() == "native"
        return Meter(model, self.system_prompt, self.projection, native, self._configured_model, self.effort)

    def usage(self) -> LiveUsage | None:
        """The context meter now (tokens in the context, the window, the cost so far); None without a model."""
        model = self.current_model()
        if model is None:
            return None
        return self.meter(model).usage(tuple(self.services.tool_surface(self)))

    async def compact(self, instructions: str, *, turn_id: str) -> Reply:
        """``/compact [instructions]``: compact the whole history now, the summary focused by ``instructions``.

        The compaction comes back in the reply, to be stored with the command in one write. A cancel while the
        summary is written leaves the history as it was (the editor is told it was cancelled)."""
        load_turn_modules()
        from hermes_acp.turns.compaction import compact, log_compaction

        started = time.perf_counter()
        await self._repair()
        await self._fix_system_prompt()
        deps = self._turn_deps()
        compaction_id = new_compaction_id()
        try:
            event = await compact(
                deps,
                turn_id=turn_id,
                compaction_id=compaction_id,
                trigger="manual",
                tools=tuple(deps.tool_surface()),
                instructions=instructions or None,
            )
        except BaseException as exc:
            status: Literal["cancelled", "failed"] = (
                "cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "failed"
            )
            with anyio.CancelScope(shield=True):
                await self.recorder.live(LiveCompaction(compaction_id, status))
            raise
        if event is None:
            return Reply("Nothing to compact yet: the conversation is empty.")
        log_compaction(event, session_id=self.id, started=started)
        return Reply("", events=(event,))

    def status(self) -> str:
        """``/status``: what the session runs on and how full its context is; no model call."""
        return session_status(self)

    async def report_servers(self) -> None:
        """Once the session is open: its MCP servers that could not start (or be used), told at once instead of
        with the first prompt. Waits (bounded) for them to settle, then tells in the prompt queue (a turn that ran
        meanwhile told them itself; nothing is told twice), so commands are not held up by a slow server."""

        async def report() -> None:
            notices = [Notice("warning", text.removeprefix("⚠ ")) for text in await self.mcp.prepare_turn(0)]
            texts = await self._show_notices(notices)
            if texts:  # a client without notices: agent text, stored like a command's answer (a replay shows it)
                turn_id = new_turn_id()
                added = [NoticeAdded(turn_id=turn_id, message_id=new_message_id(), text=text) for text in texts]
                await self.recorder.record(*added, TurnEnded(turn_id=turn_id, stop_reason="end_turn"))

        if self.mcp:
            await self.mcp.settled()
            await self._queued(report)

    async def _show_notices(self, notices: Sequence[Notice]) -> list[str]:
        """Show each notice live where the client takes notices; the texts of the others, to store with the turn."""
        return [notice.as_text() for notice in notices if not await self.recorder.sink.notice(notice)]

    async def _once_notices(self) -> list[Notice]:
        """Once per session, at its first turn: commands not sandboxed although ``[sandbox]`` wants them to be, and
        a configured cua-driver that cannot be found."""
        if self._told_once:
            return []
        self._told_once = True
        found = [self.sandbox.notice(await self.sandbox.availability()), self.computer_use.notice()]
        return [notice for notice in found if notice is not None]

    async def _notify(self, notice: Notice) -> None:
        """A warning that arises during a turn (an image downgraded to text): live, or stored in the turn."""
        if self._turn_id is not None:
            await self.recorder.notice(notice, turn_id=self._turn_id)

    async def _write_title(self) -> None:
        """After the first turn, off the prompt's path: from the prompt text, or by ``agent.title_model``."""
        first = self.projection.first_prompt
        if self.projection.title is not None or not first:
            return
        title = None
        title_model = self.services.settings.agent.title_model
        if title_model is not None:
            model = self.services.catalog.get(title_model)
            title = await title_with_model(self.services.providers.provider_for(model), model.model, first)
        title = title or title_from_prompt(first)
        if title:
            await self.set_title(title)

    async def set_title(self, title: str) -> None:
        """The record first, then the event that tells the editor: once it has the update, ``session/list`` agrees."""
        self.record = await self.services.store.update_session(self.id, title=title)
        await self.recorder.record(TitleSet(title=title, updated_at=utc_now()))

    async def set_mode(self, mode_id: str) -> None:
        if not is_mode_id(mode_id):
            valid = ", ".join(m.id for m in MODES)
            raise UnknownModeError(f"unknown mode {mode_id!r}; valid modes: {valid}", field="modeId")
        self.record = await self.services.store.update_session(self.id, mode_id=mode_id)

    async def set_effort(self, value: str) -> None:
        """Choose the thinking effort (one of ``sessions.effort.effort_choices`` for the current model); stored in
        the record's ``meta``, so a reload and a fork keep it. Takes effect from the next prompt."""
        chosen = choose_effort(self.current_model(), value)
        meta = {key: item for key, item in self.record.meta.items() if key != EFFORT_META_KEY}
        if chosen is not None:
            meta[EFFORT_META_KEY] = chosen
        self.record = await self.services.store.update_session(self.id, meta=meta)

    def switch(self, switch_id: str) -> bool:
        """The value of one of ``switches.SWITCHES`` in this session."""
        switch = next(s for s in SWITCHES if s.id == switch_id)
        return switch_value(switch, self.record.meta, self.services.settings)

    async def set_switch(self, switch_id: str, value: bool) -> None:
        """Turn a switch on or off; stored in the record's ``meta``. Takes effect from the next command or request."""
        if all(s.id != switch_id for s in SWITCHES):
            raise InvalidParamsError(f"configId: unknown option {switch_id!r}", field="configId")
        self.record = await self.services.store.update_session(self.id, meta={**self.record.meta, switch_id: value})
        if switch_id == SANDBOX_NETWORK:
            self.__dict__.pop("sandbox", None)  # the next command gets a sandbox with the new setting

    async def set_model(self, model_id: str) -> None:
        self.services.catalog.get(model_id)
        if self._running:
            raise SessionBusyError(
                f"session {self.id} is running a turn; switch models when it has finished (or cancel it first)"
            )
        self.record = await self.services.store.update_session(self.id, model_id=model_id)

    async def close(self) -> None:
        """Cancel whatever runs, then release everything the session holds (bounded)."""
        self.cancel()
        with anyio.move_on_after(5):
            async with self._turn_lock:
                pass
        await self.runtime.aclose()
