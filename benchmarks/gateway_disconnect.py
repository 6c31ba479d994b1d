"""How long after a streaming client goes away until llama-server has no request left processing (#41: "a disconnected
stream leaves no upstream slot busy a second later"). A test checks that the slots empty (within a generous bound); this
measures how soon, on the machine at hand:

    python benchmarks/gateway_disconnect.py [--trials 5]

Each trial streams `self_consistency+local:smollm2` with three samples that would decode 2,000 tokens each, waits until
the server is decoding all three, closes the connection, and polls llama-server's /metrics every 10 ms until
`requests_processing` is 0. Measured on the 2-core VM, quiet: 0.60, 0.07, 0.13, 0.03, 0.07 s (median 0.07 s).
"""
import argparse, re, socket, statistics, threading, time

import httpx
import uvicorn

from reasoning_kit.apps.gateway import Gateway
from reasoning_kit.models import local


def busy(server) -> float:
    "llama-server's requests being decoded right now."
    m = re.search(r"^llamacpp:requests_processing ([0-9.e+]+)$", httpx.get(server.url + "/metrics").text, re.M)
    return float(m[1])


def main(trials: int) -> None:
    times = []
    with local.serve("smollm2", slots=4) as llama:
        gateway = Gateway([llama.model])
        with socket.socket() as s: s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(gateway.app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True); thread.start()
        while not server.started: time.sleep(0.02)
        body = {"model": f"self_consistency+{llama.model}", "stream": True, "max_tokens": 2000, "ignore_eos": True,
                "messages": [{"role": "user", "content": "Tell a long story."}],
                "reasoning_kit": {"config": {"samples": 3, "mode": "separate"}}}
        try:
            for _ in range(trials):
                with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60):
                    for _ in range(500):
                        if busy(llama) >= 3: break
                        time.sleep(0.02)
                    t0 = time.monotonic()  # the connection closes as the block ends
                while busy(llama) > 0 and time.monotonic() - t0 < 30: time.sleep(0.01)
                times.append(time.monotonic() - t0); time.sleep(0.5)
        finally:
            server.should_exit = True; thread.join(30)
    print("disconnect -> no request processing (s):", ", ".join(f"{t:.2f}" for t in times), f"| median {statistics.median(times):.2f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=5)
    main(p.parse_args().trials)
