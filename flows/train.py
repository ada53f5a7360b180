"""sft / grpo: train the questioner with TRL + LoRA on the SFT rows, GRPO with the staged reward.

``--stage sft`` trains a LoRA adapter on ``data/sft/train.jsonl`` (the train split only) -> ``data/models/sft/``;
``--stage grpo`` merges that adapter into the base model and trains a new LoRA adapter with GRPO, one reward function
per stage (logged as ``rewards/<stage>/mean``) and the gated total as the only one that counts ->
``data/models/grpo/``. Metrics go to ``data/metrics/stages/{sft,grpo}.json``, the curves as ``dvc plots`` data to
``data/plots/{sft,grpo}/`` (``loss.json``; GRPO adds ``rewards.json`` and ``heldout.json``). Each output folder
also holds ``training_sources.json``, the issue ids the adapter was trained on (GRPO's: SFT's and its own
prompts'), published with the adapter; evaluation refuses to score a policy on any of them.

``--launch`` runs the stage through ``accelerate launch`` with the profile's accelerate config (written to
``.cache/accelerate/<stage>.yaml``) when the profile has accelerate settings (``gpu``), else in-process as without
it; ``--dry-run`` prints that config and the exact command instead of running. A profile that needs a GPU is
refused on a machine without CUDA (exit 2) before anything heavy is imported.
"""

from __future__ import annotations

import argparse
import sys
import time

from flows import cli
from flows.cli import EXIT_INPUT, run_main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.ArgumentParser(prog="python -m flows.train", description=__doc__.splitlines()[0])
    parser.add_argument("--stage", required=True, choices=["sft", "grpo"])
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument("--launch", action="store_true",
                        help="run through `accelerate launch` when the profile has accelerate settings")
    parser.add_argument("--dry-run", action="store_true", help="with --launch: print the config and command only")
    args = parser.parse_args(argv)
    if args.dry_run and not args.launch:
        parser.error("--dry-run needs --launch")
    return args


def training_profile(cfg, params: str):
    """The recipe ``training.profile`` names (``recipes/<name>.yaml``) with ``training.overrides`` merged in."""
    from tasks.training.profiles import get_profile

    return get_profile(cfg.training.profile, cfg.training.profile_overrides(), source=params, field_prefix="training.")


def launch_plan(stage: str, params: str):
    """How ``--launch`` runs the stage (profile from the params); raises InputError on bad params."""
    from tasks.params import load_params
    from tasks.store import repo_root
    from tasks.training.launch import plan

    root = repo_root()
    profile = training_profile(load_params(root / params), params)
    return plan(stage, params, profile, root)


def launch(stage: str, params: str, dry_run: bool) -> int | None:
    """The exit code of a launched (or dry) run; None when the profile trains in-process."""
    from tasks.training.launch import run

    holder: dict = {}

    def checked() -> None:
        holder["plan"] = launch_plan(stage, params)
        if holder["plan"].launched and not dry_run:
            prepare(stage, params)  # the device and the inputs, checked before accelerate starts anything

    if code := run_main(checked):
        return code
    chosen = holder["plan"]
    if dry_run:
        print(chosen.describe(), end="")
        return 0
    return run(chosen) if chosen.launched else None


def prepare(stage: str, params: str):
    """Params, profile and training rows; raises InputError before anything heavy is imported (a profile that
    needs a GPU is refused here on a machine without CUDA, without importing torch where no driver is present)."""
    from tasks.errors import InputError
    from tasks.params import load_params
    from tasks.sftdata import SftRow
    from tasks.store import read_jsonl, repo_root
    from tasks.training.models import check_device

    root = repo_root()
    cfg = load_params(root / params)
    profile = training_profile(cfg, params)
    check_device(profile)
    rows_path = root / "data" / "sft" / "train.jsonl"
    if not rows_path.is_file():
        raise InputError(rows_path, "file not found (run the sft_data stage first)")
    rows = read_jsonl(rows_path, SftRow)
    from tasks.splits import read_training_sources, training_record

    training_record(stage, rows)  # refuses rows outside the train split before anything is trained
    if stage == "grpo":
        if not (root / "data" / "models" / "sft" / "adapter").is_dir():
            raise InputError(root / "data" / "models" / "sft", "no SFT adapter (run the sft stage first)")
        read_training_sources(root / "data" / "models" / "sft" / "adapter")
    return root, cfg, profile, rows


def _metrics(result, stage: str, profile, profile_name: str, extra: dict) -> dict:
    data = result.model_dump(mode="json")
    # paths are machine-specific and seconds change every run: neither belongs in committed metrics
    keep = {k: v for k, v in data.items()
            if isinstance(v, int | float | str) and k not in ("seconds", "seconds_per_step") and not k.endswith("_dir")}
    rewards = {name.replace("/", "_"): value for name, value in (result.final_rewards or {}).items()}
    from tasks.training.artifacts import method_label

    return {"backend": f"{method_label(stage, profile, short=True)}, profile {profile_name}", **keep, **extra,
            **({"final_rewards": rewards} if rewards else {})}


def train(stage: str = "sft", params: str = "params.yaml") -> dict:
    from tasks.store import atomic_write_json
    from tasks.validation.adapters import adapter_gate
    from tasks.validation.stage_metrics import check_stage_metrics

    started = time.monotonic()
    root, cfg, profile, rows = prepare(stage, params)
    from tasks.training.threads import configure_torch_threads

    configure_torch_threads()  # torch's threads from the cores other work leaves free ($CLARIFYFLOW_TORCH_THREADS)
    out_dir = root / "data" / "models" / stage
    if stage == "sft":
        from tasks.splits import TRAINING_SOURCES, training_record
        from tasks.training.prompts import sft_row
        from tasks.training.trainers import train_sft

        record = training_record("sft", rows)
        result = train_sft(profile.model, None, [sft_row(r.incomplete_issue, r.completion[0]["content"]) for r in rows],
                           profile, out_dir, records={TRAINING_SOURCES: record},
                           check=adapter_gate(profile, f"data/models/{stage}"))
        extra = {"rows": len(rows), "split": "train", "train_source_ids": len(record["source_ids"])}
    else:
        result, extra = _grpo(root, cfg, profile, rows, out_dir, check=adapter_gate(profile, f"data/models/{stage}"))
    from tasks.training.launch import is_main_process

    if is_main_process():
        metrics = _metrics(result, stage, profile, cfg.training.profile, extra)
        check_stage_metrics(stage, metrics)
        atomic_write_json(root / "data" / "metrics" / "stages" / f"{stage}.json", metrics)
        from tasks.stage_metrics import headline_path, headline_text
        from tasks.store import atomic_write_text

        atomic_write_text(headline_path(root, stage), headline_text(stage, metrics))
        from tasks.stage_metrics import timings_path

        atomic_write_json(timings_path(root, stage), {"seconds": round(result.seconds, 3),
                                                      "seconds_per_step": round(result.seconds_per_step, 3)})
        from tasks.training.artifacts import write_plot_data

        write_plot_data(root / "data" / "plots" / stage, out_dir, reward_names=list(result.reward_weights))
    return {"stage": stage, "steps": result.steps, "seconds": round(time.monotonic() - started, 1),
            "out": str(out_dir.relative_to(root))}


def _grpo(root, cfg, profile, rows, out_dir, check=None):
    import hashlib

    from tasks.rewards import trl_glue
    from tasks.rewards.staged import StagedReward
    from tasks.rewards.weights import weights_at
    from tasks.training.policy import LocalPolicy
    from tasks.training.prompts import grpo_row
    from tasks.training.trainers import train_grpo

    chosen = sorted(rows, key=lambda r: hashlib.sha256(f"{profile.seed}:{r.case_id}".encode()).hexdigest())
    chosen = chosen[: cfg.training.grpo_prompts or profile.grpo.prompts]
    # the reward reads the incomplete issue from the prompt's last user message; the full one arrives as a column
    dataset = [grpo_row(r.incomplete_issue, full_issue=r.full_issue, hints=r.hints, case_id=r.case_id) for r in chosen]
    from tasks.sftdata import load_weights as weights_source

    weights_path = root / cfg.sft_data.weights
    weights = weights_at(weights_path)
    staged = StagedReward(grpo_reward(cfg.reward_config(), profile), weights)
    functions = trl_glue.reward_functions(staged)
    sft_adapter = root / "data" / "models" / "sft" / "adapter"
    sft = LocalPolicy.from_adapter(profile.model, sft_adapter, dtype=profile.dtype,
                                   device=None, merge=True)  # GRPO continues from the SFT policy, as in CLARITI
    model, tokenizer = sft.model, sft.tokenizer
    from tasks.splits import TRAINING_SOURCES, read_training_sources, training_record
    from tasks.training.policy import STACK_FILE

    # GRPO's policy has seen SFT's issues too: its record is SFT's source ids and its own prompts'
    record = training_record("grpo", chosen, inherited=read_training_sources(sft_adapter).source_ids)
    # the GRPO adapter sits on the merged SFT policy: LocalPolicy.from_adapter merges SFT first when it reads this
    records = {TRAINING_SOURCES: record}
    if profile.lora.enabled:  # a fully fine-tuned GRPO model already holds the merged SFT weights
        records[STACK_FILE] = {"adapters": ["../sft/adapter"]}
    heldout = _heldout_callback(root, cfg, staged_weights=weights)
    result = train_grpo(model, tokenizer, dataset, functions, profile, out_dir,
                        reward_weights=trl_glue.reward_weights(functions), records=records, check=check,
                        heldout=heldout)
    from tasks.training.heldout import comparison

    extra = {"prompts": len(dataset), "relevance_weights": weights_source(weights_path)[1], "split": "train",
             "train_source_ids": len(record["source_ids"])}
    return result, ({**extra, "heldout": comparison(heldout.curve)} if heldout is not None else extra)


def grpo_reward(settings, profile):
    """The staged reward GRPO trains on: ``params.yaml: reward``, or (``grpo.reward_as_evaluated``) those settings as
    the held-out curve scores them."""
    return settings.as_evaluated() if profile.grpo.reward_as_evaluated else settings


def _heldout_callback(root, cfg, staged_weights):
    """The held-out curve: SFT's held-out rows, scored with the reward as evaluate@swe scores (no diversity cache);
    None when the split holds no held-out row."""
    from tasks.errors import InputError
    from tasks.sftdata import SftRow
    from tasks.store import read_jsonl
    from tasks.training.heldout import evaluated_reward, heldout_callback, prompts_of

    settings = cfg.training.heldout
    if settings.every is None:
        print("no held-out curve (training.heldout.every: null): evaluate@swe pairs the SFT and GRPO policies on the "
              "held-out cases (evaluate.swe.compare)")
        return None
    path = root / "data" / "sft" / "heldout.jsonl"
    rows = read_jsonl(path, SftRow) if path.is_file() else []
    if not rows:
        print(f"warning: {path.name} has no rows: GRPO runs without a held-out curve (construct.swe.heldout_fraction)")
        return None
    if any(r.split != "heldout" for r in rows):
        raise InputError(path, "holds rows outside the held-out split (rerun dvc repro sft_data)", field="split")
    rows = rows[: settings.limit] if settings.limit else rows
    prompts = prompts_of(rows)
    reward = evaluated_reward(cfg, staged_weights)
    return heldout_callback(prompts, reward, every=settings.every, max_new_tokens=settings.max_new_tokens)


def describe(summary: dict) -> str:
    return f"{summary['stage']}: {summary['steps']} steps -> {summary['out']}/ ({summary['seconds']} s)"


def build_flow():
    from prefect import flow

    return flow(name="train", flow_run_name="{stage}", log_prints=True)(train)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.launch:
        code = launch(args.stage, args.params, args.dry_run)
        if code is not None:
            return code
    from flows import _env
    from tasks.training.launch import is_main_process

    _env.configure()
    if run_main(lambda: prepare(args.stage, args.params)):
        return EXIT_INPUT
    if not is_main_process():  # the other ranks of a multi-process launch train without a Prefect flow of their own
        return run_main(lambda: train(stage=args.stage, params=args.params))
    return run_main(lambda: print(describe(build_flow()(stage=args.stage, params=args.params))))


if __name__ == "__main__":
    sys.exit(main())
