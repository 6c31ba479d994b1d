"""TreeOfThoughts.max_calls is a true bound for every configuration, and (outside the specification's sample mode,
whose bound counts a full beam at every level) an exact one: a scripted worst case spends all of it."""
import random
from collections import Counter

from hypothesis import given, settings, strategies as st

from reasoning_kit.algos.tot import TreeOfThoughts, _beam_cap, _level_sizes
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Engine, Status

from _support import run, user_of

SCORES = [0.0, 2.5, 5.0, 9.0]  # on a grid, so an average of equal samples is exact


@st.composite
def configs(draw, sample_mode=True):
    generate = draw(st.sampled_from(["sample", "sample_n", "propose"] if sample_mode else ["sample_n", "propose"]))
    width = draw(st.integers(1, 5))
    branching = draw(st.integers(1, 6 if generate == "propose" else max(1, min(6, 25 // width))))
    evaluate = draw(st.sampled_from(["value", "vote"]))
    coded = evaluate == "value" and draw(st.booleans())
    return dict(depth=draw(st.integers(1, 4)), width=width, branching=branching, generate=generate, evaluate=evaluate,
                n_evaluate=draw(st.integers(1, 4)), min_score=draw(st.sampled_from(SCORES)),
                stop_score=draw(st.sampled_from([None, 5.0, 9.0, 10.0])), synthesize=draw(st.booleans()),
                duplicates=draw(st.sampled_from(["prune", "zero"])), finals=draw(st.sampled_from(["keep", "expand"]))), coded


def go(algo, fn):
    async def main():
        client = FakeLLMClient(fn)
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            return await engine.run(algo, {"task": "make 24"}), client
    return run(main())


def random_model(seed: int, branching: int):
    "Replies drawn from a generator seeded by the effect key and the sample: repeats, complete answers, junk, no votes."
    seen = Counter()
    def model(request, key):
        seen[key] += 1
        rng = random.Random(f"{seed}|{key}|{seen[key]}")
        if request.role == "evaluator":
            if "Choice 1:" in user_of(request):
                return text(rng.choice([f"The best choice is {rng.randint(1, 6)}", "no idea"]))
            return text(rng.choice([str(rng.randint(0, 10)), "junk", f"{rng.random():.2f}/1", '{"score": 11}']))
        if request.role == "synthesizer": return text("42")
        step = lambda: rng.choice(["a", "b", "c", "FINAL: 24", "", f"s{rng.randint(0, 9)}"])
        return text("\n".join(step() for _ in range(rng.randint(0, branching + 2))))
    return model


@settings(max_examples=60, deadline=None)
@given(cfg=configs(), seed=st.integers(0, 10**6))
def test_calls_never_exceed_max_calls(cfg, seed):
    kw, coded = cfg
    scorer = (lambda task, path: random.Random(f"{seed}|{path}").choice(SCORES + [10.0])) if coded else None
    algo = TreeOfThoughts(**kw, scorer=scorer)
    out, client = go(algo, random_model(seed, kw["branching"]))
    assert out.status in (Status.OK, Status.NO_SOLUTION, Status.FAILED)
    assert client.calls == out.calls <= algo.max_calls


def worst_case_model(kw: dict):
    """Every step new and never complete; every score kept by the floor without reaching stop_score (a value of exactly
    min_score; in vote mode as many candidates as can each hold enough votes), so every level is as full as it can be."""
    lo, hi, n = kw["min_score"], kw["stop_score"], kw["n_evaluate"]
    going = lambda s: s >= lo and (hi is None or s < hi)
    v = next((v for v in range(n + 1) if going(round(10 * v / n, 6))), None)  # the fewest votes that keep a candidate
    keep = n if v is None else 10**6 if v == 0 else n // v  # v None: nothing keeps going; every vote to one stops the search
    v = n if v is None else v
    seen = Counter()
    def model(request, key):
        seen[key] += 1
        j = seen[key] - 1  # which sample of this call
        if request.role == "synthesizer": return text("42")
        if request.role == "evaluator":
            if "Choice 1:" not in user_of(request): return text(str(lo))
            choices = user_of(request).count("Choice ")
            return text(f"The best choice is {j // v + 1}" if v and j < min(keep, choices) * v else "no idea")
        if kw["generate"] == "propose": return text("\n".join(f"{key} step {i}" for i in range(kw["branching"])))
        return text(f"{key} sample {j}")
    return model


@settings(max_examples=60, deadline=None)
@given(cfg=configs(), seed=st.integers(0, 10**6))
def test_a_scripted_worst_case_spends_max_calls_exactly(cfg, seed):
    kw, coded = cfg
    algo = TreeOfThoughts(**kw, scorer=(lambda task, path: kw["min_score"]) if coded else None)
    out, client = go(algo, worst_case_model(kw))
    assert out.status == Status.OK and client.calls == out.calls
    if kw["generate"] != "sample":
        assert out.calls == algo.max_calls, (kw, out.calls, algo.max_calls)
    else:  # the specification's bound counts `width` nodes at every level; level 1 expands the root alone
        assert out.calls <= algo.max_calls
        sizes = _level_sizes(kw["depth"], kw["width"], kw["branching"],
                             _beam_cap(kw["evaluate"], coded, kw["n_evaluate"], kw["min_score"], kw["stop_score"]))
        scores = 0 if coded else sum(sizes) * kw["branching"] if kw["evaluate"] == "value" else len(sizes)
        assert out.calls == sum(sizes) * kw["branching"] + scores + kw["synthesize"]  # what a run can really reach here
        if kw["width"] == 1 and (kw["stop_score"] is None or kw["min_score"] < kw["stop_score"]) and kw["evaluate"] == "value":
            assert out.calls == algo.max_calls


def test_the_papers_configuration_reaches_its_bound():
    kw = dict(depth=4, width=5, branching=25, generate="propose", evaluate="value", n_evaluate=3, select="greedy",
              stop_score=None, min_score=0.0, synthesize=False, duplicates="prune", finals="keep")
    algo = TreeOfThoughts(**kw)
    out, client = go(algo, worst_case_model(kw))
    assert out.calls == client.calls == algo.max_calls == (1 + 5 + 5 + 5) * (1 + 25) == 416


def test_a_vote_floor_limits_how_many_nodes_a_level_hands_on():
    kw = dict(depth=3, width=5, branching=5, generate="propose", evaluate="vote", n_evaluate=4, min_score=5.0,
              stop_score=None, synthesize=False, duplicates="prune", finals="keep")
    algo = TreeOfThoughts(**kw)  # 4 votes, a floor of 5: at most 2 candidates (2 of 4 votes each) stay
    out, _ = go(algo, worst_case_model(kw))
    assert algo.max_calls == (1 + 2 + 2) + 3 == out.calls
    assert len(out.state.algo.beam) == 2
