"""Extraction and normalisation over generated replies: numbers in prose and markdown, several candidate numbers,
units, unicode digits; normalisation is idempotent; equal numbers in different forms vote together."""

from decimal import Decimal

import pytest
from hypothesis import example, given, settings, strategies as st

from reasoning_kit.algos.answers import KINDS, Extracted, extract, extract_all, normalize, read_score, read_verdict, vote, words_to_number

SCRIPTS = [0x30, 0xFF10, 0x660, 0x6F0, 0x966, 0x9E6]  # ASCII, fullwidth, Arabic-Indic, Persian, Devanagari, Bengali zeros
ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def in_words(n: int) -> str:
    "An independent speller for 0-99."
    return ONES[n] if n < 20 else TENS[n // 10 - 2] + ("" if n % 10 == 0 else "-" + ONES[n % 10])


def expected(x: Decimal) -> str:
    "The one written form, computed without the module: no trailing zeros, no exponent, no '-0'."
    s = format(x.normalize(), "f") if x != x.to_integral_value() else str(int(x))
    return "0" if s in ("-0", "0") else s


@st.composite
def numbers(draw):
    "A number as a Decimal, and a way to write it: separators, a trailing '.0', another script's digits."
    if draw(st.booleans()):
        x = Decimal(draw(st.integers(-10**7, 10**7)))
    else:
        x = Decimal(draw(st.integers(-10**6, 10**6))) / Decimal(10) ** draw(st.integers(1, 3))
    s = str(abs(x)) if x != x.to_integral_value() else str(int(abs(x)))
    if draw(st.booleans()) and "." not in s and len(s) > 3:  # thousands separators
        head, rest = s[: len(s) % 3 or 3], s[len(s) % 3 or 3:]
        s = ",".join([head] + [rest[i:i + 3] for i in range(0, len(rest), 3)])
    if "." not in s and draw(st.booleans()): s += ".0"
    zero = draw(st.sampled_from(SCRIPTS))
    s = "".join(chr(zero + int(c)) if c.isdigit() else c for c in s)
    sign = draw(st.sampled_from(["-", "\u2212"])) if x < 0 else ""
    return x, sign + s


PROSE = st.sampled_from(["Let me think step by step.", "First, I read the question carefully.", "",
                         "We have 3 apples and 8 pears, so 11 fruits in all.", "Step 1: 2 + 2 = 4.\nStep 2: 4 x 5 = 20.",
                         "| a | b |\n|---|---|\n| 7 | 9 |", "- item 12\n- item 13"])
TEMPLATES = st.sampled_from([
    "Answer: {n}", "**Answer:** {n}.", "The answer is {n}.", "The answer is **{n}**.", "Your answer is {n}.",
    "So the final answer is: {n}", "$\\boxed{{{n}}}$", "### Final answer\n\n**Answer:** {n} km",
    "Putting it together, 17 + 25 = {n}.", "Therefore the total is {n}.", "which is {n}",
    "The result would be {n}!", "Answer:\n{n}", "So x = {n}.", "Adding them gives {n} apples.",
    "Answer: {n}\n\n(I used 3 and 8 to get there.)",
])


@settings(max_examples=300, deadline=None)
@given(numbers(), PROSE, PROSE, TEMPLATES)
@example((Decimal(11), "11"), "", "", "Your answer is {n}.")
@example((Decimal(-3), "\u22123"), "", "", "So x = {n}.")
def test_a_number_in_prose_or_markdown_comes_back(num, before, after, template):
    x, written = num
    reply = "\n\n".join(p for p in (before, after, template.format(n=written)) if p)
    got = extract(reply)
    assert got.answer == expected(x), (reply, got)
    assert got.raw == reply  # the raw reply is always kept beside the answer
    assert extract(reply, "number").answer == expected(x)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 99), st.sampled_from(["Answer: {w}", "The answer is {w}.", "{W}.", "**{W}**"]))
def test_a_spelled_number_is_that_number(n, template):
    reply = template.format(w=in_words(n), W=in_words(n).capitalize())
    assert extract(reply).answer == str(n)
    assert words_to_number(in_words(n)) == n


@settings(max_examples=200, deadline=None)
@given(st.integers(-10**6, 10**6), st.randoms(use_true_random=False))
def test_equal_numbers_in_different_forms_vote_together(n, rnd):
    forms = [str(n), f"{n}.0", f" {n}.", f"**{n}**", f"{n} km", f"Answer: {n}", f"= {n}", f"\\boxed{{{n}}}",
             f"{n:,}", "".join(chr(0xFF10 + int(c)) if c.isdigit() else c for c in str(n)), f"The answer is {n}.00"]
    if 0 <= n < 100: forms.append(in_words(n))
    rnd.shuffle(forms)
    v = vote(forms)
    assert dict(v) == {str(n): len(forms)} and v.winner == str(n) and v.abstained == 0
    assert sorted(v.raw[str(n)]) == sorted(forms)  # every raw reply stays with its answer
    bare = [f for f in forms if not any(w in f for w in ("Answer", "answer", "=", "boxed"))]  # answers, not replies
    assert {normalize(f) for f in bare} == {str(n)}


ANSWERS = st.one_of(
    st.text(max_size=40),
    st.builds(lambda a, b: f"{a}{b}", st.sampled_from(["", "-", "**", "$", " ", "\u2212", "(", "."]),
              st.from_regex(r"[0-9]{1,6}([.,/][0-9]{1,4})?( ?(km|%|apples|m/s))?[.!]?", fullmatch=True)),
    st.sampled_from(["eleven", "Twenty-one", "Paris.", "  new   york!", "_x_", "1-.2", "-.5", "3,4", "٣٫٥", "1/0", "0/7"]),
)


@settings(max_examples=500, deadline=None)
@given(ANSWERS, st.sampled_from(KINDS), st.booleans())
def test_normalisation_is_idempotent(answer, kind, units):
    once = normalize(answer, kind, units)
    assert normalize(once, kind, units) == once
    assert once is None or once == once.strip()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.sampled_from(KINDS), st.booleans())
def test_extraction_never_fails_and_keeps_the_reply(text, kind, units):
    got = extract(text, kind, units)
    assert isinstance(got, Extracted) and got.raw == text
    assert got.answer is None or got.answer == normalize(got.answer, kind, units)  # already normalised
    assert (got.answer is None) == (got.how == "none") or got.how != "none"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 5).map(lambda k: f"Answer: {k}"), st.just("no idea")), max_size=12))
def test_votes_count_every_reply_once(replies):
    v = vote(replies)
    assert sum(v.values()) + v.abstained == len(replies)
    assert sum(map(len, v.raw.values())) == sum(v.values())
    if v:  # the winner has the most votes; ties go to the answer that appeared first
        top = max(v.values())
        assert v.winner == next(a for a, c in v.items() if c == top)


@pytest.mark.parametrize("reply, kind, answer", [
    ("3 + 8 = 11", "auto", "11"), ("3 + 8 equals 11", "auto", "11"), ("The answer is **11**.", "auto", "11"),
    ("To add 3 and 8, start at 3 and count up 8: which is 11", "auto", "11"),
    ("Your answer is 14.", "auto", "14"), ("Your answer is 14.", "word", "14"), ("Your answer is 14.", "text", "14"),
    ("Answer: 11 km", "text", "11 km"), ("Answer: Paris.", "word", "paris"), ("The capital of France is Paris.", "word", "paris"),
    ("I am not sure.", "number", None), ("", "auto", None), (None, "auto", None),
    ("Answer: 3\nOn reflection:\nAnswer: 4", "auto", "4"), ("so \\boxed{\\frac{6}{8}}", "auto", "0.75"),
    ("It is １１.", "auto", "11"), ("x = \u22123", "auto", "-3"), ("Answer: (B)", "auto", "b"),
    ("7 + 5 = 12.\nAnswer: <your answer>", "auto", "12"), ("Answer: your answer", "auto", None),  # the template, copied
    ("**Answer:** [answer]", "text", None), ("Answer: Your answer is 14", "auto", "14"),
])
def test_what_small_models_write(reply, kind, answer):
    assert extract(reply, kind).answer == answer


def test_units_count_only_when_asked():
    assert extract("Answer: 11 km").answer == extract("Answer: 11").answer == "11"
    assert extract("Answer: 11 km", units=True).answer == "11 km" != extract("Answer: 11 m", units=True).answer
    assert normalize("11 KM", units=True) == "11 km"


def test_a_bad_kind_is_named():
    for f in (lambda: extract("1", kind="int"), lambda: normalize("1", kind="int"), lambda: vote(["1"], kind="int")):
        with pytest.raises(ValueError, match="kind must be one of"):
            f()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10), PROSE, st.sampled_from([
    "Score: {s}/10", "I'd rate this {s}", "**{s}**", "I would rate this step a {s} out of 10.", "A fine step, so {s}.",
    '```json\n{{"score": {s}}}\n```', "Rating: **{s}**", "I would give it a {s}.", "{s}", "{s}/10 - promising",
]))
def test_a_score_in_prose_or_markdown_comes_back(score, before, template):
    reply = template.format(s=score) if not before else before + "\n\n" + template.format(s=score)
    if before and template in ("{s}", "{s}/10 - promising"):  # a bare leading number needs to lead
        return
    assert read_score(reply) == float(score), reply


@pytest.mark.parametrize("reply, verdict", [
    ("The answer is correct.", True), ("APPROVED", True), ("**Verdict:** the answer is **correct**", True),
    ("The answer is not correct.", False), ("Your answer is 14, which is wrong.", False),
    ("The correct answer is 11.", False), ("Acceptable? No.", None), ("", None),
])
def test_read_verdict(reply, verdict):
    assert read_verdict(reply) is verdict


# --- what a real small model wrote ----------------------------------------------------------------

def real_replies():
    "200 replies of SmolLM2-135M-Instruct to 40 single-digit sums, 5 samples each at temperature 0.7 (issue 35's prompt)."
    import json
    from pathlib import Path
    return json.loads((Path(__file__).parent / "fixtures" / "smollm2_sums.json").read_text())["tasks"]


def test_real_replies_are_read_as_numbers_and_the_vote_helps():
    from reasoning_kit.algos.common import extract_answer, majority
    tasks = real_replies()
    read = [[extract(r).answer for r in t["replies"]] for t in tasks]
    digits = [(a, r) for t, row in zip(tasks, read) for a, r in zip(row, t["replies"]) if any(c.isdigit() for c in r)]
    assert all(a is not None and normalize(a, "number") == a for a, _ in digits)  # every reply with digits reads as a number
    right = lambda k, parse: sum(majority([parse(r) for r in t["replies"][:k]])[0] == t["truth"] for t in tasks)  # noqa: E731
    one, five = right(1, lambda r: extract(r).answer), right(5, lambda r: extract(r).answer)
    assert five > one and five >= 0.6 * len(tasks)  # 29 vs 21 of 40 when recorded
    assert right(5, extract_answer) < one  # whole sentences, the old default, hardly ever agree


# --- what a reply concludes (issue 43) --------------------------------------------------------------

SUM = st.tuples(st.integers(1, 49), st.integers(1, 49), st.integers(1, 98))  # a, b and a wrong sum (made wrong below)
CORRECTED = st.sampled_from([  # a number given, then rejected or corrected: the reply's answer is the one it ends on
    "The answer is {w}. Wait, no, that's wrong. {a} + {b} = {r}.", "{a} + {b} = {w}. Actually, let me recheck: {a} + {b} = {r}.",
    "It's {r}, not {w}.", "{w} is incorrect. The sum is {r}.", "The answer is {w}... wait, {r}.",
    "Answer: {w}\nCorrection: the answer is {r}.", "I first thought {w}, but the correct answer is {r}.", "**{r}**, not {w}.",
    "The answer is not {w}; it is {r}.", "Hmm, {w}? No, {a} + {b} is {r}.", "{a} + {b} = {w}\n\nWait, I made a mistake. {a} + {b} = {r}",
    "The answer is {w}. Oops, {a} plus {b} is {r}.", "So the total is {r} (rather than {w}).", "{w}? No: {r}.",
])


@settings(max_examples=300, deadline=None)
@given(SUM, CORRECTED, st.booleans())
def test_a_rejected_or_corrected_number_is_not_the_answer(nums, template, asked):
    a, b, w = nums
    r = a + b
    w = w if w != r else r + 1
    reply = template.format(a=a, b=b, r=r, w=w)
    assert extract(reply, question=f"What is {a} + {b}?" if asked else None).answer == str(r), reply
    assert extract(reply, "number").answer == str(r), reply


IN_WORDS = st.sampled_from(["{a} + {b} equals {R}.", "Adding {a} and {b} gives {R}!", "{a} plus {b} is {R}",
                            "So {a} and {b} together make {R}.", "{a} + {b} = **{R}**", "First {a}, then {b} more: the total is {R}.",
                            "We start at {a} and count on {b}. That makes {R}."])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 49), st.integers(0, 49), IN_WORDS, st.booleans())
def test_a_result_in_words_after_the_digits_is_the_answer(a, b, template, asked):
    reply = template.format(a=a, b=b, R=in_words(a + b) if a + b < 100 else str(a + b))
    assert extract(reply, question=f"What is {a} + {b}?" if asked else None).answer == str(a + b), reply
    assert extract(reply, "number").answer == str(a + b)


RESTATED = st.sampled_from([  # what SmolLM2 wrote to "What is a + b?" without concluding (tests/fixtures/smollm2_sums.json)
    "To add {a} + {b}, you simply add them together.", "{a} + {b} is the sum of {a} and {b}.", "We don't add {a} and {b}.",
    "To find the answer, you add the {a} and the {b}, which", "The number {a} is the product of {a} and {b}.",
    "A classic math problem. In this case, {a} and {b} are integers that can be added together.",
])


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 99), st.integers(1, 99), RESTATED)
def test_a_reply_that_only_restates_the_question_abstains(a, b, template):
    reply, question = template.format(a=a, b=b), f"What is {a} + {b}? Reply with the number."
    got = extract(reply, question=question)
    assert got.answer is None and got.how == "question's numbers" and got.raw == reply
    assert extract(reply).answer in (str(a), str(b))  # without the question it is read as before: a number it writes
    for concluding in (f"{a} + {b} = {a + b}", f"{a + b}", f"Answer: {a}", f"{a}"):  # a conclusion, a bare number, a stated one
        assert extract(concluding, question=question).answer is not None
    assert vote([reply, reply, f"{a} + {b} = {a + b}"], question=question).winner == str(a + b)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["No", "no", "**No**", "Nope", "> No"]), st.sampled_from([".", ",", "!", ":", " -", ""]),
       st.sampled_from(["", " The correct sum is 13.", " 6 + 7 is 13.", " The answer is correct only for 6 + 6.", " Try again."]))
def test_a_verdict_that_opens_with_a_refusal_is_a_no(no, punct, rest):
    if not punct and rest: return  # "No The ..." is not a sentence anyone writes
    assert read_verdict(no + punct + rest) is False
    assert read_verdict("No issues found." + rest) is not False or "not" in rest


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 20).map(lambda k: f"So the sum is {k}."), st.none(),
                          st.sampled_from(["You simply add them together.", "Paris.", "I am not sure what you mean."])), max_size=9))
def test_kind_auto_is_decided_per_question(replies):
    got = extract_all(replies)
    numbers = sum(r is not None and "sum is" in r for r in replies)
    sentences = sum(r is not None and "sum is" not in r for r in replies)
    if numbers and 2 * numbers >= numbers + sentences:  # a numeric question: sentences abstain instead of voting
        assert all(e.answer is None for r, e in zip(replies, got) if r is not None and "sum is" not in r)
    else:  # otherwise every reply is read on its own, as `extract` reads it
        assert [e.answer for e in got] == [extract(r).answer for r in replies]
    v = vote(replies)
    assert sum(v.values()) + v.abstained == len(replies)
    assert all(e.raw == r for r, e in zip(replies, got))


def test_real_replies_that_restate_the_question_abstain_and_the_vote_keeps():
    "With the question given, SmolLM2's replies that only repeat its numbers abstain; the vote gets no worse."
    from reasoning_kit.algos.common import majority
    tasks = real_replies()
    got = [[extract(r, question=t["task"]) for r in t["replies"]] for t in tasks]
    restated = [e for row in got for e in row if e.how == "question's numbers"]
    assert len(restated) >= 10  # 13 when written: "To add 1 + 6, we need to combine 1 and 6 ...", "1 + 9 is the sum of 1 and 9."
    assert all(e.answer is None for e in restated)
    assert all(e.answer is not None for row in got for e in row if e.how == "conclusion")  # what concludes still reads
    right = lambda q: sum(majority([extract(r, question=t["task"] if q else None).answer for r in t["replies"]])[0] == t["truth"]  # noqa: E731
                          for t in tasks)
    assert right(True) >= right(False)


def debate_sums_replies():
    "489 distinct SmolLM2 replies (debaters, judges, SelfConsistency samples) to 30 one-digit sums, collected for issue 43."
    import json
    from pathlib import Path
    return json.loads((Path(__file__).parent / "fixtures" / "smollm2_debate_sums.json").read_text())["replies"]


def test_real_replies_abstain_only_on_the_question_s_numbers_and_answer_only_what_they_write():
    import re
    from reasoning_kit.algos.answers import fold
    rows = debate_sums_replies()
    got = [(r, extract(r["reply"], question=r["task"])) for r in rows]
    written = lambda s: set(re.findall(r"\d+(?:\.\d+)?", fold(s).replace(",", "")))  # noqa: E731
    for r, e in got:
        if e.how == "question's numbers":  # abstained: every number it writes is one of the question's
            assert e.answer is None and written(r["reply"]) <= written(r["task"]), r
        elif e.answer is not None and e.how != "number words" and re.fullmatch(r"\d+", e.answer):
            assert e.answer in written(r["reply"]), (r, e)  # a number answer is one the reply wrote
    assert sum(e.how == "question's numbers" for _, e in got) >= 15  # 22 when collected
    assert sum(e.answer is not None for _, e in got) >= 0.8 * len(got)  # most replies still answer
    by_task = {}
    for r in rows:
        if r["role"] == "debater": by_task.setdefault(r["task"], []).append(r["reply"])
    for task, replies in by_task.items():  # per question: once most answers are numbers, a sentence never votes
        answers = [e.answer for e in extract_all(replies, question=task)]
        given = [a for a in answers if a is not None]
        if given and 2 * sum(re.fullmatch(r"-?\d+(\.\d+)?", a) is not None for a in given) >= len(given):
            assert all(re.fullmatch(r"-?\d+(\.\d+)?", a) for a in given), (task, answers)


@pytest.mark.parametrize("task, reply, answer", [  # read by hand, from the fixture above
    ("What is 1 + 2? Reply with the number.", "To add 1 and 2, you simply add them together.", None),
    ("What is 3 + 2? Reply with the number.", 'The answer to this classic puzzle is "3".', "3"),  # stated, if wrong
    ("What is 3 + 1? Reply with the number.", "The answer to this question is: 3.", "3"),
    ("What is 5 + 6? Reply with the number.", "I'm ready to help. Now, I'll provide 5 + 6 as the answer.", None),
    ("What is 7 + 6? Reply with the number.", "A question about 7 + 6.", None),
    ("What is 6 + 2? Reply with the number.", "The answer is 6, but in this scenario, 6 + 2 is actually 8.", "8"),
])
def test_real_replies_read_by_hand(task, reply, answer):
    assert extract(reply, question=task).answer == answer
