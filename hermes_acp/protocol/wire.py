"""The ACP messages we read, as small pydantic models: request params from the client, and its answers to ours.

They follow the official schema of ``@agentclientprotocol/sdk`` 2.4.0 (``schema/v1/schema.json``) for the fields we
use, with its leniency: unknown fields are ignored; capabilities and optional fields that cannot be read fall back
to their defaults (the schema's ``x-deserialize-default-on-error``), because a client's odd capability must not
break a session. Required fields are checked strictly, and ``parse`` turns every problem into an
``InvalidParamsError`` naming the field in the client's spelling (``sessionId``, ``prompt[0].text``).

Why our own models and not the acp SDK's: importing ``acp.schema`` costs 1.3–1.8 s here (some 280 models), and
``initialize``, ``session/new``, ``session/prompt`` and ``session/load`` must not wait for it. The SDK's own client
talks to the server in the test suite, and every frame is validated against the official JSON schema in CI, so
these models cannot drift from the protocol unnoticed. What we send is built as plain JSON (``convert``,
``session_view``, ``initialize``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    WrapValidator,
)

from hermes_acp.core.bounds import MAX_PROMPT_BYTES, MIB
from hermes_acp.errors import InvalidParamsError

__all__ = [
    "AuthenticateParams",
    "CancelParams",
    "ClientCapabilities",
    "ContentBlock",
    "CreateTerminalResult",
    "ElicitationCapabilities",
    "ElicitationResult",
    "ForkSessionParams",
    "InitializeParams",
    "Lenient",
    "ListSessionsParams",
    "LoadSessionParams",
    "NewSessionParams",
    "PermissionResult",
    "PromptParams",
    "ProviderIdParams",
    "ReadTextFileResult",
    "ResumeSessionParams",
    "RewindParams",
    "SessionIdParams",
    "SetConfigOptionParams",
    "SetModeParams",
    "SetModelParams",
    "SetProviderParams",
    "SetTitleParams",
    "SteeringParams",
    "SystemPromptParam",
    "TerminalExitResult",
    "TerminalOutputResult",
    "WireModel",
    "default_on_error",
    "parse",
]

M = TypeVar("M", bound=BaseModel)


def default_on_error(default: Any) -> WrapValidator:
    """For fields the schema marks ``x-deserialize-default-on-error``: a value that cannot be read is ``default``.

    A model class as ``default`` means a fresh empty instance of it, made only when needed: building one here,
    while the module loads, would build the model's validator and undo ``defer_build`` (tens of ms at start-up).
    """

    def validate(value: Any, handler: Any) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return default() if isinstance(default, type) and issubclass(default, BaseModel) else default

    return WrapValidator(validate)


Lenient = default_on_error(None)


class WireModel(BaseModel):
    """The base of every model we read (the v2 ones beside these too: ``protocol/v2/wire.py``): aliases in the
    client's spelling, unknown fields ignored, frozen, built on first use."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True, defer_build=True)


def parse(model: type[M], raw: Any) -> M:
    """``raw`` params as ``model``; missing params read as ``{}``; any problem is an ``InvalidParamsError``."""
    try:
        return model.model_validate({} if raw is None else raw)
    except ValidationError as exc:
        problems = [_problem(error) for error in exc.errors(include_url=False, include_context=False)]
        message = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        raise InvalidParamsError(message, data={"errors": problems}) from None


def _problem(error: Any) -> dict[str, str]:
    field = ""
    for part in error.get("loc", ()):
        if isinstance(part, int):
            field += f"[{part}]"
        elif not str(part).startswith("~"):  # a tagged union's member (see ``_tagged``), not a field
            field += f".{part}" if field else str(part)
    message = "required" if error.get("type") == "missing" else str(error.get("msg", "invalid"))
    return {"field": field or "params", "message": message}


# -- capabilities ---------------------------------------------------------------------------------------------


class _Capability(WireModel):
    """An object whose presence is the capability (``{}``); its fields are extensions we do not read."""


class FileSystemCapabilities(WireModel):
    read_text_file: Annotated[bool, default_on_error(False)] = Field(False, alias="readTextFile")
    write_text_file: Annotated[bool, default_on_error(False)] = Field(False, alias="writeTextFile")


class ConfigOptionsCapabilities(WireModel):
    boolean: Annotated[_Capability | None, Lenient] = None


class ClientSessionCapabilities(WireModel):
    compaction: Annotated[_Capability | None, Lenient] = None
    notices: Annotated[_Capability | None, Lenient] = None
    config_options: Annotated[ConfigOptionsCapabilities | None, Lenient] = Field(None, alias="configOptions")


class ElicitationCapabilities(WireModel):
    form: Annotated[_Capability | None, Lenient] = None
    url: Annotated[_Capability | None, Lenient] = None


class AuthCapabilities(WireModel):
    terminal: Annotated[bool, default_on_error(False)] = False


class ClientCapabilities(WireModel):
    fs: Annotated[FileSystemCapabilities, default_on_error(FileSystemCapabilities)] = Field(
        default_factory=FileSystemCapabilities
    )
    terminal: Annotated[bool, default_on_error(False)] = False
    session: Annotated[ClientSessionCapabilities, default_on_error(ClientSessionCapabilities)] = Field(
        default_factory=ClientSessionCapabilities
    )
    elicitation: Annotated[ElicitationCapabilities, default_on_error(ElicitationCapabilities)] = Field(
        default_factory=ElicitationCapabilities
    )
    auth: Annotated[AuthCapabilities, default_on_error(AuthCapabilities)] = Field(default_factory=AuthCapabilities)
    plan: Annotated[_Capability | None, Lenient] = None
    """Unstable: the client takes ``plan_update`` and ``plan_removed`` updates (plans by id)."""
    subagent_sessions: Annotated[_Capability | None, Lenient] = Field(None, alias="subagents")

    @property
    def subagents(self) -> bool:
        """The client understands child sessions (``subagent_update``, ``session_message``); unstable."""
        return self.subagent_sessions is not None

    meta: Annotated[dict[str, Any] | None, Lenient] = Field(None, alias="_meta")

    @property
    def notices(self) -> bool:
        return self.session.notices is not None

    @property
    def compaction(self) -> bool:
        return self.session.compaction is not None

    @property
    def elicitation_form(self) -> bool:
        return self.elicitation.form is not None

    @property
    def elicitation_url(self) -> bool:
        """The client opens an address for the user (``elicitation/create`` in URL mode) and takes
        ``elicitation/complete``."""
        return self.elicitation.url is not None

    @property
    def plans(self) -> bool:
        return self.plan is not None

    @property
    def boolean_options(self) -> bool:
        options = self.session.config_options
        return options is not None and options.boolean is not None

    @property
    def terminal_cards(self) -> bool:
        """Zed's extension ``_meta.terminal_output: true`` (or ``terminal_output_delta: true``): the client shows a
        terminal the agent owns from the ``_meta.terminal_info`` / ``terminal_output`` / ``terminal_exit`` of a tool
        call (only ``true`` counts)."""
        return self.terminal_output or self.terminal_delta

    @property
    def terminal_output(self) -> bool:
        return self.meta is not None and self.meta.get("terminal_output") is True

    @property
    def terminal_delta(self) -> bool:
        """``_meta.terminal_output_delta: true`` (codex-acp's name, not in any ACP schema): the same terminal card with
        its output appended from ``_meta.terminal_output_delta``. Zed's ``terminal_output`` wins where both are."""
        return not self.terminal_output and self.meta is not None and self.meta.get("terminal_output_delta") is True


class InitializeParams(WireModel):
    protocol_version: Any = Field(alias="protocolVersion")
    client_capabilities: Annotated[ClientCapabilities, default_on_error(ClientCapabilities)] = Field(
        default_factory=ClientCapabilities, alias="clientCapabilities"
    )


# -- prompt content -------------------------------------------------------------------------------------------


class TextContent(WireModel):
    type: Literal["text"]
    text: str


class ImageContent(WireModel):
    type: Literal["image"]
    data: str
    mime_type: str = Field(alias="mimeType")
    uri: str | None = None


class AudioContent(WireModel):
    type: Literal["audio"]
    data: str
    mime_type: str = Field(alias="mimeType")


class ResourceLinkContent(WireModel):
    type: Literal["resource_link"]
    uri: str
    name: str
    mime_type: str | None = Field(None, alias="mimeType")


class TextResource(WireModel):
    uri: str
    text: str
    mime_type: str | None = Field(None, alias="mimeType")


class BlobResource(WireModel):
    uri: str
    blob: str
    mime_type: str | None = Field(None, alias="mimeType")


def _resource_kind(value: Any) -> str:
    has_text = "text" in value if isinstance(value, dict) else isinstance(value, TextResource)
    return "~text" if has_text else "~blob"


class EmbeddedResourceContent(WireModel):
    type: Literal["resource"]
    resource: Annotated[
        Annotated[TextResource, Tag("~text")] | Annotated[BlobResource, Tag("~blob")], Discriminator(_resource_kind)
    ]


def _tag(key: str) -> Callable[[Any], str | None]:
    """A tagged union's discriminator whose tags start with ``~``, so ``_problem`` can leave them out of field
    names (``prompt[0].text``, not ``prompt[0].text.text``)."""

    def tag(value: Any) -> str | None:
        found = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
        return f"~{found}" if isinstance(found, str) else None

    return tag


ContentBlock = Annotated[
    Annotated[TextContent, Tag("~text")]
    | Annotated[ImageContent, Tag("~image")]
    | Annotated[AudioContent, Tag("~audio")]
    | Annotated[ResourceLinkContent, Tag("~resource_link")]
    | Annotated[EmbeddedResourceContent, Tag("~resource")],
    Discriminator(
        _tag("type"),
        custom_error_type="content_type",
        custom_error_message="'type' must be one of text, image, audio, resource_link, resource",
    ),
]


def _bounded(value: Any) -> Any:
    """Refused before anything reads it: a prompt over ``MAX_PROMPT_BYTES`` (text and attachments together)."""
    size = _prompt_bytes(value)
    if size > MAX_PROMPT_BYTES:
        raise ValueError(
            f"the prompt is {size / MIB:.1f} MiB, over the limit of {MAX_PROMPT_BYTES // MIB} MiB for text and"
            " attachments together; attach less, or point at files in the project instead of pasting them"
        )
    return value


BoundedPrompt = Annotated[list[ContentBlock], BeforeValidator(_bounded)]
"""A prompt's content blocks (``session/prompt``, ``_session/steering``), refused when too large."""


# -- session methods ------------------------------------------------------------------------------------------


class SessionIdParams(WireModel):
    """``session/close``, ``session/delete``, ``session/cancel``."""

    session_id: str = Field(alias="sessionId")


CancelParams = SessionIdParams


class SystemPromptParam(WireModel):
    """The unstable ``systemPrompt`` of the lifecycle requests. Read strictly: a mode or a block we do not support is
    an error, never ignored (``system_prompt`` checks them)."""

    mode: str
    content: list[ContentBlock]


class NewSessionParams(WireModel):
    cwd: str
    mcp_servers: list[Any] = Field(alias="mcpServers")
    """Raw entries: each is read (or reported as not started) by the MCP client, so a bad one loses only itself."""
    additional_directories: list[str] | None = Field(None, alias="additionalDirectories")
    system_prompt: SystemPromptParam | None = Field(None, alias="systemPrompt")


class LoadSessionParams(NewSessionParams):
    session_id: str = Field(alias="sessionId")


class ResumeSessionParams(WireModel):
    """``session/resume`` and ``session/fork``: like load, with ``mcpServers`` optional."""

    session_id: str = Field(alias="sessionId")
    cwd: str
    mcp_servers: list[Any] | None = Field(None, alias="mcpServers")
    additional_directories: list[str] | None = Field(None, alias="additionalDirectories")
    system_prompt: SystemPromptParam | None = Field(None, alias="systemPrompt")


class ForkMeta(WireModel):
    message_id: str | None = Field(None, alias="messageId", min_length=1)
    """Fork at this message (inclusive) instead of the end."""


class ForkSessionParams(ResumeSessionParams):
    meta: ForkMeta | None = Field(None, alias="_meta")


class ListSessionsParams(WireModel):
    cwd: str | None = None
    cursor: str | None = None
    archived: str | None = None
    """``exclude`` (the default), ``include`` or ``only``; anything else is refused (``archive_filter``)."""
    meta: Annotated[dict[str, Any] | None, Lenient] = Field(None, alias="_meta")

    @property
    def subagents(self) -> bool:
        """``_meta.hermes.subagents: true``: list child sessions too (by default they are reached through their
        parent)."""
        hermes = (self.meta or {}).get("hermes")
        return isinstance(hermes, dict) and hermes.get("subagents") is True


class SetTitleParams(WireModel):
    session_id: str = Field(alias="sessionId")
    title: str


class SteeringIdle(WireModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True, defer_build=True)
    idle_behavior: Literal["promptRequired"] | None = Field(None, alias="idleBehavior")


class SteeringMeta(WireModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True, defer_build=True)
    steering: SteeringIdle | None = None


class SteeringParams(WireModel):
    """``_session/steering``, in the shape claude-agent-acp and codex-acp read: the prompt's content blocks, and
    ``_meta.steering.idleBehavior`` (only ``promptRequired``) to get the message back when no turn runs."""

    session_id: str = Field(alias="sessionId", min_length=1)
    prompt: BoundedPrompt = Field(min_length=1)
    meta: SteeringMeta | None = Field(None, alias="_meta")

    @property
    def prompt_required(self) -> bool:
        return self.meta is not None and self.meta.steering is not None and self.meta.steering.idle_behavior is not None


class RewindParams(WireModel):
    """``_session/rewind``: back to just before the user message ``messageId`` (the session rewind proposal)."""

    session_id: str = Field(alias="sessionId")
    message_id: str = Field(alias="messageId", min_length=1)


class SetModeParams(WireModel):
    session_id: str = Field(alias="sessionId")
    mode_id: str = Field(alias="modeId")


class SetConfigOptionParams(WireModel):
    session_id: str = Field(alias="sessionId")
    config_id: str = Field(alias="configId")
    value: str | bool


class SetModelParams(WireModel):
    """The legacy ``session/set_model`` (gone from the schema; JetBrains still sends it)."""

    session_id: str = Field(alias="sessionId")
    model_id: str = Field(alias="modelId")


class PromptParams(WireModel):
    session_id: str = Field(alias="sessionId")
    prompt: BoundedPrompt


def _prompt_bytes(value: Any) -> int:
    """The size of a prompt's text and attachments as sent: the characters of its blocks' and embedded resources'
    strings (base64 data is ASCII; text is counted in characters, never copied to be measured)."""
    if not isinstance(value, list):
        return 0
    total = 0
    for block in value:
        if not isinstance(block, dict):
            continue
        for key in ("text", "data"):
            item = block.get(key)
            if isinstance(item, str):
                total += len(item)
        resource = block.get("resource")
        if isinstance(resource, dict):
            for key in ("text", "blob"):
                item = resource.get(key)
                if isinstance(item, str):
                    total += len(item)
    return total


class AuthenticateParams(WireModel):
    method_id: str = Field(alias="methodId")


class SetProviderParams(WireModel):
    """``providers/set`` (unstable): route one provider to a base URL with these headers (kept in memory only)."""

    provider_id: Annotated[str, Field(min_length=1, max_length=64)] = Field(alias="providerId")
    api_type: str = Field(alias="apiType")
    base_url: Annotated[str, Field(min_length=1)] = Field(alias="baseUrl")
    headers: dict[str, str] = Field(default_factory=dict)


class ProviderIdParams(WireModel):
    """``providers/disable`` (unstable)."""

    provider_id: Annotated[str, Field(min_length=1, max_length=64)] = Field(alias="providerId")


# -- the client's answers to our requests ---------------------------------------------------------------------


class SelectedOutcome(WireModel):
    outcome: Literal["selected"]
    option_id: str = Field(alias="optionId")


class CancelledOutcome(WireModel):
    outcome: Literal["cancelled"]


class PermissionResult(WireModel):
    outcome: Annotated[
        Annotated[SelectedOutcome, Tag("~selected")] | Annotated[CancelledOutcome, Tag("~cancelled")],
        Discriminator(
            _tag("outcome"),
            custom_error_type="permission_outcome",
            custom_error_message="'outcome' must be selected or cancelled",
        ),
    ]


class ReadTextFileResult(WireModel):
    content: str


class CreateTerminalResult(WireModel):
    terminal_id: str = Field(alias="terminalId")


class TerminalExitResult(WireModel):
    exit_code: int | None = Field(None, alias="exitCode")
    signal: str | None = None


class TerminalOutputResult(WireModel):
    output: str
    truncated: bool = False
    exit_status: TerminalExitResult | None = Field(None, alias="exitStatus")


class ElicitationResult(WireModel):
    action: str
    """``accept`` (with ``content``), ``decline`` or ``cancel``; anything else reads as ``cancel``."""
    content: dict[str, Any] | None = None
