"""Turn more model calls into better answers: Tree of Thoughts, Reflexion, Debate, Swarm and more on one event-sourced engine, written as notebooks.

Modules:

- `reasoning_kit.algos.reflexion`: Attempt, evaluate, and when the attempt is rejected write a short lesson; the next attempt starts from scratch with the lessons in its prompt.
- `reasoning_kit.clients.cassettes`: A cache of responses keyed by the full request, and cassettes: a run recorded once against a real model replays offline, byte for byte.
- `reasoning_kit.session`: A conversation over many runs: each user message is one run, every run's log is kept, and a turn that died is finished from its log without asking the model again."""

__version__ = "0.1.0"
