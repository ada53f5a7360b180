"""sft_data: SFT rows (incomplete issue -> numbered questions for what it hides) from the SWE cases.

Writes ``data/sft/{train,heldout}.jsonl`` and ``data/metrics/stages/sft_data.json`` after a GX gate.
"""

from __future__ import annotations

import argparse
import sys
import time

from flows.cli import EXIT_INPUT, run_main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m flows.sft_data", description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    return parser.parse_args(argv)


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
    weights, weights_source = load_weights(root / cfg.sft_data.weights)
    return root, cfg, cases, weights, weights_source


def sft_data(params: str = "params.yaml") -> dict:
    from collections import Counter

    from tasks.sftdata import build_rows, validation_frame
    from tasks.store import atomic_write_json, atomic_write_text, jsonl_text, publish_dir, staged_dir
    from tasks.validation import gate

    started = time.monotonic()
    root, cfg, cases, weights, weights_source = load_inputs(params)
    rows, failed = build_rows(cases, weights, cfg.roles.question_writer,
                              heldout_fraction=cfg.sft_data.heldout_fraction, seed=cfg.sft_data.seed)
    out_dir = root / "data" / "sft"
    with staged_dir(out_dir) as staging:
        for split in ("train", "heldout"):
            atomic_write_text(staging / f"{split}.jsonl", jsonl_text([r for r in rows if r.split == split]))
        gate("sft_rows", validation_frame(rows), artifact="data/sft", results_dir=root / ".cache" / "gx" / "results")
        publish_dir(staging, out_dir)
    splits = Counter(r.split for r in rows)
    from tasks.roles.config import describe_roles

    metrics = {
        "backend": f"question_writer role ({describe_roles(cfg.roles)['question_writer']['backend']})",
        "cases": len(cases),
        "rows": len(rows),
        "train": splits.get("train", 0),
        "heldout": splits.get("heldout", 0),
        "writer_failures": failed,
        "mean_questions": round(sum(r.n_questions for r in rows) / len(rows), 3) if rows else 0.0,
        "weights_source": weights_source,
    }
    atomic_write_json(root / "data" / "metrics" / "stages" / "sft_data.json", metrics)
    return {**metrics, "seconds": round(time.monotonic() - started, 2)}


def describe(summary: dict) -> str:
    return (f"sft_data: {summary['rows']} rows ({summary['train']} train, {summary['heldout']} held out; weights: "
            f"{summary['weights_source']}) -> data/sft/ ({summary['seconds']} s)")


def build_flow():
    from prefect import flow

    return flow(name="sft_data", log_prints=True)(sft_data)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from flows import _env

    _env.configure()
    if run_main(lambda: load_inputs(args.params)):
        return EXIT_INPUT
    return run_main(lambda: print(describe(build_flow()(params=args.params))))


if __name__ == "__main__":
    sys.exit(main())
