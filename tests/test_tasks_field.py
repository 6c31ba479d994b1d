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


# ---- experiment files and `reasoning-kit eval`

SCRIPTED = '''
import json, re
from reasoning_kit.tasks.benchmarks import data_file
KEY = {r["question"]: r["answer"].split("####")[-1].strip() for r in map(json.loads, open(data_file("gsm8k_format_fixture.jsonl")))}
KEY.update({r["problem"]: r["answer"] for r in map(json.loads, open(data_file("math500_format_fixture.jsonl")))})
WRONG = False  # the same model, one off

def _task(request):
    text = request.messages[-1].content
    return next((q for q in KEY if q in text), None), text

def model(request):
    q, text = _task(request)
    if q is not None: return "Answer: " + ("9999" if WRONG else KEY[q])
    expr = re.search(r"problem: (.*?) =", text).group(1)  # reasoning-gym's chain_sum
    return "Answer: %d" % (eval(expr) + (1 if WRONG else 0))
'''


def _cli(*args, cwd):
    import os, subprocess, sys
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(__import__("pathlib").Path(__file__).parents[1]), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "reasoning_kit", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


@pytest.mark.parametrize("wrong", [False, True])
def test_experiment_files_run_the_field_sets_through_reasoning_kit_eval(tmp_path, wrong):
    import shutil
    (tmp_path / "mymodel.py").write_text(SCRIPTED.replace("WRONG = False", f"WRONG = {wrong}"))
    shutil.copy(GSM, tmp_path / "gsm8k_test.jsonl"); shutil.copy(MATH, tmp_path / "math500.jsonl")
    sc = {"sc-1": {"algorithm": "SelfConsistency", "samples": 1}}
    specs = {"gym.json": {"tasks": {"reasoning_gym": {"name": "chain_sum", "size": 6, "seed": 1, "min_terms": 2, "max_terms": 3}},
                          "check": "reasoning_gym", "model": "mymodel:model", "configs": sc},
             "gsm.json": {"tasks": {"gsm8k": {"path": "gsm8k_test.jsonl", "size": 3}}, "check": "gsm8k", "model": "mymodel:model", "configs": sc},
             "math.json": {"tasks": {"math500": {"path": "math500.jsonl"}}, "check": "math500", "model": "mymodel:model",
                           "configs": {"sc-1": {**sc["sc-1"], "parse": "math500"}}}}
    for name, spec in specs.items():
        (tmp_path / name).write_text(json.dumps(spec))
        out = _cli("eval", name, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        line = out.stdout.splitlines()[1]
        assert line.startswith("sc-1") and ("0.0%" if wrong else "100.0%") in line, out.stdout
    assert "by level:" in out.stdout and "sc-1 @ 3" in out.stdout  # MATH's levels: a table per level under the summary


@pytest.mark.parametrize("change,says", [
    ({"tasks": {"reasoning_gym": {"name": "chain_summ", "size": 5}}}, "gym.json: tasks.reasoning_gym: reasoning_gym: no generator named 'chain_summ' (close: chain_sum"),
    ({"tasks": {"reasoning_gym": {"name": "chain_sum", "max_term": 3}}}, "no setting 'max_term' (did you mean 'max_terms'?)"),
    ({"tasks": {"gsm8k": {"path": "nope.jsonl"}}}, "gym.json: tasks.gsm8k: no such file:"),
    ({"check": "reasoning_gm"}, "gym.json: check: a task set's name such as \"game24\", or \"module:function\" (check(result, input) -> bool) (did you mean 'reasoning_gym'?)"),
])
def test_bad_names_and_settings_fail_before_anything_runs(tmp_path, change, says):
    (tmp_path / "mymodel.py").write_text("def model(request): raise AssertionError('no model call may run')\n")
    spec = {"tasks": {"reasoning_gym": {"name": "chain_sum", "size": 2}}, "check": "reasoning_gym", "model": "mymodel:model",
            "configs": {"sc-1": {"algorithm": "SelfConsistency", "samples": 1}}, **change}
    (tmp_path / "gym.json").write_text(json.dumps(spec))
    out = _cli("eval", "gym.json", cwd=tmp_path)
    assert out.returncode == 2 and says in out.stderr and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_level_is_a_first_class_column():
    from reasoning_kit.sweep import best_by_budget, level_summary
    from reasoning_kit.sweep.grid import SweepResult
    items = tasks.reasoning_gym("chain_sum", size=2, seed=0, level="easy", max_terms=2) + tasks.math500(MATH)[:2]
    rows = [{"config": c, "item": i, "correct": (i + k) % 2 == 0, "answer": None, "status": "ok", "calls": 1 + k, "cached": 0,
             "tokens_in": 100 * (1 + k), "tokens_out": 0, "tokens_cached": 0, "cost": 0.0, "error": None}
            for k, c in enumerate(["a", "b"]) for i in range(len(items))]
    res = SweepResult(config={"configs": {"a": {"algorithm": "A"}, "b": {"algorithm": "B"}}, "tasks": items}, rows=rows)
    assert {r["bin"] for r in best_by_budget(res)} == {"easy", "1", "2"}
    assert [(s["label"], s["level"], s["items"]) for s in level_summary(res)][:2] == [("a", "easy", 2), ("b", "easy", 2)]


def test_parse_names_a_task_sets_answer_reader(tmp_path):
    from reasoning_kit.sweep.experiment import load_experiment
    spec = {"tasks": ["x"], "model": "scripted:game24", "check": "game24", "configs": {"sc": {"algorithm": "SelfConsistency", "parse": "math50"}}}
    (tmp_path / "e.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=r"configs.sc.parse: a task set's answer reader \(math500\) \(did you mean 'math500'\?\)"): load_experiment(tmp_path / "e.json")
    assert tasks.math_answer("So. Answer: 3\\sqrt{2}") == "3\\sqrt{2}"
