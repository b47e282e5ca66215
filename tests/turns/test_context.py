"""Context accounting and the compaction plan as pure functions: the estimate, the reported anchor, where the
history is split, what is cut to a stub, the transcript the summarising model reads, and the history a compaction
event leaves."""

from __future__ import annotations

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    ContextCompacted,
    ImagePart,
    Message,
    ServerToolResultPart,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from hermes_acp.providers.base import ProviderRequest, ToolSpec
from hermes_acp.turns import SessionProjection
from hermes_acp.turns.compaction import plan, stub_text, transcript
from hermes_acp.turns.context import IMAGE_TOKENS, MESSAGE_TOKENS, measure, message_tokens, text_tokens, tools_tokens
from hermes_acp.turns.projection import SUMMARY_FOOTER, SUMMARY_HEADER, Anchor, compacted_history


def user(text: str) -> UserMessage:
    return UserMessage(parts=[TextPart(text=text)])


def assistant(text: str, *calls: ToolCallPart) -> AssistantMessage:
    return AssistantMessage(parts=[TextPart(text=text), *calls])


def result(call_id: str, text: str) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, name="read_file", parts=[TextPart(text=text)])


def compacted(replaced: int, summary: str = "S", **fields: object) -> ContextCompacted:
    values: dict[str, object] = {"method": "summary", **fields}
    return ContextCompacted(
        turn_id="t",
        compaction_id="c",
        message_id="m",
        trigger="threshold",
        replaced=replaced,
        summary=summary,
        **values,
    )


def test_the_estimate_counts_text_by_characters_images_by_a_fixed_cost_and_tools_by_their_json() -> None:
    assert [text_tokens(t) for t in ("", "abc", "abcd", "abcde")] == [0, 1, 1, 2]
    with_image = UserMessage(parts=[TextPart(text="x" * 40), ImagePart(media_type="image/png", data="A" * 99_999)])
    assert message_tokens(with_image) == (MESSAGE_TOKENS + 10, IMAGE_TOKENS)
    call = ToolCallPart(id="c1", name="echo", arguments='{"message": "hi"}')
    assert message_tokens(assistant("", call)) == (MESSAGE_TOKENS + text_tokens("c1" + "echo" + call.arguments), 0)
    spec = ToolSpec(name="echo", description="Echo.", input_schema={"type": "object"})
    assert tools_tokens([spec]) == text_tokens("echo" + "Echo." + '{"type":"object"}')


def test_a_reported_usage_anchors_the_count_and_only_what_came_after_it_is_estimated() -> None:
    projection = SessionProjection()
    projection.sent_fixed = 50
    for event in (
        AssistantMessageStored(
            turn_id="t",
            message_id="m",
            message=assistant("hello"),
            model_id="p:m",
            usage=Usage(input_tokens=900, output_tokens=100),
        ),
    ):
        projection.history.append(user("hi"))
        projection.apply(event)
    assert projection.anchor == Anchor(tokens=1_000, messages=2, fixed=50)
    messages: list[Message] = [*projection.history, user("x" * 400)]
    request = ProviderRequest(model="m", system="s" * 280, messages=messages)  # fixed now 70: 20 more than sent
    assert measure(request, projection.anchor).used == 1_000 + 20 + MESSAGE_TOKENS + 100
    assert measure(request, None).used == measure(request, None).parts.total
    projection.apply(compacted(1))
    after: Anchor | None = projection.anchor  # (read again: the apply above replaced it)
    assert (after, projection.compactions) == (None, 1)
    assert projection.usage_by_model == {"p:m": Usage(input_tokens=900, output_tokens=100)}


def test_a_usage_that_cannot_be_one_request_is_not_an_anchor() -> None:
    """No input reported, or more than the model holds (a provider's own tool rounds summed, e.g. a web search)."""
    projection = SessionProjection()
    for usage in (Usage(output_tokens=5), Usage(input_tokens=404_500, output_tokens=943)):
        projection.apply(
            AssistantMessageStored(
                turn_id="t", message_id="m", message=assistant("x"), model_id="p:m", usage=usage, context_window=128_000
            )
        )
    assert projection.anchor is None
    assert projection.usage_by_model == {"p:m": Usage(input_tokens=404_500, output_tokens=948)}  # still paid for


def test_a_provider_side_tool_counts_the_block_that_goes_back() -> None:
    block = {"type": "web_search_tool_result", "content": [{"encrypted_content": "E" * 4_000}]}
    message = AssistantMessage(
        parts=[ServerToolResultPart(tool_call_id="s1", name="web_search_tool_result", text="3 results", block=block)]
    )
    assert message_tokens(message)[0] > 1_000


def history_of_turns(count: int, size: int) -> list[Message]:
    history: list[Message] = []
    for n in range(count):
        history += [user(f"u{n} " + "x" * size), assistant(f"a{n} " + "y" * size)]
    return history


def test_the_split_keeps_the_most_recent_whole_turns_that_fit_and_replaces_the_rest() -> None:
    history = [*history_of_turns(6, 400), user("now")]
    planned = plan(history, history, fixed=100, used=2_000, window=2_000, threshold=0.8, trigger="threshold")
    # room 1,500, of which 600 for the kept part: two whole turns (4 × 106) and the new prompt.
    assert planned is not None and (planned.replaced, planned.stubs, planned.summary_tokens) == (8, {}, 256)


def test_the_split_never_falls_between_a_call_and_its_result() -> None:
    history: list[Message] = [user("start")]
    for n in range(8):
        call = ToolCallPart(id=f"c{n}", name="read_file", arguments="{}")
        history += [assistant("", call), result(f"c{n}", "r" * 300)]
    planned = plan(history, history, fixed=0, used=2_400, window=2_000, threshold=0.8, trigger="threshold")
    assert planned is not None
    assert isinstance(history[planned.replaced], AssistantMessage)  # the kept part starts with a call, not a result
    assert planned.stubs == {}


def test_results_of_the_current_turn_are_cut_oldest_first_before_the_split_moves_into_it() -> None:
    calls = [ToolCallPart(id=f"c{n}", name="read_file", arguments="{}") for n in range(3)]
    history: list[Message] = [
        user("old question"),
        assistant("old answer"),
        user("read three files"),
        assistant("", calls[0]),
        result("c0", "0" * 2_000),
        assistant("", calls[1]),
        result("c1", "1" * 2_000),
        assistant("", calls[2]),
        result("c2", "2" * 400),
    ]
    planned = plan(history, history, fixed=0, used=1_700, window=2_000, threshold=0.8, trigger="overflow")
    # overflow: aims at 0.7 × 1,600 = 1,120 tokens, 448 of them for the current turn's 1,144: both large results
    # become stubs (144 tokens each, with their first 400 characters) and the split stays at the turn's start.
    assert planned is not None and planned.replaced == 2 and list(planned.stubs) == ["c0", "c1"]
    assert planned.stubs["c0"] == stub_text(history[4])  # type: ignore[arg-type]
    tighter = plan(history, history, fixed=0, used=1_400, window=2_000, threshold=0.5, trigger="overflow")
    # 280 for the turn: stubs are not enough, so the split moves into the turn (before the second call); the first
    # result is summarised with the rest and needs no stub.
    assert tighter is not None and tighter.replaced == 5 and list(tighter.stubs) == ["c1"]
    huge: list[Message] = [user("read it"), assistant("", calls[0]), result("c0", "z" * 400_000)]
    alone = plan(huge, huge, fixed=0, used=100_000, window=2_000, threshold=0.8, trigger="threshold")
    assert alone is not None and (alone.replaced, list(alone.stubs)) == (0, ["c0"])  # nothing older: the stub alone


def test_nothing_worth_a_model_call_is_no_plan_and_manual_replaces_everything() -> None:
    history = [*history_of_turns(1, 40), user("now")]
    assert plan(history, history, fixed=1_700, used=1_750, window=2_000, threshold=0.8, trigger="threshold") is None
    assert plan([], [], fixed=10, used=10, window=2_000, threshold=0.8, trigger="manual") is None
    manual = plan(history, history, fixed=10, used=100, window=2_000, threshold=0.8, trigger="manual")
    assert manual is not None and manual.replaced == 3


def test_the_transcript_shows_images_as_labels_clips_results_and_leaves_out_the_oldest_when_too_long() -> None:
    call = ToolCallPart(id="c1", name="read_file", arguments='{"path": "a.py"}')
    messages: list[Message] = [
        UserMessage(parts=[TextPart(text="look"), ImagePart(media_type="image/png", data="AAAA", label="shot.png")]),
        assistant("Reading.", call),
        result("c1", "r" * 5_000),
    ]
    text = transcript(messages, max_chars=100_000)
    assert text.startswith("User: look[image: shot.png]\n\nAssistant: Reading.\nAssistant called read_file")
    assert "Result of read_file: " + "r" * 2_000 + "[… 3,000 more characters]" in text
    summary = user(SUMMARY_HEADER + "earlier work" + SUMMARY_FOOTER)
    long = [summary, *history_of_turns(20, 100)]
    short = transcript(long, max_chars=2_000)
    assert len(short) <= 2_000 and short.startswith("User: " + SUMMARY_HEADER)
    assert "earlier messages are left out here" in short and "u19 " in short and "u0 " not in short


def test_a_compaction_leaves_the_summary_then_the_kept_messages_with_stubs() -> None:
    call = ToolCallPart(id="c1", name="read_file", arguments="{}")
    history: list[Message] = [user("one"), assistant("two"), user("three"), assistant("", call), result("c1", "big")]
    head = SUMMARY_HEADER + "S" + SUMMARY_FOOTER
    assert compacted_history(history, compacted(2, stubs={"c1": "[cut]"})) == [
        UserMessage(parts=[TextPart(text=head), TextPart(text="\n\n"), TextPart(text="three")]),
        assistant("", call),
        result("c1", "[cut]"),
    ]
    assert compacted_history(history, compacted(3)) == [user(head), assistant("", call), result("c1", "big")]
    assert compacted_history(history, compacted(0, "", method="stubs", stubs={"c1": "[cut]"}))[-1] == result(
        "c1", "[cut]"
    )
    assert compacted_history(history, compacted(99)) == [user(head)]  # a log claiming more than there is
