"""``hermes-acp exec``: one prompt, one answer, through the same server an editor talks to, in this process.

``run_exec`` builds the server's ``Connection`` on one end of an in-process link (``transports.memory``) and hands it
to the app's ``Serve`` (``app.run_connection``: the settings, the store, the session manager, the dispatcher and
its routes, as for stdio), and drives it from the other end with our ACP client (``client.ExecClient``):
``initialize``, a new session (or ``--session``'s, resumed), ``--mode`` and ``--model``, the prompt. While the
turn runs, ``report.Transcript`` shows progress on stderr and, with ``--json``, writes every ``session/update`` to
stdout; permission requests are answered from the policy at once. The run ends in one of the outcomes of
``outcome.EXIT_CODES``: the client leaves (the link closed), the server cancels and settles whatever still runs,
closes the session with its child processes, the providers and the store, and only then does the process exit.

A shutdown signal (``platform.signals``: SIGINT, SIGTERM, SIGHUP; Ctrl-C and Ctrl-Break on Windows) cancels the turn
(``session/cancel``: it settles, then answers ``cancelled``; exit code 128 + the signal); a second one closes the
link at once (the server's EOF path, bounded). ``--timeout`` cancels
the turn the same way (exit code 5).

stdout belongs to the answer (or the NDJSON): the process's file descriptor 1 is pointed at stderr for everything
else, as ``transports.stdio`` does for the protocol, so nothing a library or a child prints can mix in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

import anyio
from anyio.abc import TaskGroup

from hermes_acp.jsonrpc.boundary import ClientRequestError
from hermes_acp.jsonrpc.link import ClientGone
from hermes_acp.platform import stdio
from hermes_acp.platform.signals import install_shutdown
from hermes_acp.protocol.connection import Connection, Serve
from hermes_acp.transports.memory import MemoryEnd, memory_link

from .client import ExecClient
from .options import ExecOptions, UsageError, parse_options
from .outcome import Outcome
from .report import Spinner, Transcript

__all__ = ["LEAVE_TIMEOUT_S", "Stdout", "main", "run_exec"]

LEAVE_TIMEOUT_S = 10.0
"""Bound on the turn's answer once it was cancelled (a signal, the timeout): it settles first, in well under that."""


def main(argv: Sequence[str], load_server: Callable[[], Serve]) -> int:
    """``hermes-acp exec ARGS``: the exit code (``load_server`` imports the server and returns its ``Serve``)."""
    try:
        options = parse_options(argv, os.environ)
    except UsageError as exc:
        sys.stderr.write(f"hermes-acp exec: {exc}\n")
        return Outcome.usage(str(exc)).code
    out_fd = stdio.claim_stdout()  # the answer's; fd 1 (and Windows' output handle) now lead to stderr
    sys.stdout = sys.stderr
    out = Stdout(os.fdopen(out_fd, "w", encoding="utf-8", errors="replace", newline="\n"))
    try:
        return anyio.run(run_exec, options, load_server(), out, sys.stderr)
    finally:
        out.close()


class Stdout:
    """The answer's stream: a reader that went away (``exec … | head -1``) stops the writing, not the run (the turn
    still ends as it would, and the exit code says how)."""

    def __init__(self, stream: IO[str]):
        self._stream = stream
        self._gone = False

    def line(self, text: str) -> None:
        if self._gone:
            return
        try:
            self._stream.write(text + "\n")
            self._stream.flush()
        except OSError:
            self._gone = True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stream.close()


async def run_exec(options: ExecOptions, serve: Serve, out: Stdout, err: IO[str]) -> int:
    """Run ``options``' prompt against ``serve`` in this process; write the answer (or the NDJSON) to ``out`` and
    progress to ``err``; the exit code."""
    started = time.monotonic()
    server_end, client_end = memory_link()
    connection = Connection(server_end, server_end, options.env, name="exec")
    spinner = Spinner(err, enabled=err.isatty())
    transcript = Transcript(options.cwd, ndjson=out.line if options.json else None, say=spinner.line)
    run = _Run(options, ExecClient(client_end, options.policy, transcript), client_end, spinner)
    answer: dict[str, Any] | None = None
    outcome = Outcome("failed")  # what stands when a signal cut the run short before the prompt
    async with anyio.create_task_group() as group:
        group.start_soon(_serve, connection, serve, server_end, name="hermes-acp exec server")
        group.start_soon(run.client.dispatcher.run, name="hermes-acp exec client")
        try:
            async with anyio.create_task_group() as driving:
                driving.start_soon(run.watch_signals, driving)
                driving.start_soon(spinner.run)
                outcome, answer = await run.drive(driving)
                driving.cancel_scope.cancel()
        finally:
            client_end.close()  # the client leaves: the server settles and closes everything, then its task ends
    if run.stopped_by is not None and outcome.name != "config":
        outcome = Outcome.signalled(run.stopped_by, outcome.stop_reason)
    _Ending(options, run.client, transcript, started).write(outcome, answer, out, spinner)
    return outcome.code


async def _serve(connection: Connection, serve: Serve, end: MemoryEnd) -> None:
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(connection.dispatcher.run, name="hermes-acp exec dispatcher")
            await serve(connection)
    finally:
        end.close()


@dataclass
class _Run:
    """The client's side of one run, and why it is being cut short as it learns it (a signal, the deadline)."""

    options: ExecOptions
    client: ExecClient
    end: MemoryEnd
    spinner: Spinner
    stopped_by: str | None = None
    """The first shutdown's name (``platform.signals``): a signal's, or a Windows console event's."""
    deadline: bool = False
    prompting: bool = False

    async def drive(self, driving: TaskGroup) -> tuple[Outcome, dict[str, Any] | None]:
        """Open the session, prompt, and wait for the answer (cancelled at the deadline, a task of ``driving``): how
        it ended."""
        options, client = self.options, self.client
        try:
            await client.open(
                options.cwd, options.additional, resume=options.session, mode=options.mode, model=options.model
            )
            self.spinner.line(f"hermes-acp exec: session {client.session_id}")
            self.prompting = True
            if options.timeout_s is not None:
                driving.start_soon(self._deadline, options.timeout_s)
            answer = await client.prompt(options.prompt)
        except ClientRequestError as exc:
            return Outcome.of_error(exc), None
        except ClientGone:  # a second signal closed the link before the answer
            return Outcome("failed", "cancelled"), None
        finally:
            self.prompting = False
        if self.deadline:
            return Outcome.timed_out(options.timeout_s or 0.0, str(answer.get("stopReason"))), answer
        if client.refusal is not None:
            return Outcome.refused(client.refusal.reason, client.refused_title), answer
        return Outcome.of_answer(answer), answer

    async def watch_signals(self, driving: TaskGroup) -> None:
        """The first shutdown signal (``platform.signals``) cancels the turn (or, before it, the run); a second one
        leaves at once."""
        send, received = anyio.create_memory_object_stream[str](8)
        undo = install_shutdown(asyncio.get_running_loop(), send.send_nowait)
        try:
            async for name in received:
                if self.stopped_by is not None:
                    self.end.close()
                    continue
                self.stopped_by = name
                if self.prompting:
                    await self.client.cancel()
                    driving.start_soon(self._leave_after)
                else:
                    driving.cancel_scope.cancel()
        finally:
            undo()

    async def _deadline(self, seconds: float) -> None:
        await anyio.sleep(seconds)
        self.deadline = True
        await self.client.cancel()
        await self._leave_after()

    async def _leave_after(self) -> None:
        """A cancelled turn answers once it has settled, at once (docs/architecture.md §4.10); should it not, leave."""
        await anyio.sleep(LEAVE_TIMEOUT_S)
        self.end.close()


@dataclass
class _Ending:
    """What the run's end writes: the answer or the result object on stdout, the failure's sentence on stderr."""

    options: ExecOptions
    client: ExecClient
    transcript: Transcript
    started: float

    def write(self, outcome: Outcome, answer: dict[str, Any] | None, out: Stdout, spinner: Spinner) -> None:
        text = self.transcript.answer if outcome.name not in ("failed", "config") else ""
        if self.options.json:
            out.line(json.dumps(self.result(outcome, answer, text), ensure_ascii=False, separators=(",", ":")))
        elif text:
            out.line(text)
        if outcome.sentence:
            spinner.line(f"hermes-acp exec: {outcome.sentence} (exit code {outcome.code})")

    def result(self, outcome: Outcome, answer: dict[str, Any] | None, text: str) -> dict[str, Any]:
        """The last line of ``--json``: how the run ended (docs/ci.md, "The JSON")."""
        meta = answer.get("_meta") if answer is not None else None
        hermes = meta.get("hermes") if isinstance(meta, dict) else None
        hermes = hermes if isinstance(hermes, dict) else {}
        usage = answer.get("usage") if answer is not None else None
        meter = self.transcript.meter or {}
        meter_meta = meter.get("_meta")
        budget = meter_meta.get("hermes", {}).get("budget") if isinstance(meter_meta, dict) else None
        return {
            "type": "result",
            "outcome": outcome.name,
            "exitCode": outcome.code,
            "stopReason": outcome.stop_reason,
            "sessionId": self.client.session_id,
            "answer": text,
            "usage": {**usage, "cost": hermes.get("cost")} if isinstance(usage, dict) else None,
            "sessionCost": meter.get("cost"),
            "budget": budget,
            "filesChanged": self.transcript.files_changed,
            "failure": outcome.failure,
            "durationMs": round((time.monotonic() - self.started) * 1000),
        }
