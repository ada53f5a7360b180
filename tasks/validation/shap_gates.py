"""Gates on the shap stage's surrogate and tables in the staging folder (``data/shap/``), before it is published:
``model.txt`` loads with LightGBM and predicts on the features ``model.json`` names; ``model.json`` and
``calibration.json`` have their keys and ranges; ``shap_values.csv`` has one finite row per run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tasks.errors import GateError


class SurrogateProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    controls: dict[str, str]
    share: float = Field(ge=0.0, le=1.0)


class SurrogateMeta(BaseModel):
    """``model.json`` as :func:`tasks.evaluation.surrogate.save_surrogate` writes it."""

    model_config = ConfigDict(extra="allow")

    format: str
    source: str = Field(min_length=1)
    categories: list[str]
    feature_names: list[str] = Field(min_length=1)
    control_columns: dict[str, dict[str, str]]
    profiles: list[SurrogateProfile] = Field(min_length=1)
    rows: int = Field(ge=1)


class CalibrationRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bin: int = Field(ge=0)
    lower: float = Field(ge=0.0, le=1.0)
    upper: float = Field(ge=0.0, le=1.0)
    mean_predicted: float = Field(ge=0.0, le=1.0)
    observed_rate: float = Field(ge=0.0, le=1.0)
    count: int = Field(ge=1)


def read_json(path: Path, artifact: str) -> Any:
    if not Path(path).is_file():
        raise GateError(artifact, "file missing")
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise GateError(artifact, f"not valid JSON: {err}") from None


def validated(model: type[BaseModel], data: Any, artifact: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(document)"
        raise GateError(artifact, f"{where}: {first['msg']}") from None


def gate_surrogate(folder: Path, *, rows: int, prefix: str = "data/shap") -> SurrogateMeta:
    """``model.json`` (keys, the category features, shares, ``rows`` = the runs table's) and ``model.txt`` (loads,
    expects exactly ``feature_names``, predicts a probability)."""
    from tasks.infovalue import FEATURES

    folder = Path(folder)
    meta_artifact, model_artifact = f"{prefix}/model.json", f"{prefix}/model.txt"
    meta = validated(SurrogateMeta, read_json(folder / "model.json", meta_artifact), meta_artifact)
    if meta.categories != list(FEATURES):
        raise GateError(meta_artifact, f"categories are {meta.categories}, expected {list(FEATURES)}")
    if missing := [c for c in FEATURES if c not in meta.feature_names]:
        raise GateError(meta_artifact, f"feature_names lack the categories {missing}")
    if meta.rows != rows:
        raise GateError(meta_artifact, f"rows is {meta.rows} but the runs table has {rows}")
    if abs(sum(p.share for p in meta.profiles) - 1.0) > 1e-6:
        raise GateError(meta_artifact, f"profile shares sum to {sum(p.share for p in meta.profiles):.6f}, not 1")
    _check_booster(folder / "model.txt", meta.feature_names, model_artifact)
    return meta


def _check_booster(path: Path, feature_names: list[str], artifact: str) -> None:
    import lightgbm
    import numpy as np

    if not path.is_file():
        raise GateError(artifact, "file missing")
    _check_model_text(path.read_text(encoding="utf-8", errors="replace"), artifact)
    try:
        booster = lightgbm.Booster(model_file=str(path))
        predicted = np.asarray(booster.predict(np.zeros((2, len(feature_names)))), dtype=np.float64)
    except (lightgbm.basic.LightGBMError, ValueError) as err:  # a garbled file, or a feature-count mismatch
        raise GateError(artifact, f"does not load or predict with lightgbm: {str(err).splitlines()[0][:200]}") from None
    if booster.num_feature() != len(feature_names) or booster.feature_name() != feature_names:
        raise GateError(artifact, f"expects {booster.num_feature()} features {booster.feature_name()[:4]}..., "
                                  f"model.json names {len(feature_names)}")
    if predicted.shape != (2,) or not np.all(np.isfinite(predicted)) or not np.all((predicted >= 0) & (predicted <= 1)):
        raise GateError(artifact, f"predictions are not probabilities: {predicted.tolist()}")


def _check_model_text(text: str, artifact: str) -> None:
    """The layout ``Booster.model_to_string`` writes, checked as text first: LightGBM aborts the whole process (no
    exception) on some truncated files."""
    sizes = re.search(r"^tree_sizes=([0-9 ]*)$", text, re.MULTILINE)
    trees = len(re.findall(r"^Tree=\d+$", text, re.MULTILINE))
    if not text.startswith("tree\n") or sizes is None or "\nend of trees\n" not in text \
            or "end of parameters" not in text:
        raise GateError(artifact, "not a complete LightGBM model file (truncated?)")
    if len(sizes.group(1).split()) != trees:
        raise GateError(artifact, f"tree_sizes lists {len(sizes.group(1).split())} trees, the file holds {trees}")


def calibration_frame(folder: Path, artifact: str):
    import pandas as pd

    data = read_json(Path(folder) / "calibration.json", artifact)
    if not isinstance(data, list):
        raise GateError(artifact, f"expected a list of bins, found {type(data).__name__}")
    rows = [validated(CalibrationRow, row, f"{artifact}: bin {n}").model_dump() for n, row in enumerate(data)]
    return pd.DataFrame(rows, columns=list(CalibrationRow.model_fields))


def shap_values_frame(folder: Path, artifact: str):
    """``shap_values.csv`` plus ``row_finite`` (every SHAP value of the row a finite number)."""
    import numpy as np
    import pandas as pd

    path = Path(folder) / "shap_values.csv"
    if not path.is_file():
        raise GateError(artifact, "file missing")
    try:
        frame = pd.read_csv(path)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as err:
        raise GateError(artifact, f"not a readable CSV: {str(err).splitlines()[0][:200]}") from None
    shap = frame[[c for c in frame.columns if str(c).startswith("shap_")]].apply(pd.to_numeric, errors="coerce")
    frame["row_finite"] = np.isfinite(shap.to_numpy(dtype=np.float64)).all(axis=1)
    return frame


def gate_shap_tables(folder: Path, *, rows: int, feature_names: list[str] | None = None,
                     results_dir: Path | None = None, prefix: str = "data/shap") -> None:
    """``calibration.json`` and ``shap_values.csv`` through their GX suites; the SHAP columns are those of
    ``feature_names`` (default: ``model.json``'s)."""
    from tasks.validation.gate import gate

    folder = Path(folder)
    if feature_names is None:
        feature_names = read_json(folder / "model.json", f"{prefix}/model.json").get("feature_names", [])
    artifact = f"{prefix}/calibration.json"
    gate("shap_calibration", calibration_frame(folder, artifact), artifact=artifact, results_dir=results_dir)
    artifact = f"{prefix}/shap_values.csv"
    columns = ["variant_id", "agent_model", *(f"shap_{n}" for n in feature_names), "row_finite"]
    gate("shap_values", shap_values_frame(folder, artifact), artifact=artifact, results_dir=results_dir,
         columns=columns, rows=rows)
