"""What models return beyond text is kept: reasoning text and token counts, logprobs, Anthropic thinking blocks (and
they go back on the tool turn); none of it changes what a log without them looks like."""
import json

from reasoning_kit.models.clients import AnthropicStream, OpenAIStream, anthropic_body, parse_anthropic, parse_openai
from reasoning_kit.models import LLMRequest, LLMResponse, Usage, assistant, tool_result, user

LP = {"content": [{"token": "12", "logprob": -0.01, "top_logprobs": []}]}


def test_openai_reasoning_tokens_and_logprobs():
    r = parse_openai({"choices": [{"index": 0, "logprobs": LP, "finish_reason": "stop",
                                   "message": {"content": "12", "reasoning_content": "6 times 2"}}],
                      "usage": {"prompt_tokens": 5, "completion_tokens": 30, "completion_tokens_details": {"reasoning_tokens": 28}}})
    assert (r.message.reasoning, r.usage.reasoning_tokens, r.choices[0].logprobs) == ("6 times 2", 28, LP)
    assert (r.usage + r.usage).reasoning_tokens == 56


def test_openai_stream_keeps_reasoning_and_logprobs():
    acc = OpenAIStream()
    for c in [{"choices": [{"index": 0, "delta": {"reasoning_content": "6 x 2 "}}]},
              {"choices": [{"index": 0, "delta": {"reasoning_content": "is 12"}}]},
              {"choices": [{"index": 0, "delta": {"content": "12"}, "logprobs": LP}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]:
        acc.feed(json.dumps(c))
    acc.feed("[DONE]")
    r = acc.response()
    assert (r.text, r.message.reasoning, r.choices[0].logprobs) == ("12", "6 x 2 is 12", LP)


THINK = {"type": "thinking", "thinking": "Check the weather.", "signature": "sig-abc"}


def test_anthropic_thinking_blocks_are_kept_and_sent_back_on_the_tool_turn():
    r = parse_anthropic({"content": [THINK, {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Paris"}}],
                         "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 9}})
    assert r.message.reasoning == "Check the weather." and r.message.thinking == [THINK]
    turn = LLMRequest(messages=[user("Weather?"), r.message, tool_result(r.tool_calls[0], "18C")])
    sent = anthropic_body(turn, "claude-sonnet-4-5")["messages"][1]["content"]
    assert sent[0] == THINK and sent[1]["type"] == "tool_use"  # thinking first, unchanged


def test_anthropic_stream_reassembles_thinking_with_its_signature():
    acc = AnthropicStream()
    for ev in [{"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 1}}},
               {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
               {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Check the "}},
               {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "weather."}},
               {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig-abc"}},
               {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "opaque"}},
               {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
               {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "18C"}},
               {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
               {"type": "message_stop"}]:
        acc.feed(json.dumps(ev))
    r = acc.response()
    assert r.text == "18C" and r.message.thinking == [THINK, {"type": "redacted_thinking", "data": "opaque"}]


def test_a_reply_without_extras_serialises_as_before():
    d = LLMResponse.model_validate({"choices": [{"message": assistant("x").model_dump()}]}).model_dump(mode="json")
    assert set(d["choices"][0]) == {"message", "finish_reason"} and "reasoning" not in d["choices"][0]["message"]
    assert "reasoning_tokens" not in Usage().model_dump()


# ---- structured output ----------------------------------------------------------------------------------------------
import pytest  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from reasoning_kit.models.clients import openai_body  # noqa: E402
from reasoning_kit.models import StructuredOutputError, parse_as, structured  # noqa: E402


class Verdict(BaseModel):
    score: int
    reason: str


def test_structured_output_on_both_wires():
    req = structured(LLMRequest(messages=[user("Rate 4 4 6 8")]), Verdict)
    ob = openai_body(req, "gpt-4o-mini")
    assert ob["response_format"]["type"] == "json_schema" and ob["response_format"]["json_schema"]["name"] == "Verdict"
    assert ob["response_format"]["json_schema"]["schema"]["required"] == ["score", "reason"]
    ab = anthropic_body(req, "claude-haiku-4-5")
    assert ab["tools"][-1]["name"] == "Verdict" and ab["tool_choice"] == {"type": "tool", "name": "Verdict"}
    # the Anthropic reply is that tool's input; the OpenAI reply is JSON text: both read back as a Verdict
    ar = parse_anthropic({"content": [{"type": "tool_use", "id": "t", "name": "Verdict", "input": {"score": 7, "reason": "ok"}}], "stop_reason": "tool_use"})
    orr = parse_openai({"choices": [{"message": {"content": '{"score": 7, "reason": "ok"}'}, "finish_reason": "stop"}]})
    assert parse_as(ar, Verdict) == parse_as(orr, Verdict) == Verdict(score=7, reason="ok")


def test_a_reply_that_does_not_fit_is_a_clear_error():
    bad = parse_openai({"choices": [{"message": {"content": '{"score": "high"}'}, "finish_reason": "stop"}]})
    with pytest.raises(StructuredOutputError, match="not a Verdict: at score"): parse_as(bad, Verdict)
    with pytest.raises(StructuredOutputError, match="not a Verdict"):
        parse_as(parse_openai({"choices": [{"message": {"content": "sure! here"}, "finish_reason": "stop"}]}), Verdict)


def test_a_request_without_a_schema_serialises_as_before():
    assert "response_schema" not in LLMRequest(messages=[user("x")]).model_dump()
