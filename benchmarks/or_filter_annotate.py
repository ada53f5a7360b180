"""Fidelity of the OR-Clarify filter (hide eligibility) and the local ``slot_annotator`` on the 100 published cases.

    .venv/bin/python benchmarks/or_filter_annotate.py [--data ../shared/data/or-clarify]

The published units and kinds are taken as given, so this measures filter and annotate alone (not the decomposer).

Filter: recall of the published hidden units among the eligible candidates (target >= 0.90), the share of all
units marked eligible, how many hideable-kind units are dropped as implied/restated (5 examples printed to stdout
only: they quote case text).

Annotate, on every published slot (its unit and the full unit list as input):
- severity accuracy and Cohen's kappa against the published labels, next to the kind baseline
  (objective -> P0, constraint -> P1, assumption -> P1);
- name overlap: the generated name shares a content word with the published name;
- question hits: each generated reference question judged by the local slot-hit judge (``tasks.roles.slot_hit``)
  against the slot's published rubric; also judged against the case's *other* slots (a specificity check: these
  should mostly be misses).

The severity rules were written looking at cases 1-50 only; cases 51-100 are the held-out half.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.files import write_json  # noqa: E402

TARGET_RECALL = 0.90
BASELINE = {"objective": "P0", "constraint": "P1", "assumption": "P1"}
SPLITS = {"cases 1-50 (tuning)": range(50), "cases 51-100 (held out)": range(50, 100), "all": range(10**6)}
LEVELS = ("P0", "P1", "P2")


def cohen_kappa(gold: list[str], pred: list[str]) -> float:
    n = len(gold)
    if n == 0:
        return 0.0
    observed = sum(g == p for g, p in zip(gold, pred)) / n
    g_counts, p_counts = Counter(gold), Counter(pred)
    expected = sum(g_counts[k] * p_counts[k] for k in LEVELS) / (n * n)
    return (observed - expected) / (1 - expected) if expected < 1 else 1.0


def _ratio(num: float, den: float) -> float:
    return round(num / den, 4) if den else 0.0


def filter_rows(cases) -> list[dict]:
    from tasks.domains.optimization.eligibility import eligibility
    from tasks.domains.optimization.vocabulary import HIDEABLE_KINDS

    rows = []
    for ci, case in enumerate(cases):
        hidden = {s.unit_ids[0] for s in case.hidden_slots}
        units = {u.id: u for u in case.units}
        for verdict in eligibility(list(case.units)):
            unit = units[verdict.unit_id]
            rows.append({"case": ci, "case_id": case.case_id, "unit_id": unit.id, "kind": unit.kind,
                         "hideable": unit.kind in HIDEABLE_KINDS, "eligible": verdict.eligible,
                         "reason": verdict.reason, "hidden": unit.id in hidden, "content": unit.content})
    return rows


def filter_figures(rows: list[dict]) -> dict:
    hidden = [r for r in rows if r["hidden"]]
    dropped = [r for r in rows if r["hideable"] and not r["eligible"]]
    return {
        "units": len(rows),
        "hidden_units": len(hidden),
        "recall": _ratio(sum(r["eligible"] for r in hidden), len(hidden)),
        "eligible_share": _ratio(sum(r["eligible"] for r in rows), len(rows)),
        "eligible": sum(r["eligible"] for r in rows),
        "dropped_as_implied": len(dropped),
        "hidden_dropped": sum(r["hidden"] for r in dropped),
        "data_or_context_eligible": sum(r["eligible"] for r in rows if r["kind"] in ("data", "context")),
    }


def annotate_rows(cases) -> list[dict]:
    from tasks.domains.optimization.annotate import SPEC, SlotAnnotateInput
    from tasks.llm.records import RoleConfig
    from tasks.roles.base import run_role
    from tasks.roles.slot_hit import SPEC as HIT_SPEC
    from tasks.roles.slot_hit import (
        SlotHitInput,
        content_words,
        humanise,
        rubric_from_slot,
    )

    inputs, meta = [], []
    for ci, case in enumerate(cases):
        units = {u.id: u for u in case.units}
        for slot in case.hidden_slots:
            inputs.append(SlotAnnotateInput(problem_id=case.case_id, unit=units[slot.unit_ids[0]],
                                            units=list(case.units), visible_brief=case.brief.content))
            meta.append((ci, case, slot))
    outputs = run_role(SPEC, inputs, RoleConfig())

    judge_inputs, judge_keys = [], []
    for i, ((_ci, case, slot), out) in enumerate(zip(meta, outputs)):
        for other in case.hidden_slots:
            rubric = rubric_from_slot(case, other)
            for question in out.reference_questions:
                judge_inputs.append(SlotHitInput(slot=rubric, agent_questions=[question]))
                judge_keys.append((i, other.slot_id == slot.slot_id))
    verdicts = run_role(HIT_SPEC, judge_inputs, RoleConfig())
    own: dict[int, list[str]] = {}
    foreign: dict[int, list[str]] = {}
    for (i, is_own), verdict in zip(judge_keys, verdicts):
        (own if is_own else foreign).setdefault(i, []).append(verdict.hit)

    rows = []
    for i, ((ci, case, slot), inp, out) in enumerate(zip(meta, inputs, outputs)):
        rows.append({
            "case": ci, "case_id": case.case_id, "slot_id": slot.slot_id, "kind": inp.unit.kind,
            "gold": slot.severity, "pred": out.severity, "baseline": BASELINE.get(inp.unit.kind, "P1"),
            "name": out.name, "gold_name": slot.name,
            "name_overlap": bool(content_words(humanise(out.name)) & content_words(humanise(slot.name))),
            "own_hits": own.get(i, []), "foreign_hits": foreign.get(i, []),
        })
    return rows


def annotate_figures(rows: list[dict]) -> dict:
    gold = [r["gold"] for r in rows]
    pred = [r["pred"] for r in rows]
    base = [r["baseline"] for r in rows]
    own = [h for r in rows for h in r["own_hits"]]
    foreign = [h for r in rows for h in r["foreign_hits"]]
    acc = _ratio(sum(g == p for g, p in zip(gold, pred)), len(rows))
    base_acc = _ratio(sum(g == b for g, b in zip(gold, base)), len(rows))
    return {
        "slots": len(rows),
        "severity_accuracy": acc,
        "severity_kappa": round(cohen_kappa(gold, pred), 4),
        "baseline_accuracy": base_acc,
        "baseline_kappa": round(cohen_kappa(gold, base), 4),
        "accuracy_gain": round(acc - base_acc, 4),
        "predicted": dict(Counter(pred)),
        "gold": dict(Counter(gold)),
        "name_overlap": _ratio(sum(r["name_overlap"] for r in rows), len(rows)),
        "question_yes": _ratio(own.count("yes"), len(own)),
        "question_yes_or_partial": _ratio(own.count("yes") + own.count("partial"), len(own)),
        "slots_with_a_yes_question": _ratio(sum("yes" in r["own_hits"] for r in rows), len(rows)),
        "other_slot_yes": _ratio(foreign.count("yes"), len(foreign)),
        "other_slot_pairs": len(foreign),
    }


def examples(rows: list[dict], n: int = 5) -> list[str]:
    """One dropped unit from each of the first ``n`` cases that have one (stdout only)."""
    out, seen = [], set()
    for r in rows:
        if r["hideable"] and not r["eligible"] and r["case"] not in seen:
            seen.add(r["case"])
            text = " ".join(r["content"].split())
            out.append(f"  {r['case_id']} {r['unit_id']} ({r['kind']}): {text[:70]}{'…' if len(text) > 70 else ''}"
                       f"\n      -> {r['reason']}")
        if len(out) == n:
            break
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "or-clarify")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "or_filter_annotate.json")
    args = parser.parse_args(argv)

    from tasks.domains.optimization.or_toml import read_cases

    cases = read_cases(args.data)
    f_rows = filter_rows(cases)
    a_rows = annotate_rows(cases)
    figures: dict = {"filter": {}, "annotate": {}, "target_recall": TARGET_RECALL,
                     "baseline": "objective->P0, constraint->P1, assumption->P1",
                     "tuning": "eligibility thresholds and severity rules written looking at cases 1-50"}
    for split, span in SPLITS.items():
        figures["filter"][split] = filter_figures([r for r in f_rows if r["case"] in span])
        figures["annotate"][split] = annotate_figures([r for r in a_rows if r["case"] in span])

    print(f"OR-Clarify filter + slot_annotator fidelity on {len(cases)} cases ({args.data})\n")
    print("Filter (hide eligibility)")
    print(f"  {'split':<26}{'units':>6}{'hidden':>7}{'recall':>8}{'eligible':>10}{'share':>7}{'implied':>9}"
          f"{'hid.drop':>9}")
    for split, fig in figures["filter"].items():
        print(f"  {split:<26}{fig['units']:>6}{fig['hidden_units']:>7}{fig['recall']:>8.3f}{fig['eligible']:>10}"
              f"{fig['eligible_share']:>7.3f}{fig['dropped_as_implied']:>9}{fig['hidden_dropped']:>9}")
    print(f"  target recall >= {TARGET_RECALL}")
    print("  examples of dropped candidates:")
    for line in examples(f_rows):
        print(line)

    print("\nSlot annotator (published slots, published units)")
    print(f"  {'split':<26}{'slots':>6}{'sev.acc':>8}{'kappa':>7}{'base.acc':>9}{'base.k':>7}{'gain':>7}"
          f"{'name':>6}{'q.yes':>7}{'q.y|p':>7}{'slot.y':>7}{'other.y':>8}")
    for split, fig in figures["annotate"].items():
        print(f"  {split:<26}{fig['slots']:>6}{fig['severity_accuracy']:>8.3f}{fig['severity_kappa']:>7.3f}"
              f"{fig['baseline_accuracy']:>9.3f}{fig['baseline_kappa']:>7.3f}{fig['accuracy_gain']:>+7.3f}"
              f"{fig['name_overlap']:>6.2f}{fig['question_yes']:>7.3f}{fig['question_yes_or_partial']:>7.3f}"
              f"{fig['slots_with_a_yes_question']:>7.3f}{fig['other_slot_yes']:>8.3f}")
    print("  name = generated name shares a content word with the published one; q.yes / q.y|p = generated"
          " questions judged yes / yes-or-partial for their own slot; slot.y = slots with >= 1 yes question;"
          " other.y = questions judged yes for another slot of the same case")
    overall = figures["annotate"]["all"]
    print(f"  predicted severities {overall['predicted']} vs published {overall['gold']}")

    write_json(args.out, figures)
    print(f"\nwrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
