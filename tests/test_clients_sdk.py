"""Field compatibility with the official SDKs: their response objects (built with their own types) go
through our parsers, their stream events through our reassemblers, and the request bodies we build
validate against their request types."""
import asyncio
import collections.abc as abc
import json

import pytest
from pydantic import TypeAdapter

from reasoning_kit.models.clients import AnthropicStream, OpenAIStream, anthropic_body, openai_body, parse_anthropic, parse_openai, price_for, sse_events
from reasoning_kit.models import LLMRequest, TextDelta, ToolCall, ToolCallDelta, ToolSpec, assistant, system, tool_result, user

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
from anthropic import types as at  # noqa: E402
from openai.types import CompletionUsage  # noqa: E402
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage  # noqa: E402
from openai.types.chat import completion_create_params as ccp  # noqa: E402
from openai.types.chat.chat_completion import Choice as OAChoice  # noqa: E402
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice  # noqa: E402
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall, ChoiceDeltaToolCallFunction  # noqa: E402
from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall, Function  # noqa: E402
from openai.types.completion_usage import PromptTokensDetails  # noqa: E402

SPEC = ToolSpec(name="get_weather", description="Current weather in a city.",
                parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
CALLS = [ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
         ToolCall(id="call_2", name="get_weather", arguments={"city": "Rome"})]
CONVERSATION = LLMRequest(
    messages=[system("Be brief."), user("Weather in Paris and Rome?"), assistant("Checking.", CALLS),
              tool_result(CALLS[0], "Paris: 18C"), tool_result(CALLS[1], "Rome: 24C"), user("And tomorrow?")],
    tools=[SPEC], tool_choice="auto", temperature=0.3, top_p=0.9, max_tokens=100, stop=["END"], seed=7)


def force(v):
    "Validated TypedDicts keep iterables lazy; walk them so that every item is validated."
    if isinstance(v, dict): return {k: force(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)): return [force(x) for x in v]
    if isinstance(v, abc.Iterator): return [force(x) for x in v]
    return v


def sse(objs) -> list[str]:
    return [line for o in objs for line in (f"data: {o.model_dump_json(exclude_unset=True)}", "")]


async def _events(lines):
    async def gen():
        for line in lines: yield line
    return [d async for _, d in sse_events(gen())]


# ---- requests ---------------------------------------------------------------------------------

def test_openai_body_validates_against_sdk_request_types():
    ta = TypeAdapter(ccp.CompletionCreateParamsNonStreaming)
    for req in [CONVERSATION, CONVERSATION.model_copy(update={"tool_choice": "get_weather", "n": 3}),
                CONVERSATION.model_copy(update={"tool_choice": "required"})]:
        for param in ("max_tokens", "max_completion_tokens"):
            body = openai_body(req, "gpt-4o-mini", max_tokens_param=param)
            assert force(ta.validate_python(body))["messages"][2]["tool_calls"][1]["function"]["arguments"] == '{"city":"Rome"}'
    streaming = TypeAdapter(ccp.CompletionCreateParamsStreaming)
    force(streaming.validate_python(openai_body(CONVERSATION, "gpt-4o-mini", stream=True)))
    bad = openai_body(CONVERSATION, "gpt-4o-mini"); bad["messages"][0]["role"] = "narrator"
    with pytest.raises(Exception): force(ta.validate_python(bad))  # the check can fail


def test_anthropic_body_validates_against_sdk_request_types():
    ta = TypeAdapter(at.message_create_params.MessageCreateParamsNonStreaming)
    for choice in ("auto", "required", "none", "get_weather"):
        body = anthropic_body(CONVERSATION.model_copy(update={"tool_choice": choice}), "claude-haiku-4-5")
        checked = force(ta.validate_python(body))
        assert [m["role"] for m in checked["messages"]] == ["user", "assistant", "user"]
        assert len(checked["messages"][2]["content"]) == 3
        assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "tool_result", "text"]  # one user turn
    streamed = anthropic_body(CONVERSATION, "claude-x", stream=True)  # (the SDK's streaming type trips a pydantic-core panic; same fields)
    assert streamed.pop("stream") is True and force(ta.validate_python(streamed))
    bad = anthropic_body(CONVERSATION, "claude-x"); bad["messages"][1]["content"][1]["type"] = "tool_call"
    with pytest.raises(Exception): force(ta.validate_python(bad))


# ---- whole responses ---------------------------------------------------------------------------

def test_openai_sdk_completion_objects_parse():
    sdk = ChatCompletion(
        id="chatcmpl-1", created=1, model="gpt-4o-mini-2024-07-18", object="chat.completion",
        choices=[OAChoice(index=0, finish_reason="tool_calls", message=ChatCompletionMessage(
                     role="assistant", content="Checking.", tool_calls=[
                         ChatCompletionMessageToolCall(id="call_a", type="function", function=Function(name="get_weather", arguments='{"city":"Paris"}')),
                         ChatCompletionMessageToolCall(id="call_b", type="function", function=Function(name="get_weather", arguments='{"city": "Rome"}'))])),
                 OAChoice(index=1, finish_reason="length", message=ChatCompletionMessage(role="assistant", content="Let me thi")),
                 OAChoice(index=2, finish_reason="stop", message=ChatCompletionMessage(role="assistant", content=None, refusal="I can't help with that."))],
        usage=CompletionUsage(prompt_tokens=2000, completion_tokens=100, total_tokens=2100,
                              prompt_tokens_details=PromptTokensDetails(cached_tokens=1500)))
    r = parse_openai(json.loads(sdk.model_dump_json()), price_for(sdk.model))
    assert [c.finish_reason for c in r.choices] == ["tool_calls", "length", "content_filter"]
    assert r.tool_calls == [ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
                            ToolCall(id="call_b", name="get_weather", arguments={"city": "Rome"})]
    assert r.texts == ["Checking.", "Let me thi", "I can't help with that."]
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.cached_tokens) == (2000, 100, 1500)
    assert r.usage.cost == pytest.approx((500 * 0.15 + 1500 * 0.075 + 100 * 0.6) / 1e6)
    assert r.model == "gpt-4o-mini-2024-07-18"


def test_anthropic_sdk_message_objects_parse():
    sdk = at.Message(
        id="msg_1", type="message", role="assistant", model="claude-sonnet-4-5-20250929", stop_reason="tool_use", stop_sequence=None,
        content=[at.TextBlock(type="text", text="Checking "), at.TextBlock(type="text", text="both."),
                 at.ToolUseBlock(type="tool_use", id="toolu_1", name="get_weather", input={"city": "Paris"}),
                 at.ToolUseBlock(type="tool_use", id="toolu_2", name="get_weather", input={"city": "Rome"})],
        usage=at.Usage(input_tokens=100, output_tokens=40, cache_read_input_tokens=2000, cache_creation_input_tokens=500))
    r = parse_anthropic(json.loads(sdk.model_dump_json()), price_for(sdk.model))
    assert (r.text, r.finish_reason) == ("Checking both.", "tool_calls")
    assert [(c.id, c.arguments) for c in r.tool_calls] == [("toolu_1", {"city": "Paris"}), ("toolu_2", {"city": "Rome"})]
    assert (r.usage.prompt_tokens, r.usage.cached_tokens, r.usage.completion_tokens) == (2600, 2000, 40)
    assert r.usage.cost == pytest.approx((100 * 3.0 + 2000 * 0.30 + 500 * 3.75 + 40 * 15.0) / 1e6)
    for reason, ours in [("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"), ("refusal", "content_filter"), ("pause_turn", "other")]:
        m = sdk.model_copy(update={"stop_reason": reason, "content": [at.TextBlock(type="text", text="x")]})
        assert parse_anthropic(json.loads(m.model_dump_json())).finish_reason == ours


# ---- streams -----------------------------------------------------------------------------------

def _chunk(**delta_and_more):
    finish = delta_and_more.pop("finish_reason", None)
    index = delta_and_more.pop("index", 0)
    return ChatCompletionChunk(id="c", created=1, model="gpt-4o-mini", object="chat.completion.chunk",
                               choices=[ChunkChoice(index=index, delta=ChoiceDelta(**delta_and_more), finish_reason=finish)])


def test_openai_sdk_chunks_reassemble():
    chunks = [_chunk(role="assistant", content=""), _chunk(content="Check"), _chunk(content="ing."),
              _chunk(index=1, content="Other sample."),
              _chunk(tool_calls=[ChoiceDeltaToolCall(index=0, id="call_a", type="function", function=ChoiceDeltaToolCallFunction(name="get_weather", arguments=""))]),
              _chunk(tool_calls=[ChoiceDeltaToolCall(index=0, function=ChoiceDeltaToolCallFunction(arguments='{"ci'))]),
              _chunk(tool_calls=[ChoiceDeltaToolCall(index=1, id="call_b", type="function", function=ChoiceDeltaToolCallFunction(name="get_weather", arguments='{"city":'))]),
              _chunk(tool_calls=[ChoiceDeltaToolCall(index=0, function=ChoiceDeltaToolCallFunction(arguments='ty":"Paris"}'))]),
              _chunk(tool_calls=[ChoiceDeltaToolCall(index=1, function=ChoiceDeltaToolCallFunction(arguments='"Rome"}'))]),
              _chunk(finish_reason="tool_calls"), _chunk(index=1, finish_reason="stop"),
              ChatCompletionChunk(id="c", created=1, model="gpt-4o-mini", object="chat.completion.chunk", choices=[],
                                  usage=CompletionUsage(prompt_tokens=30, completion_tokens=20, total_tokens=50))]
    data = asyncio.run(_events(sse(chunks) + ["data: [DONE]", ""]))
    acc = OpenAIStream(); deltas = [d for x in data for d in acc.feed(x)]
    r = acc.response(price_for("gpt-4o-mini"))
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta) and d.index == 0) == "Checking."
    assert [d.call for d in deltas if isinstance(d, ToolCallDelta)] == [0, 0, 1, 0, 1]
    assert r.tool_calls == [ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
                            ToolCall(id="call_b", name="get_weather", arguments={"city": "Rome"})]
    assert r.texts == ["Checking.", "Other sample."] and [c.finish_reason for c in r.choices] == ["tool_calls", "stop"]
    assert r.usage.total_tokens == 50 and r.usage.cost == pytest.approx((30 * 0.15 + 20 * 0.6) / 1e6)


def test_anthropic_sdk_stream_events_reassemble():
    events = [
        at.RawMessageStartEvent(type="message_start", message=at.Message(
            id="m", type="message", role="assistant", model="claude-haiku-4-5", content=[], stop_reason=None, stop_sequence=None,
            usage=at.Usage(input_tokens=50, output_tokens=1, cache_read_input_tokens=100))),
        at.RawContentBlockStartEvent(type="content_block_start", index=0, content_block=at.TextBlock(type="text", text="")),
        at.RawContentBlockDeltaEvent(type="content_block_delta", index=0, delta=at.TextDelta(type="text_delta", text="Check")),
        at.RawContentBlockDeltaEvent(type="content_block_delta", index=0, delta=at.TextDelta(type="text_delta", text="ing.")),
        at.RawContentBlockStopEvent(type="content_block_stop", index=0),
        at.RawContentBlockStartEvent(type="content_block_start", index=1, content_block=at.ToolUseBlock(type="tool_use", id="toolu_1", name="get_weather", input={})),
        at.RawContentBlockDeltaEvent(type="content_block_delta", index=1, delta=at.InputJSONDelta(type="input_json_delta", partial_json='{"city": ')),
        at.RawContentBlockDeltaEvent(type="content_block_delta", index=1, delta=at.InputJSONDelta(type="input_json_delta", partial_json='"Paris"}')),
        at.RawContentBlockStopEvent(type="content_block_stop", index=1),
        at.RawContentBlockStartEvent(type="content_block_start", index=2, content_block=at.ToolUseBlock(type="tool_use", id="toolu_2", name="get_weather", input={})),
        at.RawContentBlockDeltaEvent(type="content_block_delta", index=2, delta=at.InputJSONDelta(type="input_json_delta", partial_json='{"city": "Rome"}')),
        at.RawContentBlockStopEvent(type="content_block_stop", index=2),
        at.RawMessageDeltaEvent(type="message_delta", delta={"stop_reason": "tool_use", "stop_sequence": None},
                                usage=at.MessageDeltaUsage(output_tokens=33)),
        at.RawMessageStopEvent(type="message_stop")]
    lines = [line for e in events for line in (f"event: {e.type}", f"data: {e.model_dump_json(exclude_unset=True)}", "")]
    data = asyncio.run(_events(lines))
    acc = AnthropicStream(); deltas = [d for x in data for d in acc.feed(x)]
    r = acc.response(price_for("claude-haiku-4-5"))
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Checking." == r.text
    assert [(c.id, c.arguments) for c in r.tool_calls] == [("toolu_1", {"city": "Paris"}), ("toolu_2", {"city": "Rome"})]
    assert (r.finish_reason, r.usage.prompt_tokens, r.usage.cached_tokens, r.usage.completion_tokens) == ("tool_calls", 150, 100, 33)
