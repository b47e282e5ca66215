"""Tools for turn-loop tests: one that fails, one that blocks until released or cancelled, one that asks, one that
only reads and waits for each call to be released; the model-side tool calls (``call``, ``args``) that scripted
replies use to invoke them; and ``approved``, a call's approval granted as the turn loop grants it, for tests that
run a tool without the loop."""

from __future__ import annotations

import json
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict

from hermes_acp.core import DiffBlock, TextBlock, TextPart, ToolCallPart
from hermes_acp.core.flags import Changed
from hermes_acp.errors import ToolError
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.base import Presentation, Tool, ToolOutcome, TypedTool
from hermes_acp.tools.context import ApprovalRequest, ToolContext

__all__ = [
    "BlockingTool",
    "EchoTool",
    "FailingTool",
    "GatedReadTool",
    "GuardedWriteTool",
    "RepeatTool",
    "approved",
    "args",
    "call",
]

In = TypeVar("In")
Out = TypeVar("Out")


async def approved(tool: Tool[In, Out], parsed: In, ctx: ToolContext) -> Approval[Out]:
    """The call's approval, granted as the approval flow grants one the policy allows (no question asked)."""
    approval = await tool.approval(parsed, ctx)
    return approval.grant("policy" if approval.request is not None else "not_needed")


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str


class EchoTool(TypedTool[_Message, Any]):
    """Read-only: answers with its argument."""

    __test__ = False
    name = "echo"
    description = "Echo the message."
    Input = _Message
    read_only = True

    def __init__(self) -> None:
        self.runs: list[str] = []

    def present(self, parsed: _Message, ctx: ToolContext) -> Presentation:
        return Presentation(title=f"Echo {parsed.message}", kind="other")

    async def run(self, parsed: _Message, approval: Approval[Any], ctx: ToolContext) -> ToolOutcome[Any]:
        self.runs.append(parsed.message)
        return ToolOutcome.text(f"echo: {parsed.message}", raw_output={"echoed": parsed.message})


class _Repeat(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str
    times: int


class RepeatTool(TypedTool[_Repeat, Any]):
    """Read-only: answers with its message repeated ``times`` times (a result as large as a test needs)."""

    __test__ = False
    name = "repeat"
    description = "Repeat the message."
    Input = _Repeat
    read_only = True

    def present(self, parsed: _Repeat, ctx: ToolContext) -> Presentation:
        return Presentation(title=f"Repeat {parsed.message!r} {parsed.times} times", kind="other")

    async def run(self, parsed: _Repeat, approval: Approval[Any], ctx: ToolContext) -> ToolOutcome[Any]:
        return ToolOutcome.text(parsed.message * parsed.times)


class FailingTool(TypedTool[_Message, Any]):
    """Raises a ToolError, or a plain bug when the message is "bug"."""

    __test__ = False
    name = "fail"
    description = "Always fails."
    Input = _Message
    read_only = True

    def present(self, parsed: _Message, ctx: ToolContext) -> Presentation:
        return Presentation(title="Fail on purpose", kind="other")

    async def run(self, parsed: _Message, approval: Approval[Any], ctx: ToolContext) -> ToolOutcome[Any]:
        if parsed.message == "bug":
            raise RuntimeError("boom")
        raise ToolError(f"it failed: {parsed.message}")


class BlockingTool(TypedTool[_Message, Any]):
    """Streams progress, then waits for ``release``; records whether it was cancelled."""

    __test__ = False
    name = "block"
    description = "Blocks until released."
    Input = _Message
    read_only = True

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()
        self.cancelled = False

    def present(self, parsed: _Message, ctx: ToolContext) -> Presentation:
        return Presentation(title="Block", kind="execute")

    async def run(self, parsed: _Message, approval: Approval[Any], ctx: ToolContext) -> ToolOutcome[Any]:
        await ctx.progress([TextBlock(text="working...")])
        self.started.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return ToolOutcome.text("released")


class GuardedWriteTool(TypedTool[_Message, Any]):
    """A mutating tool that asks under the ``edit`` scope with a diff; records what actually ran."""

    __test__ = False
    name = "guarded_write"
    description = "Write a message to a pretend file."
    Input = _Message
    read_only = False

    def __init__(self) -> None:
        self.writes: list[str] = []

    def present(self, parsed: _Message, ctx: ToolContext) -> Presentation:
        return Presentation(title="Write notes.txt", kind="edit")

    async def approval(self, parsed: _Message, ctx: ToolContext) -> Approval[Any]:
        path = ctx.env.workspace.resolve("notes.txt")
        request = ApprovalRequest(
            scope="edit",
            title="Write notes.txt",
            mutating=True,
            paths=(path,),
            content=[DiffBlock(path=str(path), old_text=None, new_text=parsed.message)],
            raw_input={"message": parsed.message},
        )
        return Approval(ctx.tool_call_id, request=request)

    async def run(self, parsed: _Message, approval: Approval[Any], ctx: ToolContext) -> ToolOutcome[Any]:
        self.writes.append(parsed.message)
        return ToolOutcome(parts=[TextPart(text="written")], content=[TextBlock(text="written")], raw_output=None)


class GatedReadTool(TypedTool[_Message, Any]):
    """Only reads (its calls may run together): each call waits until the test releases its message; a message
    that starts with "ask" asks permission first. Records which calls started and which were cancelled."""

    __test__ = False
    name = "gated_read"
    description = "Read something slowly."
    Input = _Message
    read_only = True

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.changed = Changed()
        self._release: dict[str, anyio.Event] = {}

    def release(self, message: str) -> None:
        self._gate(message).set()

    def _gate(self, message: str) -> anyio.Event:
        return self._release.setdefault(message, anyio.Event())

    async def wait_started(self, *messages: str) -> None:
        with anyio.fail_after(10):
            while not set(messages) <= set(self.started):
                await self.changed.wait()

    def reads_only(self, parsed: _Message) -> bool:
        return True

    def present(self, parsed: _Message, ctx: ToolContext) -> Presentation:
        return Presentation(title=f"Read {parsed.message}", kind="read")

    async def approval(self, parsed: _Message, ctx: ToolContext) -> Approval[Any]:
        if not parsed.message.startswith("ask"):
            return Approval(ctx.tool_call_id)
        request = ApprovalRequest(scope="gated_read", title=f"Read {parsed.message}", mutating=True, raw_input={})
        return Approval(ctx.tool_call_id, request=request)

    async def run(self, parsed: _Message, approval: Approval[Any], ctx: ToolContext) -> ToolOutcome[Any]:
        self.started.append(parsed.message)
        self.changed.notify()
        try:
            await self._gate(parsed.message).wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(parsed.message)
            raise
        return ToolOutcome.text(f"read: {parsed.message}")


def args(**values: Any) -> str:
    """Tool-call arguments as the model sends them: a JSON object in a string."""
    return json.dumps(values)


def call(call_id: str, name: str, **arguments: Any) -> ToolCallPart:
    """A model's tool call, for scripted replies (``tool_reply(call("c1", "echo", message="hi"))``)."""
    return ToolCallPart(id=call_id, name=name, arguments=args(**arguments))
