"""The runs table: one row per agent attempt on a task variant, from one of three sources.

Every builder returns a pandas DataFrame with exactly :data:`tasks.infovalue.COLUMNS` (ints for the six category
columns and ``resolved``, strings for ids and controls). :func:`validate_runs` checks a table before anything is
written; :func:`runs_table_for_gx` lists the same checks as Great Expectations expectations.

Simulated outcomes (``simulate_runs``)
--------------------------------------
These are **simulated outcomes, not real agent runs**: a generative model with planted per-category effects, so
that the classifier and the SHAP analysis can be checked against a known answer.

* ``n_variants`` task variants ``sim-000000`` ... (instance ``sim-i000000`` ...). In each variant every category is
  present independently with probability ``presence_prob``; when all six come out present, one category chosen
  uniformly at random is hidden, so every variant hides at least one.
* Every variant is attempted once by every agent model in ``agent_models`` (the same presence vector for all of
  them), giving ``n_variants * len(agent_models)`` rows.
* For variant ``v`` and model ``m``::

      logit P(resolved) = intercept + sum_c effects[c] * present_c + offset(m) + eps,   eps ~ Normal(0, noise)

  with ``eps`` drawn per row. ``offset(m)`` is a fixed number in [-0.75, 0.75] derived from a SHA-256 hash of
  ``seed`` and the model name (:func:`model_offsets`), so a model keeps its offset when others are added or
  removed. ``resolved ~ Bernoulli(P(resolved))``.
* Defaults (:data:`DEFAULT_EFFECTS`, :data:`DEFAULT_INTERCEPT`) plant the paper's ranking, Error > Implementation >
  Version/Env > Expected > Reproduction > External references, with log-odds effects 2.5, 2.0, 1.55, 1.1, 0.7,
  0.3 (0.4-0.5 apart) and an intercept of -4.1 (minus half the effects' sum), which puts the overall success rate
  near 50 % at ``presence_prob = 0.5``. The planted normalised weights (effect / max effect) are 1.00, 0.80, 0.62,
  0.44, 0.28, 0.12; they are deliberately not the paper's numbers, whose middle three (0.60, 0.59, 0.58) are too
  close to be told apart by any realistic sample. With 2,000 rows a LightGBM + TreeSHAP ranking matches the planted
  one for about 9 seeds in 10 (the adjacent pair Expected/Reproduction is the one that swaps); with 6,000 rows
  (the params default, 3,000 variants x 2 models) it matches for nearly every seed.
* Everything comes from ``numpy.random.default_rng(seed)``: the same arguments give the same table.
* ``condition`` is ``"simulated"`` and ``repo`` is empty.

Ambig-SWE outcomes (``ambig_swe_runs``)
---------------------------------------
Real agent outcomes from Ambig-SWE (four agent models, three conditions: ``fully-specified``, ``underspecified``,
``interaction``), joined on ``instance_id`` with the CLARITI workbook. One row per (instance, condition, model).
Presence comes from either

* ``workbook``: the workbook's present categories for the full issue, taken as what the agent saw in
  ``fully-specified``; in ``underspecified`` and ``interaction`` the categories in ``removed_in_underspecified``
  are set to 0, since the Ambig-SWE README says reproductions, error text and expected behaviour were removed.
  Limitation: in ``interaction`` the agent could ask a simulated user and get that information back, so 0 there
  means "not in the prompt", not "never seen". The presence vector is also a property of the full issue, not of
  the summary the agent actually read; or
* ``annotator``: the annotator role (local backend by default) run on each condition's ``problem_statement``.
  Limitation: the Ambig-SWE README says this column is nearly identical across the three conditions (equal to the
  fully-specified summary in 477 of 500 underspecified rows), so the annotated presence hardly varies with the
  condition; the condition itself (a control column) carries most of that difference.

Rows whose instance is missing from the workbook, or (``workbook``) unannotated there, or (``annotator``) whose
statement is empty or whose annotation failed, are dropped; ``df.attrs["dropped"]`` counts them per reason, in
(instance, condition) pairs.

SWE-bench harness results (``harness_runs``)
--------------------------------------------
The variants written by ``construct@swe`` (``Case`` records; presence = ``visible_categories``) with the label
read from a harness report: a plain list of resolved ids, the harness's run report (``{"resolved_ids": [...],
"submitted_ids": [...], ...}``), an older ``{"resolved": [...]}`` summary, or per-instance reports
(``{id: {"resolved": true}, ...}``). A resolved id is matched against the case ids (variant ids) when any of them
is one; otherwise against ``metadata.source_id`` (SWE-bench instance ids), which is accepted only when every
instance has a single variant in the cases file, since an instance-level result cannot tell variants apart.
``df.attrs["matched_on"]`` says which. When the report lists ``submitted_ids`` only those variants are kept
(errors and empty patches count as unresolved, as in the harness's own resolve rate).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from tasks.categories import ORDER, Category
from tasks.errors import InputError
from tasks.infovalue import COLUMNS, FEATURES, KEY

LABEL = "resolved"
ID_COLUMNS: tuple[str, ...] = ("variant_id", "instance_id")
TEXT_COLUMNS: tuple[str, ...] = tuple(c for c in COLUMNS if c not in FEATURES and c != LABEL)
BINARY_COLUMNS: tuple[str, ...] = (*FEATURES, LABEL)

DEFAULT_EFFECTS: dict[str, float] = {
    Category.ERROR.key: 2.5,
    Category.IMPLEMENTATION.key: 2.0,
    Category.VERSION_ENV.key: 1.55,
    Category.EXPECTED.key: 1.1,
    Category.REPRODUCTION.key: 0.7,
    Category.EXTERNAL_REFS.key: 0.3,
}
"""Planted log-odds effect of each category's presence (the paper's ranking, clearly separated)."""

DEFAULT_INTERCEPT = -4.1
MODEL_OFFSET_RANGE = 0.75
CONDITIONS: tuple[str, ...] = ("fully-specified", "underspecified", "interaction")
NON_MODEL_COLUMNS = ("instance_id", "problem_statement")


def planted_ranking(effects: dict[str, float] | None = None) -> list[str]:
    """Category keys by planted effect, strongest first."""
    effects = DEFAULT_EFFECTS if effects is None else effects
    return sorted(FEATURES, key=lambda c: (-effects.get(c, 0.0), FEATURES.index(c)))


# ---- the table's shape -----------------------------------------------------------------------------------------------


def empty_table() -> pd.DataFrame:
    return _typed(pd.DataFrame({c: [] for c in COLUMNS}))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Exactly COLUMNS, in order: int64 for the binary columns, str for the rest."""
    frame = frame.loc[:, list(COLUMNS)].copy()
    for column in BINARY_COLUMNS:
        frame[column] = frame[column].astype("int64")
    for column in TEXT_COLUMNS:
        frame[column] = frame[column].astype(object).where(frame[column].notna(), "").astype(str)
    return frame.reset_index(drop=True)


def _table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return _typed(pd.DataFrame(rows, columns=list(COLUMNS))) if rows else empty_table()


def _presence(categories: list[Category] | set[Category]) -> dict[str, int]:
    return {c.key: int(c in categories) for c in ORDER}


# ---- simulated outcomes ----------------------------------------------------------------------------------------------


def model_offsets(agent_models: list[str], seed: int) -> dict[str, float]:
    """Each model's fixed log-odds offset in [-MODEL_OFFSET_RANGE, MODEL_OFFSET_RANGE], from a hash of seed and name."""
    out = {}
    for name in agent_models:
        digest = hashlib.sha256(f"{seed}\x00{name}".encode()).digest()
        unit = int.from_bytes(digest[:8], "big") / 2**64
        out[name] = float((2 * unit - 1) * MODEL_OFFSET_RANGE)
    return out


def _check_effects(effects: dict[str, float]) -> None:
    unknown = sorted(set(effects) - set(FEATURES))
    if unknown:
        raise InputError("params.yaml: shap.simulated",
                         f"unknown category {unknown[0]!r} (known: {', '.join(FEATURES)})", field="effects")
    missing = [c for c in FEATURES if c not in effects]
    if missing:
        raise InputError("params.yaml: shap.simulated", f"no effect given for {missing[0]!r}", field="effects")


def simulate_runs(
    n_variants: int,
    agent_models: list[str],
    effects: dict[str, float] | None = None,
    intercept: float | None = None,
    presence_prob: float = 0.5,
    noise: float = 0.3,
    seed: int = 0,
) -> pd.DataFrame:
    """Simulated outcomes from the generative model in the module docstring (seeded, deterministic)."""
    effects = dict(DEFAULT_EFFECTS if effects is None else effects)
    intercept = DEFAULT_INTERCEPT if intercept is None else float(intercept)
    _check_effects(effects)
    where = "params.yaml: shap.simulated"
    if n_variants < 1:
        raise InputError(where, f"must be at least 1, got {n_variants}", field="n_variants")
    if not agent_models or len(set(agent_models)) != len(agent_models) or not all(agent_models):
        raise InputError(where, "needs one or more distinct, non-empty model names", field="agent_models")
    if not 0.0 < presence_prob < 1.0:
        raise InputError(where, f"must be strictly between 0 and 1, got {presence_prob}", field="presence_prob")
    if noise < 0:
        raise InputError(where, f"must be >= 0, got {noise}", field="noise")

    rng = np.random.default_rng(seed)
    k = len(FEATURES)
    present = (rng.random((n_variants, k)) < presence_prob).astype(np.int64)
    full = np.flatnonzero(present.sum(axis=1) == k)
    present[full, rng.integers(0, k, size=len(full))] = 0

    beta = np.array([effects[c] for c in FEATURES], dtype=np.float64)
    offsets = model_offsets(agent_models, seed)
    m = len(agent_models)
    variant_logit = intercept + present @ beta
    logit = np.repeat(variant_logit, m) + np.tile([offsets[a] for a in agent_models], n_variants)
    logit = logit + rng.normal(0.0, noise, size=logit.shape) if noise > 0 else logit
    resolved = (rng.random(logit.shape) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)

    index = np.repeat(np.arange(n_variants), m)
    frame = pd.DataFrame({
        "variant_id": [f"sim-{i:06d}" for i in index],
        "instance_id": [f"sim-i{i:06d}" for i in index],
        "condition": "simulated",
        "agent_model": np.tile(np.array(agent_models, dtype=object), n_variants),
        "repo": "",
        **{c: np.repeat(present[:, j], m) for j, c in enumerate(FEATURES)},
        LABEL: resolved,
    })
    frame = _typed(frame)
    frame.attrs.update({
        "source": "simulated outcomes (planted effects, not real agent runs)",
        "planted_effects": effects,
        "planted_ranking": planted_ranking(effects),
        "intercept": intercept,
        "model_offsets": offsets,
    })
    return frame


# ---- Ambig-SWE outcomes ----------------------------------------------------------------------------------------------


def _read_outcomes(path: Path, models: list[str] | None) -> tuple[pd.DataFrame, list[str]]:
    if not path.is_file():
        raise InputError(path, "file not found (expected the Ambig-SWE outcome CSVs in shap.ambig_swe.dir)")
    try:
        frame = pd.read_csv(path, dtype={"instance_id": str, "problem_statement": str}, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
        raise InputError(path, f"cannot read CSV: {err}") from None
    for column in NON_MODEL_COLUMNS:
        if column not in frame.columns:
            raise InputError(path, "missing column", field=column)
    available = [c for c in frame.columns if c not in NON_MODEL_COLUMNS]
    chosen = available if models is None else list(models)
    for name in chosen:
        if name not in available:
            raise InputError(path, f"no column for model {name!r} (models: {', '.join(available)})", field=name)
    for name in chosen:
        bad = ~frame[name].astype(str).str.strip().isin(["0", "1"])
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(path, f"non-binary outcome {frame[name].iloc[row]!r} (expected 0 or 1)",
                             record=f"row {row + 2} ({frame['instance_id'].iloc[row]})", field=name)
    dup = frame["instance_id"].duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise InputError(path, f"duplicate id {frame['instance_id'].iloc[row]!r}", record=f"row {row + 2}",
                         field="instance_id")
    return frame, chosen


def _annotate_statements(texts: list[str]) -> list[set[Category] | None]:
    """Present categories per text from the annotator role (None where it failed); identical texts run once."""
    from tasks.llm.records import RoleConfig, RoleFailure
    from tasks.roles.annotator import SPEC, AnnotateInput
    from tasks.roles.base import run_role

    unique = list(dict.fromkeys(texts))
    outputs = run_role(SPEC, [AnnotateInput(text=t) for t in unique], RoleConfig())
    by_text = {t: (None if isinstance(o, RoleFailure) else set(o.present)) for t, o in zip(unique, outputs)}
    return [by_text[t] for t in texts]


def ambig_swe_runs(
    ambig_dir: Path,
    workbook: Path,
    presence: Literal["workbook", "annotator"] = "workbook",
    removed_in_underspecified: list[str] | None = None,
    models: list[str] | None = None,
) -> pd.DataFrame:
    """Ambig-SWE outcomes x CLARITI presence, one row per (instance, condition, model); see the module docstring."""
    from tasks.domains.swe import load_clariti

    ambig_dir, workbook = Path(ambig_dir), Path(workbook)
    removed = ["error_info", "reproduction", "expected_behavior"] if removed_in_underspecified is None \
        else list(removed_in_underspecified)
    for key in removed:
        if key not in FEATURES:
            raise InputError("params.yaml: shap.ambig_swe", f"unknown category {key!r} (known: {', '.join(FEATURES)})",
                             field="removed_in_underspecified")
    if presence not in ("workbook", "annotator"):
        raise InputError("params.yaml: shap.ambig_swe", f"unknown presence source {presence!r} (workbook | annotator)",
                         field="presence")
    outcomes = {cond: _read_outcomes(ambig_dir / f"{cond}.csv", models) for cond in CONDITIONS}
    issues = {issue.instance_id: issue for issue in load_clariti(workbook)}

    dropped: Counter = Counter()
    pending: list[tuple[str, str, dict[str, int], str]] = []  # (condition, instance, model outcomes, statement)
    for cond, (frame, chosen) in outcomes.items():
        for row in frame.to_dict("records"):
            iid = row["instance_id"]
            issue = issues.get(iid)
            if issue is None:
                dropped["not_in_workbook"] += 1
            elif presence == "workbook" and issue.spans is None:
                dropped["unannotated_in_workbook"] += 1
            elif presence == "annotator" and not str(row["problem_statement"]).strip():
                dropped["empty_problem_statement"] += 1
            else:
                pending.append((cond, iid, {m: int(str(row[m]).strip()) for m in chosen}, row["problem_statement"]))

    if presence == "annotator":
        found = _annotate_statements([p[3] for p in pending])
    else:
        found = [set(issues[iid].present_categories()) for _, iid, _, _ in pending]

    rows = []
    for (cond, iid, labels, _), cats in zip(pending, found):
        if cats is None:
            dropped["annotator_failed"] += 1
            continue
        vector = _presence(cats)
        if presence == "workbook" and cond != "fully-specified":
            vector.update(dict.fromkeys(removed, 0))
        for model, label in labels.items():
            rows.append({"variant_id": f"{iid}__{cond}", "instance_id": iid, "condition": cond, "agent_model": model,
                         "repo": issues[iid].repo, **vector, LABEL: label})
    table = _table(rows)
    table.attrs.update({
        "source": f"Ambig-SWE agent outcomes (presence: {presence})",
        "dropped": dict(dropped),
        "dropped_unit": "(instance, condition) pairs",
    })
    return table


# ---- SWE-bench harness results ---------------------------------------------------------------------------------------


def _report_ids(path: Path) -> tuple[list[str], list[str] | None]:
    """(resolved ids, submitted ids or None) from any of the accepted report shapes."""
    from tasks.store import read_text_utf8

    if not path.is_file():
        raise InputError(path, "file not found (set shap.harness.resolved to the harness report JSON)")
    try:
        data = json.loads(read_text_utf8(path))
    except json.JSONDecodeError as err:
        raise InputError(path, f"malformed JSON ({err.msg} at line {err.lineno})") from None
    submitted = None
    if isinstance(data, list):
        resolved, field = data, "(top-level list)"
    elif isinstance(data, dict) and ("resolved_ids" in data or isinstance(data.get("resolved"), list)):
        field = "resolved_ids" if "resolved_ids" in data else "resolved"
        resolved = data[field]
        if "submitted_ids" in data:
            submitted = data["submitted_ids"]
            if not isinstance(submitted, list) or not all(isinstance(i, str) for i in submitted):
                raise InputError(path, "expected a list of id strings", field="submitted_ids")
    elif isinstance(data, dict) and data and all(isinstance(v, dict) and "resolved" in v for v in data.values()):
        field = "resolved"
        resolved = [k for k, v in data.items() if v["resolved"] is True]
        submitted = list(data)
    else:
        raise InputError(path, "expected a list of resolved ids or a harness report with 'resolved_ids' "
                               "(or 'resolved')", field="resolved_ids")
    if not isinstance(resolved, list) or not all(isinstance(i, str) for i in resolved):
        raise InputError(path, "expected a list of id strings", field=field)
    return resolved, submitted


def harness_runs(cases_jsonl: Path, resolved_json: Path, agent_model: str) -> pd.DataFrame:
    """construct@swe variants labelled by a SWE-bench harness report; see the module docstring for id matching."""
    from tasks import store
    from tasks.records import Case

    cases_jsonl, resolved_json = Path(cases_jsonl), Path(resolved_json)
    if not cases_jsonl.is_file():
        raise InputError(cases_jsonl, "file not found (run construct@swe first)")
    cases = store.read_jsonl(cases_jsonl, Case)
    resolved, submitted = _report_ids(resolved_json)
    case_ids = {c.case_id for c in cases}
    source_ids = {c.metadata.source_id for c in cases}
    mentioned = set(resolved) | set(submitted or [])
    if not mentioned or mentioned & case_ids:
        matched_on = "case_id"
    elif mentioned & source_ids:
        matched_on = "source_id"
        per_source = Counter(c.metadata.source_id for c in cases)
        several = sorted(s for s, n in per_source.items() if n > 1 and (submitted is None or s in submitted))
        if several:
            raise InputError(resolved_json, f"ids are instance ids, but {cases_jsonl.name} has several variants of "
                                            f"{len(several)} instances (e.g. {several[0]!r}), so a result cannot be "
                                            "assigned to one variant; report case ids instead", field="resolved_ids")
    else:
        raise InputError(resolved_json, f"none of the {len(mentioned)} ids matches a case id or an instance id in "
                                        f"{cases_jsonl}", field="resolved_ids")

    def key(case: Case) -> str:
        return case.case_id if matched_on == "case_id" else case.metadata.source_id

    known = {key(c) for c in cases}
    winners = set(resolved)
    evaluated = set(submitted) if submitted is not None else None
    rows, dropped = [], Counter()
    for case in cases:
        if evaluated is not None and key(case) not in evaluated:
            dropped["not_submitted"] += 1
            continue
        rows.append({"variant_id": case.case_id, "instance_id": case.metadata.source_id, "condition": "harness",
                     "agent_model": agent_model, "repo": str(case.extra.get("repo", "") or ""),
                     **_presence(set(case.visible_categories)), LABEL: int(key(case) in winners)})
    table = _table(rows)
    table.attrs.update({
        "source": "SWE-bench harness results for construct@swe variants",
        "matched_on": matched_on,
        "dropped": dict(dropped),
        "unmatched_resolved_ids": len(winners - known),
    })
    return table


# ---- validation ------------------------------------------------------------------------------------------------------

_CATEGORY_HINT = re.compile(
    r"(^cat(egory)?_|_info(rmation)?$|_steps?$|_behaviou?r$|_details?$|_refs?$|_references?$|_env(ironment)?$|"
    r"^(error|reproduction|expected|implementation|external|version)(_|$))"
)


def _looks_like_category(column: str, values: pd.Series) -> bool:
    name = re.sub(r"[^a-z0-9]+", "_", str(column).lower()).strip("_")
    try:
        Category.parse(str(column))
        return True
    except ValueError:
        pass
    return bool(_CATEGORY_HINT.search(name)) or _binary(values)[1] is None


def _binary(values: pd.Series) -> tuple[pd.Series, int | None]:
    """(the values as int64 0/1, position of the first value that is not 0/1 or None when all are)."""
    ok_map = {0: 0, 1: 1, "0": 0, "1": 1}  # True/False hash as 1/0
    converted = []
    for pos, value in enumerate(values.tolist()):
        if isinstance(value, str):
            value = value.strip()
        elif isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        elif isinstance(value, np.integer | np.bool_):
            value = value.item()
        try:
            converted.append(ok_map[value])
        except (KeyError, TypeError):
            return values, pos
    return pd.Series(converted, index=values.index, dtype="int64"), None


def _where(df: pd.DataFrame, pos: int) -> str:
    vid = df["variant_id"].iloc[pos] if "variant_id" in df.columns else None
    return f"row {pos + 1}" + (f" ({vid})" if isinstance(vid, str) and vid else "")


def validate_runs(df: pd.DataFrame, path_for_errors: Path | str, min_per_class: int = 10) -> pd.DataFrame:
    """The checked, typed table (exactly COLUMNS); raises InputError naming the file and field on the first problem."""
    path = path_for_errors
    if not isinstance(df, pd.DataFrame):
        raise InputError(path, f"expected a table, got {type(df).__name__}")
    for column in COLUMNS:
        if column not in df.columns:
            raise InputError(path, "missing column", field=column)
    for column in df.columns:
        if column in COLUMNS:
            continue
        if _looks_like_category(column, df[column]):
            raise InputError(path, f"unknown category column (known categories: {', '.join(FEATURES)})",
                             field=str(column))
        raise InputError(path, f"unexpected column (a runs table has exactly: {', '.join(COLUMNS)})", field=str(column))
    if df.columns.duplicated().any():
        raise InputError(path, "duplicate column", field=str(df.columns[df.columns.duplicated()][0]))
    if df.empty:
        raise InputError(path, "no runs", field=LABEL)

    out = df.loc[:, list(COLUMNS)].copy()
    for column in BINARY_COLUMNS:
        converted, bad = _binary(df[column])
        if bad is not None:
            raise InputError(path, f"non-binary value {df[column].iloc[bad]!r} (expected 0 or 1)",
                             record=_where(df, bad), field=column)
        out[column] = converted
    for column in TEXT_COLUMNS:
        values = df[column]
        if column in ID_COLUMNS:
            blank = values.isna() | ~values.map(lambda v: isinstance(v, str) and bool(v.strip()))
            if blank.any():
                raise InputError(path, "empty id", record=f"row {int(np.flatnonzero(blank)[0]) + 1}", field=column)
        out[column] = values.astype(object).where(values.notna(), "").astype(str)

    dup = out.duplicated(subset=list(KEY))
    if dup.any():
        pos = int(np.flatnonzero(dup)[0])
        shown = ", ".join(f"{k}={out[k].iloc[pos]!r}" for k in KEY)
        raise InputError(path, f"duplicate run ({shown})", record=f"row {pos + 1}", field=",".join(KEY))

    positives = int(out[LABEL].sum())
    negatives = int(len(out) - positives)
    if positives == 0 or negatives == 0:
        only = 1 if negatives == 0 else 0
        raise InputError(path, f"only one class (every run has resolved={only}); the classifier needs both",
                         field=LABEL)
    if min(positives, negatives) < min_per_class:
        raise InputError(path, f"{positives} resolved and {negatives} unresolved runs; need at least "
                               f"{min_per_class} of each (shap.min_per_class)", field=LABEL)
    out = out.reset_index(drop=True)
    out.attrs.update(df.attrs)
    return out


def gx_expectations(min_per_class: int = 10) -> list[dict[str, Any]]:
    """The runs-table checks as GX expectations (flat dicts: ``type`` plus the expectation's keyword arguments)."""
    return [
        {"type": "expect_table_columns_to_match_set", "column_set": list(COLUMNS), "exact_match": True},
        {"type": "expect_table_row_count_to_be_between", "min_value": 2 * min_per_class},
        *[{"type": "expect_column_values_to_not_be_null", "column": c} for c in COLUMNS],
        *[{"type": "expect_column_values_to_be_in_set", "column": c, "value_set": [0, 1]} for c in BINARY_COLUMNS],
        *[{"type": "expect_column_value_lengths_to_be_between", "column": c, "min_value": 1} for c in ID_COLUMNS],
        {"type": "expect_compound_columns_to_be_unique", "column_list": list(KEY)},
        {"type": "expect_column_distinct_values_to_equal_set", "column": LABEL, "value_set": [0, 1]},
        {"type": "expect_column_sum_to_be_between", "column": LABEL, "min_value": min_per_class},
    ]


def runs_table_for_gx(df: pd.DataFrame, min_per_class: int = 10) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """(the table as GX should see it, the expectations for ``tasks/validation/suites.py``).

    The negatives floor is checked on a derived column ``unresolved`` (1 - resolved), since GX has no
    "sum at most n - k" expectation without knowing n.
    """
    frame = df.loc[:, [c for c in COLUMNS if c in df.columns]].copy()
    if LABEL in frame.columns:
        frame["unresolved"] = 1 - pd.to_numeric(frame[LABEL], errors="coerce")
    expectations = gx_expectations(min_per_class)
    expectations[0] = {**expectations[0], "column_set": [*COLUMNS, "unresolved"]}
    expectations.append({"type": "expect_column_sum_to_be_between", "column": "unresolved", "min_value": min_per_class})
    return frame, expectations


def gx_expectation_objects(expectations: list[dict[str, Any]]) -> list[Any]:
    """Turn the flat dicts into ``great_expectations.expectations`` objects (imports GX, ~2-5 s)."""
    import great_expectations as gx

    out = []
    for spec in expectations:
        kwargs = {k: v for k, v in spec.items() if k != "type"}
        cls_name = "".join(part.capitalize() for part in spec["type"].split("_"))
        out.append(getattr(gx.expectations, cls_name)(**kwargs))
    return out
