"""``terminal``: run a shell command, on this machine in a terminal the agent owns, or in the editor's terminal.

A command is read as bash will read it and checked against the hard blocks before anything else (refused in every
mode, the reason going to the model; a command that cannot be read asks). It runs in the sandbox
(``exec.sandbox``: bubblewrap, an allow-list of the file system and of the environment, the limits of
``[sandbox.limits]``), so it is approved as an ``execute`` call on its working folder like any other; where the
sandbox is not available, every command asks (``[sandbox] mode = "auto"``) or is refused (``"required"``). It runs
through ``bash -c`` (``sh`` without bash) with stdin closed and pagers off. Where it runs: on this machine, unless
the editor offers ``terminal/*`` and not agent-owned terminals (then in the editor's terminal, embedded in the
card). On this machine the card is an agent-owned terminal (``AgentTerminalBlock``, ``_agent_terminal``): announced
with the command and its folder, streamed as the output comes, ended with the exit code or signal and the output it
kept, which the log stores, so a replay shows the same terminal; a client that does not render such terminals sees
a text view of the same. The result gives the model the exit code, the output (start and end kept past a cap) and
what the sandbox or a limit stopped, if anything. A client may stop the command of an agent-owned terminal on its own
(``ToolContext.stop``, ACP v2's ``terminal/cancel``): it is killed, or never started, and the call settles with
what it printed and why it ended, so the model knows the user stopped it. A client terminal's card also keeps the
end of the output as text, so the stored call still shows it when the terminal is gone. A time limit (default
120 s, at most 600 s) kills the command and keeps what it printed; reaching the process limit ends it at once;
cancelling the turn kills it too. The two runners (``exec.contained`` locally, ``_client_terminal`` in the editor)
own the processes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator

from hermes_acp.core import AgentTerminalBlock, DisplayBlock, TerminalBlock, TextBlock, TextPart
from hermes_acp.errors import ErrorCode, HardBlockedError, PermissionDeniedError, ToolError, ToolInputError
from hermes_acp.exec.contained import Contained, run_contained
from hermes_acp.exec.explain import explain, signal_of
from hermes_acp.exec.process import CommandResult, OutputBuffer
from hermes_acp.exec.sandbox import Availability, Sandbox
from hermes_acp.platform.shells import Shell, shell_for

from ._agent_terminal import TerminalStream, announced, ended
from ._client_terminal import run_in_client_terminal
from ._paths import display_path, missing_path_error, policy_paths
from ._text import cap_middle, fence, one_line
from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import ApprovalRequest, ToolContext

if TYPE_CHECKING:
    from hermes_acp.exec.hard_blocks import CommandCheck

__all__ = ["CLIENT_OUTPUT_BYTES", "MODEL_OUTPUT_CHARS", "TIMEOUT_DEFAULT_S", "TIMEOUT_MAX_S", "TerminalTool"]

TIMEOUT_DEFAULT_S = 120.0
TIMEOUT_MAX_S = 600.0
OUTPUT_HEAD_BYTES = 8 * 1024
OUTPUT_TAIL_BYTES = 24 * 1024
CLIENT_OUTPUT_BYTES = 64 * 1024
"""``outputByteLimit`` for client terminals (the client keeps the end)."""
MODEL_OUTPUT_CHARS = 40_000
STORED_TAIL_CHARS = 8 * 1024
"""The end of a client terminal's output kept as text in the settled card (the terminal dies with the process)."""
_TITLE_CHARS = 80
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "PYTHONUNBUFFERED": "1"}
"""Set for every command (the model's ``env`` wins): no pagers, no git credential prompts, unbuffered Python."""


class _TerminalInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1, max_length=100_000, description="The command line.")
    cwd: str | None = Field(default=None, description="Folder to run it in.")
    env: dict[str, str] | None = Field(default=None, description="Extra environment variables.")
    timeout_s: float = Field(
        default=TIMEOUT_DEFAULT_S,
        gt=0,
        le=TIMEOUT_MAX_S,
        description=f"Seconds before the command is killed (at most {TIMEOUT_MAX_S:g}).",
    )

    @field_validator("command", "cwd")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\0" in value:
            raise ValueError("must not contain NUL characters")
        return value

    @field_validator("env")
    @classmethod
    def _valid_env(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for name, text in (value or {}).items():
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
            if "\0" in text:
                raise ValueError(f"the value of {name} contains a NUL character")
        return value


def _code(text: str) -> str:
    """Inline code that survives backticks in the text."""
    if "`" not in text:
        return f"`{text}`"
    return f"`` {text} ``"


def _check_command(command: str, shell: Shell) -> CommandCheck:
    """The hard blocks' verdict on ``command`` (a worker thread). The rules and the bash grammar load with the first
    command a session runs, not with the turn machinery: a turn that runs none never pays for them."""
    from hermes_acp.exec.hard_blocks import check_command

    return check_command(command, shell.grammar)


def _shell(ctx: ToolContext) -> Shell:
    """The shell commands run in (``[terminal] shell``, else this system's); a missing one is the call's error."""
    sandbox = ctx.env.sandbox or Sandbox.default()
    try:
        return shell_for(sandbox.shell, dict(sandbox.environment()))
    except FileNotFoundError as exc:
        raise ToolError(f"could not start the command: {exc}") from exc


def _status(result: CommandResult, timeout_s: float) -> str:
    if result.stopped:
        return "Stopped from the editor: the command was killed. Output up to then:"
    if result.ended_by is not None:
        return "Ended: the command reached its process limit (everything it started was killed). Output up to then:"
    if result.timed_out:
        return f"Timed out after {timeout_s:g} s: the command was killed. Output up to then:"
    if result.signal is not None:
        return f"Killed by {result.signal}."
    if result.exit_code is None:
        return "The exit status is unknown."
    ended = signal_of(result)
    return f"Exit code {result.exit_code}" + (f" (killed by {ended})." if ended else ".")


class TerminalTool(TypedTool[_TerminalInput, dict[str, Any]]):
    name = "terminal"
    description = (
        "Run a shell command (bash -c) in the working directory or `cwd`. Stdin is closed: the command must not wait"
        " for input. Returns the exit code and the output (long output keeps its start and end)."
    )
    Input = _TerminalInput
    read_only = False

    def _title(self, parsed: _TerminalInput) -> str:
        return f"Run {_code(one_line(parsed.command, _TITLE_CHARS))}"

    def present(self, parsed: _TerminalInput, ctx: ToolContext) -> Presentation:
        command = parsed.command.strip()
        shown: list[TextBlock] = []
        if one_line(command, _TITLE_CHARS) != command:
            shown.append(TextBlock(text=fence(command, "sh")))
        content: list[DisplayBlock] = [*shown]
        if ctx.terminals is None:
            cwd = ctx.env.workspace.resolve(parsed.cwd) if parsed.cwd else ctx.env.workspace.cwd
            content = [announced(ctx, command, cwd, shown)]
        return Presentation(title=self._title(parsed), kind="execute", content=content)

    async def _cwd(self, parsed: _TerminalInput, ctx: ToolContext) -> Path:
        cwd = ctx.env.workspace.resolve(parsed.cwd) if parsed.cwd else ctx.env.workspace.cwd
        if not await anyio.to_thread.run_sync(cwd.is_dir):
            shown = display_path(cwd, ctx.env.workspace)
            if await anyio.to_thread.run_sync(cwd.exists):
                raise ToolInputError(f"cwd {shown} is a file, not a folder")
            raise await missing_path_error(cwd, f"cwd {shown}")
        return cwd

    @staticmethod
    async def _checked(command: str, shell: Shell) -> CommandCheck:
        """The hard-block check, in a worker thread (it loads the rules and the grammar the first time, and a long
        command takes up to a few hundred ms); refused commands raise."""
        check = await anyio.to_thread.run_sync(_check_command, command, shell)
        if check.blocked is not None:
            raise HardBlockedError(
                f"refused in every mode: {check.blocked}. The command was not run; do not run it or a variant of it."
            )
        return check

    @staticmethod
    async def _sandbox(ctx: ToolContext) -> tuple[Sandbox, Availability]:
        sandbox = ctx.env.sandbox or Sandbox.default()
        availability = await sandbox.availability()
        if sandbox.mode == "required" and not availability.usable:
            raise PermissionDeniedError(
                f'commands are refused: [sandbox] mode = "required" and {availability.problem}. The command was not'
                " run; ask the user to install bubblewrap or change [sandbox] mode."
            )
        return sandbox, availability

    async def approval(self, parsed: _TerminalInput, ctx: ToolContext) -> Approval[dict[str, Any]]:
        if ctx.stop is not None and ctx.stop.requested.is_set():
            return Approval(ctx.tool_call_id)  # stopped while queued: it will not run, so nobody is asked
        check = await self._checked(parsed.command, _shell(ctx))
        sandbox, availability = await self._sandbox(ctx)
        cwd = await self._cwd(parsed, ctx)
        shown = [TextBlock(text=fence(parsed.command.strip(), "sh"))]
        if parsed.cwd:
            shown.append(TextBlock(text=f"in {cwd}"))
        # The question shows the call's terminal where it has one, so a client that renders it keeps it in the card.
        content: list[DisplayBlock] = (
            [announced(ctx, parsed.command.strip(), cwd, shown)] if ctx.terminals is None else [*shown]
        )
        reason = check.doubt
        if reason is None and sandbox.mode == "auto" and not availability.usable:
            reason = f"commands run without a sandbox here ({availability.problem})"
        if reason is not None:
            content.append(TextBlock(text=f"Asked because {reason}."))
        request = ApprovalRequest(
            scope="execute",
            title=self._title(parsed),
            mutating=True,
            paths=policy_paths(cwd),
            content=content,
            raw_input=parsed.model_dump(exclude_none=True),
            ask_always=reason is not None,
            reason=reason,
        )
        return Approval(ctx.tool_call_id, request=request)

    async def run(
        self, parsed: _TerminalInput, approval: Approval[dict[str, Any]], ctx: ToolContext
    ) -> ToolOutcome[dict[str, Any]]:
        shell = _shell(ctx)
        await self._checked(parsed.command, shell)
        sandbox, _ = await self._sandbox(ctx)
        cwd = await self._cwd(parsed, ctx)
        extra_env = {**_QUIET_ENV, **(parsed.env or {})}
        inner = shell.argv(parsed.command)
        stop = ctx.stop
        if stop is not None and stop.requested.is_set():
            stop.close()
            return _not_started(announced(ctx, parsed.command.strip(), cwd, []))
        if ctx.terminals is not None:
            if stop is not None:
                stop.close()  # announced as ours, it runs in the editor's terminal (back since): not stopped here
            terminals = ctx.terminals
            async with sandbox.contained(
                inner, roots=ctx.env.workspace.roots, cwd=cwd, mode=ctx.mode, extra_env=extra_env, for_editor=True
            ) as confined:
                terminal_id, result = await run_in_client_terminal(
                    terminals,
                    confined.argv[0],
                    confined.argv[1:],
                    cwd=cwd,
                    env=confined.env,
                    timeout_s=parsed.timeout_s,
                    output_byte_limit=CLIENT_OUTPUT_BYTES,
                    show=ctx.progress,
                    limits=confined.limits,
                )
                home = sandbox.environment().get("HOME")
                notes = explain(confined, parsed.command, result, cwd=str(cwd), limits=sandbox.limits, home=home)
            contained = Contained(result, confined.sandboxed, [*notes, *confined.aftermath])
            return _outcome(parsed, contained, TerminalBlock(terminal_id=terminal_id))
        terminal = announced(ctx, parsed.command.strip(), cwd, [])
        stream = TerminalStream(ctx)
        buffer = OutputBuffer(OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES)
        try:
            contained = await run_contained(
                sandbox,
                inner,
                command=parsed.command,
                roots=ctx.env.workspace.roots,
                cwd=cwd,
                mode=ctx.mode,
                extra_env=extra_env,
                timeout_s=parsed.timeout_s,
                buffer=buffer,
                on_output=stream.update,
                interval=0.0,  # every chunk to the stream, which keeps the beat
                stop=stop.requested if stop is not None else None,
            )
        except OSError as exc:
            raise ToolError(f"could not start the command: {exc.strerror or exc}") from exc
        finally:
            if stop is not None:
                stop.close()  # ended: a stop asked for from now on is refused (its exit is on its way)
        await stream.finish(buffer)
        return _outcome(parsed, contained, terminal)


def _not_started(terminal: AgentTerminalBlock) -> ToolOutcome[dict[str, Any]]:
    """A command stopped from the editor before it started (while its call was being cleared): it never ran."""
    text = "Stopped from the editor before it started: the command was not run."
    return ToolOutcome(
        parts=[TextPart(text=text)],
        content=[ended(terminal, output="", exit_code=None, signal=None, note=text, fallback=[TextBlock(text=text)])],
        raw_output={
            "exit_code": None,
            "signal": None,
            "timed_out": False,
            "ended_by": None,
            "stopped": True,
            "truncated": False,
            "sandboxed": False,
        },
        failed=True,
        error_code="not_run",
    )


def _outcome(
    parsed: _TerminalInput, contained: Contained, terminal: TerminalBlock | AgentTerminalBlock
) -> ToolOutcome[dict[str, Any]]:
    """``terminal``: the editor's terminal it ran in, or the agent-owned terminal it was announced with."""
    result = contained.result
    output, capped = cap_middle(result.output.rstrip("\n"), MODEL_OUTPUT_CHARS)
    status = _status(result, parsed.timeout_s)
    display: list[DisplayBlock]
    if isinstance(terminal, TerminalBlock):
        ending = result.output.rstrip("\n")[-STORED_TAIL_CHARS:]
        display = [terminal, TextBlock(text=status + ("\n" + fence(ending) if ending else ""))]
    else:
        ran_out = result.timed_out or result.ended_by is not None or result.stopped
        exited = result.exit_code is not None and not ran_out
        note = None if exited else status.removesuffix(" Output up to then:")
        shown = [TextBlock(text=status + ("\n" + fence(output) if output else ""))]
        display = [
            ended(
                terminal,
                output=result.output,
                exit_code=result.exit_code,
                signal=result.signal,
                note=note,
                fallback=shown,
            )
        ]
    notes = list(contained.notes)
    if notes:
        display.append(TextBlock(text="\n".join(notes)))
    if result.truncated or capped:
        notes.append("[The output was long: only part of it is shown.]")
    text = "\n".join([status, output if output else "(no output)", *notes])
    failed = result.timed_out or result.ended_by is not None or result.exit_code != 0
    error_code: ErrorCode | None = "timeout" if result.timed_out else ("nonzero_exit" if failed else None)
    return ToolOutcome(
        parts=[TextPart(text=text)],
        content=display,
        raw_output={
            "exit_code": result.exit_code,
            "signal": result.signal,
            "timed_out": result.timed_out,
            "ended_by": result.ended_by,
            "stopped": result.stopped,
            "truncated": result.truncated or capped,
            "sandboxed": contained.sandboxed,
        },
        failed=failed,
        error_code=error_code,
    )
