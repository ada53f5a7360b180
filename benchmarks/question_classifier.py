"""Category mix of the clarification questions in the CLARITI workbook, by the local question classifier.

    .venv/bin/python benchmarks/question_classifier.py [--data ../shared/data/clariti/data.xlsx]

For each system's rewrite-3 question lists (CLARITI = the GRPO model, GPT-5-nano, GPT-5) it reports questions per
issue (a parser check against the README's 2.94 / 5.25 / 5.07), the share of each predicted label, and a proxy for
classifier fidelity: how often a question's predicted category is among the categories hidden in its issue's
rewrite 3, next to the rate expected by chance from the same label mix. The labels come from the local
deterministic classifier (keyword cues + MiniLM prototypes), not from the paper's Qwen3-32B classifier.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.files import CLARITI_WORKBOOK, input_exists, write_json  # noqa: E402

SYSTEMS = {
    "CLARITI": "clarification_questions_grpo_3",
    "GPT-5-nano": "clarification_questions_gpt5_nano_3",
    "GPT-5": "clarification_questions_gpt5_3",
}
README_MEANS = {"CLARITI": 2.94, "GPT-5-nano": 5.25, "GPT-5": 5.07}
PAPER_ERROR_SHARE = {"CLARITI": 0.264, "GPT-5": 0.102}


def hidden_of_row(categories_cell, info_cell) -> tuple[set[str], bool]:
    """Named hidden categories of rewrite 3, and whether the unnamed code-location probe is among them."""
    from tasks.categories import Category

    named: set[str] = set()
    for part in str(categories_cell).split(",") if isinstance(categories_cell, str) else []:
        part = part.strip()
        if part:
            named.add(Category.parse(part).value)
    probe = isinstance(info_cell, str) and any(not p.split(":", 1)[0].strip() for p in info_cell.split("||"))
    return named, probe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(CLARITI_WORKBOOK))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "question_classifier.json"))
    args = parser.parse_args(argv)

    import pandas as pd

    from tasks.categories import Category
    from tasks.roles.base import QuestionInput
    from tasks.roles.question_classifier import LABELS, local_batch, split_questions

    path = Path(args.data)
    if not input_exists(path):
        return 2
    t0 = time.perf_counter()
    df = pd.read_excel(path)
    load_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    rows: list[tuple[str, int, str]] = []  # (system, row index, question)
    per_issue: dict[str, list[int]] = {}
    for system, column in SYSTEMS.items():
        counts = []
        for idx, cell in df[column].items():
            if not isinstance(cell, str) or not cell.strip():
                continue
            questions = split_questions(cell)
            counts.append(len(questions))
            rows.extend((system, idx, q) for q in questions)
        per_issue[system] = counts
    parse_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    contexts = df["rewrite_3"].where(df["rewrite_3"].apply(lambda v: isinstance(v, str)), "")
    inputs = [QuestionInput(question=q, issue_text=str(contexts[idx])) for _, idx, q in rows]
    outputs = local_batch(inputs)
    classify_s = time.perf_counter() - t0

    labels = [o.label.value if isinstance(o.label, Category) else o.label for o in outputs]
    hidden = {idx: hidden_of_row(df.at[idx, "hidden_categories_3"], df.at[idx, "hidden_info_3"]) for idx in df.index}

    report: dict = {"data": str(path), "classifier": "local (keyword cues + MiniLM prototypes), not the paper's",
                    "systems": {}}
    for system in SYSTEMS:
        mine = [(idx, lab) for (s, idx, _), lab in zip(rows, labels) if s == system]
        counts = Counter(lab for _, lab in mine)
        n = len(mine)
        shares = {lab: counts[lab] / n for lab in LABELS}
        # Fidelity proxy: only rows that hide at least one named category, only questions given a category.
        scored = [(idx, lab) for idx, lab in mine if lab in shares and lab != "irrelevant" and hidden[idx][0]]
        cat_mix = Counter(lab for _, lab in scored)
        total = max(len(scored), 1)
        hit = sum(lab in hidden[idx][0] for idx, lab in scored) / total
        chance = sum(sum(cat_mix[c] / total for c in hidden[idx][0]) for idx, _ in scored) / total
        probe_hidden = {idx: hidden[idx][0] | ({Category.IMPLEMENTATION.value} if hidden[idx][1] else set())
                        for idx, _ in scored}
        hit_probe = sum(lab in probe_hidden[idx] for idx, lab in scored) / total
        chance_probe = sum(sum(cat_mix[c] / total for c in probe_hidden[idx]) for idx, _ in scored) / total
        issues = per_issue[system]
        report["systems"][system] = {
            "issues": len(issues),
            "questions": n,
            "questions_per_issue": sum(issues) / max(len(issues), 1),
            "readme_questions_per_issue": README_MEANS[system],
            "label_share": shares,
            "hidden_proxy": {
                "questions_scored": len(scored),
                "predicted_in_hidden": hit,
                "chance_same_label_mix": chance,
                "predicted_in_hidden_probe_as_impl": hit_probe,
                "chance_probe_as_impl": chance_probe,
            },
        }
    report["error_information_share"] = {
        "ours": {s: report["systems"][s]["label_share"][Category.ERROR.value] for s in ("CLARITI", "GPT-5")},
        "paper": PAPER_ERROR_SHARE,
    }
    report["runtime_s"] = {"load_workbook": load_s, "parse": parse_s, "classify": classify_s,
                           "questions_per_s": len(rows) / max(classify_s, 1e-9)}

    short = {c.value: c.key for c in Category} | {"irrelevant": "irrelevant"}
    print(f"CLARITI workbook: {len(df)} rows, {len(rows)} questions; labels by the LOCAL classifier (not the paper's)")
    print()
    head = (f"{'system':<11} {'issues':>6} {'q/issue':>8} {'README':>7}  "
            + " ".join(f"{short[lab][:10]:>10}" for lab in LABELS))
    print(head)
    for system, r in report["systems"].items():
        shares = " ".join(f"{100 * r['label_share'][lab]:9.1f}%" for lab in LABELS)
        print(f"{system:<11} {r['issues']:>6} {r['questions_per_issue']:8.2f} "
              f"{r['readme_questions_per_issue']:7.2f}  {shares}")
    print()
    ours = report["error_information_share"]["ours"]
    print(f"Error Information share: CLARITI {100 * ours['CLARITI']:.1f}% vs GPT-5 {100 * ours['GPT-5']:.1f}% "
          f"(local classifier; the paper reports 26.4% vs 10.2% with its own classifier)")
    print()
    print("Fidelity PROXY: predicted category among the issue's hidden categories (rewrite 3), vs chance from the "
          "same label mix")
    print(f"{'system':<11} {'scored q':>8} {'hit':>7} {'chance':>7} {'hit*':>7} {'chance*':>8}   "
          "(* = code-location probe counted as Implementation Details)")
    for system, r in report["systems"].items():
        h = r["hidden_proxy"]
        print(f"{system:<11} {h['questions_scored']:>8} {100 * h['predicted_in_hidden']:6.1f}% "
              f"{100 * h['chance_same_label_mix']:6.1f}% {100 * h['predicted_in_hidden_probe_as_impl']:6.1f}% "
              f"{100 * h['chance_probe_as_impl']:7.1f}%")
    rt = report["runtime_s"]
    print()
    print(f"runtime: workbook load {rt['load_workbook']:.1f} s, parse {rt['parse']:.2f} s, "
          f"classify {rt['classify']:.1f} s ({rt['questions_per_s']:.0f} questions/s, "
          "embedding cache state affects this)")

    out = Path(args.out)
    write_json(out, report)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
