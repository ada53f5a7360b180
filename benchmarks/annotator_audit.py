"""Blind audit of the annotator's span precision: how much of the gap is the annotator, how much the gold.

    .venv/bin/python benchmarks/annotator_audit.py sample [--per-category 20] [--controls 10]
    .venv/bin/python benchmarks/annotator_audit.py record benchmarks/out/audit_verdicts_*.jsonl
    .venv/bin/python benchmarks/annotator_audit.py score

The CLARITI workbook lists *example* spans per category, not every span. A sentence the annotator tags correctly
but the workbook did not quote counts against span precision (``annotator_fidelity.py``). This audit measures how
often that happens.

``sample`` runs the issue-level 5-fold cross-validation of ``train_annotator.py`` (seed 0). For each audited category
it draws annotator spans that overlap no workbook span of that category, the ones counted against precision, and,
as controls, spans that do overlap one. It writes:
- ``benchmarks/audit/annotator_spans.jsonl`` (committed): item id, instance id, category, character offsets into the
  issue text, whether the span overlaps a workbook span, and the verdict (empty until recorded). No issue text.
- ``benchmarks/audit/annotator_audit_run.json`` (committed): the cross-validated span counts and precision the
  sample was drawn from.
- ``benchmarks/out/audit_sheet_<category>.md`` (git-ignored, it quotes the issues): the items in shuffled order, each
  span in its context, without the overlap flag. A judge marks each item ``yes`` (the span is information of that
  category, by the definition printed at the top) or ``no``, and writes ``{"item": ..., "verdict": ...}`` lines.

``record`` merges such verdict files into the committed items. ``score`` prints, per category, the share of
non-overlapping spans judged ``yes`` (q, with a Wilson 95% interval), the same share for the controls, and the
*audited span precision* P + (1 - P) * q, where P is the cross-validated span precision against the workbook; it also
writes them to ``benchmarks/out/annotator_audit.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.siblings import load  # noqa: E402

AUDIT = ROOT / "benchmarks" / "audit"
ITEMS = AUDIT / "annotator_spans.jsonl"
RUN = AUDIT / "annotator_audit_run.json"
SHEETS = ROOT / "benchmarks" / "out"
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "clariti" / "data.xlsx"
AUDITED = ("reproduction", "expected_behavior", "implementation", "version_env")
CONTEXT = 400
SPAN_SHOWN = 900

DEFINITIONS = {
    "error_info": "what goes wrong and how we know: stack traces, error messages, wrong-output descriptions, any "
                  "description of the faulty behaviour",
    "reproduction": "under what conditions the failure occurs: code or commands that trigger it, minimal inputs, "
                    "the steps or settings that make it happen",
    "expected_behavior": "what should happen instead: the intended output, the correct return value, the desired "
                         "state or behaviour",
    "implementation": "how the fix or feature should be implemented: proposed changes, approaches, where in the "
                      "code, constraints on the solution",
    "external_refs": "external resources the issue relies on: links, docs, related issues or PRs, commits",
    "version_env": "the configuration needed to reproduce: package and dependency versions, OS, Python version, "
                   "config flags, hardware",
}


def audited_precision(measured: float, judged_yes: int, judged: int) -> dict:
    """Span precision once the audited share q of the non-overlapping spans is counted as correct."""
    from tasks.infovalue.plots import _wilson

    q = judged_yes / judged if judged else 0.0
    lo, hi = _wilson(judged_yes, judged) if judged else (0.0, 1.0)
    def fix(share: float) -> float:
        return round(measured + (1 - measured) * share, 4)

    return {"q": round(q, 4), "q_ci95": [round(lo, 4), round(hi, 4)], "audited_precision": fix(q),
            "audited_precision_ci95": [fix(lo), fix(hi)]}


def span_pool(issues, annotations, categories) -> dict[str, list[dict]]:
    """Per category key, every annotator span with its first offsets and whether it overlaps a workbook span."""
    from tasks.domains.swe.masking import find_all

    pool: dict[str, list[dict]] = {c: [] for c in categories}
    for issue, ann in zip(issues, annotations):
        text = issue.text
        for cat in categories:
            gold = [iv for s in issue.spans or [] if s.category.key == cat for iv in find_all(text, s.text)]
            seen = set()
            for span in ann.spans:
                if span.category.key != cat or span.text in seen:
                    continue
                seen.add(span.text)
                occ = find_all(text, span.text)
                if not occ:
                    continue
                hit = any(s < ge and gs < e for s, e in occ for gs, ge in gold)
                pool[cat].append({"instance_id": issue.instance_id, "category": cat, "start": occ[0][0],
                                  "end": occ[0][1], "overlaps_workbook": hit})
    return pool


def draw(pool: dict[str, list[dict]], per_category: int, controls: int, seed: int = 0) -> list[dict]:
    """The audit items: per category ``per_category`` non-overlapping spans and ``controls`` overlapping ones."""
    rng = np.random.default_rng(seed)
    items = []
    for spans in pool.values():
        for hit, n in ((False, per_category), (True, controls)):
            group = [s for s in spans if s["overlaps_workbook"] == hit]
            for k in sorted(rng.choice(len(group), size=min(n, len(group)), replace=False).tolist()):
                items.append(dict(group[k]))
    order = rng.permutation(len(items))
    for rank, k in enumerate(order):
        items[k]["item"] = f"a{rank:03d}"
        items[k]["verdict"] = None
    return sorted(items, key=lambda i: i["item"])


def _shown(text: str) -> str:
    if len(text) <= SPAN_SHOWN:
        return text
    half = SPAN_SHOWN // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters ...]\n{text[-half:]}"


def sheet(items: list[dict], texts: dict[str, str], category: str) -> str:
    task = ("For each item: is the text between >>> and <<< information of this category, by the definition "
            "(judge the marked text, using the context only to understand it)? Answer yes or no.")
    lines = [f"# Audit sheet: {category}", "", f"Definition: {DEFINITIONS[category]}.", "", task, ""]
    for item in items:
        text = texts[item["instance_id"]]
        s, e = item["start"], item["end"]
        title = text.split("\n", 1)[0][:160]
        before, after = text[max(0, s - CONTEXT) : s], text[e : e + CONTEXT]
        lines += [f"## {item['item']}", f"issue title: {title}", "", "```text",
                  f"{before}>>>{_shown(text[s:e])}<<<{after}", "```", ""]
    return "\n".join(lines)


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    from tasks.store import atomic_write_text

    atomic_write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sample(data: Path, per_category: int, controls: int, categories: tuple[str, ...]) -> int:
    from tasks.categories import ORDER
    from tasks.store import atomic_write_text

    train, fidelity = load("train_annotator"), load("annotator_fidelity")
    issues, prepared, labels, presence, geoms = train.load_rows(data)
    annotations, _, _ = train.cross_validated_annotations(issues, prepared, labels, presence, geoms)
    cv = fidelity.evaluate(issues, annotations, list(range(len(issues))), ORDER)["spans"]
    pool = span_pool(issues, annotations, categories)
    items = draw(pool, per_category, controls)
    _write_jsonl(ITEMS, items)
    atomic_write_text(RUN, json.dumps({
        "cross_validation": "train_annotator.cross_validated_annotations, issue-level 5-fold, seed 0",
        "per_category": per_category, "controls": controls,
        "categories": {c: {"span_precision": cv[c]["span_precision"], "annotator_spans": cv[c]["annotator_spans"],
                           "located_spans": len(pool[c]),
                           "overlapping": sum(s["overlaps_workbook"] for s in pool[c])} for c in categories},
    }, indent=2) + "\n")
    texts = {i.instance_id: i.text for i in issues}
    for cat in categories:
        path = SHEETS / f"audit_sheet_{cat}.md"
        atomic_write_text(path, sheet([i for i in items if i["category"] == cat], texts, cat))
        print(f"wrote {path.relative_to(ROOT)}")
    print(f"wrote {ITEMS.relative_to(ROOT)} ({len(items)} items) and {RUN.relative_to(ROOT)}")
    return 0


def record(paths: list[Path]) -> int:
    items = {i["item"]: i for i in _read_jsonl(ITEMS)}
    for path in paths:
        for n, row in enumerate(_read_jsonl(path), 1):
            if row.get("item") not in items or row.get("verdict") not in ("yes", "no"):
                print(f"{path}: line {n}: needs an item of {ITEMS.name} and a verdict yes or no", file=sys.stderr)
                return 2
            items[row["item"]]["verdict"] = row["verdict"]
    _write_jsonl(ITEMS, sorted(items.values(), key=lambda i: i["item"]))
    print(f"{sum(i['verdict'] is not None for i in items.values())} of {len(items)} items have a verdict")
    return 0


def score() -> dict:
    run = json.loads(RUN.read_text())["categories"]
    items = _read_jsonl(ITEMS)
    out = {}
    for cat, figures in run.items():
        judged = [i for i in items if i["category"] == cat and i["verdict"] is not None]
        miss = [i for i in judged if not i["overlaps_workbook"]]
        ctrl = [i for i in judged if i["overlaps_workbook"]]
        yes = sum(i["verdict"] == "yes" for i in miss)
        out[cat] = {"measured_span_precision": figures["span_precision"], "judged": len(miss),
                    "judged_yes": yes, "controls": len(ctrl),
                    "controls_yes": sum(i["verdict"] == "yes" for i in ctrl),
                    **audited_precision(figures["span_precision"], yes, len(miss))}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="run the CV, draw the items, write the sheets")
    s.add_argument("--data", default=str(DEFAULT_DATA))
    s.add_argument("--per-category", type=int, default=20)
    s.add_argument("--controls", type=int, default=10)
    s.add_argument("--categories", nargs="+", default=list(AUDITED), choices=list(DEFINITIONS))
    r = sub.add_parser("record", help="merge verdict files into the committed items")
    r.add_argument("verdicts", nargs="+", type=Path)
    sub.add_parser("score", help="audited precision from the recorded verdicts")
    args = parser.parse_args(argv)
    if args.command == "sample":
        data = Path(args.data)
        if not data.is_file():
            print(f"workbook not found: {data}", file=sys.stderr)
            return 2
        return sample(data, args.per_category, args.controls, tuple(args.categories))
    if args.command == "record":
        return record(args.verdicts)
    if not ITEMS.is_file() or not RUN.is_file():
        print(f"{ITEMS.relative_to(ROOT)}: not found (run `sample` first)", file=sys.stderr)
        return 2
    from tasks.store import atomic_write_text

    result = score()
    atomic_write_text(SHEETS / "annotator_audit.json", json.dumps(result, indent=2) + "\n")
    print(f"{'category':<18}{'P meas.':>8}{'judged':>7}{'q':>7}{'q 95% CI':>16}{'controls yes':>14}{'P audited':>10}"
          f"{'P audited 95% CI':>18}")
    for cat, f in result.items():
        q_ci = "[{:.2f}, {:.2f}]".format(*f["q_ci95"])
        p_ci = "[{:.3f}, {:.3f}]".format(*f["audited_precision_ci95"])
        controls = f"{f['controls_yes']}/{f['controls']}"
        print(f"{cat:<18}{f['measured_span_precision']:>8.3f}{f['judged']:>7}{f['q']:>7.3f}{q_ci:>16}{controls:>14}"
              f"{f['audited_precision']:>10.3f}{p_ci:>18}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
