"""How long after a streaming client goes away until llama-server has no request left processing (#41: "a disconnected
stream leaves no upstream slot busy a second later"). A test checks that the slots empty (within a generous bound); this
measures how soon, on the machine at hand:

    python benchmarks/gateway_disconnect.py [--trials 5] [--plain]

Each trial streams `self_consistency+local:smollm2` with three samples that would decode 2,000 tokens each, waits until
the server is decoding all three, closes the connection, and polls llama-server's /metrics every 10 ms until
`requests_processing` is 0. Measured on the 2-core VM, quiet: 0.60, 0.07, 0.13, 0.03, 0.07 s (median 0.07 s).
`--plain` asks for the whole answer instead (no streaming), over a bare socket that is closed once the server is
decoding. Before (commit c23c48e) the gateway did not watch for that disconnect: the run went on, and the three samples
were still decoding at the 30 s cap (30.02, 30.01 s). Cancelling the run alone did not stop them either (30.13, 30.06,
30.11, 30.11, 30.19 s): they were whole requests, which llama-server decoded on (with /metrics polled once a second
instead, one trial emptied within a second: it seems to look at a whole request's connection only when nothing else
happens). The gateway now streams its upstream calls whatever the client asked, and llama-server stops a streamed
request when its connection closes: 0.27, 0.07, 0.06, 0.03, 0.07 s (median 0.07 s). Streaming them needed a fix to
the usage of n > 1 streams (counted from the wrong choice when the first stopped and a later one hit max_tokens).
"""
import argparse, json, re, socket, statistics, threading, time

import httpx
import uvicorn

from reasoning_kit.apps.gateway import Gateway
from reasoning_kit.models import local


def busy(server) -> float:
    "llama-server's requests being decoded right now."
    m = re.search(r"^llamacpp:requests_processing ([0-9.e+]+)$", httpx.get(server.url + "/metrics").text, re.M)
    return float(m[1])


def streamed(port: int, body: dict, llama) -> float:
    "Stream the answer, close the connection once the server decodes all three samples; the close's time."
    with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60):
        for _ in range(500):
            if busy(llama) >= 3: break
            time.sleep(0.02)
        return time.monotonic()  # the connection closes as the block ends


def plain(port: int, body: dict, llama) -> float:
    "Ask for the whole answer over a bare socket, close it once the server decodes all three samples; the close's time."
    data = json.dumps({**body, "stream": False}).encode()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(data) + data)
        for _ in range(500):
            if busy(llama) >= 3: break
            time.sleep(0.02)
        return time.monotonic()  # the socket closes as the block ends


def main(trials: int, plain_answer: bool) -> None:
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
                t0 = (plain if plain_answer else streamed)(port, body, llama)
                while busy(llama) > 0 and time.monotonic() - t0 < 30: time.sleep(0.01)
                times.append(time.monotonic() - t0); time.sleep(0.5)
        finally:
            server.should_exit = True; thread.join(30)
    print(("plain answer, " if plain_answer else "stream, ") + "disconnect -> no request processing (s):", ", ".join(f"{t:.2f}" for t in times), f"| median {statistics.median(times):.2f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--plain", action="store_true", help="ask for the whole answer, not a stream")
    a = p.parse_args(); main(a.trials, a.plain)
