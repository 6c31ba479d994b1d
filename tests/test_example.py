"""The specification's example runs as written (only `aaa` renamed) and prints exactly its four lines."""
import subprocess
import sys
from pathlib import Path

EXPECTED = """\
reflexion: 42 km after 2 trials; lesson: ['State the unit.']
debate: 12 from rounds [['12', '10', '12'], ['12', '12', '12']]
swarm: Done: refunded A1 | handoffs: [['triage', 'billing']] | answered by: billing
tree: (8 / (3 - 8 / 3)) | score 10.0 | at most 24 model calls
"""

ROOT = Path(__file__).resolve().parents[1]


def test_four_algorithms_prints_the_specified_lines():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "four_algorithms.py")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == EXPECTED


def test_example_differs_from_the_specification_only_by_the_package_name():
    text = (ROOT / "tests" / "fixtures" / "spec_example.txt").read_text()  # the specification's example, as it was written
    start = text.index('"""Four ways to spend more model calls')
    end = text.index("asyncio.run(main())") + len("asyncio.run(main())")
    ours = (ROOT / "examples" / "four_algorithms.py").read_text()
    assert ours.strip() == text[start:end].replace("from aaa.", "from reasoning_kit.").strip()
