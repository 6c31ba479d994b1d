"""Turn more model calls into better answers: Tree of Thoughts, Reflexion, Debate, Swarm and more on one event-sourced engine, written as notebooks.

Modules:

- `reasoning_kit.algos.reflexion`: Attempt, evaluate, and when the attempt is rejected write a short lesson; the next attempt starts from scratch with the lessons in its prompt.
- `reasoning_kit.clients.cassettes`: A cache of responses keyed by the full request, and cassettes: a run recorded once against a real model replays offline, byte for byte.
- `reasoning_kit.session`: A conversation over many runs: each user message is one run, every run's log is kept, and a turn that died is finished from its log without asking the model again."""

__version__ = "0.1.0"


def __getattr__(name: str):
    "`reasoning_kit.diff(a, b)`: compare two runs (from reasoning_kit.timetravel, imported on first use)."
    if name == "diff":
        from .timetravel import diff
        return diff
    raise AttributeError(f"module 'reasoning_kit' has no attribute {name!r}")
