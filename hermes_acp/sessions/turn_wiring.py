"""``TurnWiring``: the one module that builds what a session's turns need, and the one place the turn machinery loads.

A session makes one on first need (its first turn, ``/compact``, ``/status``, the tool surface, the context meter):
the sandbox (from ``[sandbox]`` and the session's own environment, its network as the session's switch says; a
subagent's is its parent's, as is its ``computer_use``), the image gate, ``computer_use``, the built-in tools,
``delegate``, ``load_skill`` and plan mode's ``exit_plan_mode``, ``TurnDeps`` for each turn (the model and its
provider, which sends what the session learned about its server's reasoning fields, ``providers/echo.py``; the
recorder, the audience as update sink and permission gate, the files and terminals of the connection whose prompt
runs, the compaction policy with its automatic switch; a subagent's with its parent's rights or fewer), the
session's budget (its root's, for a subagent), the context meter and a manual compaction. The turn loop,
compaction, the meter, ``computer_use``, the sandbox and the built-in tools are imported at the top of this module,
so importing it is what loads them (``turn_imports.load_turn_modules`` imports it in a worker thread as soon as a
session opens). No ACP here.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Literal

import anyio
import structlog

from hermes_acp.commands.command_set import Reply
from hermes_acp.commands.plan_mode import PlanHandOff
from hermes_acp.computer_use import ComputerUse
from hermes_acp.core import DisplayBlock, ModeId, SessionEvent, ToolCallStarted, Usage
from hermes_acp.core.ids import new_compaction_id
from hermes_acp.errors import NoProviderError, ProviderError
from hermes_acp.exec.sandbox import Sandbox
from hermes_acp.images.gate import SessionImageGate
from hermes_acp.providers.catalog import CatalogModel
from hermes_acp.providers.describe import describer_for
from hermes_acp.providers.echo import EchoMemory
from hermes_acp.tools import builtin_tools
from hermes_acp.tools.ask_user import AskUserTool
from hermes_acp.tools.base import AnyTool
from hermes_acp.tools.context import Elicitor, ToolEnvironment
from hermes_acp.tools.delegate import DelegateTool
from hermes_acp.tools.load_skill import LoadSkillTool, SkillBook
from hermes_acp.tools.plan_handoff import PlanHandOffTool
from hermes_acp.turns.budget import Budget
from hermes_acp.turns.cancels import CallCancels
from hermes_acp.turns.compaction import compact, log_compaction
from hermes_acp.turns.loop import TurnDeps, TurnResult, TurnState, run_turn
from hermes_acp.turns.meter import Meter
from hermes_acp.turns.ports import LiveCancelOpen, LiveCompaction, LiveUpdate, LiveUsage, SteeringInbox
from hermes_acp.turns.recovery import STORE_FAILED_TEXT, recovery_events
from hermes_acp.turns.state import MAX_PARALLEL_READS, CompactionPolicy
from hermes_acp.turns.system_prompt import build_system_prompt

from .switches import AUTO_COMPACTION, LIFT_SESSION_BUDGET, SANDBOX_NETWORK
from .tool_surface import why_unavailable

if TYPE_CHECKING:
    from .views import WiringView

__all__ = ["TurnWiring"]

_log = structlog.get_logger("hermes_acp.sessions")


@functools.cache
def _builtins() -> tuple[AnyTool, ...]:
    return tuple(builtin_tools())


_DELEGATE = DelegateTool()


class TurnWiring:
    def __init__(self, session: WiringView):
        self._session = session
        self.echo = EchoMemory()
        """What the session learned about the reasoning fields its providers' servers take back (in memory)."""
        self._sandbox: Sandbox | None = None
        self._system_prompt: str | None = None
        self.cancels = CallCancels()
        """The calls of the session's turns a client may stop one at a time."""

    @property
    def system_prompt(self) -> str:
        """Fixed by the session's first model request, for its life in this process: byte-identical for every
        request (until then, what it would be now: for the context meter)."""
        if self._system_prompt is not None:
            return self._system_prompt
        return self._build_system_prompt()

    async def prepare(self) -> None:
        """Before a model turn (or ``/compact``): what an earlier turn left open when it stopped on a failed write
        is settled, as a reload would; the first time, the system prompt is fixed once the first scan of the
        skills is done (they are listed in it)."""
        session = self._session
        repairs = recovery_events(session.recorder.projection, text=STORE_FAILED_TEXT, inputs=False)
        if repairs:
            await session.recorder.record(*repairs)
        if self._system_prompt is None:
            await session.commands.ensure()
            self._system_prompt = self._build_system_prompt()

    def _build_system_prompt(self) -> str:
        """The project's prompt; a subagent's adds what its role is and that it ends with a report."""
        session = self._session
        client = session.options.client_system_prompt
        prompt = build_system_prompt(session.workspace, session.instructions, session.commands.skills.skills, client)
        return prompt + session.lineage.prompt()

    @property
    def sandbox(self) -> Sandbox:
        """How the session's commands are contained (``[sandbox]``), starting from the session's environment, with
        the network the session's switch says (made anew when the switch changed); a subagent's are its parent's."""
        session = self._session
        link = session.lineage.link
        if link is not None:
            return link.parent.wiring.sandbox
        network = session.options.switch(SANDBOX_NETWORK)
        if self._sandbox is None or self._sandbox.network != network:
            services = session.services
            self._sandbox = replace(Sandbox.from_settings(services.settings, environ=services.env), network=network)
        return self._sandbox

    @cached_property
    def image_gate(self) -> SessionImageGate:
        """The one gate every image bound for the session's model passes (tool results, MCP images, prompt
        images), following the session's current model; a downgrade to text is told as a notice."""
        session = self._session
        services = session.services
        gate = SessionImageGate(
            services.settings,
            model=session.options.current_model,
            describer=describer_for(services.settings, services.catalog, services.providers),
        )
        gate.notify = session.notices.notify
        return gate

    @cached_property
    def computer_use(self) -> ComputerUse:
        """The session's computer_use tool (offered when the driver command resolves; the driver starts lazily in
        the owner task at the first call, with the session's environment)."""
        session = self._session
        link = session.lineage.link
        if link is not None:  # the parent's, with its one driver
            return link.parent.wiring.computer_use
        services = session.services
        return ComputerUse.for_session(
            session.runtime, services.settings, gate=self.image_gate, env=services.env or None
        )

    @property
    def builtin_tools(self) -> tuple[AnyTool, ...]:
        return _builtins()

    @staticmethod
    def ask_user(elicitor: Elicitor | None) -> tuple[AnyTool, ...]:
        return (AskUserTool(elicitor),) if elicitor is not None else ()

    def delegate(self) -> tuple[AnyTool, ...]:
        """``delegate``, while the session may start children (``[agent] subagent_depth``)."""
        return (_DELEGATE,) if self._session.lineage.may_delegate else ()

    @staticmethod
    def load_skill(book: SkillBook) -> tuple[AnyTool, ...]:
        return (LoadSkillTool(book),) if book.names() else ()

    def plan_hand_off(self) -> tuple[AnyTool, ...]:
        session = self._session

        async def start(mode: ModeId) -> None:
            await session.options.set_mode(mode)
            await session.audience.config_changed(session.options, mode_changed=True)

        return (PlanHandOffTool(PlanHandOff(session.audience, start)),)

    @cached_property
    def budget(self) -> Budget:
        """What the session may still spend (``[budget]``); a subagent's is its root session's, so children count
        in their parent's. Its spend so far is read from the log at the first use; the session's switch lifts the
        session's caps."""
        session = self._session
        link = session.lineage.link
        if link is not None:
            return link.parent.wiring.budget
        options = session.options
        projection = session.recorder.projection

        def spent_before() -> dict[str, Usage]:
            spent = dict(projection.usage_by_model)
            for model_id, usage in projection.children_usage_by_model().items():
                spent[model_id] = spent[model_id] + usage if model_id in spent else usage
            return spent

        return Budget(
            session.services.settings.budget,
            options.configured_model,
            spent_before,
            lifted=lambda: options.switch(LIFT_SESSION_BUDGET),
        )

    def deps(self, steering: SteeringInbox | None = None) -> TurnDeps:
        """The wiring of one turn (or one ``/compact``): raises ``ProviderAuthError`` when the model lacks its key.
        ``steering``: where the turn takes steering messages from.

        A subagent's turn has its parent's rights or fewer: the mode its link gives, its parent's sandbox and
        "always" rules, no editor files or terminals (their requests would name the child to clients that do not
        show children), its request budget (one request, and no tools, for the report past its budget)."""
        session = self._session
        services = session.services
        agent = services.settings.agent
        model = self._model_or_raise()
        audience = session.audience
        options = session.options
        lineage = session.lineage
        link = lineage.link
        max_requests = agent.max_turn_requests
        if link is not None:
            max_requests = 1 if link.reporting else link.max_requests
        return TurnDeps(
            model=model,
            provider=self.echo.provider(services.providers.provider_for(model)),
            system_prompt=self.system_prompt,
            surface=self,
            recorder=session.recorder,
            gate=audience,
            env=self._environment(),
            max_requests=max_requests,
            permission_timeout_s=services.settings.permissions.timeout_s,
            compaction=self._compaction_policy(),
            models=options.configured_model,
            effort=options.effort,
            parallel_calls=max(MAX_PARALLEL_READS, agent.max_subagents),
            sender_session_id=link.parent.id if link is not None else None,
            rules=lineage.rules_recorder if link is not None else None,
            steering=steering,
            budget=self.budget,
            cancels=self.cancels,
        )

    async def run(
        self,
        display: list[DisplayBlock],
        *,
        turn_id: str,
        notices: list[str],
        prompt: str | None,
        input_id: str | None = None,
        message_id: str | None = None,
        steering: SteeringInbox | None = None,
        notes: Sequence[str] = (),
    ) -> TurnResult:
        deps = self.deps(steering)
        if self._session.lineage.link is None:  # a child's turns are part of its root's prompt
            self.budget.start_prompt()
        state = TurnState(turn_id=turn_id)
        return await run_turn(
            state,
            deps,
            display,
            notices=notices,
            notes=notes,
            prompt=prompt,
            input_id=input_id,
            message_id=message_id,
        )

    def _environment(self) -> ToolEnvironment:
        """What the turn's tool calls share: the session's directories (and its global skills' folders, which the
        file tools may read), cache, image gate, sandbox and subagent runner, and the editor whose prompt it runs."""
        session = self._session
        audience = session.audience
        return ToolEnvironment(
            session_id=session.id,
            workspace=replace(session.workspace, readable=session.commands.skills.global_folders()),
            cache_dir=session.services.settings.cache_dir,
            images=self.image_gate,
            sandbox=self.sandbox,
            subagents=session.subagents if session.lineage.may_delegate else None,
            editor_files=audience.origin_files(),
            editor_terminals=audience.origin_terminals(),
            client_present=lambda: audience.origin is not None,
        )

    def _model_or_raise(self) -> CatalogModel:
        model = self._session.options.current_model()
        if model is None:
            raise NoProviderError(
                "no model provider is configured: set HERMES_ACP_BASE_URL and HERMES_ACP_MODEL (any"
                " OpenAI-compatible server), or OPENAI_API_KEY / ANTHROPIC_API_KEY, or write"
                f" {self._session.services.settings.home / 'config.toml'} (run `hermes-acp --setup`)"
            )
        return model

    def _compaction_policy(self) -> CompactionPolicy:
        """``[agent] compaction_threshold`` and ``compaction_model`` (the session's model writes the summaries when
        that one is unset or its provider cannot be used)."""
        services = self._session.services
        agent = services.settings.agent
        options = self._session.options
        automatic = options.switch(AUTO_COMPACTION)
        model = options.configured_model(agent.compaction_model) if agent.compaction_model else None
        if model is None:
            return CompactionPolicy(threshold=agent.compaction_threshold, automatic=automatic)
        try:
            provider = self.echo.provider(services.providers.provider_for(model))
        except ProviderError as exc:
            _log.warning("the compaction model cannot be used; the session's model summarises", error=str(exc))
            return CompactionPolicy(threshold=agent.compaction_threshold, automatic=automatic)
        return CompactionPolicy(
            threshold=agent.compaction_threshold, model=model, provider=provider, automatic=automatic
        )

    def meter(self, model: CatalogModel) -> Meter:
        """The context meter of this session with ``model``."""
        session = self._session
        native = self.image_gate.route() == "native"
        options = session.options
        projection = session.recorder.projection
        return Meter(
            model, self.system_prompt, projection, native, options.configured_model, options.effort, self.budget
        )

    # -- the ToolSurface of the session's turns ------------------------------------------------------------------

    @property
    def mode(self) -> ModeId:
        return self._session.options.mode

    def tools(self) -> Sequence[AnyTool]:
        """The tool surface a model request would get now (docs/architecture.md §4.6)."""
        return self._session.services.tool_surface(self._session)

    def why_unavailable(self, name: str) -> str:
        return why_unavailable(self._session, name)

    def usage(self) -> LiveUsage | None:
        """The context meter now (tokens in the context, the window, the cost so far); None without a model."""
        model = self._session.options.current_model()
        if model is None:
            return None
        return self.meter(model).usage(tuple(self.tools()))

    def cancel_call(self, tool_call_id: str) -> bool:
        """Stop one running call (``tool_call/cancel``): it settles failed as cancelled; False when none runs."""
        return self.cancels.cancel(tool_call_id)

    def open_cancels(self, shown: Sequence[SessionEvent]) -> list[LiveUpdate]:
        """The cancels a connection that was shown ``shown`` as a replay may still send: of each call announced in
        it that has not settled, and of its command while that may still run (a replayed announcement offers none)."""
        return [
            LiveCancelOpen(event.tool_call_id, target)
            for event in shown
            if isinstance(event, ToolCallStarted)
            for target in self.cancels.open_to(event.tool_call_id)
        ]

    def stop_terminal(self, terminal_id: str) -> bool:
        """Stop the command of one agent-owned terminal (``terminal/cancel``; its id is its call's): killed if it
        runs, never started if its call is still being cleared; the call settles with what it printed. False when
        no call of the session has that terminal with a command that may still run."""
        return self.cancels.stop(terminal_id)

    async def compact(self, instructions: str, *, turn_id: str) -> Reply:
        """``/compact [instructions]``: compact the whole history now, the summary focused by ``instructions``.

        The compaction comes back in the reply, to be stored with the command in one write. A cancel while the
        summary is written leaves the history as it was (the editor is told it was cancelled). It is a prompt for
        the budget: its summary request is charged, a spent cap refuses it (the reply says which), and a warning
        due is shown with the reply."""
        session = self._session
        started = time.perf_counter()
        await self.prepare()
        deps = self.deps()
        told: tuple[str, ...] = ()
        if deps.budget is not None:  # its summary is a model request: the caps hold for it as for a prompt's
            if session.lineage.link is None:
                deps.budget.start_prompt()  # typed as a prompt is, it is one: the last prompt's cap is not its
            check = deps.budget.check()
            if check.stop is not None:
                return Reply(f"Not compacted: {check.stop.message}")
            told = check.notices  # a warning due now is shown with the reply (the check says each once)
        compaction_id = new_compaction_id()
        try:
            event = await compact(
                deps,
                turn_id=turn_id,
                compaction_id=compaction_id,
                trigger="manual",
                tools=tuple(deps.surface.tools()),
                instructions=instructions or None,
            )
        except BaseException as exc:
            status: Literal["cancelled", "failed"] = (
                "cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "failed"
            )
            with anyio.CancelScope(shield=True):
                await session.recorder.live(LiveCompaction(compaction_id, status))
            raise
        if event is None:
            return Reply("\n".join([*told, "Nothing to compact yet: the conversation is empty."]))
        if event.usage is not None and deps.budget is not None:  # as the log counts it when the session is loaded
            deps.budget.charge(event.model_id or deps.model.id, event.usage)
        log_compaction(event, session_id=session.id, started=started)
        return Reply("\n".join(told), events=(event,))
