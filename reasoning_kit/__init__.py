"""Turn more model calls into better answers: Tree of Thoughts, Reflexion, Debate, Swarm and more on one event-sourced engine, written as notebooks.

Modules:

- `reasoning_kit.algos.reflexion`: Attempt, evaluate, and when the attempt is rejected write a short lesson; the next attempt starts from scratch with the lessons in its prompt.
- `reasoning_kit.clients.cassettes`: A cache of responses keyed by the full request, and cassettes: a run recorded once against a real model replays offline, byte for byte.
- `reasoning_kit.memory`: Short notes that outlive a run: stored as JSON Lines, found again by what they say.
- `reasoning_kit.sandbox`: Run code a model wrote in a separate process with a time limit, a memory limit, no environment and a scratch directory.
- `reasoning_kit.server`: Start runs and sessions over HTTP, and watch them event by event as they happen.
- `reasoning_kit.session`: A conversation over many runs: each user message is one run, every run's log is kept, and a turn that died is finished from its log without asking the model again.
- `reasoning_kit.tools`: `@tool` turns a typed Python function into something a model can call, safely.
- `reasoning_kit.validate`: Named, deterministic checks: the cheapest and most reliable judge of an answer."""

__version__ = "0.1.0"


def __getattr__(name: str):
    "`reasoning_kit.diff(a, b)`: compare two runs (from reasoning_kit.timetravel, imported on first use)."
    if name == "diff":
        from .timetravel import diff
        return diff
    raise AttributeError(f"module 'reasoning_kit' has no attribute {name!r}")
