"""How many threads should `serve()` give llama-server on a small, shared machine? (issue 43)

    python benchmarks/threads.py [--requests 8] [--tokens 48]

For each thread count (1, and all cores) and each situation -- the server alone, two servers at once (both
measured), the server beside a CPU-bound Python process -- starts SmolLM2 (reasoning_kit.models.local.serve,
4 slots), sends `requests` chat requests (4 at a time, greedy, `tokens` completion tokens each) and reports the
completion tokens per second over the wall time of the batch. Prints one line per (situation, threads).

Measured (replies branch, 2-core VM shared with other engineers' work and three of their llama-servers started
with -t 2, load average 8 to 15; 8 requests of 48 tokens, 4 at a time):

    situation                     threads=1        threads=2 (all cores)
    alone                         48.1 tokens/s    2.4 tokens/s
    beside a CPU-bound process    44.7             2.0
    two servers at once           42.1 and 42.0    2.3 and 2.4

With all cores, llama-server's threads wait for each other at every step and any one kept off a core stalls the
rest: 20x slower here. One thread barely notices a neighbour. So `serve(threads=None)` gives half the cores, at
least one (`default_threads`). Not measured: an idle machine, where 2 threads may beat 1, and larger machines.
"""
import concurrent.futures as cf, json, multiprocessing as mp, os, sys, time, urllib.request

from reasoning_kit.models.local import serve

def burn(stop):
    while not stop.is_set(): sum(i * i for i in range(10000))

def batch(url, n, tokens):
    def one(i):
        body = {"messages": [{"role": "user", "content": f"Count from {i} to {i + 40}, one number per line."}],
                "max_tokens": tokens, "temperature": 0}
        req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r: return json.loads(r.read())["usage"]["completion_tokens"]
    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(4) as ex: done = sum(ex.map(one, range(n)))
    return done / (time.monotonic() - t0)

def main(n, tokens):
    cores = os.cpu_count() or 1
    rows = []
    for threads in sorted({1, cores}):
        with serve("smollm2", slots=4, threads=threads) as s:
            batch(s.url, 4, 8)  # warm up
            rows.append(("alone", threads, [round(batch(s.url, n, tokens), 1)]))
            stop = mp.Event(); p = mp.Process(target=burn, args=(stop,)); p.start()
            try: rows.append(("beside a CPU-bound process", threads, [round(batch(s.url, n, tokens), 1)]))
            finally: stop.set(); p.join()
            with serve("smollm2", slots=4, threads=threads) as s2:
                batch(s2.url, 4, 8)
                with cf.ThreadPoolExecutor(2) as ex:
                    a, b = ex.submit(batch, s.url, n, tokens), ex.submit(batch, s2.url, n, tokens)
                    rows.append(("two servers at once", threads, [round(a.result(), 1), round(b.result(), 1)]))
        for r in rows[-3:]: print(f"{r[0]:28} threads={r[1]}  tokens/s {r[2]}", flush=True)
    print(json.dumps(rows))

if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[a.index("--requests") + 1]) if "--requests" in a else 8, int(a[a.index("--tokens") + 1]) if "--tokens" in a else 48)
