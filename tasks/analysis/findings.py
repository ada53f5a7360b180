"""The findings of ``question_analysis`` from the question table: answerability by property (the four strategy
tags and the syntactic features), by position in the list, by question set, a cross-validated logistic model of
what separates answerable from unanswerable questions (with its linear SHAP values), and the paper's statements
set against the local figures.

Every rate comes with a 95% Wilson interval. Rows with an unknown ``answerable`` (a failed judge call) or an unknown
tag (a failed tagger call) are left out of the tables that need them, and counted.
"""

from __future__ import annotations

from typing import Any

from tasks import intervals
from tasks.analysis.features import FEATURES
from tasks.roles.strategy_tagger import STRATEGIES

Z95 = 1.959963984540054
PROPERTIES = (*STRATEGIES, *FEATURES)
"""The yes/no properties compared in the by-property table and used by the model."""


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials; (0, 1) for n = 0."""
    return intervals.wilson(k, n, z, empty=(0.0, 1.0))


def rate(values) -> dict[str, Any]:
    """``{n, answerable, rate, ci_low, ci_high}`` of a boolean series."""
    n, k = len(values), int(sum(bool(v) for v in values))
    low, high = wilson(k, n)
    return {"n": n, "answerable": k, "rate": round(k / n, 4) if n else None, "ci_low": round(low, 4),
            "ci_high": round(high, 4)}


def judged(frame):
    """The rows whose ``answerable`` is known."""
    return frame[frame["answerable"].notna()].assign(answerable=lambda f: f["answerable"].astype(bool))


def by_property(frame) -> list[dict[str, Any]]:
    """Per source, property and value (yes/no): the answerable rate."""
    rows = []
    data = judged(frame)
    for source, group in data.groupby("source", sort=True):
        for prop in PROPERTIES:
            known = group[group[prop].notna()]
            for value in (True, False):
                part = known[known[prop].astype(bool) == value]
                rows.append({"source": source, "property": prop, "value": value,
                             "kind": "strategy" if prop in STRATEGIES else "syntactic", **rate(part["answerable"])})
    return rows


def position_bucket(position: int, max_position: int) -> str:
    return str(position) if position < max_position else f"{max_position}+"


def by_position(frame, max_position: int) -> list[dict[str, Any]]:
    """Per source, question set and position (1st, 2nd, ..., ``max_position``+ pooled): the answerable rate."""
    rows = []
    data = judged(frame)
    for (source, qset), group in data.groupby(["source", "question_set"], sort=True):
        for pos in range(1, max_position + 1):
            part = group[group["position"] == pos] if pos < max_position else group[group["position"] >= pos]
            if len(part):
                rows.append({"source": source, "question_set": qset,
                             "position": position_bucket(pos, max_position), "position_index": pos,
                             **rate(part["answerable"])})
    return rows


def by_set(frame) -> list[dict[str, Any]]:
    """Per source and question set: lists, questions, mean list length, the answerable rate and each tag's share."""
    rows = []
    data = judged(frame)
    for (source, qset), group in data.groupby(["source", "question_set"], sort=True):
        lists = group.drop_duplicates("case_id")
        row = {"source": source, "question_set": qset, "lists": len(lists),
               "mean_list_length": round(float(lists["list_length"].mean()), 4), **rate(group["answerable"])}
        for tag in STRATEGIES:
            known = group[group[tag].notna()]
            row[f"{tag}_share"] = round(float(known[tag].astype(bool).mean()), 4) if len(known) else None
        rows.append(row)
    return rows


def design(frame, categories: list[str]):
    """Model inputs: the properties, position, log word count and category indicators."""
    import numpy as np

    columns = [*PROPERTIES, "position", "log_words", *(f"category={c}" for c in categories)]
    X = np.column_stack([
        *(frame[p].astype(float).to_numpy() for p in PROPERTIES),
        frame["position"].astype(float).to_numpy(),
        np.log1p(frame["n_words"].astype(float).to_numpy()),
        *((frame["category"] == c).astype(float).to_numpy() for c in categories),
    ])
    return X, columns


def separating_model(frame, *, folds: int, seed: int, min_per_class: int) -> dict[str, dict[str, Any]]:
    """Per source: a standardised L2 logistic regression of ``answerable`` on the features, its stratified
    ``folds``-fold AUC, and each feature's coefficient and mean |linear SHAP| (coefficient x centred standardised
    value: exact for a linear model with independent features). A source with fewer than ``min_per_class``
    answerable or unanswerable questions gets ``{"skipped": reason}``."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    out: dict[str, dict[str, Any]] = {}
    data = judged(frame)
    data = data[data[list(STRATEGIES)].notna().all(axis=1)]
    for source, group in data.groupby("source", sort=True):
        y = group["answerable"].astype(int).to_numpy()
        positives, negatives = int(y.sum()), int(len(y) - y.sum())
        if min(positives, negatives) < max(min_per_class, folds):
            out[source] = {"skipped": f"{positives} answerable / {negatives} unanswerable questions; the model needs "
                                      f"{max(min_per_class, folds)} of each", "n": len(y)}
            continue
        categories = sorted(c for c in group["category"].dropna().unique())
        X, columns = design(group, categories)
        keep = X.std(axis=0) > 0
        X, columns = X[:, keep], [c for c, k in zip(columns, keep) if k]

        def model():
            return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))

        aucs = []
        for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(X, y):
            fitted = model().fit(X[train], y[train])
            aucs.append(float(roc_auc_score(y[test], fitted.predict_proba(X[test])[:, 1])))
        fitted = model().fit(X, y)
        scaled = fitted[0].transform(X)
        coef = fitted[1].coef_[0]
        shap = coef * (scaled - scaled.mean(axis=0))
        importance = np.abs(shap).mean(axis=0)
        order = np.argsort(-importance)
        out[source] = {
            "n": len(y), "answerable": positives, "unanswerable": negatives, "folds": folds,
            "auc_mean": round(float(np.mean(aucs)), 4), "auc_sd": round(float(np.std(aucs)), 4),
            "auc_folds": [round(a, 4) for a in aucs],
            "features": [{"feature": columns[i], "coefficient": round(float(coef[i]), 4),
                          "mean_abs_shap": round(float(importance[i]), 4),
                          "direction": "more answerable" if coef[i] > 0 else "less answerable"} for i in order],
        }
    return out


PAPER_STATEMENTS = {
    "evidence_based": "Answerable questions are grounded in evidence: they ask for an observable artefact.",
    "specific": "Answerable questions demand specificity: an exact value or identifier.",
    "scoped": "Answerable questions minimise scope: the smallest unit that isolates the problem.",
    "actionable": "Answerable questions are actionable: something the user can run or look at now.",
    "position": "Answerability falls as the number of questions grows (later questions are answered less).",
}
"""The paper's RQ2 statements (clariti.md §4; the four strategies are second-hand and unconfirmed there)."""


def verdict(higher: dict[str, Any], lower: dict[str, Any]) -> str:
    """``agrees`` when ``higher``'s rate is above ``lower``'s with disjoint Wilson intervals, ``disagrees`` when it
    is below with disjoint intervals, ``inconclusive`` when they overlap, ``no data`` when either side is empty."""
    if not higher["n"] or not lower["n"]:
        return "no data"
    if higher["ci_low"] > lower["ci_high"]:
        return "agrees"
    if higher["ci_high"] < lower["ci_low"]:
        return "disagrees"
    return "inconclusive (intervals overlap)"


def paper_comparison(frame, properties: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per source (``question_set`` "all"), each paper statement with the local figures behind it and the verdict;
    the position statement also per question set."""
    rows = []
    data = judged(frame)
    for source, group in data.groupby("source", sort=True):
        for tag in STRATEGIES:
            found = {r["value"]: r for r in properties if r["source"] == source and r["property"] == tag}
            yes, no = found[True], found[False]
            rows.append({"source": source, "question_set": "all", "statement": tag, "paper": PAPER_STATEMENTS[tag],
                         "local": f"with the tag {_pct(yes)}, without {_pct(no)}", "verdict": verdict(yes, no)})
        sets = [("all", group), *((qset, part) for qset, part in group.groupby("question_set", sort=True))]
        for qset, part in sets:
            first = rate(part[part["position"] == 1]["answerable"])
            later = rate(part[part["position"] >= 2]["answerable"])
            rows.append({"source": source, "question_set": qset, "statement": "position",
                         "paper": PAPER_STATEMENTS["position"],
                         "local": f"1st question {_pct(first)}, 2nd and later {_pct(later)}",
                         "verdict": verdict(first, later)})
    return rows


def _pct(r: dict[str, Any]) -> str:
    if not r["n"]:
        return "no questions"
    return f"{100 * r['rate']:.1f}% [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}] of {r['n']}"
