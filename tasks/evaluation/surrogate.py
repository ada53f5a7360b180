"""The ``shap`` stage's success classifier, persisted, as a *surrogate* for SWE-bench resolution.

``save_surrogate`` (called by flows/shap_stage.py) writes the refit-on-all-rows LightGBM booster as text
(``model.txt``, ``Booster.model_to_string``) and what prediction needs next to it (``model.json``): the feature
names in design-matrix order and the **control profiles**.

Controls. The design matrix (``tasks.infovalue.model.design_matrix``) holds the six category features and, for
each control (``agent_model``, ``repo``, ``condition``) that varies in the runs table, one 0/1 column per level. A
clarified issue has no agent model or condition of its own, so a prediction is the **average over the runs
table's empirical joint distribution of control levels** (each distinct combination weighted by its share of
rows): P(resolved | categories) = Σ_profile share · P(resolved | categories, profile). ``fixed`` controls (e.g.
``{"condition": "interaction"}``) restrict that average to the profiles with those levels. When no control varies
there is one profile with share 1.

The output is never a resolve rate: every number it produces is labelled :data:`LABEL`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tasks.errors import InputError

MODEL_FILE = "model.txt"
META_FILE = "model.json"
LABEL = ("surrogate: the shap stage's LightGBM success classifier applied to the visible + recovered categories "
         "(not a measured resolve rate)")

METRIC = "predicted_resolution"


def metric_key(trained_on: str | None) -> str:
    """The stage metrics' name for the surrogate's predicted resolution, naming its source (what ``dvc metrics
    show`` prints): ``..._surrogate_planted`` when the classifier was fit on simulated outcomes with planted effects
    (the shap stage's default), ``..._surrogate`` when fit on real outcomes (Ambig-SWE runs, harness results)."""
    planted = trained_on is None or "planted" in trained_on or "simulated" in trained_on
    return f"{METRIC}_surrogate_planted" if planted else f"{METRIC}_surrogate"


def base_metric(key: str) -> str:
    """Inverse of :func:`metric_key` (any other key unchanged): the summary's name, where its interval is kept."""
    return METRIC if key.startswith(f"{METRIC}_surrogate") else key


def control_profiles(table: Any, feature_names: Sequence[str]) -> list[dict[str, Any]]:
    """Distinct combinations of the varying controls in ``table`` with their share of rows, most common first."""
    from tasks.infovalue.model import varying_controls

    controls = varying_controls(table)
    if not controls:
        return [{"controls": {}, "share": 1.0}]
    combos = Counter(tuple(str(v) for v in row) for row in table[controls].astype(str).itertuples(index=False))
    total = sum(combos.values())
    rows = [{"controls": dict(zip(controls, combo)), "share": n / total} for combo, n in combos.items()]
    return sorted(rows, key=lambda r: (-r["share"], json.dumps(r["controls"], sort_keys=True)))


def save_surrogate(fit: Any, table: Any, folder: Path, *, source: str) -> None:
    """``model.txt`` + ``model.json`` for :func:`load_surrogate`; byte-stable for the same fit."""
    from tasks.infovalue import FEATURES
    from tasks.infovalue.model import design_matrix
    from tasks.store import atomic_write_json, atomic_write_text

    _, names = design_matrix(table)
    if list(names) != list(fit.feature_names):
        raise ValueError("the table's design matrix does not match the fitted model's features")
    # the dummy column of each (control, level), named by the same rule and in the same order as the design matrix
    from tasks.infovalue.model import _dummy_name, varying_controls

    taken = set(FEATURES)
    levels = {control: {level: _dummy_name(control, level, taken) for level in sorted(set(table[control].astype(str)))}
              for control in varying_controls(table)}
    atomic_write_text(Path(folder) / MODEL_FILE, fit.model.model_to_string())
    atomic_write_json(Path(folder) / META_FILE, {
        "format": "lightgbm Booster.model_to_string (model.txt)",
        "source": source,
        "categories": list(FEATURES),
        "feature_names": list(fit.feature_names),
        "control_columns": levels,
        "profiles": control_profiles(table, fit.feature_names),
        "rows": len(table),
        "prediction": "mean over the control profiles, weighted by share (see tasks/evaluation/surrogate.py)",
    })


@dataclass(frozen=True)
class Surrogate:
    booster: Any
    feature_names: list[str]
    categories: list[str]
    control_columns: dict[str, dict[str, str]]
    profiles: list[dict[str, Any]]
    source: str
    path: str

    def _profiles(self, fixed: Mapping[str, str]) -> list[tuple[dict[str, int], float]]:
        chosen = [p for p in self.profiles if all(p["controls"].get(k) == str(v) for k, v in fixed.items())]
        total = sum(p["share"] for p in chosen)
        out = []
        for p in chosen:
            columns = {self.control_columns[c][lvl]: 1 for c, lvl in p["controls"].items()}
            out.append((columns, p["share"] / total))
        return out

    def check_fixed(self, fixed: Mapping[str, str], path: str = "params.yaml",
                    field: str = "evaluate.swe.surrogate_controls") -> None:
        """InputError unless every fixed control varies in the runs table and has a known level."""
        for control, level in fixed.items():
            if control not in self.control_columns:
                raise InputError(path, f"control {control!r} does not vary in the shap runs table (varying: "
                                       f"{', '.join(self.control_columns) or 'none'})", field=f"{field}.{control}")
            if str(level) not in self.control_columns[control]:
                raise InputError(path, f"unknown level {level!r} (known: "
                                       f"{', '.join(sorted(self.control_columns[control]))})",
                                 field=f"{field}.{control}")
        if not self._profiles(fixed):
            raise InputError(path, "no runs have this combination of control levels", field=field)

    def predict(self, present: Sequence[Iterable[str]], fixed: Mapping[str, str] | None = None) -> np.ndarray:
        """P(resolved) for each set of present category keys, averaged over the control profiles."""
        import pandas as pd

        fixed = dict(fixed or {})
        if not present:
            return np.zeros(0)
        base = np.array([[int(c in set(p)) for c in self.categories] for p in present], dtype=np.int64)
        out = np.zeros(len(base))
        for columns, share in self._profiles(fixed):
            frame = pd.DataFrame(0, index=range(len(base)), columns=self.feature_names, dtype=np.int64)
            frame[self.categories] = base
            for name, value in columns.items():
                frame[name] = value
            out += share * np.asarray(self.booster.predict(frame[self.feature_names]), dtype=np.float64)
        return out


def load_surrogate(path: Path) -> Surrogate:
    """``model.txt`` (and ``model.json`` next to it) as written by :func:`save_surrogate`."""
    import lightgbm as lgb

    path = Path(path)
    meta_path = path.parent / META_FILE
    if not path.is_file():
        raise InputError(path, "file not found (run the shap stage, which writes it)")
    if not meta_path.is_file():
        raise InputError(meta_path, "file not found (written by the shap stage next to model.txt)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        booster = lgb.Booster(model_str=path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, lgb.basic.LightGBMError) as err:
        raise InputError(path, f"cannot read the surrogate model: {str(err).splitlines()[0]}") from None
    for field in ("feature_names", "categories", "profiles", "control_columns"):
        if field not in meta:
            raise InputError(meta_path, "missing field", field=field)
    if list(booster.feature_name()) != list(meta["feature_names"]):
        raise InputError(meta_path, "feature names differ from the booster's", field="feature_names")
    return Surrogate(booster=booster, feature_names=list(meta["feature_names"]), categories=list(meta["categories"]),
                     control_columns=meta["control_columns"], profiles=meta["profiles"],
                     source=str(meta.get("source", "")), path=str(path))
