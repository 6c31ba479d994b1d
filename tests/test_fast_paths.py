"The fast paths of issue 11 give exactly what the validated paths give: log_form vs model_dump, the fast log reader vs the careful one."
import json

from hypothesis import example, given, settings, strategies as st

from reasoning_kit.core.events import Event, Log, LogFormatError, _careful, _header
from reasoning_kit.models import Choice, LLMRequest, LLMResponse, Message, ToolCall, Usage, log_form
from reasoning_kit.core._trusted import trusted

text = st.text(max_size=8)
jsonish = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=True) | text,
                       lambda c: st.lists(c, max_size=3) | st.tuples(c) | st.dictionaries(text, c, max_size=3), max_leaves=6)
calls = st.builds(ToolCall, id=st.none() | text, name=text, arguments=st.dictionaries(text, jsonish, max_size=2))
messages = st.builds(Message, role=st.sampled_from(["system", "user", "assistant", "tool"]), content=st.none() | text,
                     tool_calls=st.lists(calls, max_size=2), tool_call_id=st.none() | text, name=st.none() | text,
                     reasoning=st.none() | text, thinking=st.lists(st.dictionaries(text, jsonish, max_size=2), max_size=1))
requests = st.builds(LLMRequest, messages=st.lists(messages, min_size=1, max_size=3), role=st.sampled_from(["default", "judge"]),
                     model=st.none() | text, temperature=st.none() | st.floats(0, 2), n=st.integers(1, 4),
                     stop=st.none() | st.lists(text, max_size=2), seed=st.none() | st.integers(-5, 5),
                     extra=st.dictionaries(text, jsonish, max_size=2), response_schema=st.none() | st.dictionaries(text, jsonish, max_size=1),
                     response_name=st.none() | text)
usages = st.builds(Usage, prompt_tokens=st.integers(0, 9), completion_tokens=st.integers(0, 9), cached_tokens=st.integers(0, 3),
                   cost=st.none() | st.floats(0, 1), reasoning_tokens=st.integers(0, 3))
responses = st.builds(LLMResponse, choices=st.lists(st.builds(Choice, message=messages, finish_reason=st.sampled_from(["stop", "length", "tool_calls"]),
                                                              logprobs=st.none() | jsonish), min_size=1, max_size=2),
                      usage=usages, model=st.none() | text)


@settings(max_examples=60, deadline=None)
@given(requests)
@example(LLMRequest(messages=[Message(role="system", content="", tool_call_id="")]))  # an empty id is still written: it is not the default
def test_log_form_of_a_request_is_its_json_dump(r):
    assert log_form(r) == r.model_dump(mode="json", exclude_defaults=True)


@settings(max_examples=60, deadline=None)
@given(responses)
def test_log_form_of_a_response_is_its_json_dump(r):
    assert log_form(r) == r.model_dump(mode="json", exclude_defaults=True)


def test_trusted_builds_what_validation_builds():
    assert trusted(LLMResponse, choices=[trusted(Choice, message=trusted(Message, role="assistant", content="x"))]) == \
        LLMResponse(choices=[Choice(message=Message(role="assistant", content="x"))])
    m = trusted(Message, role="assistant", tool_calls=[ToolCall(name="f")])
    m.tool_calls[0].id = "c1"; m.content = "now"  # trusted models stay ordinary, mutable pydantic models
    assert m.model_dump(exclude_unset=True) == {"role": "assistant", "tool_calls": [{"id": "c1", "name": "f"}], "content": "now"}


line = st.fixed_dictionaries({"seq": st.integers(0, 3), "kind": st.sampled_from(["a.b", "x.y_z", "Bad", "a"])},
                             optional={"at": st.floats(allow_nan=False) | st.integers(0, 5) | st.just("1.5") | st.booleans(),
                                       "key": st.none() | text | st.integers(0, 2), "data": st.dictionaries(text, jsonish, max_size=2) | st.lists(text),
                                       "extra": st.just(1)})


@settings(max_examples=60, deadline=None)
@given(st.lists(line, max_size=4))
def test_fast_reader_agrees_with_the_careful_one(objs):
    "Whatever the lines hold, the fast reader gives the events (or the error) that validating each line gives."
    body = "".join(json.dumps(o) + "\n" for o in objs)
    text = _header() + body
    try: want = _careful(text.split("\n")[:-1], "<text>", True, False)
    except LogFormatError as e: want = str(e)
    try: got = Log.from_jsonl(text).events
    except LogFormatError as e: got = str(e)
    assert got == want
    if isinstance(want, list):
        assert [e.model_dump() for e in got] == [Event.model_validate(o).model_dump() for o in objs]


def test_a_corrupt_line_is_still_named():
    text = _header() + '{"seq": 0, "kind": "a.b"}\n{"seq": 1, "kind": "a.b", "data": {NaN\n'
    try: Log.from_jsonl(text); raise AssertionError("no error")
    except LogFormatError as e: assert str(e).startswith("<text>:3: not valid JSON"), str(e)


@settings(max_examples=60, deadline=None)
@given(responses)
def test_from_log_form_reads_what_log_form_wrote(r):
    from reasoning_kit.models import from_log_form
    d = log_form(r)
    assert from_log_form(LLMResponse, d) == LLMResponse.model_validate(d)


payloads = st.recursive(jsonish | st.sampled_from(["assistant", "robot", "stop", "length", "choices", "message", "role", "content"]),
                        lambda c: st.lists(c, max_size=2) | st.dictionaries(st.sampled_from(["choices", "message", "role", "content", "usage", "model",
                                                                                             "finish_reason", "prompt_tokens", "cost", "x"]), c, max_size=3),
                        max_leaves=10)


@settings(max_examples=60, deadline=None)
@given(payloads)
def test_from_log_form_agrees_with_pydantic_on_anything(d):
    "Whatever a log holds, the hand check builds what pydantic builds, or leaves pydantic to refuse it."
    from pydantic import ValidationError
    from reasoning_kit.models import from_log_form
    def outcome(f):
        try: return f()
        except ValidationError as e: return ("invalid", str(e.errors()[0]["loc"]))
    assert outcome(lambda: from_log_form(LLMResponse, d)) == outcome(lambda: LLMResponse.model_validate(d))


def test_integers_past_64_bits_are_read_back_exactly():
    "orjson reads an integer past 64 bits as a float; the reader sends such lines to json, which keeps them exact."
    log = Log(); log.append("demo.said", {"n": -2**63 - 1, "m": 2**64 + 1, "ok": 2**63 - 1, "id": "12345678901234567890"})
    back = Log.from_jsonl(log.to_jsonl())
    assert back.events == log.events and [type(v) for v in back[0].data.values()] == [int, int, int, str]


in_order = st.fixed_dictionaries({"seq": st.integers(0, 2) | st.just(True), "at": st.floats(allow_nan=False) | st.integers(0, 5) | st.just("1.5"),
                                  "kind": st.sampled_from(["a.b", "Bad", "x.y_z"]), "key": st.none() | text | st.integers(0, 2),
                                  "data": st.dictionaries(text, jsonish, max_size=2) | st.lists(text, max_size=1)})


@settings(max_examples=80, deadline=None)
@given(st.lists(in_order, max_size=4))
def test_lines_in_the_logs_own_order_are_read_as_validation_reads_them(objs):
    "A line whose fields come in the order the log writes them is unpacked in one go: it must be judged exactly as any other line is."
    text = _header() + "".join(json.dumps(o) + "\n" for o in objs)
    try: want = _careful(text.split("\n")[:-1], "<text>", True, False)
    except LogFormatError as e: want = str(e)
    try: got = Log.from_jsonl(text).events
    except LogFormatError as e: got = str(e)
    assert got == want


fields = {"role": st.sampled_from(["user", "assistant"]), "content": st.none() | text, "name": st.none() | text,
          "tool_calls": st.lists(calls, max_size=1), "reasoning": st.none() | text}


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({"role": fields["role"]}, optional={k: v for k, v in fields.items() if k != "role"}))
def test_a_trusted_builder_builds_what_validation_builds(values):
    "Same fields, same defaults (fresh ones from factories), same fields set, for any subset of the fields given."
    from reasoning_kit.core._trusted import trusted_builder
    built, valid = trusted_builder(Message)(**values), Message(**values)
    assert built == valid and built.model_fields_set == valid.model_fields_set and list(built.__dict__) == list(valid.__dict__)
    assert built.model_dump(exclude_unset=True) == valid.model_dump(exclude_unset=True)
    assert trusted_builder(Message)(**values).thinking is not built.thinking


literals = (st.sampled_from(["1e400", "-1E+400", "1e-400", "123456789012345678901234567890", "-0.0", "1.7976931348623157e308", "5e-324",
                             "0.1", "true", "null", '"\\ud800"', '"\\ud83d\\ude00"', '"\\u00e9"', '"a\\"b"', '"\\n"', "NaN", "[]", "{}", "01"])
            | st.integers().map(str) | st.floats(allow_nan=False, allow_infinity=False).map(repr)
            | st.text(max_size=6).map(lambda s: json.dumps(s, ensure_ascii=False)))
payload_texts = st.lists(st.tuples(st.sampled_from(["a", "b", "data", "é"]), literals), max_size=3).map(
    lambda kv: "{" + ",".join(f'"{k}":{v}' for k, v in kv) + "}") | literals


@settings(max_examples=150, deadline=None)
@given(st.lists(payload_texts, max_size=4))
def test_the_one_pass_reader_reads_what_the_careful_one_reads(payloads):
    """Payloads written by hand, numbers past a double, lone surrogates and non-objects among them: the one-pass msgspec reader gives
    exactly the events (or the error) of the careful reader; when it declines a file, the per-line readers judge it."""
    from reasoning_kit.core.events import _whole
    text = _header() + "".join(f'{{"seq":{i},"at":0.5,"kind":"a.b","key":null,"data":{p}}}\n' for i, p in enumerate(payloads))
    try: want = _careful(text.split("\n")[:-1], "<text>", True, False)
    except (LogFormatError, ValueError) as e: want = (type(e), str(e))
    try: got = Log.from_jsonl(text).events
    except (LogFormatError, ValueError) as e: got = (type(e), str(e))
    assert got == want
    whole = _whole(text.encode())
    if whole is not None:  # taken: every event as the careful reader built it, keys in the same order
        assert isinstance(want, list) and whole == want and [list(e.data) for e in whole] == [list(e.data) for e in want]
