"""The sanity ladder: the checks themselves, and the default run's real outputs (construct@optimization's shape,
evaluate@optimization and evaluate@analytics metrics as committed with dvc.lock)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tasks.evaluation.sanity import SanitySettings, violations

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"oracle": "oracle", "ready_now": "ready_now", "a": "freeqa", "b": "mc_d"}


def _row(exact: float, wss: float, premature: float = 1.0, questions: float = 3.0) -> dict:
    return {"AllSlotExactRestoreRate": exact, "CoreExactRestoreRate": exact, "WeightedSlotScore_macro": wss,
            "AtomicQuestionsPerRun": questions, "AverageTurns": questions + 1, "SilentAssumptionsPerRun": 0.0,
            "PrematureStopRate": premature, "ReadyRate": 1.0, "CoreEligibleRunCount": 10, "RunCount": 10}


def _ladder(**over) -> dict:
    """A summary in the evaluation's layout: ranked ``rows`` and ``reference_rows``."""
    rows = {"open::a": _row(0.2, 0.4, 0.8), "mc_d::b": _row(0.3, 0.5, 0.7)}
    reference = {"open::oracle": _row(1.0, 1.0, 0.0, 2.0), "open::ready_now": _row(0.0, 0.0, 1.0, 0.0)}
    for name, row in over.items():
        (reference if name in reference else rows)[name] = row
    return {"rows": rows, "reference_rows": reference}


def _violations(summary: dict, kinds=KINDS, settings=None) -> list[str]:
    return violations(summary["rows"], summary["reference_rows"], kinds, settings or SanitySettings())


def test_a_ladder_that_separates_methods_passes():
    assert _violations(_ladder()) == []


@pytest.mark.parametrize(("row", "value", "needle"), [
    ("open::oracle", _row(0.9, 0.97, 0.1, 2.0), "All-Slot Exact 0.900 < 0.95"),
    ("open::ready_now", _row(0.0, 0.0, 0.5, 0.0), "premature-stop rate 0.500"),
    ("open::ready_now", _row(0.1, 0.1, 1.0, 0.0), "without a single question"),
    ("open::a", _row(0.0, 0.0, 1.0), "not strictly between"),
    ("open::a", _row(1.0, 1.0, 0.0), "not strictly between"),
    ("open::a", _row(0.3, 0.5, 0.7), "identical rows"),
])
def test_each_broken_rung_is_named(row, value, needle):
    found = _violations(_ladder(**{row: value}))
    assert any(needle in line for line in found), found


def test_an_explained_tie_is_allowed_and_other_reference_rows_are_not_compared():
    summary = _ladder(**{"open::a": _row(0.3, 0.5, 0.7)})
    assert _violations(summary, settings=SanitySettings(allowed_ties=[("open::a", "mc_d::b")])) == []
    summary["reference_rows"]["open::peek"] = _row(1.0, 1.0, 0.0)  # another privileged row may reach the ceiling
    assert _violations(summary, {**KINDS, "peek": "oracle_like"},
                       SanitySettings(allowed_ties=[("open::a", "mc_d::b")])) == []


def test_a_row_at_the_floor_passes_only_when_listed_and_never_above_the_ceiling():
    summary = _ladder(**{"open::a": _row(0.0, 0.0, 1.0)})
    assert any("not strictly between" in line for line in _violations(summary))
    assert _violations(summary, settings=SanitySettings(at_floor=["open::a"])) == []
    summary["rows"]["open::a"] = _row(1.0, 1.0, 0.0)
    assert any("not strictly between" in line for line in _violations(summary,
                                                                       settings=SanitySettings(at_floor=["open::a"])))


def test_without_both_reference_methods_the_ladder_says_so():
    summary = _ladder()
    del summary["reference_rows"]["open::oracle"]
    assert _violations(summary) == ["the ladder needs both reference methods; missing: oracle"]


def test_the_flow_fails_the_stage_on_a_broken_ladder_and_warns_when_asked(capsys):
    from tasks.errors import GateError
    from tasks.evaluation.episode_kind import check_ladder
    from tasks.evaluation.runs import EvalSettings

    methods = [{"name": "oracle", "protocols": ["open"]}, {"name": "ready_now", "protocols": ["open"]},
               {"name": "a", "method": "freeqa", "protocols": ["open"]},
               {"name": "b", "method": "mc_d", "protocols": ["mc_d"]}]
    broken = _ladder(**{"open::a": _row(0.3, 0.5, 0.7)})
    with pytest.raises(GateError, match="identical rows"):
        check_ladder(broken, EvalSettings(methods=methods), artifact="data/eval/x/summary.json")
    found = check_ladder(broken, EvalSettings(methods=methods, sanity={"check": "warn"}), artifact="x")
    assert found and "identical rows" in capsys.readouterr().out
    assert check_ladder(broken, EvalSettings(methods=methods[2:]), artifact="x") == []  # no reference rows: no check


# ---- the default run's real outputs --------------------------------------------------------------------------------


def _params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def _kinds(domain: str) -> dict[str, str]:
    return {m["name"]: m.get("method", m["name"]) for m in _params()["evaluate"][domain]["methods"]}


@pytest.mark.parametrize("domain", ["optimization", "analytics"])
def test_the_default_evaluation_passes_the_ladder(domain):
    """The committed stage metrics are the default run's (dvc.lock pins them to the code and params)."""
    metrics = json.loads((ROOT / "data" / "metrics" / "stages" / "evaluate" / f"{domain}.json").read_text())
    kinds = _kinds(domain)
    assert {"oracle", "ready_now"} <= set(kinds.values())
    played = {r.split("::")[1] for r in {**metrics["rows"], **metrics["reference_rows"]}}
    assert played == set(kinds), "the metrics are not from the default methods list"
    assert {r.split("::")[1] for r in metrics["reference_rows"]} == {"oracle", "ready_now"}
    sanity = SanitySettings(**_params()["evaluate"][domain].get("sanity", {}))
    assert violations(metrics["rows"], metrics["reference_rows"], kinds, sanity) == []
    assert metrics["cases"] >= 20 if domain == "optimization" else metrics["cases"] > 0


def test_the_default_optimisation_cases_have_or_clarifys_shape():
    """construct@optimization's rules on the default samples and params: 1-3 slots per case, about 1.8 on
    average, every severity present, at least 20 cases (or-clarify.md: 178 slots over 100 cases, 75/83/20)."""
    from tasks.domains.optimization import DOMAIN, load_problems
    from tasks.domains.units import SlotRequest
    from tasks.llm.client import LLMClient
    from tasks.params import OptimizationConstructParams
    from tasks.roles.config import RolesParams

    cfg = OptimizationConstructParams(**_params()["construct"]["optimization"])
    counts, requests = [], []
    for problem in load_problems(cfg, ROOT):
        units = DOMAIN.decompose(problem)
        eligible = {d.unit_id for d in DOMAIN.hide_candidates(units) if d.eligible}
        [hidden] = DOMAIN.choose_hidden(problem.problem_id, [u for u in units if u.id in eligible], cfg, units=units)
        counts.append(len(hidden))
        requests += [SlotRequest(problem_id=problem.problem_id, unit=u, units=units, visible_brief="")
                     for u in units if u.id in hidden]
    rubrics = DOMAIN.annotate_many(requests, RolesParams(), LLMClient())  # the slot_annotator role, local backend
    severities = Counter(r.severity for r in rubrics)
    assert len(counts) >= 20
    assert min(counts) >= 1 and max(counts) <= 3
    assert 1.5 <= sum(counts) / len(counts) <= 2.1, counts
    assert all(severities[s] > 0 for s in ("P0", "P1", "P2")), severities
