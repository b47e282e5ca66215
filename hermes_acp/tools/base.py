"""The tool seam: what every model-facing tool (built-in, MCP, computer_use) provides to the turn loop.

A ``Tool[In, Out]`` has a name, a description and a JSON schema (what the model sees); it validates raw arguments
into its input (``In``), says how a call is presented to the editor (title, kind, locations, initial content) and
whether a given call only reads (such calls of one response may run together), describes what the call needs before
it runs as an ``Approval`` value (the question for the policy and, for the file tools, the snapshot the change was
computed from), and runs with the granted approval. Running returns a ``ToolOutcome[Out]``: display content for the
editor, parts for the model, and the tool's own result (``Out``, a model where the tool has one) for the record,
serialised in one place (``record_output``). ``ParsedCall`` keeps a tool and the input it validated together, so
the loop never hands one tool another's input. A ``ToolError`` raised by a tool becomes a failed outcome for the
model; it never reaches the wire. This module knows neither ACP nor any concrete tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeAlias, TypeVar

from pydantic import BaseModel, ValidationError

from hermes_acp.core import DisplayBlock, ImagePart, Location, PlanEntry, TextPart, ToolKind
from hermes_acp.errors import ToolErrorCode, ToolInputError

from .approval import Approval
from .context import ApprovalRequest

if TYPE_CHECKING:
    from .context import ToolContext

__all__ = [
    "AnyTool",
    "ParsedCall",
    "Presentation",
    "Tool",
    "ToolOutcome",
    "TypedTool",
    "describe_validation_error",
    "model_facing_schema",
    "parse_call",
    "record_output",
]

In = TypeVar("In")
Out = TypeVar("Out")
InputT = TypeVar("InputT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Presentation:
    """How the editor first shows a call (the ACP ``tool_call``)."""

    title: str
    kind: ToolKind
    locations: list[Location] = field(default_factory=list)
    content: list[DisplayBlock] = field(default_factory=list)


@dataclass(slots=True)
class ToolOutcome(Generic[Out]):
    """What a finished call produced: ``content`` for the editor, ``parts`` for the model, ``raw_output`` (the
    tool's result) for the record."""

    parts: list[TextPart | ImagePart]
    content: list[DisplayBlock] = field(default_factory=list)
    raw_output: Out | None = None
    failed: bool = False
    error_code: ToolErrorCode | None = None
    plan: list[PlanEntry] | None = None
    """Set by ``update_plan``: the complete new plan."""
    proposal: str | None = None
    """Set by ``exit_plan_mode`` when the user approved it: the plan, in Markdown."""

    @classmethod
    def text(cls, text: str, *, raw_output: Out | None = None, failed: bool = False) -> ToolOutcome[Out]:
        from hermes_acp.core import TextBlock

        return cls(parts=[TextPart(text=text)], content=[TextBlock(text=text)], raw_output=raw_output, failed=failed)


def record_output(output: object) -> Any:
    """A tool's result as the log stores it (JSON): a model dumped as it serialises itself; anything else as is."""
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    return output


class Tool(Protocol[In, Out]):
    """A model-facing tool whose calls take an ``In`` and give a ``ToolOutcome[Out]``."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> dict[str, Any]: ...

    @property
    def read_only(self) -> bool:
        """True when a call cannot change anything (safe to retry, allowed in ``read_only`` mode)."""
        ...

    def reads_only(self, parsed: In) -> bool:
        """True when this call only reads (files, listings, observations): it may run at the same time as the other
        such calls of one response. Stricter than ``read_only``: a call that asks the user something (``ask_user``)
        or sets the session's plan (``update_plan``) is not one."""
        ...

    def validate(self, arguments: dict[str, Any]) -> In:
        """Check the model's arguments; return the parsed input or raise ``ToolInputError``."""
        ...

    def present(self, parsed: In, ctx: ToolContext) -> Presentation: ...

    async def approval(self, parsed: In, ctx: ToolContext) -> Approval[Out]:
        """What the call needs before it runs, keyed by ``ctx.tool_call_id``: its question for the policy (none when
        it needs no approval) and what it will change.

        May raise ``HardBlockedError`` (refused in every mode) or ``ToolInputError``.
        """
        ...

    async def run(self, parsed: In, approval: Approval[Out], ctx: ToolContext) -> ToolOutcome[Out]:
        """Run the call with its granted ``approval`` (the value ``approval()`` returned, cleared by the flow)."""
        ...


AnyTool: TypeAlias = "Tool[Any, Any]"
"""A tool whatever its input and result: what tool lists hold."""


@dataclass(frozen=True, slots=True)
class ParsedCall(Generic[In, Out]):
    """A tool and the input it validated, kept together (``parse_call``): each step gets its own tool's input."""

    tool: Tool[In, Out]
    input: In

    def present(self, ctx: ToolContext) -> Presentation:
        return self.tool.present(self.input, ctx)

    def reads_only(self) -> bool:
        return self.tool.reads_only(self.input)

    async def approval(self, ctx: ToolContext) -> Approval[Out]:
        return await self.tool.approval(self.input, ctx)

    async def run(self, approval: Approval[Out], ctx: ToolContext) -> ToolOutcome[Out]:
        return await self.tool.run(self.input, approval, ctx)


def parse_call(tool: Tool[In, Out], arguments: dict[str, Any]) -> ParsedCall[In, Out]:
    """Validate ``arguments`` for ``tool`` (raises ``ToolInputError``)."""
    return ParsedCall(tool, tool.validate(arguments))


class TypedTool(Generic[InputT, Out]):
    """Base for tools whose input is a pydantic model: the schema and validation come from ``Input``."""

    name: ClassVar[str]
    description: ClassVar[str]
    Input: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = False
    _schema_cache: ClassVar[dict[str, Any] | None] = None
    """The class's own schema, once computed (looked up in the class itself: a subclass may change ``Input``)."""

    @property
    def input_schema(self) -> dict[str, Any]:
        cls = type(self)
        cached: dict[str, Any] | None = cls.__dict__.get("_schema_cache")
        if cached is None:
            cached = cls._schema_cache = model_facing_schema(cls.Input.model_json_schema())
        return cached

    async def approval(self, parsed: InputT, ctx: ToolContext) -> Approval[Out]:
        """Conservative default: a mutating tool asks under its own name; a read-only one needs nothing."""
        if self.read_only:
            return Approval(ctx.tool_call_id)
        request = ApprovalRequest(scope=self.name, title=self.name, mutating=True, raw_input=parsed.model_dump())
        return Approval(ctx.tool_call_id, request=request)

    def reads_only(self, parsed: InputT) -> bool:
        """No call runs beside others unless its tool says so (the tools that only read override this)."""
        return False

    def validate(self, arguments: dict[str, Any]) -> InputT:
        try:
            return self.Input.model_validate(arguments)  # type: ignore[return-value]
        except ValidationError as exc:
            raise ToolInputError(f"{self.name}: {describe_validation_error(exc)}") from exc


def model_facing_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema as models handle best: ``$ref``s into ``$defs`` inlined, pydantic's titles dropped, and an
    optional field's ``null`` alternative left out.

    Several OpenAI-compatible servers (and small local models) mishandle ``$ref``; titles only cost tokens, and so
    does ``{"anyOf": [X, {"type": "null"}], "default": null}`` for a field that may simply be left out (it becomes
    ``X``; validation still takes ``null``, since it is the model's, not this schema's). A self-referencing
    definition keeps its ``$ref`` (and its ``$defs``) rather than recursing forever.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})
    kept: set[str] = set()

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        node = _without_null(node)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen or name not in definitions:
                kept.add(name)
                return {k: v for k, v in node.items()}
            merged = {**definitions[name], **{k: v for k, v in node.items() if k != "$ref"}}
            return walk(merged, (*seen, name))
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "title"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: walk(prop, seen) for name, prop in value.items()}
            else:
                out[key] = walk(value, seen)
        return out

    result: dict[str, Any] = walk(schema, ())
    if kept:
        result["$defs"] = {name: definitions[name] for name in kept if name in definitions}
    return result


def _without_null(node: dict[str, Any]) -> dict[str, Any]:
    """An optional field's schema without its ``null`` alternative (see ``model_facing_schema``); others as they are."""
    options = node.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
        return node
    if "default" not in node or node["default"] is not None:
        return node
    [kept] = [option for option in options if option != {"type": "null"}]
    rest = {key: value for key, value in node.items() if key not in ("anyOf", "default")}
    return {**kept, **rest}


def describe_validation_error(exc: ValidationError) -> str:
    """One readable line per problem: ``path: message``."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        message = "unknown argument" if error["type"] == "extra_forbidden" else error["msg"]
        problems.append(f"{where}: {message}")
    return "; ".join(problems)
