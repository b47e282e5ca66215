"""MCP client plumbing for the MCP servers an editor passes to a session (stdio, streamable HTTP, SSE).

``McpServers`` is what a session holds: it starts the servers in the session's owner task, waits for them (bounded)
before a turn, and offers their tools as ``mcp__<server>__<tool>``. ``SupervisedConnection`` is the one supervised
MCP connection (owned by one task, rebuilt after a drop, requests at most once) that each server's
``ServerConnection`` and the computer_use driver are built on. Only ``_wire`` imports the mcp SDK, and it is
loaded lazily the first time a connection starts, so a process whose sessions use no MCP server never imports it.
Servers behind OAuth sign in (``auth``, ``_oauth``), and what servers ask of the user goes through two ports the
session supplies: ``Questions`` (``elicitation``) and ``SignIn``. This package knows nothing about sessions, modes,
providers or ACP.
"""

from ._failures import NotConnected, RequestLost, ServerRejected, SignInFailed, SignInRequired, TransportDropped
from .auth import OAuthClient, SignIn, TokenFile
from .connection import (
    CALL_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    LIST_TIMEOUT_S,
    McpTimeouts,
    ServerConnection,
)
from .elicitation import Answer, FormQuestion, Questions, UrlQuestion
from .images import MAX_SAVED_IMAGES
from .naming import MAX_NAME_LENGTH, ToolKey, assign_names
from .prompts import PromptArgument, ServerPrompt
from .remote_tools import McpTool, UtilityTool
from .schema import normalise_schema
from .servers import READY_WAIT_S, McpServers, ServerStatus
from .specs import HttpSpec, ServerSpec, StdioSpec, UnusableSpec, parse_specs
from .supervisor import LinkState, Live, SupervisedConnection
from .untrusted import MAX_RESULT_CHARS, public_meta

__all__ = [
    "CALL_TIMEOUT_S",
    "CONNECT_TIMEOUT_S",
    "LIST_TIMEOUT_S",
    "MAX_NAME_LENGTH",
    "MAX_RESULT_CHARS",
    "MAX_SAVED_IMAGES",
    "READY_WAIT_S",
    "Answer",
    "FormQuestion",
    "HttpSpec",
    "LinkState",
    "Live",
    "McpServers",
    "McpTimeouts",
    "McpTool",
    "NotConnected",
    "OAuthClient",
    "PromptArgument",
    "Questions",
    "RequestLost",
    "ServerConnection",
    "ServerPrompt",
    "ServerRejected",
    "ServerSpec",
    "ServerStatus",
    "SignIn",
    "SignInFailed",
    "SignInRequired",
    "StdioSpec",
    "SupervisedConnection",
    "TokenFile",
    "ToolKey",
    "TransportDropped",
    "UnusableSpec",
    "UrlQuestion",
    "UtilityTool",
    "assign_names",
    "normalise_schema",
    "parse_specs",
    "public_meta",
]
