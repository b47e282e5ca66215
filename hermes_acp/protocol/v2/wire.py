"""The ACP v2 messages we read, beside the v1 ones (``protocol/wire.py``), in the same style and with the same
``parse``: unknown fields ignored, capabilities lenient, required fields strict, every problem an
``InvalidParamsError`` naming the field in the client's spelling.

They follow ``@agentclientprotocol/sdk`` 2.4.0's ``schema/v2/schema.json`` (and ``schema.unstable.json`` for
``session/fork``, ``session/status``, ``session/set_title``, ``session/archive`` / ``unarchive`` and
``providers/*``). Where a v2 request has exactly the v1 shape, the v1 model is the v2 one too and is named here
under its v2 method (``LoginParams`` is v1's ``AuthenticateParams``); only what changed has a model of its own:

- ``initialize``: ``info`` (required) and ``capabilities`` (``auth.terminal`` an object, ``elicitation``) in place
  of ``clientInfo`` / ``clientCapabilities``; a request for exactly v2 is read strictly, one for a later version
  leniently (an ``info`` that cannot be read is ``unknown``), as the SDK's router does (``parse_initialize``);
- ``session/new``, ``session/resume``, ``session/fork``: ``mcpServers`` optional (absent or null: none);
  ``session/resume`` takes ``replayFrom`` (only ``{"type": "start"}``: any other is refused, never replaced);
- ``session/prompt``: at least one content block;
- ``session/set_config_option``: the value's ``type`` (``id`` with a string, ``boolean`` with a boolean);
- ``tool_call/cancel``, ``terminal/cancel``: new.

``mcp_servers`` checks a v2 request's MCP servers as the SDK's ``assertSupportedMcpServers`` does (a type we do not
run, a name given twice: -32602 naming it) and hands the entries on in the shapes the MCP client reads. Request
``_meta.hermes`` (operation ids, cursors) is read by ``protocol/reliable/meta.py``, for v1 and v2 alike.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator

from hermes_acp.errors import InvalidParamsError
from hermes_acp.protocol.wire import (
    AuthenticateParams,
    BoundedPrompt,
    ElicitationCapabilities,
    ForkMeta,
    Lenient,
    ListSessionsParams,
    ProviderIdParams,
    SessionIdParams,
    SetProviderParams,
    SetTitleParams,
    SystemPromptParam,
    WireModel,
    default_on_error,
    parse,
)

__all__ = [
    "ArchiveParams",
    "CancelParams",
    "ClientCapabilities",
    "CloseParams",
    "DeleteParams",
    "ForkSessionParams",
    "Implementation",
    "InitializeParams",
    "ListSessionsParams",
    "LoginParams",
    "NewSessionParams",
    "PromptParams",
    "ProviderIdParams",
    "ReplayFrom",
    "ResumeSessionParams",
    "SetConfigOptionParams",
    "SetProviderParams",
    "SetTitleParams",
    "StatusParams",
    "TerminalCancelParams",
    "ToolCallCancelParams",
    "UnarchiveParams",
    "mcp_servers",
    "parse_initialize",
]

MCP_TYPES = ("stdio", "http")
"""The MCP transports a v2 session takes (v2 has no ``sse``; the unstable ``acp`` one is not run here)."""
UNKNOWN_INFO = {"name": "unknown", "version": "unknown"}


# -- initialize -----------------------------------------------------------------------------------------------


class AuthCapabilities(WireModel):
    terminal: Annotated[dict[str, Any] | None, Lenient] = None
    """An object in v2 (v1's was the boolean ``true``): the client runs terminal auth methods."""


class ClientCapabilities(WireModel):
    """What a v2 client advertises. Everything v1 gated behind a capability (notices, compaction updates, plans by
    id, agent-owned terminals, boolean options, subagents) is baseline in v2; the client's own file system and
    terminals are gone."""

    auth: Annotated[AuthCapabilities, default_on_error(AuthCapabilities)] = Field(default_factory=AuthCapabilities)
    elicitation: Annotated[ElicitationCapabilities, default_on_error(ElicitationCapabilities)] = Field(
        default_factory=ElicitationCapabilities
    )
    meta: Annotated[dict[str, Any] | None, Lenient] = Field(None, alias="_meta")

    @property
    def terminal_auth(self) -> bool:
        return self.auth.terminal is not None

    @property
    def elicitation_form(self) -> bool:
        return self.elicitation.form is not None

    @property
    def elicitation_url(self) -> bool:
        return self.elicitation.url is not None


class Implementation(WireModel):
    name: str
    version: str
    title: str | None = None


class InitializeParams(WireModel):
    protocol_version: int = Field(alias="protocolVersion", ge=0, le=65_535)
    info: Implementation
    capabilities: Annotated[ClientCapabilities, default_on_error(ClientCapabilities)] = Field(
        default_factory=ClientCapabilities
    )


def parse_initialize(raw: Any) -> InitializeParams:
    """A v2 ``initialize`` request: strict for version 2, lenient for a later one (an ``info`` that cannot be read
    is ``unknown``; the version is answered as 2 anyway)."""
    if isinstance(raw, dict) and isinstance(raw.get("protocolVersion"), int) and raw["protocolVersion"] > 2:
        try:
            parse(Implementation, raw.get("info"))
        except InvalidParamsError:
            raw = {**raw, "info": UNKNOWN_INFO}
    return parse(InitializeParams, raw)


# -- sessions -------------------------------------------------------------------------------------------------


def _none_is_empty(value: Any) -> Any:
    return [] if value is None else value


McpServerList = Annotated[list[Any], BeforeValidator(_none_is_empty)]
"""``mcpServers`` of a v2 request: optional, null meaning none (the schema's ``x-deserialize-default-on-null``)."""


class NewSessionParams(WireModel):
    cwd: str
    mcp_servers: McpServerList = Field(default_factory=list, alias="mcpServers")
    additional_directories: list[str] | None = Field(None, alias="additionalDirectories")
    system_prompt: SystemPromptParam | None = Field(None, alias="systemPrompt")


class ReplayFrom(WireModel):
    """Where a resume replays the session from: only its start. Any other ``type`` is refused (-32602), never read
    as another cursor."""

    type: Literal["start"]


class ResumeSessionParams(WireModel):
    """``session/resume``, which replaces v1's ``session/load``: the session with the complete set of MCP servers
    (earlier ones are not restored), its history replayed first when ``replayFrom`` says so."""

    session_id: str = Field(alias="sessionId")
    cwd: str
    mcp_servers: McpServerList = Field(default_factory=list, alias="mcpServers")
    additional_directories: list[str] | None = Field(None, alias="additionalDirectories")
    replay_from: ReplayFrom | None = Field(None, alias="replayFrom")
    system_prompt: SystemPromptParam | None = Field(None, alias="systemPrompt")


class ForkSessionParams(WireModel):
    """``session/fork`` (unstable); ``_meta.messageId`` forks at that message, as on v1."""

    session_id: str = Field(alias="sessionId")
    cwd: str
    mcp_servers: McpServerList = Field(default_factory=list, alias="mcpServers")
    additional_directories: list[str] | None = Field(None, alias="additionalDirectories")
    system_prompt: SystemPromptParam | None = Field(None, alias="systemPrompt")
    meta: ForkMeta | None = Field(None, alias="_meta")


class PromptParams(WireModel):
    """``session/prompt``; answered ``{messageId}`` once the prompt is inserted, not when its turn ends."""

    session_id: str = Field(alias="sessionId")
    prompt: BoundedPrompt = Field(min_length=1)


class SetConfigOptionParams(WireModel):
    """``session/set_config_option``: ``type: "id"`` with a string value (a select), ``type: "boolean"`` with a
    boolean (a switch)."""

    session_id: str = Field(alias="sessionId")
    config_id: str = Field(alias="configId")
    type: Literal["id", "boolean"]
    value: str | bool

    @field_validator("value")
    @classmethod
    def _typed(cls, value: str | bool, info: ValidationInfo) -> str | bool:
        if info.data.get("type") == "boolean" and not isinstance(value, bool):
            raise ValueError("a boolean option takes true or false")
        if info.data.get("type") == "id" and not isinstance(value, str):
            raise ValueError("an id option takes a string")
        return value


class ToolCallCancelParams(WireModel):
    session_id: str = Field(alias="sessionId")
    tool_call_id: str = Field(alias="toolCallId", min_length=1)


class TerminalCancelParams(WireModel):
    session_id: str = Field(alias="sessionId")
    terminal_id: str = Field(alias="terminalId", min_length=1)


CloseParams = SessionIdParams
CancelParams = SessionIdParams
"""``session/cancel`` (a notification): cancels the foreground work and the prompts not yet inserted."""
DeleteParams = SessionIdParams
StatusParams = SessionIdParams
"""``session/status`` (unstable)."""
ArchiveParams = SessionIdParams
UnarchiveParams = SessionIdParams
LoginParams = AuthenticateParams
"""``auth/login`` (v1's ``authenticate``)."""


def mcp_servers(raw: list[Any]) -> list[Any]:
    """``raw`` checked as the SDK checks a v2 request's servers; each entry goes on as it came (the MCP client
    reads ``{"type": "stdio"}`` with optional ``args`` and ``env`` as it reads v1's stdio entries)."""
    names: set[str] = set()
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            continue  # the MCP client reports it as not started; the others still run
        kind = entry.get("type")
        if kind not in MCP_TYPES:
            shown = "missing" if kind is None else repr(kind)
            raise InvalidParamsError(
                f"mcpServers[{index}].type: {shown} is not supported; this agent runs {' and '.join(MCP_TYPES)}"
                " servers",
                field=f"mcpServers[{index}].type",
                data={"type": kind},
            )
        name = entry.get("name")
        if isinstance(name, str):
            if name in names:
                raise InvalidParamsError(
                    f"mcpServers[{index}].name: {name!r} is given twice; each server needs a name of its own",
                    field=f"mcpServers[{index}].name",
                    data={"name": name},
                )
            names.add(name)
    return raw
