"""What each log durability costs per event: "buffered" (written when the buffer fills or the log closes),
"flush" (handed to the OS at every event: survives the process being killed) and "fsync" (forced to disk at
every event: survives the machine losing power). Ratios are against an in-memory log in the same run."""
import tempfile
import time
from pathlib import Path

from reasoning_kit.core.events import Log

N = 5000
PAYLOAD = {"result": {"choices": [{"message": {"role": "assistant", "content": "x" * 200}}], "usage": {"prompt_tokens": 30}}}


def per_event(durability):
    with tempfile.TemporaryDirectory() as d:
        log = Log(path=Path(d) / "b.jsonl", durability=durability) if durability else Log()
        t0 = time.perf_counter()
        for i in range(N): log.append("llm.result", PAYLOAD, key=f"k/{i}")
        log.close()
        return (time.perf_counter() - t0) / N


if __name__ == "__main__":
    base = min(per_event(None) for _ in range(3))
    print(f"in memory: {base * 1e6:8.2f} us/event (1.0x)")
    for mode in ("buffered", "flush", "fsync"):
        t = min(per_event(mode) for _ in range(3 if mode != "fsync" else 1))
        print(f"{mode:>9}: {t * 1e6:8.2f} us/event ({t / base:6.1f}x in-memory)")
