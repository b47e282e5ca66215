"""``ExecClient``: the ACP client ``hermes-acp exec`` drives the server with, as an editor would.

It speaks ACP v1 over its end of the in-process link (``transports.memory``) through our own JSON-RPC dispatcher:
``initialize`` (no client capabilities: the agent reads and writes files and runs commands itself, and asks no
questions but permissions), ``session/new`` or ``session/resume``, ``session/set_mode`` and the model's config
option, ``session/prompt``, ``session/cancel``. It answers the two things the server sends a client that advertised
nothing: every ``session/update`` goes to the ``Watcher``, and every ``session/request_permission`` is answered at
once from the ``ApprovalPolicy``: an allowed call with its ``allow_once`` option; a refused one ends the turn (the
client cancels the prompt, as a user would, and answers the question ``cancelled``), after telling the watcher.
An error answer is raised as ``ClientRequestError`` (code, message, data). Knows ACP's client side, not the session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from hermes_acp.jsonrpc.boundary import ClientRequestError
from hermes_acp.jsonrpc.dispatcher import Dispatcher, RequestContext, Route
from hermes_acp.transports.memory import MemoryEnd
from hermes_acp.version import __version__

from .policy import ApprovalPolicy, Verdict

__all__ = ["PROTOCOL_VERSION", "ExecClient", "Watcher"]

PROTOCOL_VERSION = 1
SETUP_WAIT_S = 120.0
"""Bound on each request before the prompt (opening a session starts its MCP servers: none here, but a slow disk)."""


class Watcher(Protocol):
    def update(self, params: Mapping[str, Any]) -> None:
        """A ``session/update`` notification's params, as it arrived."""
        ...

    def refused(self, tool_call: Mapping[str, Any], verdict: Verdict) -> None:
        """The policy refused a call: the turn is being cancelled."""
        ...

    def allowed(self, tool_call: Mapping[str, Any], verdict: Verdict) -> None: ...


class ExecClient:
    def __init__(self, end: MemoryEnd, policy: ApprovalPolicy, watcher: Watcher):
        self.dispatcher = Dispatcher(end, end)
        self._policy = policy
        self._watcher = watcher
        self.session_id: str | None = None
        self.refusal: Verdict | None = None
        """The first refusal of the policy (it ended the turn)."""
        self.refused_title = ""
        """The title of the call it refused."""
        self.dispatcher.add_routes(
            [
                Route("session/update", self._update),
                Route("session/request_permission", self._permission),
            ],
            complete=True,
        )

    async def open(
        self, cwd: Path, additional: Sequence[Path], *, resume: str | None, mode: str | None, model: str | None
    ) -> dict[str, Any]:
        """``initialize``, then a new session (or ``resume``'s), in ``mode`` with ``model`` when given: its view."""
        await self._request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {},
                "clientInfo": {"name": "hermes-acp exec", "version": __version__},
            },
        )
        params: dict[str, Any] = {"cwd": str(cwd), "mcpServers": []}
        if additional:
            params["additionalDirectories"] = [str(path) for path in additional]
        if resume is not None:
            view = await self._request("session/resume", {**params, "sessionId": resume})
            self.session_id = resume
        else:
            view = await self._request("session/new", params)
            self.session_id = str(view["sessionId"])
        if mode is not None:
            await self._request("session/set_mode", {"sessionId": self.session_id, "modeId": mode})
        if model is not None:
            option = next(
                (o["id"] for o in view.get("configOptions") or [] if o.get("category") == "model"),
                "model",
            )
            await self._request(
                "session/set_config_option", {"sessionId": self.session_id, "configId": option, "value": model}
            )
        return dict(view)

    async def prompt(self, text: str) -> dict[str, Any]:
        """``session/prompt`` with ``text``; its answer (``ClientRequestError`` for an error answer)."""
        assert self.session_id is not None
        params = {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}
        return dict(await self.dispatcher.request("session/prompt", params, wait_s=None))

    async def cancel(self) -> None:
        """``session/cancel``: the turn ends ``cancelled`` after settling what it ran."""
        if self.session_id is not None and not self.dispatcher.client_gone:
            await self.dispatcher.notify("session/cancel", {"sessionId": self.session_id})

    async def _request(self, method: str, params: Mapping[str, Any]) -> Any:
        result = await self.dispatcher.request(method, params, wait_s=SETUP_WAIT_S)
        if not isinstance(result, dict):
            raise ClientRequestError(-32603, f"{method} answered {type(result).__name__}, not an object")
        return result

    async def _update(self, ctx: RequestContext, params: Any) -> None:
        if isinstance(params, dict):
            self._watcher.update(params)

    async def _permission(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        tool_call = params.get("toolCall") if isinstance(params, dict) else None
        options = params.get("options") if isinstance(params, dict) else None
        tool_call = tool_call if isinstance(tool_call, dict) else {}
        verdict = self._policy.decide(tool_call)
        allow = _option(options, "allow_once")
        if verdict.allowed and allow is not None:
            self._watcher.allowed(tool_call, verdict)
            return {"outcome": {"outcome": "selected", "optionId": allow}}
        if self.refusal is None:
            self.refusal = verdict if not verdict.allowed else Verdict(False, "the question offered no allow_once")
            title = tool_call.get("title")
            self.refused_title = title if isinstance(title, str) else str(tool_call.get("kind", ""))
            self._watcher.refused(tool_call, self.refusal)
            await self.cancel()
        return {"outcome": {"outcome": "cancelled"}}


def _option(options: Any, kind: str) -> str | None:
    if not isinstance(options, list):
        return None
    return next(
        (str(o["optionId"]) for o in options if isinstance(o, dict) and o.get("kind") == kind and "optionId" in o),
        None,
    )
