"""evaluate@swe's report section (``report.md``: the ranked methods, the reference rows apart, the categories, the
staged reward, cost and efficiency, the notes) and the frames its validation suites check (``summary_frame``,
``rows_frame``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _fmt(value: Any, ci: Any = None, pct: bool = False) -> str:
    if value is None:
        return "–"
    scale, unit = (100.0, "%") if pct else (1.0, "")
    text = f"{value * scale:.1f}{unit}" if pct else f"{value:.2f}"
    if ci:
        text += f" [{ci[0] * scale:.1f}, {ci[1] * scale:.1f}]" if pct else f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return text


SWE_HEADER = ("| method | kind | cases | questions / issue | redundancy | answerability | distinct intents "
              "| hidden recall | full coverage | weighted recovery | staged reward | resolution |")
REFERENCE_TITLE = "Reference rows (not ranked)"
REFERENCE_NOTE = ("Reference rows read what a method may not (privileged: the hidden categories, or the full issue "
                  "as a +abstain variant's abstention does) or nothing at all (a bound): they bracket the methods "
                  "above and are never ranked with them.")


def _method_cells(name: str, m: dict[str, Any]) -> list[str]:
    if not m.get("cases"):
        return [name, m["kind"], "0", *["–"] * 9]
    ci = m["CI95"]
    res = m.get("resolution")
    res_text = f"{_fmt(res['value'], res['CI95'], True)} ({res['kind']})" if res else "–"
    return [name, m["kind"], str(m["cases"]), _fmt(m["questions_per_issue"], ci["questions_per_issue"]),
            _fmt(m["redundancy_rate"], ci["redundancy_rate"], True),
            _fmt(m["answerability_rate"], ci["answerability_rate"], True),
            _fmt(m["distinct_intents"], ci["distinct_intents"], True),
            _fmt(m["hidden_recall"], ci["hidden_recall"], True),
            _fmt(m["full_coverage_rate"], ci["full_coverage_rate"], True),
            _fmt(m["weighted_recovery"], ci["weighted_recovery"], True), _fmt(m["reward_mean"], ci["reward_mean"]),
            res_text]


EFFICIENCY_COLUMNS = ("TotalTokens", "EstimatedCostUSD", "CostPerCaseUSD", "LatencySeconds", "ScorePerDollar",
                      "ScorePerQuestion")
"""The cost and efficiency figures of ``summary_frame`` (checked by the ``swe_eval_summary`` suite)."""


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def paired_lines(paired: dict[str, Any]) -> list[str]:
    """``evaluate.swe.compare``: each pair's staged-reward difference on the cases both scored, paired by case."""
    if not paired:
        return []
    lines = ["", "Paired by case (staged reward, a - b, 95% paired bootstrap interval):", "",
             "| a - b | cases | same answer | mean a | mean b | a - b [95% CI] |", "|---|---|---|---|---|---|"]
    for name, p in paired.items():
        if "skipped" in p:
            lines.append(f"| {name} | skipped: {p['skipped']} | | | | |")
        else:
            lines.append(f"| {name} | {p['cases']} | {p.get('same_answers', '–')} | {p['mean_a']:.3f} | "
                         f"{p['mean_b']:.3f} | {p['mean']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}] |")
    identical = [name for name, p in paired.items() if "skipped" not in p and p.get("same_answers") == p["cases"]]
    if identical:
        lines += ["", f"> {', '.join(identical)}: both methods gave the same answer on every case, so the difference "
                  "is 0 by construction, not a measured tie (a policy trained too little to change its greedy "
                  "answers)."]
    return lines


def report_markdown(summary: dict[str, Any]) -> str:
    """The report section for evaluate@swe (markdown, no images): the ranked methods' table, then the reference
    rows apart (each with what it reads)."""
    from tasks.evaluation.cost_table import swe_cost_lines
    from tasks.evaluation.question_metrics import LABELS
    from tasks.evaluation.question_plots import NAMES

    order = summary["method_order"]
    methods = summary["methods"]
    reference = summary["reference_methods"]
    lines = ["## SWE clarification (evaluate@swe)", "",
             (f"{summary['cases']} cases from {summary['issues']} issues ({summary['case_source']}, split "
              f"{summary['split']['evaluated']}). Values are means with 95% percentile-bootstrap intervals over "
              "issues."), "",
             SWE_HEADER, "|---" * SWE_HEADER.count(" | ") + "|---|"]
    lines += [_line(_method_cells(name, methods[name])) for name in order]
    lines += paired_lines(summary.get("paired") or {})
    if summary["reference_order"]:
        header = SWE_HEADER.replace("| kind |", "| kind | reference | reads |")
        lines += ["", f"### {REFERENCE_TITLE}", "", REFERENCE_NOTE, "", header, "|---" * header.count(" | ") + "|---|"]
        for name in summary["reference_order"]:
            cells = _method_cells(name, reference[name])
            lines.append(_line([*cells[:2], reference[name]["reference"]["kind"],
                                reference[name]["reference"]["reads"], *cells[2:]]))
    # the per-method detail tables list every row; a reference row is labelled as such
    every = {**{name: methods[name] for name in order},
             **{f"{name} (reference)": reference[name] for name in summary["reference_order"]}}
    lines += ["", "Question categories (share of each method's questions):", "",
              "| method | " + " | ".join(NAMES[label] for label in LABELS) + " |",
              "|---|" + "---|" * len(LABELS)]
    for name, m in every.items():
        shares = m.get("category_share")
        if shares and m.get("questions"):
            lines.append(f"| {name} | " + " | ".join(_fmt(shares.get(label), pct=True) for label in LABELS) + " |")
    stages = [k for k in next((m for m in every.values() if m.get("cases")), {}) if k.startswith("reward_")
              and k.endswith("_mean") and k != "reward_mean"]
    if stages:
        lines += ["", f"Staged reward by stage (mean over scored cases; protocol {summary.get('reward_protocol')}; "
                  "unscored: stage values whose judges failed, left out of the means):", "",
                  "| method | " + " | ".join(s[len("reward_"):-len("_mean")] for s in stages) + " | unscored |",
                  "|---|" + "---|" * (len(stages) + 1)]
        for name, m in every.items():
            if m.get("cases"):
                lines.append(f"| {name} | " + " | ".join(_fmt(m[s]) for s in stages) + f" | {m.get('unscored', 0)} |")
    lines += swe_cost_lines(every)
    trained = [f"{n} trained on {methods[n]['trained_on_source_ids']} issues (overlap with the evaluated ones: "
               f"{methods[n]['training_overlap']})" for n in order if "trained_on_source_ids" in methods[n]]
    notes = [f"- Split: {_split_line(summary['split'])}" + (f"; {'; '.join(trained)}." if trained else "."),
             f"- Category weights: {summary['weights']['source']}.",
             (f"- Reward protocol: {summary.get('reward_protocol')} (docs/clariti-protocol.md); a failed judge "
              f"call: {summary.get('judge_failure')}; unscored: {summary.get('unscored', 0)}."),
             f"- Resolution: {summary['surrogate'].get('label')}" + (
                 f" (model trained on {summary['surrogate']['trained_on']}; reference: incomplete issue "
                 f"{_fmt(summary['surrogate']['reference'].get('incomplete_issue'), pct=True)}, full issue "
                 f"{_fmt(summary['surrogate']['reference'].get('full_issue'), pct=True)})."
                 if summary["surrogate"].get("reference") else "."),
             ("- A hidden category is recovered when a question classified into it was answered by the simulated "
              "user.")]
    for name, m in every.items():
        if m.get("measured_resolution"):
            notes.append(f"- {name}: measured resolution from {m['measured_resolution']['source']}.")
    for name, m in every.items():
        if m.get("skipped_cases"):
            reasons = ", ".join(f"{k}: {v}" for k, v in m["skipped"].items())
            notes.append(f"- {name}: {m['skipped_cases']} cases skipped ({reasons}).")
    if summary.get("published_note"):
        notes.append(f"- Published sets: {summary['published_note']}.")
    backends = "; ".join(f"{name}: {d.get('model') or d.get('implementation')} ({d['backend']})"
                         for name, d in summary["roles"].items())
    notes.append(f"- Roles: {backends}.")
    if summary.get("abstention"):
        from tasks.evaluation.abstain import abstention_lines

        lines += ["", *abstention_lines(summary["abstention"])]
    return "\n".join(lines + ["", *notes]) + "\n"


def _split_line(split: dict[str, Any]) -> str:
    counts = ", ".join(f"{v['cases']} {k} cases from {v['source_ids']} issues" for k, v in split.items()
                       if isinstance(v, dict) and v["cases"])
    return f"{split['evaluated']} evaluated ({counts or 'no cases'})"


def summary_frame(summary: dict[str, Any]):
    """One row per method, ranked and reference alike, for the ``swe_eval_summary`` suite: metrics and each CI's
    bounds."""
    import pandas as pd

    from tasks.evaluation.question_metrics import ISSUE_METRICS, QUESTION_METRICS

    names = (*ISSUE_METRICS, *QUESTION_METRICS)
    every = {**summary["methods"], **summary["reference_methods"]}
    rows = []
    for key in [*summary["method_order"], *summary["reference_order"]]:
        m = every[key]
        row: dict[str, Any] = {"key": key, "cases": m.get("cases", 0), "skipped_cases": m.get("skipped_cases", 0)}
        for name in names:
            row[name] = m.get(name)
            bounds = (m.get("CI95") or {}).get(name)
            row[f"{name}_low"], row[f"{name}_high"] = bounds if bounds else (None, None)
        shares = [v for v in (m.get("category_share") or {}).values() if v is not None]
        row["category_share_sum"] = sum(shares) if shares else None
        eff = m.get("efficiency") or {}
        for name in EFFICIENCY_COLUMNS:
            row[name] = eff.get(name)
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.astype({c: "float64" for c in frame.columns if c not in ("key", "cases", "skipped_cases")})


def rows_frame(rows_or_dir: Sequence[dict] | Path):
    """One row per (method, case) for the ``swe_eval_rows`` suite (from the rows or the output folder)."""
    import pandas as pd

    from tasks.evaluation.question_metrics import LABELS

    if isinstance(rows_or_dir, Path | str):
        text = (Path(rows_or_dir) / "rows.jsonl").read_text(encoding="utf-8")
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        rows = list(rows_or_dir)
    frame = pd.DataFrame([{
        "key": r["key"], "method": r["method"], "case_id": r["case_id"], "skipped": r["skipped"] is not None,
        "n_questions": r["n_questions"], "recall": r["recall"], "weighted_recovery": r["weighted_recovery"],
        "predicted_resolution": r["predicted_resolution"],
        "recovered_within_hidden": set(r["recovered"]) <= set(r["hidden"]),
        "labels_known": all(q["label"] is None or q["label"] in LABELS for q in r["questions"]),
        "n_hidden": len(r["hidden"]),
    } for r in rows], columns=["key", "method", "case_id", "skipped", "n_questions", "recall", "weighted_recovery",
                               "predicted_resolution", "recovered_within_hidden", "labels_known", "n_hidden"])
    return frame.astype(dict.fromkeys(("recall", "weighted_recovery", "predicted_resolution"), "float64"))
