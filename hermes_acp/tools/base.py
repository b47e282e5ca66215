"""The tool seam: what every model-facing tool (built-in, MCP, computer_use) provides to the turn loop.

A tool has a name, a description and a JSON schema (what the model sees); it validates raw arguments, says how a
call is presented to the editor (title, kind, locations, initial content), whether a given call only reads (such
calls of one response may run together), and runs. Running returns a
``ToolOutcome``: display content for the editor and parts for the model. A ``ToolError`` raised by ``run`` becomes
a failed outcome for the model; it never reaches the wire. This module knows neither ACP nor any concrete tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from hermes_acp.core import DisplayBlock, ImagePart, Location, PlanEntry, TextPart, ToolKind
from hermes_acp.errors import ToolErrorCode, ToolInputError

from .context import ApprovalRequest

if TYPE_CHECKING:
    from .context import ToolContext

__all__ = ["Presentation", "Tool", "ToolOutcome", "TypedTool", "describe_validation_error", "model_facing_schema"]


@dataclass(frozen=True, slots=True)
class Presentation:
    """How the editor first shows a call (the ACP ``tool_call``)."""

    title: str
    kind: ToolKind
    locations: list[Location] = field(default_factory=list)
    content: list[DisplayBlock] = field(default_factory=list)


@dataclass(slots=True)
class ToolOutcome:
    """What a finished call produced: ``content`` for the editor, ``parts`` for the model."""

    parts: list[TextPart | ImagePart]
    content: list[DisplayBlock] = field(default_factory=list)
    raw_output: Any = None
    failed: bool = False
    error_code: ToolErrorCode | None = None
    plan: list[PlanEntry] | None = None
    """Set by ``update_plan``: the complete new plan."""
    proposal: str | None = None
    """Set by ``exit_plan_mode`` when the user approved it: the plan, in Markdown."""

    @classmethod
    def text(cls, text: str, **kwargs: Any) -> ToolOutcome:
        from hermes_acp.core import TextBlock

        return cls(parts=[TextPart(text=text)], content=[TextBlock(text=text)], **kwargs)


class Tool(Protocol):
    """A model-facing tool."""

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

    def reads_only(self, parsed: Any) -> bool:
        """True when this call only reads (files, listings, observations): it may run at the same time as the other
        such calls of one response. Stricter than ``read_only``: a call that asks the user something (``ask_user``)
        or sets the session's plan (``update_plan``) is not one."""
        ...

    def validate(self, arguments: dict[str, Any]) -> Any:
        """Check the model's arguments; return the parsed input or raise ``ToolInputError``."""
        ...

    def present(self, parsed: Any, ctx: ToolContext) -> Presentation: ...

    async def approval(self, parsed: Any, ctx: ToolContext) -> ApprovalRequest | None:
        """What the call will do, for the approval flow; None when it needs no approval at all.

        May raise ``HardBlockedError`` (refused in every mode) or ``ToolInputError``.
        """
        ...

    async def run(self, parsed: Any, ctx: ToolContext) -> ToolOutcome: ...


InputT = TypeVar("InputT", bound=BaseModel)


class TypedTool(Generic[InputT]):
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

    async def approval(self, parsed: InputT, ctx: ToolContext) -> ApprovalRequest | None:
        """Conservative default: a mutating tool asks under its own name; a read-only one needs nothing."""
        if self.read_only:
            return None
        return ApprovalRequest(scope=self.name, title=self.name, mutating=True, raw_input=parsed.model_dump())

    def reads_only(self, parsed: InputT) -> bool:
        """No call runs beside others unless its tool says so (the tools that only read override this)."""
        return False

    def validate(self, arguments: dict[str, Any]) -> InputT:
        try:
            return self.Input.model_validate(arguments)  # type: ignore[return-value]
        except ValidationError as exc:
            raise ToolInputError(f"{self.name}: {describe_validation_error(exc)}") from exc


def model_facing_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema as models handle best: ``$ref``s into ``$defs`` inlined, pydantic's titles dropped.

    Several OpenAI-compatible servers (and small local models) mishandle ``$ref``; titles only cost tokens.
    A self-referencing definition keeps its ``$ref`` (and its ``$defs``) rather than recursing forever.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})
    kept: set[str] = set()

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
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


def describe_validation_error(exc: ValidationError) -> str:
    """One readable line per problem: ``path: message``."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        message = "unknown argument" if error["type"] == "extra_forbidden" else error["msg"]
        problems.append(f"{where}: {message}")
    return "; ".join(problems)
