"""TRL GRPO against CLARITI's update (REINFORCE, group-mean baseline, KL in the reward) on the held-out reward.

    nice -n 10 .venv/bin/python benchmarks/policy_update.py [--steps 3] [--prompts 16] [--max-new-tokens 128]
        [--limit N] [--out benchmarks/out/policy_update.json]

Both updates start from the same SFT policy (``data/models/sft/adapter`` merged into the base, as the ``grpo`` stage
does) and train ``--steps`` optimiser steps on the same GRPO prompts (``data/sft/train.jsonl``, the stage's seeded
choice of ``--prompts``) with the staged reward of ``params.yaml``:

- ``trl_grpo``: the ``cpu`` profile as the default run trains it (TRL GRPOTrainer + LoRA);
- ``reference_reinforce``: the same profile with ``grpo.update: reference_reinforce`` and ``lora.enabled: false``
  (every weight trained, as the reference does).

Each trained policy and the SFT policy answer the held-out SFT rows (``data/sft/heldout.jsonl``) greedily; the
staged reward scores every answer alone (``tasks.training.heldout.evaluated_reward``), as the ``grpo`` stage's
held-out curve does. Printed: each policy's held-out mean and the paired differences by case with 95% bootstrap
intervals. Figures, per-case values and settings go to ``--out``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

UPDATES = {"trl_grpo": {}, "reference_reinforce": {"grpo": {"update": "reference_reinforce"},
                                                   "lora": {"enabled": False}}}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    p.add_argument("--train", type=Path, default=ROOT / "data/sft/train.jsonl")
    p.add_argument("--heldout", type=Path, default=ROOT / "data/sft/heldout.jsonl")
    p.add_argument("--sft-adapter", type=Path, default=ROOT / "data/models/sft/adapter")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--limit", type=int, default=None, help="first N held-out rows only")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/out/policy_update.json")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tasks.params import load_params
    from tasks.rewards import trl_glue
    from tasks.rewards.staged import StagedReward
    from tasks.rewards.weights import weights_at
    from tasks.sftdata import SftRow
    from tasks.store import read_jsonl
    from tasks.training.heldout import evaluated_reward, paired_interval, policy_generate, prompts_of, score_answers
    from tasks.training.policy import LocalPolicy
    from tasks.training.profiles import get_profile
    from tasks.training.prompts import grpo_row
    from tasks.training.threads import configure_torch_threads
    from tasks.training.trainers import train_grpo

    configure_torch_threads()
    cfg = load_params(args.params)
    weights = weights_at(ROOT / cfg.sft_data.weights)
    heldout = prompts_of(read_jsonl(args.heldout, SftRow)[: args.limit])
    train = read_jsonl(args.train, SftRow)
    base = {"grpo": {"max_steps": args.steps, "warmup_steps": 0}}
    profiles = {name: get_profile("cpu", {**base, **{k: {**base.get(k, {}), **v} for k, v in extra.items()}})
                for name, extra in UPDATES.items()}
    seed = profiles["trl_grpo"].seed
    chosen = sorted(train, key=lambda r: hashlib.sha256(f"{seed}:{r.case_id}".encode()).hexdigest())[: args.prompts]
    dataset = [grpo_row(r.incomplete_issue, full_issue=r.full_issue, hints=r.hints, case_id=r.case_id)
               for r in chosen]
    generate = policy_generate(args.max_new_tokens)
    held = evaluated_reward(cfg, weights)

    def sft_policy() -> LocalPolicy:
        return LocalPolicy.from_adapter(profiles["trl_grpo"].model, args.sft_adapter, device=None, merge=True)

    def read(policy: LocalPolicy, name: str) -> dict:
        started = time.monotonic()
        answers = generate(policy.model, policy.tokenizer, [p.incomplete_issue for p in heldout])
        point = score_answers(held, heldout, answers, step=0)
        print(f"{name}: held-out {point.total:.4f} ({time.monotonic() - started:.0f} s)", flush=True)
        return {"total": point.total, "stages": point.stages, "questions": point.questions,
                "asking_rate": point.asking_rate, "per_case": point.per_case,
                "answers": {p.case_id: a for p, a in zip(heldout, answers, strict=True)}}

    result: dict = {"heldout_cases": len(heldout), "heldout_issues": len({p.source_id for p in heldout}),
                    "train_prompts": len(dataset), "steps": args.steps, "max_new_tokens": args.max_new_tokens,
                    "sft_adapter": str(args.sft_adapter.relative_to(ROOT)) if args.sft_adapter.is_relative_to(ROOT)
                    else args.sft_adapter.name, "policies": {}, "training": {}}
    def save() -> None:  # after every reading, so a run stopped early keeps what it measured
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")

    result["policies"]["sft"] = read(sft_policy(), "sft")
    save()
    for name, profile in profiles.items():
        sft = sft_policy()
        functions = trl_glue.reward_functions(StagedReward(cfg.reward_config(), weights))
        with tempfile.TemporaryDirectory(prefix=f"policy-update-{name}-") as scratch:
            out = Path(scratch) / "grpo"
            trained = train_grpo(sft.model, sft.tokenizer, dataset, functions, profile, out,
                                 reward_weights=trl_glue.reward_weights(functions))
            history = json.loads((out / "log_history.json").read_text())
            result["training"][name] = {"seconds": round(trained.seconds, 1), "steps": trained.steps,
                                        "trainable_params": trained.trainable_params,
                                        "settings": profile.grpo.model_dump(mode="json"),
                                        "lora": profile.lora.enabled, "log_history": history}
            print(f"{name}: {trained.steps} steps in {trained.seconds:.0f} s", flush=True)
            policy = (LocalPolicy.from_adapter(None, out / "adapter", device=None) if not profile.lora.enabled
                      else LocalPolicy.from_adapter(sft_policy().model, out / "adapter", tokenizer=sft.tokenizer,
                                                    device=None))
            result["policies"][name] = read(policy, name)
            save()
    ids = sorted(result["policies"]["sft"]["per_case"])

    def diff(a: str, b: str) -> dict:
        pa, pb = result["policies"][a]["per_case"], result["policies"][b]["per_case"]
        return paired_interval([pa[i] for i in ids], [pb[i] for i in ids]).model_dump()

    result["paired"] = {"reference_reinforce - trl_grpo": diff("reference_reinforce", "trl_grpo"),
                        "trl_grpo - sft": diff("trl_grpo", "sft"),
                        "reference_reinforce - sft": diff("reference_reinforce", "sft")}
    save()
    print(f"held-out: {result['heldout_cases']} cases of {result['heldout_issues']} issues, greedy, "
          f"{args.max_new_tokens} new tokens; {args.steps} steps each on {len(dataset)} prompts")
    for name, policy in result["policies"].items():
        print(f"| {name} | {policy['total']:.4f} | {policy['questions']:.2f} questions |")
    for name, gap in result["paired"].items():
        print(f"| {name} | {gap['mean']:+.4f} [{gap['low']:+.4f}, {gap['high']:+.4f}] |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
