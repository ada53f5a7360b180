"""SFT against GRPO on the held-out rows, scored on samples as GRPO is trained, beside the greedy answers.

    .venv/bin/python benchmarks/heldout_sampled.py [--grpo data/models/grpo/adapter] [--sft data/models/sft/adapter]
        [--samples 4] [--temperature 1.0] [--top-p 0.9] [--max-new-tokens 96] [--limit N] [--out FILE]

GRPO maximises the expected staged reward of completions *sampled* from the policy; the held-out curve of the
``grpo`` stage scores one *greedy* answer per case. On a 135M model the greedy answer of a case is a discontinuous
function of the weights, and under ``partial_credit: public`` its total jumps by about 0.5 when one gate flips, so
30 greedy answers are a noisy reading of what GRPO optimises. This script reads both: for each policy it draws
``--samples`` answers per held-out case (seeded, the same seeds for both policies) and one greedy answer, scores
every answer with the reward as the held-out curve does (``RewardConfig.as_evaluated``: each answer alone), and
gives GRPO − SFT paired by case (per-case mean over the samples) with a 95% bootstrap interval, for the gated
total, each stage, the ``ungated`` and ``paper`` measures. Figures go to stdout and ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grpo", type=Path, default=ROOT / "data/models/grpo/adapter")
    p.add_argument("--sft", type=Path, default=ROOT / "data/models/sft/adapter")
    p.add_argument("--heldout", type=Path, default=ROOT / "data/sft/heldout.jsonl")
    p.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=0.9)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/out/heldout_sampled.json")
    return p.parse_args(argv)


def mean_by_case(points: list, key) -> dict[str, float]:
    """Per case: the mean over ``points`` of ``key(point)[case]``."""
    cases = key(points[0])
    return {c: sum(key(p)[c] for p in points) / len(points) for c in cases}


def readings(points: list) -> dict[str, dict[str, float]]:
    """Reading name (total, each stage, each measure) -> case -> mean over the points."""
    out = {"total": mean_by_case(points, lambda p: p.per_case)}
    out |= {s: mean_by_case(points, lambda p, s=s: p.per_case_stages[s]) for s in points[0].per_case_stages}
    out |= {m: mean_by_case(points, lambda p, m=m: p.per_case_measures[m]) for m in points[0].per_case_measures}
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tasks.params import load_params
    from tasks.rewards.weights import weights_at
    from tasks.sftdata import SftRow
    from tasks.store import read_jsonl
    from tasks.training.heldout import evaluated_reward, paired_interval, prompts_of, score_answers
    from tasks.training.policy import LocalPolicy

    cfg = load_params(args.params)
    reward = evaluated_reward(cfg, weights_at(ROOT / cfg.sft_data.weights))
    rows = read_jsonl(args.heldout, SftRow)[: args.limit]
    prompts = prompts_of(rows)
    issues = [p.incomplete_issue for p in prompts]
    result: dict = {"cases": len(prompts), "issues": len({p.source_id for p in prompts}), "samples": args.samples,
                    "temperature": args.temperature, "top_p": args.top_p, "max_new_tokens": args.max_new_tokens,
                    "policies": {}}
    per_policy: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for name, adapter in (("sft", args.sft), ("grpo", args.grpo)):
        started = time.monotonic()
        policy = LocalPolicy.from_adapter(None, adapter, device=None, max_new_tokens=args.max_new_tokens,
                                          temperature=args.temperature, top_p=args.top_p, batch_size=32,
                                          progress=False)
        greedy = score_answers(reward, prompts, policy.ask_many(issues), step=0)
        policy.settings = policy.settings.model_copy(update={"greedy": False})
        sampled = []
        for k in range(args.samples):
            policy.settings = policy.settings.model_copy(update={"seed": 1000 * k})
            sampled.append(score_answers(reward, prompts, policy.ask_many(issues), step=k))
        per_policy[name] = {"greedy": readings([greedy]), "sampled": readings(sampled)}
        result["policies"][name] = {
            "adapter": str(adapter.relative_to(ROOT)) if adapter.is_relative_to(ROOT) else str(adapter),
            "seconds": round(time.monotonic() - started, 1),
            **{kind: {r: sum(v.values()) / len(v) for r, v in found.items()}
               for kind, found in per_policy[name].items()}}
        print(f"{name}: greedy total {greedy.total:.4f}, sampled total "
              f"{result['policies'][name]['sampled']['total']:.4f} ({result['policies'][name]['seconds']} s)",
              file=sys.stderr)
    result["gain"] = {}
    for kind in ("greedy", "sampled"):
        grpo, sft = per_policy["grpo"][kind], per_policy["sft"][kind]
        ids = sorted(sft["total"])
        result["gain"][kind] = {r: paired_interval([grpo[r][i] for i in ids], [sft[r][i] for i in ids]).model_dump()
                                for r in sft}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"held-out: {result['cases']} cases of {result['issues']} issues; sampled: {args.samples} answers per case "
          f"at temperature {args.temperature}, {args.max_new_tokens} new tokens")
    print("| reading | kind | SFT | GRPO | GRPO - SFT [95% CI] |")
    print("|---|---|---:|---:|---|")
    for kind in ("greedy", "sampled"):
        for r, g in result["gain"][kind].items():
            sft, grpo = (result["policies"][name][kind][r] for name in ("sft", "grpo"))
            print(f"| {r} | {kind} | {sft:.3f} | {grpo:.3f} | {g['mean']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}] |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
