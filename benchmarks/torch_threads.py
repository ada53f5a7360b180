"""Which torch thread count to train and generate with: a fixed count of the machine's cores, or fewer when another
job runs? Measured, not assumed.

For each scenario (``alone``; ``competitor``: one CPU-bound single-core process, ``python -c 'while True: pass'``)
and each thread count (1 .. usable cores), in a fresh process per cell: the median seconds of a LoRA training step of
the embedded SmolLM2-135M (batch 4 x 384 tokens, forward + backward + AdamW, as the ``cpu`` SFT profile) and of a
greedy generation batch (8 prompts, 48 new tokens). The answer the project uses (``tasks/training/threads.py``) is
the row this prints last.

    .venv/bin/python benchmarks/torch_threads.py [--steps 5] [--out benchmarks/results/torch_threads/threads.json]

Run it on an otherwise idle machine: another job skews both scenarios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.files import write_json  # noqa: E402

CELL = r"""
import json, statistics, sys, time
import torch
threads, steps = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)
torch.manual_seed(0)
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer
from tasks.training.models import resolve_model_path
path = resolve_model_path("smollm2-135m-instruct")
tok = AutoTokenizer.from_pretrained(path)
model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
ids = torch.randint(100, 4000, (4, 384))
train = []
for _ in range(steps + 1):
    t = time.perf_counter()
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward(); opt.step(); opt.zero_grad()
    train.append(time.perf_counter() - t)
model.eval()
prompts = [f"Issue {k}: the parser fails on nested input; write clarifying questions." for k in range(8)]
tok.padding_side = "left"
if tok.pad_token is None:
    tok.pad_token = tok.eos_token
enc = tok(prompts, return_tensors="pt", padding=True)
gen = []
for _ in range(3):
    t = time.perf_counter()
    with torch.no_grad():
        model.generate(**enc, max_new_tokens=48, do_sample=False, min_new_tokens=48, pad_token_id=tok.pad_token_id)
    gen.append(time.perf_counter() - t)
print(json.dumps({"train_step_s": statistics.median(train[1:]), "generate_batch_s": statistics.median(gen[1:])}))
"""


def cell(threads: int, steps: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run([sys.executable, "-c", CELL, str(threads), str(steps)], capture_output=True, text=True,
                          env=env, cwd=ROOT, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    from tasks.training.threads import usable_cores

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/torch_threads/threads.json")
    args = parser.parse_args(argv)
    cores = usable_cores()
    results: dict = {"cores": cores, "load_average_at_start": os.getloadavg()[0], "cells": []}
    for scenario in ("alone", "competitor"):
        spinner = (subprocess.Popen([sys.executable, "-c", "while True: pass"]) if scenario == "competitor" else None)
        try:
            for threads in range(1, cores + 1):
                started = time.monotonic()
                row = {"scenario": scenario, "threads": threads, **cell(threads, args.steps)}
                row["wall_s"] = round(time.monotonic() - started, 1)
                results["cells"].append(row)
                print(json.dumps(row), flush=True)
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    by = {(c["scenario"], c["threads"]): c for c in results["cells"]}
    verdict = {}
    for scenario in ("alone", "competitor"):
        for measure in ("train_step_s", "generate_batch_s"):
            best = min(range(1, cores + 1), key=lambda t: by[(scenario, t)][measure])
            verdict[f"{scenario}.{measure}"] = {"best_threads": best,
                                                "all_cores_over_best": round(by[(scenario, cores)][measure]
                                                                             / by[(scenario, best)][measure], 3)}
    results["verdict"] = verdict
    results["fixed_all_cores_never_worse_than"] = max(v["all_cores_over_best"] for v in verdict.values())
    out = ROOT / args.out
    write_json(out, results)
    print(json.dumps(verdict, indent=2))
    print(f"a fixed {cores} threads is at most {results['fixed_all_cores_never_worse_than']}x the best count")
    return 0


if __name__ == "__main__":
    sys.exit(main())
