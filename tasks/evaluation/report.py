"""``report.md`` of an OR-Clarify evaluation (or-clarify.md §9.1) and its Prefect markdown artifact.

The header names the run settings and the backend of every role, so each number in the table names what produced
it. One table row per ``protocol::method``; reference rows (an oracle, a floor) sit in their own block below the
methods table, never among them; the extensions (answer-gap alignment, cost-aware stop) are set next to
the published InterOPT variant of the same protocol.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from tasks.evaluation.cost_table import markdown_table
from tasks.evaluation.metrics import sort_keys
from tasks.text import fmt

TITLE = "# InterOPT Evaluation Report"
EVAL_ROLE = re.compile(r"^(or_|slot_hit_judge$|question_detector$)")
"""The roles an OR-Clarify evaluation calls; the local-backend note is about these."""
EXTENSIONS = {
    "interopt_aligned": "ledger gaps become RESOLVED only when the user's answer settles them (answer-gap alignment)",
    "interopt_cost_aware": "asks a gap only while its risk weight x the chance the next reply settles it (from the "
                           "episode's judged replies) exceeds the question cost (cost-aware stop)",
}
PUBLISHED = "interopt"
LOCAL_NOTE = ("**These are local-backend numbers, not the paper's.** At least one evaluation role ran on its "
              "deterministic local backend (see the roles table); the published figures come from DeepSeek V4 Pro "
              "for every role.")


def _num(value: Any, digits: int = 3) -> str:
    return fmt(value, digits)


def _with_ci(s: Mapping[str, Any], name: str, digits: int = 3) -> str:
    point = s.get(name)
    if point is None:
        return "–"
    bounds = (s.get("CI95") or {}).get(name)
    if not bounds:
        return _num(point, digits)
    return f"{_num(point, digits)} [{_num(bounds[0], digits)}, {_num(bounds[1], digits)}]"


def _settings_lines(settings: Mapping[str, Any]) -> list[str]:
    named = [("cases", "Cases"), ("case_count", "Case count"), ("repeats", "Repeats per case (K)"),
             ("max_turns", "Turn limit (T_max)"), ("seed", "Seed")]
    lines = [f"- {label}: `{settings[key]}`" for key, label in named if key in settings]
    for key in sorted(settings):
        value = settings[key]
        if key in dict(named) or key == "roles" or isinstance(value, dict | list):
            continue
        lines.append(f"- {key}: `{value}`")
    methods = settings.get("methods")
    if methods:
        names = [m.get("name", str(m)) if isinstance(m, dict) else str(m) for m in methods]
        lines.append(f"- Methods: {', '.join(f'`{n}`' for n in names)}")
    return lines


def _split_lines(split: Mapping[str, Any] | None) -> list[str]:
    """Which split each row played (policy rows: held out only) and what each trained policy was trained on."""
    if not split:
        return []
    counts = ", ".join(f"{v['cases']} {k} ({v['source_ids']} source ids)" for k, v in split["cases"].items())
    lines = [f"- Cases by split: {counts}; policy rows play the held-out cases (and cases without a split) only"]
    for name, row in split["rows"].items():
        if "trained_on_source_ids" in row:
            lines.append(f"- `{name}`: {row['cases']} {row['split']} cases from {row['source_ids']} source ids; "
                         f"trained on {row['trained_on_source_ids']} source ids, overlap {row['overlap']}")
    return lines


def _roles_lines(roles: Mapping[str, Mapping[str, Any]]) -> list[str]:
    rows = []
    for name, info in roles.items():
        if info.get("backend") == "local":
            rows.append([name, "local", "–", "–", info.get("implementation", "")])
        else:
            limits = (info.get("max_tokens", "–"), info.get("max_regenerations", "–"))
            details = f"max_tokens {limits[0]}, regenerations {limits[1]}"
            model = f"`{info.get('model', '')}`"
            rows.append([name, str(info.get("backend")), model, _num(info.get("temperature"), 1), details])
    return markdown_table(["role", "backend", "model", "temperature", "details"], rows)


MAIN_HEADER = ["protocol::method", "runs", "all-slot exact [95% CI]", "core exact [95% CI] (eligible runs)",
               "WSS macro / micro", "avg Q [95% CI]", "avg turns", "ready rate", "premature stop [95% CI]",
               "silent/run [95% CI]", "protocol fail", "D rate", "forced choice", "selector fallback/run",
               "tokens/run", "est. cost (USD)"]
REFERENCE_TITLE = "Reference rows (not ranked)"
REFERENCE_NOTE = ("Reference rows read what a method may not (privileged: the hidden slots) or nothing at all (a "
                  "bound): they bracket the methods above and are never ranked with them.")


def _main_cells(key: str, s: Mapping[str, Any]) -> list[str]:
    return [
        f"`{key}`", _num(s["RunCount"]), _with_ci(s, "AllSlotExactRestoreRate"),
        f"{_with_ci(s, 'CoreExactRestoreRate')} ({s['CoreEligibleRunCount']})",
        f"{_num(s['WeightedSlotScore_macro'])} / {_num(s['WeightedSlotScore_micro'])}",
        _with_ci(s, "AtomicQuestionsPerRun", 2), _num(s["AverageTurns"], 2), _num(s["ReadyRate"]),
        _with_ci(s, "PrematureStopRate"), _with_ci(s, "SilentAssumptionsPerRun"), _num(s["ProtocolFailureRate"]),
        _num(s.get("DSelectionRate")), _num(s.get("MCForcedChoiceRate")), _num(s.get("SelectorFallbacksPerRun"), 2),
        _num(s.get("TokensPerRun"), 0), _num(s.get("EstimatedCostUSD"), 4),
    ]


def _main_table(rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return markdown_table(MAIN_HEADER, [_main_cells(key, rows[key]) for key in sort_keys(list(rows))])


def _reference_table(reference_rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    header = [MAIN_HEADER[0], "reference", "reads", *MAIN_HEADER[1:]]
    rows = []
    for key in sort_keys(list(reference_rows)):
        s = reference_rows[key]
        cells = _main_cells(key, s)
        rows.append([cells[0], s["reference"]["kind"], s["reference"]["reads"], *cells[1:]])
    return markdown_table(header, rows)


def _judgement_table(summary: Mapping[str, Mapping[str, Any]]) -> list[str]:
    header = ["protocol::method", "slots yes / partial / no", "P0 y/p/n", "P1 y/p/n", "P2 y/p/n",
              "rule-based stop: appropriate / premature / over / no_stop", "judge-rule mismatch", "judge failures",
              "protocol failures by type"]
    rows = []
    ranked, reference = summary["rows"], summary["reference_rows"]
    listed = [(key, ranked[key]) for key in sort_keys(list(ranked))]
    listed += [(f"{key} (reference)", reference[key]) for key in sort_keys(list(reference))]
    for key, s in listed:
        hits = s["HitCounts"]
        sev = s["HitCountsBySeverity"]
        stop = s["RuleBasedStoppingStatusCounts"]
        fails = ", ".join(f"{k} {v}" for k, v in sorted(s["ProtocolFailureCounts"].items())) or "–"
        rows.append([
            f"`{key}`", f"{hits['yes']} / {hits['partial']} / {hits['no']}",
            *[f"{sev[p]['yes']}/{sev[p]['partial']}/{sev[p]['no']}" for p in ("P0", "P1", "P2")],
            f"{stop['appropriate_stop']} / {stop['premature_stop']} / {stop['over_questioning']} / {stop['no_stop']}",
            _num(s["StoppingStatusMismatchRate"]), _num(s["JudgeFailures"]), fails,
        ])
    return markdown_table(header, rows)


def _delta(s: Mapping[str, Any], base: Mapping[str, Any] | None, name: str, digits: int) -> str:
    if base is None or s.get(name) is None or base.get(name) is None:
        return _num(s.get(name), digits)
    return f"{_num(s[name], digits)} ({s[name] - base[name]:+.{digits}f})"


def _extension_lines(summary: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Each extension against the published InterOPT of the same protocol (``summary``: the ranked rows)."""
    lines = ["## Extensions next to the published InterOPT", ""]
    lines += [f"- `{name}`: {what}." for name, what in EXTENSIONS.items()]
    lines.append("")
    rows = []
    for key in sort_keys(list(summary)):
        protocol, method = key.split("::", 1)
        if not any(method.startswith(ext) for ext in EXTENSIONS):
            continue
        base = summary.get(f"{protocol}::{PUBLISHED}")
        s = summary[key]

        rows.append([f"`{key}`", f"`{protocol}::{PUBLISHED}`" if base else "(not run)",
                     *[_delta(s, base, name, digits) for name, digits in (
                         ("AllSlotExactRestoreRate", 3), ("CoreExactRestoreRate", 3), ("WeightedSlotScore_macro", 3),
                         ("AtomicQuestionsPerRun", 2), ("SilentAssumptionsPerRun", 3), ("PrematureStopRate", 3))]])
    if not rows:
        return lines + ["No extension was run in this evaluation.", ""]
    lines += markdown_table(["extension", "compared with", "all-slot exact (Δ)", "core exact (Δ)", "WSS macro (Δ)",
                     "avg Q (Δ)", "silent/run (Δ)", "premature stop (Δ)"], rows)
    return lines + ["", "Δ = extension minus the published variant under the same protocol, cases, K and roles.", ""]


def any_local(roles: Mapping[str, Mapping[str, Any]]) -> bool:
    return any(info.get("backend") == "local" for name, info in roles.items() if EVAL_ROLE.match(name))


def report_markdown(summary: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any],
                    roles_description: Mapping[str, Mapping[str, Any]]) -> str:
    """``summary``: ``summary.json`` (``metrics.ranked_summary``): the methods table ranks ``rows``; the
    ``reference_rows`` follow in their own block."""
    lines = [TITLE, "", "## Run settings", ""]
    lines += _settings_lines(settings)
    lines += _split_lines(settings.get("split"))
    lines += ["", "Every number below was produced by these role backends:", ""]
    lines += _roles_lines(roles_description)
    if any_local(roles_description):
        lines += ["", LOCAL_NOTE]
    lines += ["", "## Results", ""]
    if summary["rows"]:
        lines += _main_table(summary["rows"])
    else:
        lines.append("No ranked runs.")
    if summary["reference_rows"]:
        lines += ["", f"### {REFERENCE_TITLE}", "", REFERENCE_NOTE, "", *_reference_table(summary["reference_rows"])]
    note = ("All-slot exact is over all runs; core exact over core-eligible runs (cases with a P0/P1 slot). "
            "Intervals: 95% case-level bootstrap. Premature stop: rule-based re-audit. Compare methods only within a "
            "protocol.")
    lines += ["", note, "", "## Slot judgements and stopping", ""]
    if summary["rows"] or summary["reference_rows"]:
        lines += _judgement_table(summary)
        unscored = sum(r.get("Unscored", 0) for g in ("rows", "reference_rows") for r in summary[g].values())
        lines += ["", f"unscored: {unscored} runs whose judge failed or could not be parsed (counted under judge "
                  "failures, left out of every judge-derived mean)."]
    from tasks.evaluation.cost_table import cost_markdown

    lines += [""] + cost_markdown(summary)
    lines += _extension_lines(summary["rows"])
    return "\n".join(lines).rstrip() + "\n"


def publish_report(markdown: str, key: str, description: str = "OR-Clarify evaluation report") -> Any:
    """Publish ``markdown`` as a Prefect markdown artifact inside a flow or task run; a no-op (None) elsewhere."""
    if "prefect" not in sys.modules:  # no flow can be running if Prefect was never imported
        return None
    from prefect.context import FlowRunContext, TaskRunContext

    if FlowRunContext.get() is None and TaskRunContext.get() is None:
        return None
    from prefect.artifacts import create_markdown_artifact

    safe = re.sub(r"[^a-z0-9-]+", "-", key.lower()).strip("-") or "report"
    return create_markdown_artifact(markdown=markdown, key=safe, description=description)
