"""Throughput of the full staged reward with the local judges: questions per second, cold and warm embedding cache.

    .venv/bin/python benchmarks/reward_throughput.py [--data data/samples/swe/issues.jsonl] [--completions 200]

The project's sample issues are masked as in ``construct@swe`` (default settings); each masked variant is a prompt
with ``--group`` synthetic completions of 3–5 questions (seeded) drawn from question templates filled with names
found in the full issue (files, functions, error types): questions about hidden categories, about visible ones
(likely redundant), generic ones and off-topic ones. Completions are scored in GRPO-like batches (``--batch``
completions, siblings = completions of the same prompt). Cold: an empty embedding cache in a temporary folder
(the MiniLM load is timed separately). Warm: the same batches again with a fresh reward (empty generation cache).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.files import write_json  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "reward_throughput.json"

TEMPLATES = {
    "error_info": ["What is the full traceback you get when {thing} fails?",
                   "Which exact error message does {thing} print?",
                   "Is an exception raised, or is the output of {thing} just wrong?"],
    "reproduction": ["Could you share a minimal script that triggers the problem with {thing}?",
                     "What input do you pass to {thing} when it goes wrong?",
                     "Which steps reproduce the failure?"],
    "expected_behavior": ["What did you expect {thing} to return instead?",
                          "What should the correct output look like?"],
    "implementation": ["Where in the code do you think {thing} should be changed?",
                       "Do you have a proposed fix for {thing} in mind?"],
    "external_refs": ["Is there a related issue or pull request about {thing}?",
                      "Which documentation page describes how {thing} should behave?"],
    "version_env": ["Which version of {repo} and of Python are you using?",
                    "Which operating system do you run {thing} on?"],
    "generic": ["Can you tell me more about the problem?", "Could you clarify what you mean?"],
    "off_topic": ["What is your favourite text editor for this work?", "How long have you been programming?"],
}
_THINGS = re.compile(r"`([A-Za-z_][\w.]*(?:\(\))?)`|\b([\w/]+\.py)\b|\b([A-Z]\w*(?:Error|Exception|Warning))\b")


def things_of(text: str) -> list[str]:
    found = [next(g for g in m.groups() if g) for m in _THINGS.finditer(text)]
    return list(dict.fromkeys(found))[:8] or ["this function"]


def load_cases(path: Path):
    from tasks.domains.swe import mask_issue
    from tasks.params import SweConstructParams
    from tasks.swe_samples import load_samples

    cfg = SweConstructParams()
    return [case for issue in load_samples(path) for case in mask_issue(issue, cfg)[0]]


def completion_for(case, rng: random.Random) -> tuple[str, list[str]]:
    """3–5 questions: mostly hidden categories, some visible (redundant), some generic or off-topic."""
    hidden = [c.key for c in case.hidden_categories]
    visible = [c.key for c in case.visible_categories]
    pools = hidden * 3 + visible + ["generic", "off_topic"]
    things = things_of(case.full_text)
    kinds = [rng.choice(pools) for _ in range(rng.randint(3, 5))]
    repo = (case.extra.get("repo") or "the library").split("/")[-1]
    questions = [rng.choice(TEMPLATES[k]).format(thing=rng.choice(things), repo=repo) for k in kinds]
    return "\n".join(f"{n}. {q}" for n, q in enumerate(questions, start=1)), kinds


def build_batches(cases, completions: int, group: int, batch: int, seed: int) -> tuple[list[list[dict]], Counter]:
    rng = random.Random(seed)
    kinds: Counter = Counter()
    groups = []
    for k in range(completions // group):
        case = cases[k % len(cases)]
        texts = []
        for _ in range(group):
            text, used = completion_for(case, rng)
            texts.append(text)
            kinds.update(used)
        groups.append([{"completion": t, "incomplete_issue": case.brief.content, "full_issue": case.full_text,
                        "hints": case.hints, "siblings": [o for j, o in enumerate(texts) if j != i]}
                       for i, t in enumerate(texts)])
    per_batch = max(batch // group, 1)
    batches = [[s for g in groups[i:i + per_batch] for s in g] for i in range(0, len(groups), per_batch)]
    return batches, kinds


class TimedJudges:
    """The local role judges, with the seconds spent in each method."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds: Counter = Counter()

    def __getattr__(self, name):
        method = getattr(self.inner, name)

        def timed(*args):
            t0 = time.perf_counter()
            try:
                return method(*args)
            finally:
                self.seconds[name] += time.perf_counter() - t0

        return timed


def run_pass(batches, weights) -> dict:
    from tasks.rewards import RewardConfig, RoleJudges, StagedReward

    judges = TimedJudges(RoleJudges())
    staged = StagedReward(RewardConfig(), weights, judges=judges)
    t0 = time.perf_counter()
    outs = [b for batch in batches for b in staged.score(batch)]
    seconds = time.perf_counter() - t0
    questions = sum(b.n_questions for b in outs)
    stages = staged.stage_names
    return {
        "seconds": round(seconds, 3),
        "completions": len(outs),
        "questions": questions,
        "questions_per_s": round(questions / seconds, 1),
        "completions_per_s": round(len(outs) / seconds, 1),
        "judge_seconds": {k: round(v, 3) for k, v in sorted(judges.seconds.items())},
        "mean_total": round(sum(b.total for b in outs) / len(outs), 4),
        "stage_means": {s: round(sum(b.values[s] for b in outs) / len(outs), 4) for s in stages},
        "stopped_at": dict(Counter(b.stopped_at or "all_passed" for b in outs)),
        "judge_failures": sum(sum(b.judge_failures.values()) for b in outs),
        "_totals": [b.total for b in outs],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data" / "samples" / "swe" / "issues.jsonl")
    parser.add_argument("--completions", type=int, default=200)
    parser.add_argument("--group", type=int, default=4, help="completions per prompt (siblings)")
    parser.add_argument("--batch", type=int, default=16, help="completions per scoring call")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"{args.data}: file not found", file=sys.stderr)
        return 2

    os.environ["CLARIFYFLOW_CACHE_DIR"] = tempfile.mkdtemp(prefix="reward-bench-cache-")
    from tasks.llm.embeddings import default_embedder
    from tasks.rewards import load_weights

    cases = load_cases(args.data)
    batches, kinds = build_batches(cases, args.completions, args.group, args.batch, args.seed)
    weights = load_weights()
    t0 = time.perf_counter()
    default_embedder().encode(["warm-up sentence for the model load"])
    model_load_s = time.perf_counter() - t0

    cold = run_pass(batches, weights)
    warm = run_pass(batches, weights)
    deterministic = cold.pop("_totals") == warm.pop("_totals")

    print(f"{len(cases)} masked variants from {args.data.name}; {cold['completions']} completions, "
          f"{cold['questions']} questions, batches of {args.batch} ({args.group} siblings per prompt)")
    print(f"relevance weights: {weights.source}; MiniLM load {model_load_s:.1f} s (not in the timings)\n")
    print(f"{'cache':<6}{'seconds':>9}{'questions/s':>13}{'completions/s':>15}  judge seconds")
    for name, res in (("cold", cold), ("warm", warm)):
        js = ", ".join(f"{k} {v:.2f}" for k, v in res["judge_seconds"].items())
        print(f"{name:<6}{res['seconds']:>9.2f}{res['questions_per_s']:>13.1f}{res['completions_per_s']:>15.1f}  {js}")
    print(f"\nmean total {warm['mean_total']:.3f}; stage means "
          + ", ".join(f"{k} {v:.3f}" for k, v in warm["stage_means"].items()))
    print(f"stopped at: {warm['stopped_at']}; judge failures {warm['judge_failures']}; "
          f"cold and warm totals identical: {deterministic}")

    figures = {
        "data": str(args.data), "variants": len(cases), "completions": cold["completions"],
        "questions": cold["questions"], "batch": args.batch, "group": args.group, "seed": args.seed,
        "question_kinds": dict(kinds), "relevance_weights": weights.source, "model_load_s": round(model_load_s, 2),
        "cpu_count": os.cpu_count(), "cold": cold, "warm": warm, "deterministic": deterministic,
    }
    write_json(OUT, figures)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
