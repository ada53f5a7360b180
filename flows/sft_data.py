"""sft_data: SFT rows (incomplete issue -> numbered questions for what it hides) from the SWE cases.

Each row keeps its case's split (construct@swe's, by issue id). Writes ``data/sft/{train,heldout}.jsonl`` and
``data/metrics/stages/sft_data.json`` after a GX gate. With ``sft_data.targets: published`` the workbook's published
questions are the target wherever they pass the staged reward (GRPO's reward settings and weights), the question
writer's elsewhere; the metrics count both.
"""

from __future__ import annotations

import argparse
import sys
import time

from flows import cli


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return cli.params_args("python -m flows.sft_data", __doc__.splitlines()[0], argv)


def load_inputs(params: str):
    from tasks.errors import InputError
    from tasks.params import load_params
    from tasks.records import Case
    from tasks.sftdata import load_weights
    from tasks.store import read_jsonl, repo_root

    root = repo_root()
    cfg = load_params(root / params)
    path = root / cfg.sft_data.cases
    if not path.is_file():
        raise InputError(path, "file not found (run construct@swe first, or set sft_data.cases)")
    cases = read_jsonl(path, Case)
    from tasks.sftdata import check_splits

    check_splits(cases, path)
    weights, weights_source = load_weights(root / cfg.sft_data.weights)
    published = None
    if cfg.sft_data.targets == "published":
        from tasks.sftdata import load_published

        opts = cfg.sft_data.published
        published = load_published(root / opts.workbook, opts.column)
    return root, cfg, cases, weights, weights_source, published


def published_choices(cfg, cases, weights, published):
    """Which cases get their published list as target (GRPO's reward config and weights, local judges by default)."""
    from tasks.rewards.staged import StagedReward
    from tasks.sftdata import choose_published

    staged = StagedReward(cfg.reward_config(), weights)
    opts = cfg.sft_data.published
    return choose_published(cases, published, weights, staged, min_reward=opts.min_reward,
                            max_questions=opts.max_questions)


def sft_data(params: str = "params.yaml") -> dict:
    from collections import Counter

    from tasks.sftdata import build_rows, published_metrics, validation_frame
    from tasks.stage_metrics import publish_with_metrics
    from tasks.store import atomic_write_text, jsonl_text, staged_dir
    from tasks.validation import gate
    from tasks.validation.stage_metrics import check_stage_metrics

    started = time.monotonic()
    root, cfg, cases, weights, weights_source, published = load_inputs(params)
    choices = published_choices(cfg, cases, weights, published) if published is not None else None
    rows, failed = build_rows(cases, weights, cfg.roles.question_writer, published=choices)
    splits = Counter(r.split for r in rows)
    sources = {split: len({r.instance_id for r in rows if r.split == split}) for split in ("train", "heldout")}
    from tasks.roles.config import describe_roles

    metrics = {
        "backend": f"question_writer role ({describe_roles(cfg.roles)['question_writer']['backend']})",
        "cases": len(cases),
        "rows": len(rows),
        "train": splits.get("train", 0),
        "heldout": splits.get("heldout", 0),
        "train_source_ids": sources["train"],
        "heldout_source_ids": sources["heldout"],
        "split": "from the cases (construct.swe.heldout_fraction, construct.swe.split_seed)",
        "writer_failures": failed,
        "mean_questions": round(sum(r.n_questions for r in rows) / len(rows), 3) if rows else 0.0,
        "weights_source": weights_source,
    }
    if choices is not None:
        opts = cfg.sft_data.published
        roles = describe_roles(cfg.roles)
        judges = ", ".join(f"{n} {roles[n].get('model') or roles[n]['backend']}"
                           for n in ("redundancy_judge", "answerability_judge", "question_classifier"))
        metrics["published_targets"] = {
            "source": f"{opts.workbook}: {opts.column}", "min_reward": opts.min_reward,
            "reward_backend": f"staged reward ({judges})",
            "rows_published": sum(r.target_source == "published" for r in rows),
            **published_metrics(choices, len(cases)),
        }
    out_dir = root / "data" / "sft"
    with staged_dir(out_dir) as staging:
        for split in ("train", "heldout"):
            atomic_write_text(staging / f"{split}.jsonl", jsonl_text([r for r in rows if r.split == split]))
        gate("sft_rows", validation_frame(rows), artifact="data/sft", results_dir=root / ".cache" / "gx" / "results")
        check_stage_metrics("sft_data", metrics, counts={"rows": len(rows)})
        publish_with_metrics(staging, out_dir, root, "sft_data", metrics)
    return {**metrics, "seconds": round(time.monotonic() - started, 2)}


def describe(summary: dict) -> str:
    text = (f"sft_data: {summary['rows']} rows ({summary['train']} train from {summary['train_source_ids']} issues, "
            f"{summary['heldout']} held out from {summary['heldout_source_ids']}; the cases' split; weights: "
            f"{summary['weights_source']}) -> data/sft/ ({summary['seconds']} s)")
    if pub := summary.get("published_targets"):
        text += (f"; published targets: {pub['kept']} kept, {pub['rejected_reward']} below min_reward, "
                 f"{pub['rejected_no_hidden_question']} without a hidden-category question, "
                 f"{pub['cases_without_published']} cases without a published list")
    return text


def build_flow():
    from prefect import flow

    return flow(name="sft_data", flow_run_name="sft_data", log_prints=True)(sft_data)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return cli.run_stage(lambda: build_flow()(params=args.params), describe, check=lambda: load_inputs(args.params))


if __name__ == "__main__":
    sys.exit(main())
