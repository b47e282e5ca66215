"""``Budget``: what a session's prompts spend, their subagents' work included, against ``[budget]``'s caps.

A cap is a number of tokens (every model request's input and output tokens, summed: what a provider bills) or an
amount in USD (from the models' configured prices), for one prompt or for the whole session. One ``Budget`` serves a
session and every subagent under it (a child charges its root session's), so children count in their parent's.

The loop charges each model call's usage (``charge``) and, before each model request, asks whether the turn may go
on (``check``): the notices that are due (a warning when ``warn_at`` of a cap is spent, once per prompt for a
prompt's cap and once per session for the session's; once per session, that a USD cap cannot be held because a
model has no prices, while its tokens still count) and, at a cap, the ``TurnFailure`` (kind ``budget``) the turn
stops with. A request already sent is never cut: the check comes between requests, so the last one may pass a cap.

The session's spend so far is read once from its log (``spent_before``), so a session continued in another process
counts what it spent there; the prompt's starts at zero with each prompt of the root session (``start_prompt``).
While ``lifted()`` says so (the session's switch), the session's caps do not stop anything; the prompt's always do.
``status`` is what ``/status`` and the ``usage_update`` show: each cap set, spent and left. Pure bookkeeping: no
I/O, no ACP.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from hermes_acp.config import BudgetSettings
from hermes_acp.core import Usage
from hermes_acp.errors import TurnFailure
from hermes_acp.providers.catalog import CatalogModel

__all__ = ["LIFT_OPTION_NAME", "Budget", "BudgetCheck", "CapStatus", "tokens_of"]

Scope = Literal["prompt", "session"]
Unit = Literal["tokens", "usd"]
LIFT_OPTION_NAME: Final = "No session budget"
"""The name of the session's switch that lifts its caps (``sessions.switches``), as the stop notice names it."""


def tokens_of(usage: Usage) -> int:
    """The tokens a cap counts: input (cached ones included) and output (reasoning included)."""
    return usage.input_tokens + usage.output_tokens


@dataclass(frozen=True, slots=True)
class CapStatus:
    """One cap as it stands: its ``[budget]`` key, what is spent and what is left (never below zero)."""

    key: str
    scope: Scope
    unit: Unit
    limit: float
    spent: float
    lifted: bool = False
    """A session cap the session's switch lifted: shown, never enforced."""

    @property
    def left(self) -> float:
        return max(0.0, self.limit - self.spent)

    def amount(self, value: float) -> str:
        return f"${value:,.2f}" if self.unit == "usd" else f"{int(value):,} tokens"


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    notices: tuple[str, ...] = ()
    """Texts for the transcript, due now (warnings; the stop's own)."""
    stop: TurnFailure | None = None
    """Set when a cap is spent: the turn stops before its next model request."""


@dataclass
class _Tally:
    tokens: int = 0
    usd: float = 0.0
    unpriced: bool = False
    """A model without prices was used: ``usd`` is less than what was spent."""

    def add(self, tokens: int, usd: float | None) -> None:
        self.tokens += tokens
        self.usd += usd or 0.0
        self.unpriced = self.unpriced or usd is None


@dataclass
class Budget:
    settings: BudgetSettings
    price: Callable[[str], CatalogModel | None]
    """The configured model of an id (its prices), or None."""
    spent_before: Callable[[], Mapping[str, Usage]]
    """What the session spent before this object existed, by model id (read once, at the first use)."""
    lifted: Callable[[], bool] = lambda: False
    _prompt: _Tally = field(default_factory=_Tally)
    _session: _Tally | None = None
    _warned: set[str] = field(default_factory=set)
    _unpriced: set[str] = field(default_factory=set)
    _told_unpriced: bool = False

    @property
    def active(self) -> bool:
        """Whether any cap is set."""
        return bool(self._caps())

    def start_prompt(self) -> None:
        """A new prompt of the root session: its own caps start from nothing (and may warn again)."""
        self._prompt = _Tally()
        self._warned = {key for key in self._warned if not key.startswith("prompt_")}

    def charge(self, model_id: str, usage: Usage, *, prompt: bool = True) -> None:
        """One model call's usage (a subagent's too), counted in the session and, unless ``prompt`` is False (a
        request of the session's own beside its prompts: a title), in the prompt."""
        tokens, usd = self._priced(model_id, usage)
        if prompt:
            self._prompt.add(tokens, usd)
        self._tally().add(tokens, usd)

    @property
    def prompt_usd(self) -> float | None:
        """What the prompt cost so far; None when one of its models has no prices."""
        return None if self._prompt.unpriced else self._prompt.usd

    def status(self) -> list[CapStatus]:
        """Every cap that is set, with what is spent."""
        session = self._tally()
        found: list[CapStatus] = []
        for key, scope, unit, limit in self._caps():
            tally = self._prompt if scope == "prompt" else session
            spent = float(tally.tokens) if unit == "tokens" else tally.usd
            found.append(CapStatus(key, scope, unit, limit, spent, lifted=scope == "session" and self.lifted()))
        return found

    @property
    def session_exhausted(self) -> bool:
        """A session cap that is not lifted is spent, asked without using up a notice: whether a request of the
        session's own beside its prompts (a title, which no prompt's caps count) may be made."""
        return any(c.scope == "session" and c.spent >= c.limit and not c.lifted for c in self.status())

    def check(self) -> BudgetCheck:
        """Before a model request: the notices due, and the failure to stop with when a cap is spent."""
        notices: list[str] = []
        if not self._told_unpriced and self._unpriced and any(unit == "usd" for _, _, unit, _ in self._caps()):
            self._told_unpriced = True
            models = ", ".join(sorted(self._unpriced))
            notices.append(
                f"⚠ The budget in USD cannot be held: {models} has no prices (input_price and output_price in its"
                " provider's models); its tokens still count."
            )
        for cap in self.status():
            if cap.lifted:
                continue
            if cap.spent >= cap.limit:
                message = _stop_message(cap)
                notices.append(f"⛔ {message}")
                return BudgetCheck(tuple(notices), TurnFailure(kind="budget", message=message, limit=cap.key))
            if cap.spent >= self.settings.warn_at * cap.limit and cap.key not in self._warned:
                self._warned.add(cap.key)
                whose = "This prompt has" if cap.scope == "prompt" else "This session has"
                notices.append(
                    f"⚠ {whose} spent {cap.spent / cap.limit:.0%} of its budget of {cap.amount(cap.limit)}"
                    f" ({cap.amount(cap.left)} left, [budget] {cap.key})."
                )
        return BudgetCheck(tuple(notices))

    def _caps(self) -> list[tuple[str, Scope, Unit, float]]:
        s = self.settings
        caps: list[tuple[str, Scope, Unit, float | None]] = [
            ("prompt_tokens", "prompt", "tokens", s.prompt_tokens),
            ("prompt_usd", "prompt", "usd", s.prompt_usd),
            ("session_tokens", "session", "tokens", s.session_tokens),
            ("session_usd", "session", "usd", s.session_usd),
        ]
        return [(key, scope, unit, limit) for key, scope, unit, limit in caps if limit is not None]

    def _tally(self) -> _Tally:
        if self._session is None:
            self._session = _Tally()
            for model_id, usage in self.spent_before().items():
                self._session.add(*self._priced(model_id, usage))
        return self._session

    def _priced(self, model_id: str, usage: Usage) -> tuple[int, float | None]:
        model = self.price(model_id)
        cost = model.cost(usage) if model is not None else None
        if cost is None:
            self._unpriced.add(model_id)
        return tokens_of(usage), cost.amount if cost is not None else None


def _stop_message(cap: CapStatus) -> str:
    if cap.scope == "prompt":
        return (
            f"This prompt's budget of {cap.amount(cap.limit)} is spent ({cap.amount(cap.spent)}): the turn stops"
            f" before its next model request. Send a new prompt to go on, or raise [budget] {cap.key}."
        )
    return (
        f"This session's budget of {cap.amount(cap.limit)} is spent ({cap.amount(cap.spent)}): the turn stops"
        f" before its next model request. Raise [budget] {cap.key}, or lift the session's cap with the option"
        f' "{LIFT_OPTION_NAME}".'
    )
