"""The report's blocks for ``question_analysis`` (CLARITI RQ2), from ``data/analysis/questions/findings.json``:
the paper's statements beside the local figures with a verdict, answerability by strategy tag, by position and by
question set (95% Wilson intervals), the separating model, and the stage's figures.

Every table names the backend behind its numbers; numbers from the local rule backends are never the paper's.
"""

from __future__ import annotations

from typing import Any

from tasks.reporting.model import Block, Figure, Table, Text

FINDINGS = "data/analysis/questions/findings.json"
FIGURES = {"by_position.png": "Answerable share by position in the list (95% Wilson bars)",
           "by_strategy.png": "Answerable share with and without each strategy tag (95% Wilson bars)",
           "shap.png": "Separating model: mean |linear SHAP| per feature (sign: towards answerable)"}
NOTE = ("Answerable is a judge's label: whether the full issue and its hints hold the answer (the paper's proxy, "
        "clariti.md §4). The strategy tags and the labels come from the roles named in each backend column; with "
        "local backends these are this project's rule-based measurements on its own question sets, not the paper's "
        "numbers. The paper's four strategies are second-hand and unconfirmed (clariti.md §4).")


def _cell(r: dict[str, Any] | None) -> str:
    if not r or not r.get("n"):
        return "–"
    return f"{100 * r['rate']:.1f}% [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}] (n={r['n']})"


def question_blocks(findings: dict[str, Any] | None, pngs: dict[str, bytes]) -> list[Block]:
    if not findings:
        return [Text(f"No {FINDINGS} yet.", kind="missing")]
    backends: dict[str, str] = findings.get("backends", {})
    blocks: list[Block] = [Text(NOTE, kind="note")]
    blocks += [Text(f"Backend of {source}: {backend}.") for source, backend in sorted(backends.items())]
    rows_used = (findings.get("inputs") or {}).get("workbook_rows")
    if rows_used is not None:
        blocks.append(Text(f"Workbook lists: {'all' if rows_used == 'all' else f'the first {rows_used}'} rows of the "
                           "CLARITI workbook (question_analysis.workbook_limit; benchmarks/question_answerability.py "
                           "runs all of them).", kind="note"))
    blocks.append(Table(["paper's statement", "source", "question set", "local figures", "verdict", "backend"],
                        [[r["paper"], r["source"], r.get("question_set", "all"), r["local"], r["verdict"],
                          backends.get(r["source"], "–")] for r in findings.get("paper_comparison", [])],
                        caption="The paper's RQ2 statements against the local figures (verdict: disjoint 95% "
                                "Wilson intervals agree or disagree, overlapping ones are inconclusive)"))
    props = findings.get("by_property", [])
    for kind, caption in (("strategy", "Answerability by strategy tag"),
                          ("syntactic", "Answerability by syntactic feature")):
        rows = []
        for r in props:
            if r["kind"] == kind and r["value"]:
                other = next((o for o in props if o["source"] == r["source"] and o["property"] == r["property"]
                              and not o["value"]), None)
                rows.append([r["source"], r["property"], _cell(r), _cell(other), backends.get(r["source"], "–")])
        blocks.append(Table(["source", kind if kind == "syntactic" else "tag", "with", "without", "backend"], rows,
                            caption=caption, collapsed=kind == "syntactic"))
    positions = findings.get("by_position", [])
    names = sorted({(r["position_index"], r["position"]) for r in positions})
    sets = sorted({(r["source"], r["question_set"]) for r in positions})
    rows = [[source, qset, *(_cell(next((r for r in positions if r["source"] == source and r["question_set"] == qset
                                         and r["position_index"] == i), None)) for i, _ in names),
             backends.get(source, "–")] for source, qset in sets]
    blocks.append(Table(["source", "question set", *(f"Q{name}" for _, name in names), "backend"], rows,
                        caption="Answerability by position in the list (1st, 2nd, ... question)"))
    blocks.append(Table(["source", "question set", "lists", "mean list length", "answerable", "evidence-based",
                         "specific", "scoped", "actionable", "backend"],
                        [[r["source"], r["question_set"], str(r["lists"]), f"{r['mean_list_length']:.2f}", _cell(r),
                          *(_share(r.get(f"{t}_share")) for t in ("evidence_based", "specific", "scoped",
                                                                   "actionable")),
                          backends.get(r["source"], "–")] for r in findings.get("by_set", [])],
                        caption="Answerability and strategy-tag shares by question set (method, policy or "
                                "published list)"))
    model_rows = []
    for source, m in sorted(findings.get("model", {}).items()):
        if "features" not in m:
            model_rows.append([source, str(m.get("n", "–")), "–", m.get("skipped", ""), backends.get(source, "–")])
            continue
        top = ", ".join(f"{f['feature']} ({'+' if f['coefficient'] > 0 else '-'}{f['mean_abs_shap']:.3f})"
                        for f in m["features"][:5])
        model_rows.append([source, str(m["n"]), f"{m['auc_mean']:.3f} ± {m['auc_sd']:.3f}", top,
                           f"{findings.get('model_backend', 'logistic regression')} over {backends.get(source, '–')}"])
    blocks.append(Table(["source", "questions", f"CV AUC ({_folds(findings)} folds)",
                         "top features (sign, mean |SHAP|)", "backend"], model_rows,
                        caption="What separates answerable from unanswerable questions"))
    blocks += [Figure(f"figures/question-analysis-{name}", pngs[name], caption) for name, caption in FIGURES.items()
               if name in pngs]
    return blocks


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _folds(findings: dict[str, Any]) -> str:
    found = {m.get("folds") for m in findings.get("model", {}).values() if "folds" in m}
    return "/".join(str(f) for f in sorted(found)) if found else "k"
