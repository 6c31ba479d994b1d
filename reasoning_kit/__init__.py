"""Turn more model calls into better answers: Tree of Thoughts, Reflexion, Debate, Swarm and more on one event-sourced engine, written as notebooks.

Modules:

- `reasoning_kit.algos.answers`: Turn a model's reply into the answer an algorithm compares: extraction, normalisation and the vote, in one place, with the raw reply always kept beside the answer.
- `reasoning_kit.algos.best_of_n`: Draw N candidate answers, score each with a verifier, and answer with the best, the answer with the largest summed score, or the plain majority.
- `reasoning_kit.algos.common`: Reading an answer out of a reply, counting answers, reading the task, and folding events through a table: what every algorithm needs, in one place.
- `reasoning_kit.algos.debate`: Several agents answer, read each other's answers, revise, and a judge (or a vote) settles it.
- `reasoning_kit.algos.generate_test_repair`: Generate a candidate, run a deterministic test on it, and when it fails show the model the failure and ask for a fix.
- `reasoning_kit.algos.generator_critic`: One conversation: the generator drafts, a critic reviews, the generator patches its answer, until the critic accepts.
- `reasoning_kit.algos.mcts`: Search over reasoning steps by selecting with UCT, expanding a node with proposed next steps, evaluating them, and backing the values up the tree.
- `reasoning_kit.algos.reflexion`: Attempt, evaluate, and when the attempt is rejected write a short lesson; the next attempt starts from scratch with the lessons in its prompt.
- `reasoning_kit.algos.self_consistency`: Sample several reasoning paths, read the final answer of each, and take the majority.
- `reasoning_kit.algos.swarm`: One conversation, several agents; a hand-off is a tool call, and the rules are enforced in code.
- `reasoning_kit.algos.toolloop`: Call the model; run the tools it asks for; repeat until it answers or the turns run out.
- `reasoning_kit.algos.tot`: A beam search over reasoning steps: propose several next steps, score them, keep the best few, repeat.
- `reasoning_kit.algos.tot_prompts`: The default prompts of Tree of Thoughts, the hooks that replace them, and how a model's reply becomes a step, a score or a vote.
- `reasoning_kit.apps.gateway`: Any algorithm behind an OpenAI-compatible endpoint: `reasoning-kit gateway`.
- `reasoning_kit.apps.inspect_ai`: Any reasoning_kit algorithm as an inspect_ai solver: its model calls go through inspect's model, and the run's log rides along in the sample's metadata.
- `reasoning_kit.apps.server`: Start runs and sessions over HTTP, and watch them event by event as they happen.
- `reasoning_kit.apps.session`: A conversation over many runs: each user message is one run, every run's log is kept, and a turn that died is finished from its log without asking the model again.
- `reasoning_kit.core.checks`: Every constructor checks every argument the same way, and says which parameter was wrong and what it accepts; a renamed parameter keeps working for one version.
- `reasoning_kit.core.events`: A run is the fold of its event log: everything else in reasoning_kit is built on that one idea.
- `reasoning_kit.core.handlers`: What the engine asks of a handler: the effect it serves, the type it returns, how it answers a request, its worst case for a budget, and the secrets it may carry.
- `reasoning_kit.core.secrets`: What a secret is, which ones a process knows, and scrubbing them out of everything that is written to disk, logged or shown.
- `reasoning_kit.effects.memory`: Short notes that outlive a run: stored as JSON Lines, found again by what they say.
- `reasoning_kit.effects.sandbox`: Run code a model wrote in new namespaces (no network, no files but its own, one writable scratch directory) with a time limit, a memory limit and no environment; process limits alone as a fallback that warns.
- `reasoning_kit.effects.tools`: `@tool` turns a typed Python function into something a model can call, safely.
- `reasoning_kit.effects.validate`: Named, deterministic checks: the cheapest and most reliable judge of an answer.
- `reasoning_kit.engine.budget`: A budget checked before every call: its limits, each call's worst case reserved, and the price of a model.
- `reasoning_kit.engine.run`: Effects with keys, a log that is the run, a budget checked before every call, and replay for free.
- `reasoning_kit.engine.serve`: How one effect is answered: admitted by the budget, logged, served from a replayed log or sent to its handler, and its answer logged.
- `reasoning_kit.engine.state`: How a run ends, what it raised, the state its log folds to, and the Algorithm base class.
- `reasoning_kit.engine.timetravel`: Where two runs part, what each decided from there, and what the difference cost.
- `reasoning_kit.models.anthropic_wire`: Requests to Messages API JSON and back, and its named stream events reassembled.
- `reasoning_kit.models.cassettes`: A cache of responses keyed by the full request, and cassettes: a run recorded once against a real model replays offline, byte for byte.
- `reasoning_kit.models.clients`: OpenAI-compatible and Anthropic clients over httpx: one pooled connection each, retries that show in the log, limits, timeouts, streaming, and the cost of every call.
- `reasoning_kit.models.core`: Messages, requests, responses and usage: the vocabulary every algorithm and every client shares.
- `reasoning_kit.models.errors`: Every failure is a `ClientError` that knows whether asking again could help; waits honour the server; limits protect the quota.
- `reasoning_kit.models.fake`: A model that is a Python function of the request: every algorithm runs, and is tested, offline.
- `reasoning_kit.models.local`: A real model the library starts itself: llama.cpp's `llama-server` on 127.0.0.1, a small model from PyPI, and a model string (`"local:smollm2"`) that works wherever one is taken.
- `reasoning_kit.models.providers`: `PROVIDER:MODEL[@BASE_URL]` names a model anywhere one is taken; keys never show; usage becomes dollars.
- `reasoning_kit.models.stream`: The HTTP clients' answers as they arrive: text and tool-call deltas, then the whole answer, with retries (a stream cut after text is asked again, and its listeners told to discard it) and parallel samples side by side.
- `reasoning_kit.models.transport`: One pooled connection per client, keys looked up per call and scrubbed, limits, retries that show in the log, timeouts, streaming, and `n` samples.
- `reasoning_kit.models.wire`: Requests to chat-completions JSON and back, streams reassembled, and the helpers both wire formats share.
- `reasoning_kit.runtime`: `reasoning_kit.llm`, `.llm.fake`, `.runtime`, `.tools` and `.validate`: the names the specification's example imports, kept as faces over the folders that hold the code. They never move and never warn.
- `reasoning_kit.sweep.eval`: One algorithm over many tasks, with bounded concurrency, a deterministic check and a report you can compare.
- `reasoning_kit.sweep.experiment`: A sweep described in a small JSON or TOML file and checked whole before anything runs: task sets, checks and scripted models by name, or your own as "module:function".
- `reasoning_kit.sweep.frontier`: Given a sweep over methods and budgets: which method to use at each budget, per difficulty bin if asked, with a bootstrap interval of the winner's margin, and a plot of the frontier.
- `reasoning_kit.sweep.grid`: Many configurations over many tasks: one tidy table, summaries with intervals, an experiment directory that resumes.
- `reasoning_kit.sweep.plots`: Accuracy against cost with error bars and the Pareto front, calls per item as a distribution, and per-item win/loss between two methods.
- `reasoning_kit.sweep.ray`: The same sweep on a Ray cluster: each item a Ray task with its own Engine; rows, logs and progress come back as on one machine.
- `reasoning_kit.tasks.arithmetic`: A small task set the package ships for measuring methods on real models: sums and products whose answers code can check exactly, at three levels a small model finds easy, harder and hard.
- `reasoning_kit.tasks.benchmarks`: The field's two grade-school and competition math sets, read from the Hugging Face hub or from a local file in the dataset's own format, and graded as the field grades them: the number after `####`, and math-verify.
- `reasoning_kit.tasks.game24`: The puzzle Tree of Thoughts was first shown on: an exact checker (with failure messages a model can act on), a solver, the puzzle set, and prompts of its own in the paper's format.
- `reasoning_kit.tasks.gym`: Any of reasoning-gym's procedural generators as a task set: its items at the difficulty you set, and a check that grades with the generator's own `score_answer`.
- `reasoning_kit.tools`: `@tool`, the registry and `ToolHandler` under the name the specification's example imports them by.
- `reasoning_kit.validate`: `ValidationHandler` and `Verdict` under the name the specification's example imports them by.
- `reasoning_kit.viz.best_of_n`: Every candidate of a best-of-N run with its answer and its score, the votes and summed scores, and the chosen one.
- `reasoning_kit.viz.code`: For any event of a run, the lines of the algorithm that produced it, the emitting line highlighted.
- `reasoning_kit.viz.compare`: Two runs of the same task side by side, aligned by the algorithm's steps, with where they part.
- `reasoning_kit.viz.debate`: The agents' answers in every round, who changed their mind, and the judge's ruling or the tally.
- `reasoning_kit.viz.export`: Step through a run in any browser, offline: no server, no kernel, no CDN.
- `reasoning_kit.viz.generate_test_repair`: Candidates across, attempts down: each answer, whether the check passed it, and the failure message its repair answers.
- `reasoning_kit.viz.generator_critic`: Each round of a GeneratorCritic run: the draft, the critic's verdict and its feedback, in one conversation.
- `reasoning_kit.viz.html`: Escaping, graphs drawn with or without `dot`, and events, messages and usage as readable HTML.
- `reasoning_kit.viz.keys`: ← → Home End and space step through a run when the stepper has the focus, and JupyterLab's own shortcuts stay out of it.
- `reasoning_kit.viz.mcts`: The search tree at any step: visits and mean values on each node, the path selected this iteration, the new nodes, and the answer.
- `reasoning_kit.viz.reflexion`: Each trial of a Reflexion run: the attempt, the verdict and the lesson drawn from it.
- `reasoning_kit.viz.self_consistency`: Every sampled reasoning path with its answer, and the tally of the votes as it grows.
- `reasoning_kit.viz.stepper`: Open any run in a notebook and step through it event by event, with the algorithm's own picture of its state beside the event.
- `reasoning_kit.viz.still`: A stepper's frame as an SVG image that any notebook reader shows, trusted or not.
- `reasoning_kit.viz.swarm`: The agents and the hand-offs they may make, the active agent, the hand-offs taken so far in order, and the conversation with who said what.
- `reasoning_kit.viz.toolloop`: The conversation of a ToolLoop run, turn by turn: what the model said, which tools ran and what they returned.
- `reasoning_kit.viz.tot`: The whole tree at any step of a TreeOfThoughts run: every step and its score, the beam, what was pruned and why, and the winning path.
- `reasoning_kit.viz.views`: A registry from an algorithm's name to the function that draws its state, with the jumps the stepper offers."""

__version__ = "0.1.0"


# The names the README's first example uses, importable from the package itself. Each is imported on first use,
# so `import reasoning_kit` stays as light as it was (nothing below it is loaded until a name is asked for).
_LAZY = {"Engine": "engine", "Budget": "engine", "Status": "engine", "Outcome": "engine", "fold_run": "engine", "open_run": "engine",
         "FakeLLMClient": "llm", "LLMHandler": "llm", "Message": "llm", "LLMRequest": "llm", "text": "llm.fake", "tool_call": "llm.fake",
         "tool": "tools", "ToolHandler": "tools", "ValidationHandler": "validate", "diff": "engine.timetravel",
         **dict.fromkeys(["ToolLoop", "Reflexion", "Debate", "Swarm", "Agent", "TreeOfThoughts", "SelfConsistency", "GeneratorCritic",
                          "GenerateTestRepair", "BestOfN", "MCTS"], "algos")}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    "`from reasoning_kit import Engine, Reflexion, ...`: the name from its module, imported on first use."
    if name in _LAZY:
        from importlib import import_module
        value = getattr(import_module(f"reasoning_kit.{_LAZY[name]}"), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module 'reasoning_kit' has no attribute {name!r}")


def __dir__(): return sorted([*globals(), *_LAZY])
