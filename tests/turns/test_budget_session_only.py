"""``Budget`` for a request of the session's own beside its prompts (a title): charged to the session and no
prompt, allowed while no session cap that is not lifted is spent, and asking uses up no notice."""

from __future__ import annotations

from hermes_acp.config import BudgetSettings
from hermes_acp.core import Usage
from hermes_acp.turns.budget import Budget

THOUSAND = Usage(input_tokens=900, output_tokens=100)


def _budget(settings: BudgetSettings, lifted: bool = False) -> Budget:
    return Budget(settings, lambda _: None, dict, lifted=lambda: lifted)


def test_a_session_only_charge_counts_in_the_session_and_not_in_the_prompt() -> None:
    budget = _budget(BudgetSettings(prompt_tokens=5000, session_tokens=5000))
    budget.charge("p:m", THOUSAND)
    budget.charge("p:small", THOUSAND, prompt=False)
    assert {cap.key: cap.spent for cap in budget.status()} == {"prompt_tokens": 1000, "session_tokens": 2000}


def test_only_a_spent_session_cap_that_is_not_lifted_is_exhausted_and_asking_warns_nobody() -> None:
    prompt_only = _budget(BudgetSettings(prompt_tokens=1000))
    prompt_only.charge("p:m", THOUSAND)
    assert not prompt_only.session_exhausted, "a prompt's cap is no title's"
    session = _budget(BudgetSettings(session_tokens=1000, warn_at=0.5))
    session.charge("p:m", THOUSAND)
    assert session.session_exhausted
    check = session.check()
    assert check.stop is not None and check.notices, "the notice was not used up by asking"
    lifted = _budget(BudgetSettings(session_tokens=1000), lifted=True)
    lifted.charge("p:m", THOUSAND)
    assert not lifted.session_exhausted, "the session's switch lifts it"
