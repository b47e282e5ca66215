"""``[budget]`` over the wire: a session's cap stops the next prompt before any model request, with a notice that says
how to go on and the stop reason ``max_turn_requests``; the boolean option that lifts it is offered only when a
session cap is set, and once on, the next prompt runs; a USD cap follows the models' prices, and a model without
prices is told once while its tokens still count; ``usage_update`` carries each cap spent and left, ``/status``
lists them, and the prompt's answer carries its cost; the title model's request is charged as a turn's is, and a
spent cap makes none."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.core import Usage
from hermes_acp.providers.base import ProviderRequest
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply
from tests.fakes.server import open_pair, scripted_model

from .test_first_use import BOOLEANS, set_switch

pytestmark = pytest.mark.anyio

BIG = Usage(input_tokens=900, output_tokens=100)
PRICED = replace(scripted_model(), input_price=10.0, output_price=100.0)
"""$0.009 + $0.01 = $0.019 for ``BIG``."""


def _replies(n: int) -> ScriptedProvider:
    return ScriptedProvider([text_reply(f"Answer {i}.", usage=BIG) for i in range(n)])


def _meters(pair: Any, session_id: str) -> list[dict[str, Any]]:
    return pair.client.of_kind("usage_update", session_id)  # type: ignore[no-any-return]


async def test_a_spent_session_cap_stops_the_next_prompt_until_its_switch_lifts_it(tmp_path: Path) -> None:
    provider = _replies(3)
    config = "[budget]\nsession_tokens = 1500\n"
    async with open_pair(tmp_path, provider=provider, config=config, client_capabilities=BOOLEANS) as pair:
        session_id = await pair.new_session()
        first = await pair.prompt(session_id, "one")
        second = await pair.prompt(session_id, "two")
        stopped = await pair.prompt(session_id, "three")
        asked = len(provider.requests)
        options = await set_switch(pair, session_id, "lift_session_budget", True)
        lifted = await pair.prompt(session_id, "four")
        text = pair.client.text(session_id)
        meters = _meters(pair, session_id)
    assert (first.stop_reason, second.stop_reason, stopped.stop_reason) == ("end_turn", "end_turn", "max_turn_requests")
    assert asked == 2, "the third prompt asked nothing: 2,000 of 1,500 were spent"
    assert "⚠ This session has spent" not in text, "the cap was passed in one step: no warning first"
    assert (
        "⛔ This session's budget of 1,500 tokens is spent (2,000 tokens): the turn stops before its next model"
        ' request. Raise [budget] session_tokens, or lift the session\'s cap with the option "No session budget".'
    ) in text
    limit = (stopped.field_meta or {})["hermes"]["limit"]
    assert (limit["kind"], limit["limit"]) == ("budget", "session_tokens")
    assert f"⛔ {limit['message']}" in text
    assert {o["id"]: o["currentValue"] for o in options if o["type"] == "boolean"}["lift_session_budget"] is True
    assert lifted.stop_reason == "end_turn"
    assert meters[-1]["_meta"]["hermes"]["budget"]["session_tokens"] == {
        "unit": "tokens",
        "limit": 1500,
        "spent": 3000,
        "left": 0,
        "lifted": True,
    }


async def test_the_lift_switch_is_offered_only_with_a_session_cap(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=_replies(0), client_capabilities=BOOLEANS) as pair:
        session = await pair.conn.new_session(cwd=str(pair.workspace), mcp_servers=[])
    offered = [o.model_dump()["id"] for o in session.config_options or []]
    assert "lift_session_budget" not in offered
    assert {"auto_compaction", "sandbox_network"} <= set(offered)


async def test_a_usd_cap_follows_the_prices_and_the_prompt_answer_carries_its_cost(tmp_path: Path) -> None:
    provider = _replies(3)
    config = "[budget]\nprompt_usd = 0.03\nsession_usd = 0.03\n"
    async with open_pair(tmp_path, provider=provider, models=[PRICED], config=config) as pair:
        session_id = await pair.new_session()
        first = await pair.prompt(session_id, "one")
        second = await pair.prompt(session_id, "two")
        third = await pair.prompt(session_id, "three")
        text = pair.client.text(session_id)
    assert first.field_meta["hermes"]["cost"] == {"amount": pytest.approx(0.019), "currency": "USD"}
    assert second.stop_reason == "end_turn", "$0.019 spent < $0.03: the second prompt's request is made"
    assert "⚠" not in text.split("Answer 0.")[1].split("Answer 1.")[0]
    assert third.stop_reason == "max_turn_requests", "$0.038 spent: the third prompt asks nothing"
    assert "⛔ This session's budget of $0.03 is spent ($0.04)" in text
    assert len(provider.requests) == 2


async def test_a_model_without_prices_cannot_hold_a_usd_cap_and_is_told_once(tmp_path: Path) -> None:
    provider = _replies(3)
    config = "[budget]\nsession_usd = 0.01\nsession_tokens = 2400\n"
    async with open_pair(tmp_path, provider=provider, config=config) as pair:
        session_id = await pair.new_session()
        responses = [await pair.prompt(session_id, p) for p in ("one", "two", "three")]
        text = pair.client.text(session_id)
        status = await pair.prompt(session_id, "/status")
        shown = pair.client.text(session_id)[len(text) :]
    told = "⚠ The budget in USD cannot be held: scripted:model has no prices"
    assert [r.stop_reason for r in responses] == ["end_turn"] * 3, "USD cannot stop anything; 2,000 < 2,400 tokens"
    assert text.count(told) == 1
    assert "⚠ This session has spent 83% of its budget of 2,400 tokens (400 tokens left" in text
    assert status.stop_reason == "end_turn"
    assert "- session (session_tokens): 3,000 tokens of 2,400 tokens spent, 0 tokens left" in shown
    assert "- session (session_usd): $0.00 of $0.01 spent, $0.01 left" in shown
    assert "cost" not in (responses[0].field_meta or {}).get("hermes", {})


async def test_compact_s_summary_is_charged_and_a_spent_cap_refuses_it(tmp_path: Path) -> None:
    """``/compact``'s summary request counts as the log counts it when the session is loaded (before, only a
    reload saw it), and once a cap is spent it makes no request."""
    provider = ScriptedProvider(
        [text_reply("Answer one.", usage=BIG), text_reply("A summary of the conversation.", usage=BIG)]
    )
    config = "[budget]\nsession_tokens = 1500\n"
    async with open_pair(tmp_path, provider=provider, config=config) as pair:
        session_id = await pair.new_session()
        first = await pair.prompt(session_id, "one")
        compacted = await pair.prompt(session_id, "/compact")
        stopped = await pair.prompt(session_id, "two")
        before = len(provider.requests)
        refused = await pair.prompt(session_id, "/compact")
        text = pair.client.text(session_id)
        meters = _meters(pair, session_id)
    assert (first.stop_reason, compacted.stop_reason) == ("end_turn", "end_turn")
    assert stopped.stop_reason == "max_turn_requests", "1,000 + the summary's 1,000 of 1,500 were spent"
    assert refused.stop_reason == "end_turn" and len(provider.requests) == before == 2
    assert "Not compacted: This session's budget of 1,500 tokens is spent (2,000 tokens)" in text
    assert meters[-1]["_meta"]["hermes"]["budget"]["session_tokens"]["spent"] == 2000


async def test_compact_is_a_prompt_for_the_caps_and_shows_the_warning_its_check_says(tmp_path: Path) -> None:
    """The last prompt's spent prompt cap is not ``/compact``'s (it is typed as a prompt, and is one), and a warning
    due when it checks the caps is shown with its reply, once, not dropped."""
    small = Usage(input_tokens=8, output_tokens=2)
    provider = ScriptedProvider(
        [text_reply("Answer one.", usage=BIG), text_reply("A summary.", usage=small), text_reply("Two.", usage=small)]
    )
    config = "[budget]\nprompt_tokens = 900\nsession_tokens = 1200\n"
    async with open_pair(tmp_path, provider=provider, config=config) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "one")
        await pair.prompt(session_id, "/compact")
        after_compact = pair.client.text(session_id)
        second = await pair.prompt(session_id, "two")
        text = pair.client.text(session_id)
    assert len(provider.requests) == 3, "the summary was asked for: 1,000 tokens were the last prompt's, not its"
    assert "Not compacted" not in text
    warning = "⚠ This session has spent 83% of its budget of 1,200 tokens"
    assert warning in after_compact.split("Answer one.")[1], "shown with /compact's reply"
    assert text.count(warning) == 1 and second.stop_reason == "end_turn"


TITLED = '[agent]\ntitle_model = "scripted:model"\n'


async def _title(pair: Any, session_id: str) -> str:
    await pair.client.wait_for(lambda: bool(pair.client.of_kind("session_info_update", session_id)))
    title: str = pair.client.of_kind("session_info_update", session_id)[-1]["title"]
    return title


async def test_the_title_model_s_request_is_charged_and_a_spent_cap_makes_none(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            text_reply("Answer one.", usage=BIG),
            text_reply("Parser fixes", usage=BIG),
            text_reply("Answer two.", usage=BIG),
            text_reply("Not asked for.", usage=BIG),
        ]
    )
    config = TITLED + "[budget]\nsession_tokens = 2500\n"
    async with open_pair(tmp_path, provider=provider, config=config) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "one")
        title = await _title(pair, session_id)
        second = await pair.prompt(session_id, "two")
        third = await pair.prompt(session_id, "three")
        meters = _meters(pair, session_id)
    assert title == "Parser fixes" and provider.requests[1].max_output_tokens == 32, "written by the title model"
    assert second.stop_reason == "end_turn"
    assert third.stop_reason == "max_turn_requests", "1,000 + the title's 1,000 + 1,000 of 2,500 were spent"
    assert meters[-1]["_meta"]["hermes"]["budget"]["session_tokens"]["spent"] == 3000
    assert len(provider.requests) == 3

    spent = tmp_path / "spent"
    spent.mkdir()
    provider = ScriptedProvider([text_reply("Answer one.", usage=BIG), text_reply("Not asked for.")])
    config = TITLED + "[budget]\nsession_tokens = 1000\n"
    async with open_pair(spent, provider=provider, config=config) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "Fix the parser")
        title = await _title(pair, session_id)
    assert title == "Fix the parser" and len(provider.requests) == 1, "a spent cap: the prompt's title, no request"


async def test_a_title_written_while_the_next_prompts_run_is_the_session_s_cost_and_is_asked_for_once(
    tmp_path: Path,
) -> None:
    """The title job runs beside the prompts: later prompts may start and end before its answer comes. Its request
    counts in the session's spend only (not in the prompt running when it ends), and a prompt answered meanwhile
    starts no second title request."""
    writing, answering = anyio.Event(), anyio.Event()
    asked_title, asked_third = anyio.Event(), anyio.Event()

    def reply(request: ProviderRequest) -> ScriptedReply:
        if "Write a title" in request.system:
            asked_title.set()
            return text_reply("Parser fixes", usage=BIG, hold=writing)
        if "three" in str(request.messages[-1]):
            asked_third.set()
            return text_reply("Answer.", usage=BIG, hold=answering)
        return text_reply("Answer.", usage=BIG)

    provider = ScriptedProvider([reply] * 5)
    config = TITLED + "[budget]\nprompt_tokens = 100000\nsession_tokens = 100000\n"
    async with open_pair(tmp_path, provider=provider, config=config) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "one")
        with anyio.fail_after(10):
            await asked_title.wait()
        await pair.prompt(session_id, "two")  # answered while the title is written
        async with anyio.create_task_group() as group:
            group.start_soon(pair.prompt, session_id, "three")
            with anyio.fail_after(10):
                await asked_third.wait()
            writing.set()
            title = await _title(pair, session_id)
            answering.set()
        third = _meters(pair, session_id)[-1]["_meta"]["hermes"]["budget"]
        await pair.prompt(session_id, "four")
        asked = [r.system for r in provider.requests]
    assert title == "Parser fixes"
    assert sum("Write a title" in system for system in asked) == 1, "one title request, though three prompts ended"
    assert third["prompt_tokens"]["spent"] == 1000, "the third prompt's own request only"
    assert third["session_tokens"]["spent"] == 4000, "three prompts' and the title's"
