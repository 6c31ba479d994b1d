"""Memory: BM25 scores, order and ties, the JSON Lines file (append, errors, repair, frozen format),
recall in ToolLoop and Swarm (and replay), Reflexion lessons carried across runs."""
import json
import math
import time
from pathlib import Path

import pytest

from reasoning_kit.algos import Agent, Reflexion, Swarm, ToolLoop
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models.fake import text, tool_call
from reasoning_kit.effects.memory import Memory, MemoryFormatError, Note, reflections_for, remember_lessons, tokens
from reasoning_kit.engine import Engine, Status
from reasoning_kit.effects.tools import ToolRegistry
from reasoning_kit.effects.validate import ValidationHandler

from _support import run

FIXTURES = Path(__file__).parent / "fixtures"


def bm25(docs: list[list[str]], query: list[str], k1=1.2, b=0.75) -> list[float]:
    "A plain, independent BM25 to check the store's scores against."
    N, avg = len(docs), sum(map(len, docs)) / len(docs)
    out = []
    for d in docs:
        s = 0.0
        for q in dict.fromkeys(query):
            n = sum(q in x for x in docs)
            f = d.count(q)
            if n and f:
                s += math.log(1 + (N - n + 0.5) / (n + 0.5)) * f * (k1 + 1) / (f + k1 * (1 - b + b * len(d) / avg))
        out.append(s)
    return out


def test_scores_are_bm25():
    texts = ["red apples and green apples", "green pears", "apples apples apples", "a blue car", "red car, red door"]
    m = Memory()
    for t in texts:
        m.add(t)
    q = "red apples"
    expected = bm25([tokens(t) for t in texts], tokens(q))
    got = {n.n: s for n, s in m.search(q, k=10)}
    for i, e in enumerate(expected):
        assert got.get(i, 0.0) == pytest.approx(e)
    assert [n.n for n, _ in m.search(q, k=10)] == sorted((i for i in range(5) if expected[i] > 0), key=lambda i: -expected[i])


def test_k_tags_ties_and_determinism():
    m = Memory()
    for i in range(6):
        m.add(f"same words here {i}", tags=["even"] if i % 2 == 0 else ["odd"])
    hits = m.search("same words", k=4)
    assert [n.n for n, _ in hits] == [5, 4, 3, 2]  # equal scores: newest first
    assert [n.n for n, _ in m.search("same words", tags=["even"])] == [4, 2, 0]
    assert m.search("same words", tags=["even", "odd"]) == []
    assert m.search("same words", k=0) == []
    assert Memory().search("anything") == []
    assert m.recall("same") == [f"same words here {i}" for i in (5, 4, 3, 2, 1)]  # default k=5


def test_about_is_searched_but_not_recalled():
    m = Memory()
    m.add("State the unit.", about="How far is Lyon?")
    assert m.recall("Lyon distance") == ["State the unit."]
    m.add("Lyon has two rivers.")
    assert m.recall("Lyon") == ["Lyon has two rivers.", "State the unit."]  # shorter note wins the tie on idf


def test_file_is_appended_as_written_and_reads_back(tmp_path):
    p = tmp_path / "sub" / "m.jsonl"
    m = Memory(p)
    assert p.read_text().count("\n") == 1  # the header, at once
    for i in range(3):
        m.add(f"note {i}", tags=["t"])
        assert p.read_text().count("\n") == 2 + i  # each note is on disk when add returns
    lines = p.read_text().splitlines()
    assert json.loads(lines[0]) == {"format": "reasoning_kit.memory", "version": 1}
    assert [json.loads(x) for x in lines[1:]] == [{"n": i, "text": f"note {i}", "tags": ["t"], "about": ""} for i in range(3)]
    again = Memory(p)
    assert again.notes == m.notes and again.search("note 1") == m.search("note 1")
    again.add("note 3")
    assert [n.text for n in Memory(p)] == [f"note {i}" for i in range(4)]


def test_errors_name_the_line(tmp_path):
    p = tmp_path / "m.jsonl"
    m = Memory(p)
    for i in range(3):
        m.add(f"note {i}")
    good = p.read_text()

    def load(text, **kw):
        p.write_text(text)
        return Memory(p, **kw)

    with pytest.raises(MemoryFormatError, match=r"m.jsonl:3: not valid JSON"):
        load(good.replace('"n":1,', '"n":1', 1))
    with pytest.raises(MemoryFormatError, match=r"m.jsonl:3: not a note: tags"):
        load(good.replace('"text":"note 1","tags":[]', '"text":"note 1","tags":"x"'))
    with pytest.raises(MemoryFormatError, match=r"m.jsonl:2: not a note: extra"):
        load(good.replace('"about":""', '"about":"","extra":1', 1))
    with pytest.raises(MemoryFormatError, match=r"m.jsonl:1: not a reasoning_kit memory"):
        load("[1, 2]\n")
    with pytest.raises(MemoryFormatError, match=r"m.jsonl:4: note n=1 out of order"):
        load(good.replace('"n":2', '"n":1'))
    with pytest.raises(MemoryFormatError, match=r"m.jsonl:4: .*ends mid-line.*repair=True"):
        load(good[:-5])
    assert [n.text for n in load(good[:-5], repair=True)] == ["note 0", "note 1"]
    assert p.read_text() == good[:good.rindex('{"n":2')]  # the cut line is gone from the file too
    assert Memory(p).add("note 2").n == 2


def test_a_pickle_is_not_a_memory(tmp_path):
    import pickle
    p = tmp_path / "m.jsonl"
    p.write_bytes(pickle.dumps({"format": "reasoning_kit.memory"}))
    with pytest.raises((MemoryFormatError, UnicodeDecodeError)):
        Memory(p)


def test_frozen_v1_file_still_reads_the_same():
    m = Memory(FIXTURES / "memory_v1.jsonl")
    expected = json.loads((FIXTURES / "memory_v1.expected.json").read_text())
    assert [n.model_dump() for n in m] == expected["notes"]
    for query, want in expected["searches"].items():
        assert [[n.n, round(s, 9)] for n, s in m.search(query)] == want


def test_search_on_thousands_of_notes_finds_the_right_ones():
    "Correctness at size; how fast it is belongs in benchmarks/."
    m = Memory()
    for i in range(5000):
        m.add(f"note {i} about topic{i % 50} and thing{i % 7} with some filler words")
    for i in range(20):
        hits = m.search(f"topic{i} thing3")
    assert all("topic19" in n.text or "thing3" in n.text for n, _ in hits)


# ---- recall in the algorithms -------------------------------------------------------------------

def _system(req):
    return next((m.content or "" for m in req.messages if m.role == "system"), "")


def test_toolloop_recall_and_replay():
    m = Memory()
    m.add("Refunds over $100 need a manager.", tags=["policy"])
    m.add("The office closes at 6pm.", tags=["hours"])
    model = FakeLLMClient(lambda req: text("manager" if "need a manager" in _system(req) else "done"))

    async def go(replay=None):
        async with Engine() as engine:
            LLMHandler(model).attach(engine)
            return await engine.run(ToolLoop(recall=m.recall), {"task": "Refunds of $250?"}, replay=replay)

    out = run(go())
    assert out.value["text"] == "manager" and "office" not in out.value["messages"][0]["content"]
    again = run(go(replay=out.log))
    assert (again.value, again.sent, model.calls) == (out.value, {}, 1)  # same notes, same prompt: served from the log
    m.add("Refunds need a receipt.")
    changed = run(go(replay=out.log))
    assert changed.sent == {"llm": 1}  # the memory changed the prompt, so the model is asked again


def test_swarm_recall_puts_notes_in_every_agents_prompt():
    m = Memory()
    m.add("Order A1 was paid by card.")
    agents = {"triage": Agent("Route.", handoffs=["billing"]), "billing": Agent("Bill.")}

    seen = []

    def model(req):
        seen.append(_system(req))
        if any(t.name == "transfer_to_billing" for t in req.tools):
            return tool_call("transfer_to_billing")
        return text("card" if "paid by card" in _system(req) else "?")

    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(model)).attach(engine)
            return await engine.run(Swarm(agents, ToolRegistry(), recall=m.recall), {"task": "Refund order A1"})

    out = run(go())
    assert (out.value["text"], out.value["agent"], out.state.algo.notes) == ("card", "billing", ["Order A1 was paid by card."])
    assert [s.split("\n")[0] for s in seen] == ["Route.", "Bill."] and all("paid by card" in s for s in seen)


# ---- Reflexion lessons across runs ---------------------------------------------------------------

def lesson_model(req):
    s = _system(req)
    if "reviewing a failed attempt" in s:
        return text("Give one decimal." if "unit" not in req.messages[-1].content else "State the unit.")
    return text(("42.0" if "one decimal" in s else "42") + (" km" if "State the unit" in s else ""))


CHECK = {"precise": lambda a, ctx: ("km" in a and "." in a, "no unit" if "km" not in a else "too vague")}


async def reflexion(task, reflections=None, max_trials=3, keep=5):
    model = FakeLLMClient(lesson_model)
    async with Engine() as engine:
        LLMHandler(model).attach(engine)
        ValidationHandler(CHECK).attach(engine)
        inp = {"task": task, **({"reflections": reflections} if reflections is not None else {})}
        out = await engine.run(Reflexion(validator="precise", max_trials=max_trials, keep_reflections=keep), inp)
    return out, model


def test_lessons_learned_in_one_process_pass_the_next_run_in_another(tmp_path):
    p = tmp_path / "lessons.jsonl"
    first, _ = run(reflexion("How far is Paris from Lyon?", max_trials=2))
    assert first.status == Status.NO_SOLUTION
    stored = remember_lessons(first, Memory(p))
    assert [n.text for n in stored] == ["State the unit.", "Give one decimal."]
    assert all(n.about == "How far is Paris from Lyon?" and n.tags == ["reflexion"] for n in stored)
    assert remember_lessons(first.log, Memory(p)) == []  # idempotent, from a Log too
    later = Memory(p)
    refl = reflections_for(later, "How far is Lyon from Nice?")
    assert sorted(refl) == ["Give one decimal.", "State the unit."]
    second, model = run(reflexion("How far is Lyon from Nice?", refl))
    assert (second.status, second.value["trials"], second.value["candidate"], model.calls) == (Status.OK, 1, "42.0 km", 1)
    assert remember_lessons(second, later) == []  # it learned nothing new


def test_given_lessons_are_not_stored_again_and_most_relevant_comes_last():
    m = Memory()
    out, _ = run(reflexion("distance question", reflections=["Be brief."], max_trials=1))
    assert [n.text for n in remember_lessons(out, m)] == ["State the unit."]  # "Be brief." was given, not learned
    m.add("Answer distance questions in km with one decimal.", tags=["reflexion"], about="distance question km")
    m.add("Unrelated lesson.", tags=["reflexion"], about="poetry")
    m.add("Untagged distance note.")
    refl = reflections_for(m, "distance question in km", k=2)
    assert refl == ["State the unit.", "Answer distance questions in km with one decimal."]
    assert reflections_for(m, "distance question in km", k=5, tags=None)[-1] == refl[-1]
    # Reflexion keeps the last `keep_reflections`: the most relevant survives trimming
    out2, _ = run(reflexion("distance question in km", reflections=refl, keep=1, max_trials=1))
    started = next(e for e in out2.log if e.kind == "reflexion.started")
    assert started.data["reflections"] == ["Answer distance questions in km with one decimal."]


def test_remember_lessons_refuses_other_logs():
    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda r: "hi")).attach(engine)
            return await engine.run(ToolLoop(), {"task": "x"})

    with pytest.raises(ValueError, match="reads Reflexion runs, this log is from 'tool_loop'"):
        remember_lessons(run(go()), Memory())
    with pytest.raises(ValueError, match="no run.started"):
        remember_lessons([], Memory())


def test_note_is_frozen_and_strict():
    n = Note(n=0, text="x")
    with pytest.raises(Exception):
        n.text = "y"
    with pytest.raises(Exception):
        Note(n=0, text="x", extra=1)
