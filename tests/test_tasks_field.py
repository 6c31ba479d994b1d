"""The field's task sets: reasoning-gym generators graded by their own score_answer, GSM8K and MATH-500 from local
files in the datasets' formats (the shipped files are format fixtures of this project's own, not dataset items),
graded by the number after #### and by math-verify; and the same sets named in experiment files."""
import json
import threading

import pytest

pytest.importorskip("reasoning_gym"); pytest.importorskip("math_verify")

import reasoning_kit.tasks as tasks
from reasoning_kit.tasks.benchmarks import data_file, read_records

GSM, MATH = data_file("gsm8k_format_fixture.jsonl"), data_file("math500_format_fixture.jsonl")


# ---- reasoning-gym

@pytest.mark.parametrize("name,config", [("chain_sum", {"min_terms": 2, "max_terms": 3}), ("basic_arithmetic", {"min_terms": 2, "max_terms": 2, "max_digits": 2}),
                                         ("leg_counting", {"min_animals": 1, "max_animals": 2})])
def test_gym_right_answers_right_wrong_ones_wrong(name, config):
    items = tasks.reasoning_gym(name, size=8, seed=3, **config)
    assert len(items) == 8 and items == tasks.reasoning_gym(name, size=8, seed=3, **config)
    for it in items:
        assert tasks.check_reasoning_gym(f"Let me think.\nAnswer: {it['answer']}", {"input": it}) == (True, "correct")
        wrong = tasks.check_reasoning_gym(f"Answer: {it['answer']}9", {"input": it})
        assert wrong[0] is False and "grader gave" in wrong[1]


def test_gym_config_passes_through_and_names_the_level():
    two = tasks.reasoning_gym("chain_sum", size=20, seed=0, min_terms=2, max_terms=2, max_digits=1)
    four = tasks.reasoning_gym("chain_sum", size=20, seed=0, min_terms=4, max_terms=4, max_digits=1)
    ops = lambda it: it["task"].count("+") + it["task"].count(" - ")
    assert {ops(i) for i in two} == {1} and {ops(i) for i in four} == {3}  # the generator's own setting took effect
    assert {i["level"] for i in two} == {"max_digits=1 max_terms=2 min_terms=2"} and two[0]["level"] != four[0]["level"]
    assert tasks.reasoning_gym("chain_sum", size=1, seed=0) != tasks.reasoning_gym("chain_sum", size=1, seed=1) or True


def test_gym_refuses_unknown_names_and_settings_at_once():
    with pytest.raises(ValueError, match=r"no generator named 'leg_count'.*close: leg_counting"): tasks.reasoning_gym("leg_count")
    with pytest.raises(ValueError, match=r"no setting 'max_term' \(did you mean 'max_terms'\?\)"): tasks.reasoning_gym("chain_sum", max_term=3)
    with pytest.raises(ValueError, match="chain_sum refused"): tasks.reasoning_gym("chain_sum", min_terms=4, max_terms=2)


def test_gym_check_works_off_the_main_thread_and_keeps_the_answer_secret():
    it = tasks.reasoning_gym("chain_sum", size=1, seed=5)[0]
    out = []
    t = threading.Thread(target=lambda: out.append(tasks.check_reasoning_gym(it["answer"], {"input": it}))); t.start(); t.join()
    assert out == [(True, "correct")]
    assert it["answer"] not in tasks.check_reasoning_gym("nothing here", {"input": it})[1]


# ---- GSM8K and MATH-500 from local files

def test_gsm8k_local_jsonl_and_parquet(tmp_path):
    items = tasks.gsm8k(GSM)
    assert [i["answer"] for i in items] == ["7", "1200", "80", "26"] and {i["level"] for i in items} == {"gsm8k"}
    pa = pytest.importorskip("pyarrow"); import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist(read_records(GSM)), tmp_path / "test-00000-of-00001.parquet")
    assert tasks.gsm8k(tmp_path / "test-00000-of-00001.parquet") == items
    assert tasks.gsm8k(GSM, size=2, seed=4) == tasks.gsm8k(GSM, size=2, seed=4) and len(tasks.gsm8k(GSM, size=2, seed=4)) == 2


def test_gsm8k_check():
    it = tasks.gsm8k(GSM)[1]
    for reply in ("40 boxes of 30 make 1,200 pencils.", "Answer: 1200", "#### 1200", "The answer is $1,200.00"):
        assert tasks.check_gsm8k(reply, {"input": it})[0], reply
    for reply in ("Answer: 120", "They buy 1201 pencils.", "", None):
        assert not tasks.check_gsm8k(reply, {"input": it})[0], reply


def test_math500_local_file_levels_and_equivalences(tmp_path):
    items = tasks.math500(MATH)
    assert [i["level"] for i in items] == [1, 2, 1, 3, 3, 1] and items[0]["answer"] == "\\frac{3}{4}"
    by = {i["answer"]: {"input": i} for i in items}
    right = {"\\frac{3}{4}": ["Answer: 0.75", "$\\boxed{\\frac{3}{4}}$", "The answer is 3/4.", "Answer: \\dfrac{3}{4}"],
             "3\\sqrt{2}": ["Answer: $\\sqrt{18}$", "\\boxed{3\\sqrt 2}"], "[2,5)": ["\\boxed{[2, 5)}"],
             "2, 3": ["\\boxed{3, 2}"], "\\frac{1}{2}": ["Answer: 0.5"]}
    wrong = {"\\frac{3}{4}": ["Answer: 0.7", "Answer: 4/3", "no idea"], "3\\sqrt{2}": ["Answer: 3", "\\boxed{2\\sqrt{3}}"],
             "[2,5)": ["\\boxed{(2, 5)}", "\\boxed{[2, 5]}"], "2, 3": ["\\boxed{2}"], "\\frac{1}{2}": ["Answer: 2"]}
    for a, rs in right.items():
        for r in rs: assert tasks.check_math500(r, by[a])[0], (a, r)
    for a, rs in wrong.items():
        for r in rs: assert not tasks.check_math500(r, by[a])[0], (a, r)
    pa = pytest.importorskip("pyarrow"); import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist(read_records(MATH)), tmp_path / "test.parquet")
    assert tasks.math500(tmp_path / "test.parquet", levels=(1,)) == [i for i in items if i["level"] == 1]


def test_math500_check_in_a_worker_thread():
    it = tasks.math500(MATH)[0]; out = []
    t = threading.Thread(target=lambda: out.append(tasks.check_math500("Answer: 0.75", {"input": it}))); t.start(); t.join()
    assert out == [(True, "correct")]


def test_wrong_format_and_hub_without_datasets():
    with pytest.raises(ValueError, match="has no 'question'"): tasks.gsm8k(MATH)
    with pytest.raises(ValueError, match="has no 'problem'"): tasks.math500(GSM)
    try: import datasets  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install datasets"): tasks.math500()
