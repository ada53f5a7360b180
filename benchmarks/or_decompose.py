"""Fidelity of the ``decomposer`` role's local backend against the published OR-Clarify units.

For each case the published ``problem_units`` are joined back into one problem text the way a person would write
it, the text is decomposed, and the prediction is compared with the published units.

Joining rule: a unit is a *block* when it contains a newline or starts like a table row, a list item or a LaTeX
array; every other unit is *prose*. Consecutive prose units are joined with one space into a paragraph; every block
is a paragraph of its own; paragraphs are separated by one blank line. A prose unit that does not end in sentence
punctuation (``.``, ``!``, ``?``, ``:``), such as ``Budget: $40,000``, is followed by a line break instead of a space,
as a person would write a list of bare values. So most boundaries sit between sentences of one paragraph and the
decomposer has to find them; a blank line is never placed between two prose units.

Metrics (all texts whitespace-normalised: runs of whitespace -> one space, trimmed):

- **unit F1** (exact): a predicted unit matches a published unit when their normalised texts are equal (each
  published unit matched at most once). P = matched / predicted, R = matched / published.
- **cut F1**: units are located in the normalised joined text; the cut positions are the offsets where a unit
  starts or ends (excluding the text's two ends; an end followed by a space counts at the next character). F1 of
  the predicted against the published cut sets.
- **kind accuracy (matched)**: over matched pairs, the predicted kind equals the published kind.
- **kind accuracy (all)**: over all published units, an unmatched unit counting as wrong.
- **kind accuracy (gold cuts)**: the typing step alone, run on the published units themselves.
- **baseline**: every published unit labelled ``data``.

Cases 1-50 were used to tune the rules and weights; 51-100 are held out.

    .venv/bin/python benchmarks/or_decompose.py [--data PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.domains.optimization.decompose import (  # noqa: E402
    DecomposeInput,
    Segment,
    classify,
    local_batch,
    similarities,
)
from tasks.domains.optimization.or_toml import read_cases  # noqa: E402
from tasks.records import Case, Unit  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "or-clarify"
OUT = ROOT / "benchmarks" / "out" / "or_decompose.json"
_SENTENCE_END = re.compile(r"[.!?:][\"')\]]*$")
_BLOCK_START = re.compile(r"^\s*(?:\||[-*+•]\s|\d{1,2}[.)]\s|\(\d{1,2}\)\s|\\begin\{)")


def normalise(text: str) -> str:
    return " ".join(text.split())


def is_block(content: str) -> bool:
    return "\n" in content.strip() or bool(_BLOCK_START.match(content))


def join_units(units: list[Unit]) -> str:
    """The published units written back as one problem text (see the module docstring)."""
    paragraphs: list[str] = []
    prose = ""
    for unit in units:
        content = unit.content.strip()
        if is_block(content):
            if prose:
                paragraphs.append(prose.rstrip())
                prose = ""
            paragraphs.append(content)
        else:
            prose += content + (" " if _SENTENCE_END.search(content) else "\n")
    if prose:
        paragraphs.append(prose.rstrip())
    return "\n\n".join(paragraphs)


def match_pairs(pred: list[str], gold: list[str]) -> list[tuple[int, int]]:
    """(pred index, gold index) pairs of equal normalised texts, the k-th occurrence paired with the k-th."""
    gold_at: dict[str, list[int]] = defaultdict(list)
    for j, text in enumerate(gold):
        gold_at[normalise(text)].append(j)
    pairs = []
    for i, text in enumerate(pred):
        queue = gold_at.get(normalise(text))
        if queue:
            pairs.append((i, queue.pop(0)))
    return pairs


def cut_positions(contents: list[str], joined: str) -> set[int]:
    """Start and end offsets of the units inside the normalised joined text (minus the text's own ends)."""
    text = normalise(joined)
    cuts: set[int] = set()
    cursor = 0
    for content in contents:
        needle = normalise(content)
        at = text.find(needle, cursor)
        if at < 0:
            continue
        end = at + len(needle)
        cuts.update({at, end + 1 if end < len(text) and text[end] == " " else end})
        cursor = end
    return cuts - {0, len(text)}


def f1(tp: int, n_pred: int, n_gold: int) -> dict[str, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def gold_cut_kinds(cases: list[Case]) -> list[list[str]]:
    """The typing step run on the published units (structured when they are blocks)."""
    segs_per_case = [
        [Segment(0, 0, structured=is_block(u.content), content=normalise(u.content)
                 if not is_block(u.content) else u.content) for u in case.units]
        for case in cases
    ]
    sims = similarities([s.content for segs in segs_per_case for s in segs])
    out, row = [], 0
    for segs in segs_per_case:
        out.append(classify(segs, sims[row : row + len(segs)]))
        row += len(segs)
    return out


def evaluate(cases: list[Case]) -> list[dict]:
    """One row of counts per case (decomposing the joined text of its published units)."""
    texts = [join_units(list(case.units)) for case in cases]
    outputs = local_batch([DecomposeInput(problem_id=c.case_id, text=t) for c, t in zip(cases, texts)])
    gold_kinds = gold_cut_kinds(cases)
    per_case = []
    for case, text, out, gk in zip(cases, texts, outputs, gold_kinds):
        pred = [u.content for u in out.units]
        gold = [u.content for u in case.units]
        pairs = match_pairs(pred, gold)
        pred_cuts, gold_cuts = cut_positions(pred, text), cut_positions(gold, text)
        per_case.append({
            "case_id": case.case_id,
            "n_pred": len(pred),
            "n_gold": len(gold),
            "matched": len(pairs),
            "kind_correct": sum(out.units[i].kind == case.units[j].kind for i, j in pairs),
            "cuts_pred": len(pred_cuts),
            "cuts_gold": len(gold_cuts),
            "cuts_tp": len(pred_cuts & gold_cuts),
            "not_verbatim": sum(normalise(c) not in normalise(text) for c in pred),
            "gold_cut_kind_correct": sum(k == u.kind for k, u in zip(gk, case.units)),
            "data_baseline_correct": sum(u.kind == "data" for u in case.units),
            "confusion": [[case.units[j].kind, out.units[i].kind] for i, j in pairs],
        })
    return per_case


def summarise(rows: list[dict]) -> dict:
    def total(key):
        return sum(r[key] for r in rows)

    n_gold, matched = total("n_gold"), total("matched")
    confusion = Counter((g, p) for r in rows for g, p in r["confusion"])
    return {
        "cases": len(rows),
        "published_units": n_gold,
        "predicted_units": total("n_pred"),
        "unit": f1(matched, total("n_pred"), n_gold),
        "cut": f1(total("cuts_tp"), total("cuts_pred"), total("cuts_gold")),
        "kind_acc_matched": total("kind_correct") / matched if matched else 0.0,
        "kind_acc_all": total("kind_correct") / n_gold if n_gold else 0.0,
        "kind_acc_gold_cuts": total("gold_cut_kind_correct") / n_gold if n_gold else 0.0,
        "baseline_all_data": total("data_baseline_correct") / n_gold if n_gold else 0.0,
        "not_verbatim": total("not_verbatim"),
        "confusion_matched": {f"{g}->{p}": n for (g, p), n in sorted(confusion.items())},
    }


def case_number(case_id: str) -> int:
    digits = re.findall(r"\d+", case_id)
    return int(digits[-1]) if digits else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of orclarify_*.toml files")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--show", type=int, default=0, help="print the N worst cases' mismatches")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no data folder at {args.data}", file=sys.stderr)
        return 2
    cases = read_cases(args.data)
    started = time.perf_counter()
    rows = evaluate(cases)
    elapsed = time.perf_counter() - started
    slices = {
        "1-50 (tuned)": [r for r in rows if case_number(r["case_id"]) <= 50],
        "51-100 (held out)": [r for r in rows if case_number(r["case_id"]) > 50],
        "all": rows,
    }
    report = {name: summarise(rs) for name, rs in slices.items() if rs}
    header = f"{'slice':<18} {'cases':>5} {'units':>5} {'pred':>5} {'unitP':>6} {'unitR':>6} {'unitF1':>6} " \
             f"{'cutF1':>6} {'kindM':>6} {'kindAll':>7} {'kindGold':>8} {'allData':>7}"
    print(header)
    print("-" * len(header))
    for name, s in report.items():
        print(f"{name:<18} {s['cases']:>5} {s['published_units']:>5} {s['predicted_units']:>5} "
              f"{s['unit']['precision']:>6.3f} {s['unit']['recall']:>6.3f} {s['unit']['f1']:>6.3f} "
              f"{s['cut']['f1']:>6.3f} {s['kind_acc_matched']:>6.3f} {s['kind_acc_all']:>7.3f} "
              f"{s['kind_acc_gold_cuts']:>8.3f} {s['baseline_all_data']:>7.3f}")
    print("\nkindM: kind accuracy over matched units; kindAll: over all published units (unmatched = wrong);")
    print("kindGold: typing step on the published units; allData: baseline labelling every unit 'data'.")
    print("\nconfusion over matched units, all cases (published -> predicted):")
    for key, n in report["all"]["confusion_matched"].items():
        print(f"  {key:<26} {n}")
    print(f"\npredicted units that are not verbatim pieces of the text: {report['all']['not_verbatim']}")
    print(f"{len(cases)} cases in {elapsed:.1f}s")
    if args.show:
        texts = {c.case_id: c for c in cases}
        outputs = {c.case_id: o for c, o in zip(cases, local_batch(
            [DecomposeInput(text=join_units(list(c.units))) for c in cases]))}
        worst = sorted(rows, key=lambda r: r["matched"] / max(r["n_gold"], r["n_pred"]))[: args.show]
        for r in worst:
            case, out = texts[r["case_id"]], outputs[r["case_id"]]
            gold = {normalise(u.content) for u in case.units}
            pred = {normalise(u.content) for u in out.units}
            print(f"\n== {r['case_id']}  matched {r['matched']}/{r['n_gold']} (pred {r['n_pred']})")
            for u in out.units:
                if normalise(u.content) not in gold:
                    print(f"  + [{u.kind}] {normalise(u.content)[:160]!r}")
            for u in case.units:
                if normalise(u.content) not in pred:
                    print(f"  - [{u.kind}] {normalise(u.content)[:160]!r}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"slices": report, "per_case": rows}, indent=2, ensure_ascii=False))
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
