"""Settings: ``$HERMES_ACP_HOME/config.toml`` plus the environment (the quick start and the
``HERMES_ACP_<SECTION>__<KEY>`` rule), validated with pydantic.

Every key is optional; an unknown key or a bad value raises ``ConfigError`` naming the key and the file or variable
that set it (``config_sources`` lays the sources together and keeps who set what; ``config_env`` reads the rule).
This module reads files and the environment; it does not know HTTP, ACP or how a provider is called.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hermes_acp.config_env import EnvProblems, env_values
from hermes_acp.config_host import door_url, host_name, origin
from hermes_acp.config_sources import FILE, TABLE, describe, lay, leaves, origin_of, quick_start, where
from hermes_acp.errors import ConfigError
from hermes_acp.home import CONFIG_VARIABLE, default_home, named_config

__all__ = [
    "DEFAULT_HOME_READ",
    "SEND_BACK_FIELDS",
    "AgentSettings",
    "BudgetSettings",
    "ComputerUseSettings",
    "Effort",
    "HostSettings",
    "LimitSettings",
    "McpServerSettings",
    "McpSettings",
    "ModelEntry",
    "ProviderSettings",
    "SandboxSettings",
    "SendBackField",
    "Settings",
    "load_settings",
]

EMBED_MIN_BYTES = 64 * 1024
MIN_BODY_BYTES = 64 * 1024
"""The smallest ``[host] max_body_bytes``: an ``initialize`` with its capabilities must fit."""
MAX_BODY_BYTES = 1024 * 1024 * 1024
"""The largest ``[host] max_body_bytes``: what one connection may make the host hold for one message."""
EMBED_MAX_BYTES = 4 * 1024 * 1024
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
"""A thinking effort: sent as ``reasoning_effort`` (OpenAI-compatible) or as a thinking budget (Anthropic)."""
SendBackField = Literal["reasoning_content", "reasoning_details", "extra_content"]
"""A field of an OpenAI-compatible provider's answers that is kept and sent back with the assistant message."""
SEND_BACK_FIELDS: tuple[SendBackField, ...] = ("reasoning_content", "reasoning_details", "extra_content")
"""Every field ``send_back`` may name: what an unset ``send_back`` keeps and sends back when a stream carried it."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class ModelEntry(_Section):
    """One model of a provider. A bare string in ``models`` means ``{ id = "<string>" }``."""

    id: Annotated[str, Field(min_length=1)]
    name: str | None = None
    vision: bool = False
    context_window: Annotated[int, Field(gt=0)] | None = None
    """Tokens the model can hold (prompt and answer); 128,000 when unset."""
    max_output_tokens: Annotated[int, Field(gt=0)] | None = None
    efforts: list[Effort] | None = None
    """The thinking efforts the model accepts; without it no effort is ever sent."""
    default_effort: Effort | None = None
    input_price: Annotated[float, Field(ge=0)] | None = None
    """USD per million prompt tokens (cached ones included); with ``output_price``, usage gets a cost."""
    output_price: Annotated[float, Field(ge=0)] | None = None
    """USD per million output tokens (reasoning included)."""
    think_tags: bool = False
    """The model writes its reasoning into the answer between ``<think>`` and ``</think>`` (R1-style models on
    servers without a reasoning parser): that part is shown and kept as reasoning, not as text."""

    @model_validator(mode="after")
    def _consistent(self) -> ModelEntry:
        if self.efforts is not None:
            if not self.efforts:
                raise ValueError("efforts: give at least one effort, or leave the key out")
            if len(set(self.efforts)) != len(self.efforts):
                raise ValueError(f"efforts: each effort once (got {self.efforts!r})")
        if self.default_effort is not None and self.default_effort not in (self.efforts or []):
            raise ValueError(f"default_effort: {self.default_effort!r} is not one of efforts {self.efforts or []!r}")
        if (self.input_price is None) != (self.output_price is None):
            raise ValueError("input_price and output_price: give both (USD per million tokens) or neither")
        return self


class ProviderSettings(_Section):
    kind: Literal["openai", "anthropic"]
    base_url: Annotated[str, Field(min_length=1)]
    api_key_env: str | None = None
    models: list[ModelEntry] = Field(default_factory=list)
    timeout_s: Annotated[float, Field(gt=0)] = 120.0
    """Longest wait for the next byte of a response."""
    connect_timeout_s: Annotated[float, Field(gt=0)] = 10.0
    max_retries: Annotated[int, Field(ge=0, le=10)] = 3
    """Retries on 429, 5xx and connection errors, only before the first token."""
    send_back: list[SendBackField] | None = None
    """OpenAI-compatible only: the fields of the answers this service gets back with each assistant message that
    called tools (``reasoning_content``: DeepSeek, Kimi, GLM; ``reasoning_details``: OpenRouter, MiniMax;
    ``extra_content``: Gemini's thought signatures). Unset: each of them whenever the stream carried it, whatever
    the host (a proxy in front of the service included); ``[]`` sends nothing back."""

    def model_entry(self, model_id: str) -> ModelEntry | None:
        """The configured entry of one of this provider's models, if any."""
        return next((m for m in self.models if m.id == model_id), None)

    def max_output_tokens(self, model_id: str) -> int | None:
        """The configured output-token limit of one of this provider's models, if any."""
        entry = self.model_entry(model_id)
        return entry.max_output_tokens if entry is not None else None

    def send_back_fields(self) -> frozenset[SendBackField] | None:
        """The fields ``send_back`` names; None when it is unset (every field a stream carried goes back)."""
        return frozenset(self.send_back) if self.send_back is not None else None

    @model_validator(mode="after")
    def _send_back_needs_openai(self) -> ProviderSettings:
        if self.send_back and self.kind != "openai":
            raise ValueError('send_back: only for kind = "openai" (Anthropic\'s answers go back whole)')
        return self

    @field_validator("models", mode="before")
    @classmethod
    def _bare_model_names(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"id": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https:// (got {value!r})")
        return value.rstrip("/")


class ModelSection(_Section):
    default: str | None = None
    """``<provider id>:<model id>``; the first model of the first usable provider when absent."""


class AgentSettings(_Section):
    image_input_mode: Literal["auto", "native", "text"] = "auto"
    max_turn_requests: Annotated[int, Field(ge=1, le=10_000)] = 50
    title_model: str | None = None
    """A model to write session titles; without it the title is taken from the first prompt (no extra call)."""
    compaction_threshold: Annotated[float, Field(ge=0.1, le=1.0)] = 0.8
    """Of the window a request may fill (``context_window - max_output_tokens``): a request that would take more
    has the history compacted first."""
    compaction_model: str | None = None
    """``<provider id>:<model id>`` of a configured model that writes the compaction summaries; unset: the session's
    model."""
    max_subagents: Annotated[int, Field(ge=1, le=16)] = 4
    """How many children (``delegate`` calls) of one session run at the same time; more wait for a free slot."""
    subagent_depth: Annotated[int, Field(ge=0, le=4)] = 1
    """How deep delegation goes: 0 offers no ``delegate`` tool, 1 lets a session delegate but not its children."""
    subagent_model: str | None = None
    """``<provider id>:<model id>`` of a configured model the children run on; unset: the parent's model."""
    subagent_max_requests: Annotated[int, Field(ge=1, le=1_000)] = 25
    """Model requests one child may make before it is asked to report what it has."""
    subagent_max_tokens: Annotated[int, Field(ge=1_000, le=100_000_000)] = 400_000
    """Tokens (input and output of every request, summed) one child may use before it is asked to report."""
    subagent_timeout_s: Annotated[float, Field(gt=0, le=86_400)] = 600.0
    """Wall time one child may run before it is asked to report."""

    @field_validator("compaction_model", "subagent_model")
    @classmethod
    def _model_ref(cls, value: str | None) -> str | None:
        if value is not None:
            provider, _, model = value.partition(":")
            if not provider or not model:
                raise ValueError(f'must be "<provider id>:<model id>" (got {value!r})')
        return value


class AuxiliaryVisionSettings(_Section):
    model: str | None = None


class AuxiliarySettings(_Section):
    vision: AuxiliaryVisionSettings = Field(default_factory=AuxiliaryVisionSettings)


class VisionSettings(_Section):
    embed_target_bytes: int = 262_144

    @field_validator("embed_target_bytes")
    @classmethod
    def _clamp(cls, value: int) -> int:
        return max(EMBED_MIN_BYTES, min(EMBED_MAX_BYTES, value))


class PermissionSettings(_Section):
    timeout_s: Annotated[float, Field(ge=0)] = 0
    """0 = wait for the user as long as the turn lives; otherwise a timeout denies that one call."""


DEFAULT_DRIVER_COMMAND = ("cua-driver", "mcp", "--no-overlay")


class ComputerUseSettings(_Section):
    driver_command: Annotated[list[str], Field(min_length=1)] = Field(
        default_factory=lambda: list(DEFAULT_DRIVER_COMMAND)
    )
    call_timeout_s: Annotated[float, Field(gt=0)] = 30.0


DEFAULT_HOME_READ: tuple[str, ...] = (
    "~/.gitconfig",
    "~/.config/git",
    "~/.local/bin",
    "~/.local/lib",
    "~/.cargo/bin",
    "~/.rustup",
    "~/.nvm",
    "~/.volta",
    "~/.bun/bin",
    "~/.deno/bin",
    "~/.pyenv",
    "~/go/bin",
    "~/.sdkman/candidates",
    "~/.cache/pip",
)
"""What commands may read of the home unless ``[sandbox] home_read`` says otherwise: git's settings, and the
toolchains and read-only caches ``PATH`` or a build looks for. No credential file (and the known ones inside these
folders stay masked). Only caches a tool can use read-only: pip's is (it goes on without writing), npm's is not
(it fails with EROFS), so npm gets a fresh cache in the command's home unless ``home_write`` names ``~/.npm``."""


class LimitSettings(_Section):
    """``[sandbox.limits]``: what one command may use; 0 means no limit (docs: README, "Security")."""

    processes: Annotated[int, Field(ge=0)] = 1024
    """Tasks (processes and threads) of one command."""
    memory_mib: Annotated[int, Field(ge=0)] = 8192
    """Memory of one command (where a memory cgroup can be made) and of each of its processes."""
    cpu_s: Annotated[int, Field(ge=0)] = 1800
    """CPU seconds of each process."""
    file_size_mib: Annotated[int, Field(ge=0)] = 8192
    """The largest file a process may write."""
    tmp_mib: Annotated[int, Field(ge=0)] = 4096
    """The size of each tmpfs of the sandbox (/tmp, /var/tmp, the home), which is memory."""


def _home_paths(value: list[str]) -> list[str]:
    for path in value:
        if "\0" in path:
            raise ValueError(f"{path!r} contains a NUL character")
        if not (path.startswith(("~/", "/")) or path == "~"):
            raise ValueError(f"{path!r} must be a path in the home (~/...) or an absolute path")
        if path == "~":
            raise ValueError("the whole home cannot be bound: name what commands need (~/.cache/..., ~/.config/...)")
    return value


class SandboxSettings(_Section):
    """``[sandbox]``: how commands (the terminal tool, local or in the editor's terminal) are contained."""

    mode: Literal["auto", "required", "off"] = "auto"
    """auto: bubblewrap where it works, else commands ask in every mode; required: no sandbox, no commands;
    off: commands run unconfined (the modes alone decide)."""
    network: bool = True
    """Whether sandboxed commands reach the network (never in read_only mode)."""
    home_read: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=lambda: list(DEFAULT_HOME_READ))
    """What commands may read of the home (each command gets a fresh, empty one): ``~/…``, or absolute paths outside
    the visible system. Replaces the default list."""
    home_write: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Like ``home_read``, writable (caches a user wants kept: ``~/.cargo/registry``, ``~/.cache/go-build``)."""
    mask: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """More paths hidden from commands (``~/…``, absolute, or relative to each of the session's directories)."""
    reveal: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Files of the session's directories that the secret rule would mask, shown: a pattern matched against the
    path relative to the directory or against the name (``.env.example``, ``tests/certs/*.pem``)."""
    pass_env: list[str] = Field(default_factory=list)
    """Environment variables children may inherit beyond the safe list, by exact name."""
    limits: LimitSettings = Field(default_factory=LimitSettings)

    @field_validator("pass_env")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @field_validator("mask", "reveal")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        for path in value:
            if "\0" in path:
                raise ValueError(f"{path!r} contains a NUL character")
        return value

    @field_validator("home_read", "home_write")
    @classmethod
    def _home(cls, value: list[str]) -> list[str]:
        return _home_paths(value)


IDLE_EXIT_S = 900.0
"""How long a host without a remote door waits idle before it exits, unless ``[host] idle_exit_s`` says."""


class HostSettings(_Section):
    """``[host]``: whether editors share one long-lived session host, and how it behaves (docs/architecture.md §14)."""

    mode: Literal["inline", "shared"] = "inline"
    """inline: the process an editor starts is the whole server (today's behaviour); shared: it is a thin front
    door to one session host per home, which sessions outlive the editor in."""
    on_leave: Literal["continue", "cancel"] = "continue"
    """What a shared host does with a connection's running turns when it leaves (inline mode always cancels)."""
    unattended_wait_s: Annotated[float, Field(ge=0)] = 0.0
    """How long a permission or elicitation request waits for a connection to attach when nobody is attached;
    0: as long as the turn lives."""
    idle_exit_s: Annotated[float, Field(ge=0)] | None = None
    """The host exits after this long with no connection and no running turn (0: never). Unset: 900 s, or never
    when ``listen`` names a remote door (nothing remote can start the host again): see ``idle_exit``."""
    listen: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Remote doors: ``ws://HOST:PORT`` or ``http://HOST:PORT`` (both serve WebSocket and Streamable HTTP on
    ``/acp``); off by default."""
    token_file: str | None = None
    """The file with the bearer token remote clients must send (created 0600 on first use); default
    ``$HERMES_ACP_HOME/host.token``."""
    allow_remote: bool = False
    """Whether ``listen`` may bind an address outside loopback (TLS belongs to a reverse proxy in front)."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Browser origins (``https://app.example``) whose pages may use a remote door; a request that carries any other
    ``Origin`` header is refused (403). None by default: no web page can use the door."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Names a request's ``Host`` header may carry besides the door's own address (``acp.example.com`` for any port,
    ``acp.example.com:443`` for that one): the public name of a proxy in front. Any other Host is refused (403)."""
    max_body_bytes: Annotated[int, Field(ge=MIN_BODY_BYTES, le=MAX_BODY_BYTES)] = 16 * 1024 * 1024
    """The largest HTTP body and WebSocket message a remote door takes (413; WebSocket close code 1009)."""

    @property
    def idle_exit(self) -> float:
        """The idle exit in effect, in seconds (0: never): ``idle_exit_s`` when set, else ``IDLE_EXIT_S`` for a host
        only local front doors reach (the next one starts it again), and never for one with a remote door."""
        if self.idle_exit_s is not None:
            return self.idle_exit_s
        return 0.0 if self.listen else IDLE_EXIT_S

    @field_validator("listen")
    @classmethod
    def _doors(cls, value: list[str]) -> list[str]:
        return [door_url(door) for door in value]

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        return [origin(written) for written in value]

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        return [host_name(written) for written in value]


class McpServerSettings(_Section):
    """``[mcp.servers.NAME]``: an MCP server every session gets beside the editor's (stdio: ``command``; HTTP or SSE:
    ``url``). When the editor passes a server of the same name with the same ``url``, the editor's entry is used and
    only this one's OAuth settings (``client_id``...) are added to it."""

    command: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] | None = None
    """A stdio server: the program and its arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables a stdio server gets over the safe base environment."""
    url: str | None = None
    """An HTTP or SSE server's endpoint."""
    transport: Literal["http", "sse"] = "http"
    headers: dict[str, str] = Field(default_factory=dict)
    client_id: Annotated[str, Field(min_length=1)] | None = None
    """The OAuth client id registered for us with the server's authorization server, for one that does not
    register clients dynamically."""
    client_secret_env: str | None = None
    """The environment variable holding that client's secret (a public client has none)."""
    redirect_port: Annotated[int, Field(ge=1024, le=65535)] | None = None
    """The loopback port of the redirect address registered with ``client_id`` (``http://127.0.0.1:PORT/callback``);
    unset: a free port, chosen once and then kept."""

    @model_validator(mode="after")
    def _one_kind(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (an HTTP or SSE server)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https:// (got {self.url!r})")
        oauth = (self.client_id, self.client_secret_env, self.redirect_port)
        if self.url is None and any(value is not None for value in oauth):
            raise ValueError("client_id, client_secret_env and redirect_port are for HTTP and SSE servers (url)")
        if self.client_id is None and (self.client_secret_env is not None or self.redirect_port is not None):
            raise ValueError("client_secret_env and redirect_port need a client_id")
        if self.client_secret_env is not None and not _ENV_NAME.fullmatch(self.client_secret_env):
            raise ValueError(f"client_secret_env: {self.client_secret_env!r} is not an environment variable name")
        return self


class McpSettings(_Section):
    """``[mcp]``: MCP servers beside the editor's (``[mcp.servers.NAME]``), and how long a turn waits for them."""

    servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    ready_wait_s: Annotated[float, Field(ge=0, le=600)] = 20.0
    """How long a turn's first model request waits for the session's MCP servers that are still starting (0: it
    does not wait; their tools join a later request once they are ready)."""

    @field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in value:
            if not name.strip():
                raise ValueError("a server needs a non-empty name")
        return value


class LoggingSettings(_Section):
    level: Literal["debug", "info", "warning", "error"] = "info"
    """What the log file keeps."""
    stderr_level: Literal["debug", "info", "warning", "error"] = "warning"
    """What stderr shows (some editors show every stderr line as an error); ``--verbose`` shows everything."""


class BudgetSettings(_Section):
    """``[budget]``: what one prompt and one session may spend, their subagents' work included (unset: no cap).

    Tokens are every model request's input and output tokens, summed (what a provider bills); USD comes from the
    models' ``input_price`` and ``output_price``, so a USD cap cannot be held for a model without prices (tokens
    still count, and the session is told once). At ``warn_at`` of a cap the user is warned; at the cap the turn
    stops before its next model request (``max_turn_requests``)."""

    prompt_tokens: Annotated[int, Field(ge=1)] | None = None
    session_tokens: Annotated[int, Field(ge=1)] | None = None
    prompt_usd: Annotated[float, Field(gt=0)] | None = None
    session_usd: Annotated[float, Field(gt=0)] | None = None
    warn_at: Annotated[float, Field(gt=0, le=1)] = 0.8
    """Of a cap: a warning notice when this share of it is spent."""


class TerminalSettings(_Section):
    """``[terminal]``: the shell commands run in."""

    shell: Annotated[str, Field(min_length=1)] | None = None
    """A shell by name or path (``bash``, ``pwsh``, ``cmd``, ``C:\\Program Files\\Git\\bin\\bash.exe``); unset: bash
    (else ``sh``) on Linux and macOS, PowerShell on Windows."""


class _FileSettings(_Section):
    """The shape of config.toml."""

    model: ModelSection = Field(default_factory=ModelSection)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    auxiliary: AuxiliarySettings = Field(default_factory=AuxiliarySettings)
    vision: VisionSettings = Field(default_factory=VisionSettings)
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    computer_use: ComputerUseSettings = Field(default_factory=ComputerUseSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    terminal: TerminalSettings = Field(default_factory=TerminalSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    host: HostSettings = Field(default_factory=HostSettings)

    @field_validator("providers")
    @classmethod
    def _provider_ids(cls, value: dict[str, ProviderSettings]) -> dict[str, ProviderSettings]:
        for provider_id in value:
            if not provider_id or ":" in provider_id:
                raise ValueError(f"provider id {provider_id!r} must be non-empty and contain no ':'")
        return value


class Settings(_FileSettings):
    """The effective settings: the file, merged with the environment."""

    home: Path
    config_file: Path | None = None
    """The file the settings were read from, when there was one."""
    sources: dict[str, str] = Field(default_factory=dict, exclude=True, repr=False)
    """Who set each key that is not at its default: ``"agent.max_turn_requests"`` → ``FILE`` or the variable's name
    (a whole table for the quick start's providers); see ``origin_of``."""

    def where(self, key: str) -> str:
        """What a message about ``key`` (dotted) names: the variable that set it, else the config file."""
        origin = origin_of(key.split("."), self.sources)
        if origin is not None and origin != FILE:
            return origin
        return str(self.config_file) if self.config_file is not None else "environment"

    @property
    def state_db(self) -> Path:
        return self.home / "state.db"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def mcp_auth_dir(self) -> Path:
        """Where MCP servers' OAuth tokens are kept (one 0600 file per server)."""
        return self.home / "mcp-auth"

    @property
    def host_token_file(self) -> Path:
        """The file with the remote door's bearer token: ``[host] token_file``, else ``host.token`` in the home."""
        configured = self.host.token_file
        return Path(os.path.expanduser(configured)) if configured else self.home / "host.token"


def load_settings(
    env: Mapping[str, str] | None = None, *, home: Path | None = None, config_file: Path | None = None
) -> Settings:
    """The effective settings: config.toml (the home's, the one ``HERMES_ACP_CONFIG`` names, or ``config_file``) with
    the environment laid over it, the quick start first, then every ``HERMES_ACP_<SECTION>__<KEY>`` (``config_env``).
    ``Settings.sources`` says which keys the file and which variables set."""
    env = os.environ if env is None else env
    home = home or default_home(env)
    if config_file is None:
        named = named_config(env)
        config_file = Path(named) if named else home / "config.toml"
        if named and not config_file.is_file():
            raise ConfigError(f"{config_file}: no such file (named by --config or {CONFIG_VARIABLE})")
    raw: dict[str, Any] = {}
    if config_file.is_file():
        try:
            raw = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{config_file}: not valid TOML: {exc}") from exc
        except OSError as exc:
            raise ConfigError(f"{config_file}: cannot be read: {exc.strerror or exc}") from exc
    origins: dict[tuple[str, ...], str] = dict.fromkeys((path for path, _ in leaves(raw)), FILE)
    merged = quick_start(raw, env, origins)
    providers = merged.get("providers")
    try:
        found = env_values(env, _FileSettings, list(providers) if isinstance(providers, dict) else [])
    except EnvProblems as exc:
        raise ConfigError(str(exc)) from exc
    for value in found:
        lay(merged, value.path, value.value, value.variable, origins)
    try:
        parsed = _FileSettings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(describe(exc, config_file, origins)) from exc
    for key in ("compaction_model", "subagent_model"):
        place = where(("agent", key), origins, config_file)
        _check_model_key(key, getattr(parsed.agent, key), parsed.providers, place)
    data = parsed.model_dump()
    data.update(
        home=home,
        config_file=config_file if config_file.is_file() else None,
        sources={".".join(path): origin for path, origin in origins.items() if path[0] != TABLE},
    )
    return Settings.model_validate(data)


def _check_model_key(key: str, model_id: str | None, providers: Mapping[str, ProviderSettings], where: str) -> None:
    """``agent.<key>`` names a configured model (of the file's providers or the environment's)."""
    if model_id is None:
        return
    provider_id, _, model = model_id.partition(":")
    provider = providers.get(provider_id)
    if provider is None or provider.model_entry(model) is None:
        known = ", ".join(f"{p}:{m.id}" for p, settings in providers.items() for m in settings.models) or "none"
        raise ConfigError(f"{where}: agent.{key}: {model_id!r} is not a configured model (models: {known})")
