"""How a ``hermes-acp exec`` run ended, as an exit code and as the result object (docs/ci.md, "Exit codes").

``EXIT_CODES`` is the one table: every outcome, its code and what it means; docs/ci.md prints the same
(``tests/unit/test_ci_docs.py`` keeps them equal). ``Outcome`` is built from the prompt's answer (its stop reason,
and ``_meta.hermes.limit`` for a limit), from an error answer (its ``data.kind``: a provider's failure, or a
configuration that lets no model work), or from what the run itself saw (a permission its policy refused, the
``--timeout``, a signal). Its ``failure`` is the server's ``TurnFailure`` as it came, or one of ours in the same
flat shape (``kind``, ``message``). Knows no ACP but the answer's fields.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any, Final, get_args

from hermes_acp.errors import LIMIT_KINDS, FailureKind
from hermes_acp.jsonrpc.boundary import ClientRequestError

__all__ = ["EXIT_CODES", "PROVIDER_KINDS", "Outcome"]

EXIT_CODES: Final[dict[str, tuple[int, str]]] = {
    "finished": (0, "a finished answer"),
    "failed": (
        1,
        "the turn failed: the provider after its retries (nothing answers, the key refused, the model unknown, 5xx,"
        " a stream cut for good), or the agent itself (its store, a bug)",
    ),
    "config": (
        2,
        "a usage or configuration error (bad options, a config that does not load, no model that can work, an"
        " unknown model, mode or session)",
    ),
    "limit": (
        3,
        "a budget or a limit was reached (tokens or cost of the prompt or the session; `max_turn_requests`; the"
        " model's output limit)",
    ),
    "refused": (4, "a permission the policy refused ended the turn (nothing of that call ran)"),
    "timeout": (5, "the `--timeout` was reached (the turn was cancelled)"),
    "model_refused": (6, "the model refused the task (stop reason `refusal`)"),
    "cancelled": (
        130,
        "cancelled by SIGINT (143: SIGTERM; 129: SIGHUP, or Windows closing the console, logging off or shutting"
        " down); the turn was cancelled cleanly",
    ),
}
"""Outcome → (exit code, meaning): the table docs/ci.md shows."""
PROVIDER_KINDS: Final = frozenset(get_args(FailureKind)) - LIMIT_KINDS - {"config"}
"""``TurnFailure`` kinds that are the provider's (exit code 1); ``config`` is exit code 2."""
_USAGE_CODES: Final = frozenset({-32602, -32002})
"""Invalid params (an unknown model or mode) and resource-not-found (no such session): the caller's mistake."""


@dataclass(frozen=True, slots=True)
class Outcome:
    name: str
    stop_reason: str | None = None
    failure: dict[str, Any] | None = None
    stopped_by: str | None = None
    """The shutdown that cut the run short, as ``platform.signals`` names it (``SIGINT``, ``CTRL_CLOSE_EVENT``...)."""

    @property
    def code(self) -> int:
        if self.stopped_by is not None:
            return 128 + _signal_number(self.stopped_by)
        return EXIT_CODES[self.name][0]

    @classmethod
    def of_answer(cls, answer: dict[str, Any]) -> Outcome:
        """A prompt that answered with a stop reason."""
        stop = str(answer.get("stopReason"))
        meta = answer.get("_meta")
        hermes = meta.get("hermes") if isinstance(meta, dict) else None
        limit = hermes.get("limit") if isinstance(hermes, dict) else None
        if stop == "end_turn":
            return cls("finished", stop)
        if stop in ("max_turn_requests", "max_tokens"):
            if not isinstance(limit, dict):
                what = "the model's output limit" if stop == "max_tokens" else "the turn's limit of model requests"
                limit = {"kind": stop, "message": f"The turn stopped at {what}.", "limit": stop}
            return cls("limit", stop, limit)
        if stop == "refusal":
            return cls("model_refused", stop, {"kind": "refusal", "message": "The model refused the task."})
        return cls("failed", stop, {"kind": "cancelled", "message": "The turn was cancelled by the agent."})

    @classmethod
    def of_error(cls, error: ClientRequestError) -> Outcome:
        """A request that answered with an error (before the prompt or instead of its answer)."""
        data = error.data if isinstance(error.data, dict) else {}
        kind = data.get("kind")
        if isinstance(kind, str) and (kind in PROVIDER_KINDS or kind == "config"):
            failure = {**data, "sentence": error.message}
            return cls("failed" if kind in PROVIDER_KINDS else "config", None, failure)
        config = error.code in _USAGE_CODES or data.get("reason") == "config"
        failure = {"kind": "config" if config else "agent_error", "message": error.message, "code": error.code}
        return cls("config" if config else "failed", None, failure)

    @classmethod
    def refused(cls, reason: str, title: str) -> Outcome:
        return cls("refused", "cancelled", {"kind": "permission_refused", "message": reason, "title": title})

    @classmethod
    def timed_out(cls, seconds: float, stop: str | None) -> Outcome:
        message = f"--timeout {seconds:g} s was reached: the turn was cancelled"
        return cls("timeout", stop, {"kind": "deadline", "message": message})

    @classmethod
    def signalled(cls, name: str, stop: str | None) -> Outcome:
        """Cut short by the shutdown ``name``: a signal, or one of Windows' console events (no signal: counted as a
        hang-up, the terminal gone)."""
        return cls("cancelled", stop, {"kind": "cancelled", "message": f"{name}: the turn was cancelled"}, name)

    @classmethod
    def usage(cls, message: str) -> Outcome:
        return cls("config", None, {"kind": "config", "message": message})

    @property
    def sentence(self) -> str:
        """What stderr's last line says (nothing for a finished answer)."""
        if self.failure is None:
            return ""
        said = self.failure.get("sentence") or self.failure.get("message") or self.name
        return str(said)


HANGUP = 1
"""SIGHUP's number on POSIX: the code a console's close, log-off or shutdown on Windows exits with (128 + 1), since
the terminal is gone as with a hang-up (Windows has no SIGHUP to read it from)."""


def _signal_number(name: str) -> int:
    member = signal.Signals.__members__.get(name)
    return member.value if member is not None else HANGUP
