"""Build the report's sections from the stage outputs: one section per stage, "not run yet" where outputs are absent.

Every table of numbers sits under its stage's ``Backend:`` line and the roles that stage calls, and every stage
ends with all of its metrics, each with the backend that produced it (a nested block such as one role's usage names
its own). Stages without a dedicated section get that metric table alone (new domains add stages).
"""

from __future__ import annotations

from typing import Any

from tasks.registry import Registry
from tasks.reporting.figures import plot_hidden_categories
from tasks.reporting.inputs import GX_RESULTS, ReportInputs, flatten
from tasks.reporting.model import Block, Figure, Report, Section, Table, Text
from tasks.text import fmt

SWE_JUDGES = ("question_classifier", "redundancy_judge", "answerability_judge")
STAGE_ROLES: Registry[tuple[str, ...]] = Registry("stage")
"""The model roles each stage calls, when its metrics do not list them under ``roles``."""
STAGE_ROLES.add("construct@swe", ("annotator",))
STAGE_ROLES.add("construct@optimization", ("decomposer", "slot_annotator", "rewriter"))
STAGE_ROLES.add("sft_data", ("question_writer",))
STAGE_ROLES.add("grpo", SWE_JUDGES)
STAGE_ROLES.add("evaluate@swe", ("swe_user", *SWE_JUDGES))
LONG_TABLE = 20
USAGE_ORDER = ("requests", "cache_hits", "provider_calls", "retries", "regenerations", "failures", "prompt_tokens",
               "completion_tokens", "cost_usd", "latency_s")
INTERVAL_KEYS = (("ci_low", "ci_high"), ("low", "high"), ("lo", "hi"))


def build_report(title: str, inputs: ReportInputs) -> Report:
    used: set[str] = set()
    sections = [
        roles_section(inputs),
        construct_section(inputs, used),
        validation_section(inputs),
        shap_section(inputs, used),
        stage_or_missing(inputs, used, "sft_data", "SFT data", "sft-data", "no data/metrics/stages/sft_data.json"),
        training_section(inputs, used),
        evaluation_section(inputs, used),
        question_analysis_section(inputs, used),
    ]
    taken = {s.key for top in sections for s in top.walk()}
    other = [stage_section(inputs, stage, stage, _slug(stage) + ("-stage" if _slug(stage) in taken else ""))
             for stage in inputs.metrics if stage not in used]
    if other:
        sections.append(Section("other-stages", "Other stages", [Text("Stages without a dedicated section.")], other))
    intro = [
        *headline_blocks(inputs),
        Text("Every number in this report is shown with the backend that produced it: each stage names its "
             "backend and the model roles it calls, and each metric table has a backend column. The model roles "
             "table lists the backend of every role in params.yaml."),
        overview_table(sections),
    ]
    return Report(title, intro, sections)


HEADLINE_METRICS = (("weighted_recovery", "weighted recovery"), ("WeightedSlotScore_macro", "WSS (macro)"),
                    ("AllSlotExactRestoreRate", "All-Slot Exact"))
"""The figure each evaluation is ranked by in the headline: the first of these its stage metrics' rows carry (the
interval comes from its summary.json)."""


def headline_blocks(inputs: ReportInputs) -> list[Block]:
    """The answer first: where the numbers come from, then per evaluation its best ranked row with its interval,
    how many ranked rows share that value, and the reference rows (never ranked) beside it; under the table one
    sentence per evaluation whose best value is shared (how many rows, and whether they are identical on every
    metric or only on this one), then GRPO against SFT on the held-out rows."""
    rows, ties = [], []
    sources: dict[str, list[str]] = {}  # backend -> the evaluations it ran
    for domain in evaluated_domains(inputs):
        stage = f"evaluate@{domain}"
        data = inputs.metrics.get(stage, {})
        ranked, refs = _rows_of(data.get("rows")), _rows_of(data.get("reference_rows"))
        summary = inputs.json(f"data/eval/{domain}/summary.json") or {}
        intervals = _rows_of(summary.get("methods") or summary.get("rows"))
        metric = next(((k, label) for k, label in HEADLINE_METRICS
                       if any(isinstance(r.get(k), int | float) for r in ranked.values())), None)
        if metric is None:
            continue
        key, label = metric
        scored = {n: r for n, r in ranked.items() if isinstance(r.get(key), int | float)}
        top = max(r[key] for r in scored.values())
        best = [n for n, r in scored.items() if r[key] == top]
        low_high = (intervals.get(best[0], {}).get("CI95") or {}).get(key)
        interval = f" [{fmt(low_high[0])}, {fmt(low_high[1])}]" if low_high else ""
        reference = ", ".join(f"{n} {fmt(r[key])}" for n, r in refs.items() if isinstance(r.get(key), int | float))
        rows.append([stage, label, ", ".join(best), fmt(top) + interval, f"{len(best)} of {len(scored)}",
                     reference or "–"])
        sources.setdefault(str(data.get("backend") or "backend not recorded"), []).append(stage)
        if len(best) > 1:
            ties.append(tie_sentence(stage, label, fmt(top), {n: scored[n] for n in best}, len(scored)))
    if not rows:
        return []
    lines = [f"{', '.join(stages)}: {backend}" for backend, stages in sources.items()]
    shap = inputs.metrics.get("shap", {})
    if shap_is_simulated(shap, inputs.json("data/shap/weights.json")):
        lines.append("shap weights and the predicted resolution: simulated outcomes with planted effects")
    blocks: list[Block] = [
        Text("Where these numbers come from: " + "; ".join(lines) + "."),
        Table(["evaluation", "ranked by", "best ranked row", "value [95% CI]", "rows at that value",
               "reference rows (not ranked)"], rows, caption="Headline"),
    ]
    blocks += [Text(t, kind="note") for t in ties]
    return [*blocks, heldout_line(inputs)]


def _numbers(row: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in row.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def identical_groups(rows: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Groups (two rows or more, in row order) of ranked rows whose every number is the same: their designs make no
    difference on these cases, and their curves lie on top of each other."""
    groups: dict[tuple, list[str]] = {}
    for name, row in rows.items():
        numbers = _numbers(row)
        if numbers:
            groups.setdefault(tuple(sorted(numbers.items())), []).append(name)
    return [names for names in groups.values() if len(names) > 1]


def tie_sentence(stage: str, label: str, value: str, tied: dict[str, dict[str, Any]], ranked: int) -> str:
    """How many ranked rows share the best value, and why: identical on every metric (then the designs make no
    difference on these cases) or only on this one (then the other columns tell them apart)."""
    domain = stage.split("@", 1)[-1]
    head = f"{stage}: {len(tied)} of {ranked} ranked rows tie at the best {label}, {value},"
    groups = identical_groups(tied)
    if len(groups) == 1 and len(groups[0]) == len(tied):
        return (f"{head} because they are identical on all {len(_numbers(next(iter(tied.values()))))} metrics: on "
                "these cases what sets the methods apart does not show in any number, so the tie says something about "
                "the cases, not a ranking (the evaluation accepts identical rows only as pairs listed with their "
                f"reason under evaluate.{domain}.sanity.allowed_ties in params.yaml).")
    names = list(tied)
    differ = sorted({k for n in names for k in _numbers(tied[n])
                     if len({_numbers(tied[m]).get(k) for m in names}) > 1})
    same = "; identical on every metric: " + "; ".join(", ".join(g) for g in groups) if groups else ""
    return (f"{head} on that metric only: they differ on {len(differ)} others "
            f"({', '.join(differ[:4])}{', ...' if len(differ) > 4 else ''}){same}.")


def heldout_line(inputs: ReportInputs) -> Text:
    """GRPO against SFT on the held-out rows (the grpo stage's paired comparison), or why there is none."""
    grpo = inputs.metrics.get("grpo")
    if grpo is None:
        return Text("GRPO against SFT on held-out rows: GRPO has not run yet.", kind="note")
    heldout = grpo.get("heldout")
    gain = (heldout or {}).get("gain", {}).get("total") if isinstance(heldout, dict) else None
    if not isinstance(gain, dict):
        return Text("GRPO against SFT on held-out rows: not measured in this run (no held-out curve: "
                    "training.heldout.every is null); evaluate@swe scores the GRPO policy on held-out issues.",
                    kind="note")
    sft, after = heldout.get("sft", {}).get("total"), heldout.get("grpo", {}).get("total")
    return Text(f"GRPO against SFT on held-out rows ({heldout.get('cases')} cases from {heldout.get('issues')} issues "
                f"never trained on): staged reward {fmt(sft)} -> {fmt(after)}, gain {fmt(gain.get('mean'))} "
                f"[{fmt(gain.get('low'))}, {fmt(gain.get('high'))}] (95% paired bootstrap; Training section).")


def overview_table(sections: list[Section]) -> Table:
    rows = []
    for top in sections:
        for s in top.walk():
            if s.stage:
                rows.append([s.stage, "not run yet" if s.missing else "ran", s.backend or "–"])
    return Table(["stage", "status", "backend"], rows, caption="Stages")


# ---- roles ----------------------------------------------------------------------------------------------------

def roles_section(inputs: ReportInputs) -> Section:
    if not inputs.roles:
        return Section("roles", "Model roles", [Text("No roles were described (params.yaml: roles).", kind="note")])
    rows = []
    for name, info in inputs.roles.items():
        model = info.get("model") or info.get("implementation", "")
        rows.append([name, str(info["backend"]), str(model), str(info.get("temperature", ""))])
    table = Table(["role", "backend", "model / implementation", "temperature"], rows)
    return Section("roles", "Model roles", [Text("Backend of every model role (params.yaml: roles)."), table])


def roles_line(stage: str, data: dict[str, Any], inputs: ReportInputs) -> Text | None:
    """The roles behind a stage's numbers, each with its backend (from the stage's own metrics when it lists them)."""
    recorded = data.get("roles") if isinstance(data.get("roles"), dict) else None
    if recorded:
        backends = {name: _role_backend(info if isinstance(info, dict) else {}) for name, info in recorded.items()}
    else:
        names = _stage_roles(stage, data, inputs)
        backends = {name: _role_backend(inputs.roles[name]) for name in names if name in inputs.roles}
    if not backends:
        return None
    if all(b == "local" for b in backends.values()):
        return Text(f"Roles behind these numbers (all local backends, see Model roles): {', '.join(backends)}.")
    listed = "; ".join(f"{name}: {backend}" for name, backend in backends.items())
    return Text(f"Roles behind these numbers: {listed}.")


def _stage_roles(stage: str, data: dict[str, Any], inputs: ReportInputs) -> tuple[str, ...]:
    if stage.startswith("evaluate@") and _evaluation(stage.split("@", 1)[1]) == "episodes":
        return tuple(n for n in inputs.roles if n.startswith("or_") or n in ("slot_hit_judge", "question_detector"))
    if stage == "sft_data" and "published_targets" in data:
        return (*STAGE_ROLES.get(stage), *SWE_JUDGES)
    return STAGE_ROLES.get(stage) if stage in STAGE_ROLES else ()


def _evaluation(domain: str) -> str | None:
    """How the domain is evaluated (``Domain.evaluation``), None for a domain this checkout does not define or load."""
    from tasks.domains import get_domain
    from tasks.errors import DomainError

    try:
        return get_domain(domain).evaluation
    except DomainError:
        return None


def _role_backend(info: dict[str, Any]) -> str:
    """``llm <model>, temperature t``, with ``(n of m fell back to local)`` when the stage counted fallbacks."""
    from tasks.roles.failures import fallback_note

    backend = str(info.get("backend", "unspecified"))
    if backend == "llm" and info.get("model"):
        temperature = f", temperature {info['temperature']}" if "temperature" in info else ""
        backend = f"llm {info['model']}{temperature}"
    return fallback_note(backend, int(info.get("fallbacks") or 0), int(info.get("requests") or 0))


# ---- generic stage body -----------------------------------------------------------------------------------------

def stage_section(inputs: ReportInputs, stage: str, title: str, key: str, extra: list[Block] | None = None) -> Section:
    """Backend, roles, string settings, the stage's own tables and figures (``extra``), then every metric."""
    data = inputs.metrics[stage]
    backend = str(data.get("backend", "unspecified"))
    blocks: list[Block] = [Text(f"Backend: {backend}")]
    if line := roles_line(stage, data, inputs):
        blocks.append(line)
    settings = [[k, _plain(v)] for k, v in data.items() if k != "backend" and _is_setting(v)]
    if settings:
        blocks.append(Table(["setting", "value"], settings, caption="Settings"))
    if usage := role_usage_table(data):
        blocks.append(usage)
    blocks += extra or []
    blocks.append(metric_table(stage, data))
    return Section(key, title, blocks, stage=stage, backend=backend)


def stage_or_missing(inputs: ReportInputs, used: set[str], stage: str, title: str, key: str, what: str,
                     extra: list[Block] | None = None) -> Section:
    if stage not in inputs.metrics:
        return Section.not_run(key, title, f"{what} (run `dvc repro {stage}`)", stage=stage)
    used.add(stage)
    return stage_section(inputs, stage, title, key, extra)


def metric_table(stage: str, data: dict[str, Any]) -> Table:
    rows = [[r["key"].removeprefix(stage + "."), fmt(r["value"]), r["backend"]] for r in flatten({stage: data})]
    if not rows:
        return Table(["metric", "value", "backend"], [], caption=f"Metrics of {stage}: none")
    return Table(["metric", "value", "backend"], rows, caption=f"Metrics of {stage} ({len(rows)})",
                 collapsed=len(rows) > LONG_TABLE)


def role_usage_table(data: dict[str, Any]) -> Table | None:
    """Per-role accounting (``roles: {name: {backend, requests, ...}}``) as one row per role."""
    roles = data.get("roles")
    if not isinstance(roles, dict) or not roles or not all(isinstance(v, dict) for v in roles.values()):
        return None
    numeric = [k for info in roles.values() for k, v in info.items()
               if isinstance(v, int | float) and not isinstance(v, bool)]
    columns = [c for c in USAGE_ORDER if c in numeric] + sorted(set(numeric) - set(USAGE_ORDER))
    rows = [[name, str(info.get("backend", data.get("backend", "unspecified"))), *(fmt(info.get(c)) for c in columns)]
            for name, info in roles.items()]
    return Table(["role", "backend", *columns], rows, caption="Role usage")


def _is_setting(value: Any) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, list) and bool(value) and all(isinstance(v, str | int | float) for v in value)


def _plain(value: Any) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def _figures(inputs: ReportInputs, rel_dir: str, prefix: str, what: str) -> list[Block]:
    return [Figure(f"figures/{prefix}-{name}", data, f"{what}: {name.removesuffix('.png').replace('_', ' ')}")
            for name, data in inputs.pngs(rel_dir)]


def _figure(inputs: ReportInputs, rel: str, prefix: str, caption: str) -> list[Block]:
    data = inputs.png(rel)
    return [] if data is None else [Figure(f"figures/{prefix}-{rel.rsplit('/', 1)[-1]}", data, caption)]


# ---- construction -----------------------------------------------------------------------------------------------

def construct_section(inputs: ReportInputs, used: set[str]) -> Section:
    found = [s.split("@", 1)[1] for s in inputs.metrics if s.startswith("construct@")]
    domains = list(dict.fromkeys([*inputs.domains, *found]))
    rows, children = [], []
    for domain in domains:
        stage = f"construct@{domain}"
        data = inputs.metrics.get(stage)
        if data is None:
            rows.append([domain, "–", "–", "–", "–", "not run yet"])
        else:
            inputs_read = next((data[k] for k in ("issues", "problems", "requests", "records") if k in data), None)
            rows.append([domain, str(data.get("source", "–")), fmt(inputs_read),
                         fmt(data.get("cases")), fmt(_hidden_slots(data)), str(data.get("backend", "unspecified"))])
        children.append(stage_or_missing(inputs, used, stage, stage, _slug(stage),
                                         f"no data/metrics/stages/construct/{domain}.json"))
    blocks: list[Block] = [Table(["domain", "source", "inputs", "cases", "hidden slots", "backend"], rows,
                                 caption="Cases per domain (inputs: issues, problems, requests or records read)")]
    if not domains:
        blocks = [Text("No domain is configured (params.yaml: domains).", kind="note")]
    if png := plot_hidden_categories(inputs.metrics):
        blocks.append(Figure("hidden_categories.png", png, "Hidden categories per construct stage"))
    return Section("construction", "Construction", blocks, children)


def _hidden_slots(data: dict[str, Any]) -> int | None:
    if isinstance(data.get("hidden_slots"), int):
        return data["hidden_slots"]
    per_category = data.get("hidden_per_category")
    if isinstance(per_category, dict) and all(isinstance(v, int) for v in per_category.values()):
        return sum(per_category.values())
    return None


# ---- validation -------------------------------------------------------------------------------------------------

def validation_section(inputs: ReportInputs) -> Section:
    note = Text("The latest result of each Great Expectations gate, as the stages saved it under "
                f"{GX_RESULTS.as_posix()}/ "
                "(a local cache, not tracked by DVC; `make docs` renders the same validations as GX Data Docs). "
                "A stage "
                "publishes its artifact only after its gate passes, so after a FAILED row the artifact on disk is the "
                "previous one. This report's own gate runs after the page is written and is not listed.", kind="note")
    if not inputs.gates:
        return Section("validation", "Validation gates",
                       [Text("No validation results on disk yet: no gated stage has run in this checkout.",
                             kind="missing"), note], missing=True)
    rows = [[g.artifact, g.suite, "unknown" if g.success is None else "passed" if g.success else "FAILED",
             str(g.passed), str(g.evaluated - g.passed), "; ".join(g.failed) or "–"] for g in inputs.gates]
    table = Table(["artifact", "suite", "result", "expectations passed", "expectations failed", "failed expectations"],
                  rows, caption="Validation results")
    return Section("validation", "Validation gates", [table, note])


# ---- shap -------------------------------------------------------------------------------------------------------

SHAP_TITLE = "Information value (SHAP)"
PLANTED_NOTE = ("Planted effects: these outcomes are simulated from a generative model with the paper's ranking "
                "planted (tasks/infovalue/runs.py), so the analysis is checked against a known answer. They are not "
                "measured agent runs, and the paper's weights are not set beside them.")


def shap_section(inputs: ReportInputs, used: set[str]) -> Section:
    weights = inputs.json("data/shap/weights.json")
    if "shap" not in inputs.metrics:
        if weights is None:
            return Section.not_run("shap", SHAP_TITLE, "no data/metrics/stages/shap.json and no "
                                   "data/shap/weights.json (run `dvc repro shap`)", stage="shap")
        inputs = ReportInputs({**inputs.metrics, "shap": {"backend": "unspecified (stage metrics absent)"}},
                              inputs.roles, inputs.domains, inputs.gates, inputs.root)
    used.add("shap")
    planted = shap_is_simulated(inputs.metrics["shap"], weights)
    extra: list[Block] = [Text(PLANTED_NOTE, kind="note")] if planted else []
    if weights:
        extra += [Text(f"Outcomes: {weights.get('source', 'unspecified')}."),
                  _weights_table(weights, paper=not planted)]
    cv = inputs.metrics["shap"].get("cv")
    if isinstance(cv, dict):
        rows = [[k, fmt(v)] for k, v in cv.items() if isinstance(v, int | float) and not isinstance(v, bool)]
        extra.append(Table(["metric", "value"], rows, caption="Classifier (LightGBM, cross-validated)"))
    extra += _figures(inputs, "data/shap/plots", "shap", "SHAP")
    title = f"{SHAP_TITLE}: planted effects (simulated outcomes)" if planted else SHAP_TITLE
    return stage_section(inputs, "shap", title, "shap", extra)


def shap_is_simulated(metrics: dict[str, Any], weights: dict[str, Any] | None) -> bool:
    """Whether the SHAP outcomes are simulated (``shap.source: simulated``), from the stage metrics or weights.json."""
    if "source" in metrics:
        return metrics["source"] == "simulated"
    return bool(weights) and str(weights.get("source", "")).startswith("simulated")


def _weights_table(weights: dict[str, Any], *, paper: bool) -> Table:
    """The measured weights; with ``paper`` the paper's weights beside them (real outcomes only)."""
    categories = weights.get("categories") or {}
    exact = (weights.get("exact_shapley") or {}).get("weights") or {}
    published = weights.get("paper_weights_for_comparison") or {}
    order = sorted(categories, key=lambda c: (categories[c].get("rank", 99), c))
    rows = []
    for name in order:
        c = categories[name]
        interval = f"[{fmt(c.get('ci_low'))}, {fmt(c.get('ci_high'))}]" if "ci_low" in c else "–"
        row = [name, fmt(c.get("weight")), interval, fmt(c.get("rank")), fmt(exact.get(name))]
        rows.append([*row, fmt(published.get(name))] if paper else row)
    header = ["category", "weight", "95% interval", "rank", "exact Shapley weight"]
    return Table([*header, "paper weight"] if paper else header, rows,
                 caption="Category weights (mean |SHAP| normalised to max 1; data/shap/weights.json)")


# ---- training ---------------------------------------------------------------------------------------------------

def heldout_table(heldout: dict[str, Any]) -> Table:
    """SFT (step 0) against GRPO (last step) on the held-out rows, with the paired interval of the gain."""
    sft, grpo, gain = heldout.get("sft", {}), heldout.get("grpo", {}), heldout.get("gain", {})
    rows = []
    for name, interval in gain.items():
        ci = f"{fmt(interval.get('mean'))} [{fmt(interval.get('low'))}, {fmt(interval.get('high'))}]"
        rows.append([name.replace("_", " "), fmt(sft.get(name)), fmt(grpo.get(name)), ci,
                     "yes" if interval.get("low", 0) > 0 or interval.get("high", 0) < 0 else "no"])
    steps = heldout.get("steps", ["?", "?"])
    caption = (f"Held-out staged reward, SFT (step {steps[0]}) vs GRPO (step {steps[-1]}): "
               f"{heldout.get('cases')} cases from {heldout.get('issues')} issues never trained on, greedy answers; "
               "gain = GRPO − SFT paired by case with a 95% bootstrap interval")
    return Table(["reward", "SFT", "GRPO", "gain [95% interval]", "interval excludes 0"], rows, caption=caption)


def training_section(inputs: ReportInputs, used: set[str]) -> Section:
    children = []
    for stage in ("sft", "grpo"):
        figures: list[Block] = []
        heldout = (inputs.metrics.get(stage) or {}).get("heldout")
        if isinstance(heldout, dict) and heldout.get("gain"):
            figures.append(heldout_table(heldout))
        figures += _figure(inputs, f"data/models/{stage}/heldout.png", stage,
                           "Held-out staged reward against GRPO step, per stage (dashed: SFT, the step-0 policy)")
        figures += _figure(inputs, f"data/models/{stage}/loss.png", stage, f"{stage.upper()} training loss")
        figures += _figure(inputs, f"data/models/{stage}/rewards.png", stage, f"{stage.upper()} rewards per stage")
        children.append(stage_or_missing(inputs, used, stage, stage.upper(), stage,
                                         f"no data/metrics/stages/{stage}.json", figures))
    return Section("training", "Training", [Text("LoRA SFT of the questioner, then GRPO with the staged reward.")],
                   children)


# ---- evaluation -------------------------------------------------------------------------------------------------

def evaluation_section(inputs: ReportInputs, used: set[str]) -> Section:
    children = [eval_section(inputs, used, domain) for domain in evaluated_domains(inputs)]
    return Section("evaluation", "Evaluation", [], children)


def evaluated_domains(inputs: ReportInputs) -> list[str]:
    """The domains the report is given (``params.yaml: domains``, which dvc.yaml evaluates: each shown as "not run
    yet" until it writes outputs), in that order, then any other evaluation whose metrics it finds."""
    found = [s.split("@", 1)[1] for s in inputs.metrics if s.startswith("evaluate@")]
    return list(dict.fromkeys([*inputs.domains, *found]))


def eval_section(inputs: ReportInputs, used: set[str], domain: str) -> Section:
    stage, base = f"evaluate@{domain}", f"data/eval/{domain}"
    data = inputs.metrics.get(stage)
    if data is None and not inputs.exists(base):
        return Section.not_run(_slug(stage), stage, f"no data/metrics/stages/evaluate/{domain}.json and no {base}/ "
                               f"(run `dvc repro {stage}`)", stage=stage)
    summary = inputs.json(f"{base}/summary.json") or {}
    extra: list[Block] = []
    if line := split_line((data or {}).get("split")):
        extra.append(line)
    if config := inputs.json(f"{base}/run_config.json"):
        extra.append(_run_settings(config))
    ranked, reference = method_rows(data or {}, summary)
    if ranked:
        extra.append(method_table(ranked, summary))
        if groups := identical_groups(ranked):
            extra.append(Text(f"{sum(map(len, groups))} of {len(ranked)} ranked rows are identical on every metric, "
                              f"in {len(groups)} group(s): " + "; ".join(", ".join(g) for g in groups)
                              + ". Their curves in the figures below lie on top of each other.", kind="note"))
    if reference:
        extra += [Text(REFERENCE_NOTE, kind="note"), reference_table(reference, summary)]
    if isinstance(summary.get("abstention"), dict):
        extra.append(abstention_table(summary["abstention"], str((data or {}).get("backend", "unspecified"))))
    if line := unscored_line(summary):
        extra.append(line)
    from tasks.evaluation import cost_table

    if costs := cost_table.cost_rows(summary):
        extra += [Table(cost_table.HEADER, costs, caption=cost_table.TITLE), Text(cost_table.NOTE, kind="note")]
    elif costs := cost_table.swe_summary_cost_rows(summary):
        extra += [Table(cost_table.SWE_HEADER, costs, caption=cost_table.TITLE), Text(cost_table.SWE_NOTE, kind="note")]
    from tasks.reporting.persona_section import persona_blocks

    extra += persona_blocks(inputs.json(f"{base}/frontier.json"), inputs.json(f"{base}/robustness.json"),
                            set(reference), str((data or {}).get("backend", "unspecified")))
    extra += _figures(inputs, base, _slug(stage), stage)
    if inputs.exists(f"{base}/report.md"):
        extra.append(Text(f"The evaluation's own report, with every table: {base}/report.md.", kind="note"))
    if data is None:
        section = Section(_slug(stage), stage, [Text(f"No data/metrics/stages/evaluate/{domain}.json yet; "
                                                     f"the files in {base}/ are shown.", kind="note"), *extra],
                          stage=stage)
        return section
    used.add(stage)
    return stage_section(inputs, stage, stage, _slug(stage), extra)


def unscored_line(summary: dict[str, Any]) -> Text | None:
    """The judge calls that failed and were left out of the means (evaluate@swe: reward stage values, with the reward
    protocol; evaluate@<episode domain>: runs whose judge failed), from the stage's summary.json."""
    if "unscored" in summary:
        return Text(f"Reward protocol: {summary.get('reward_protocol', 'clarifyflow')}; a failed judge call: "
                    f"{summary.get('judge_failure', 'unscored')}; unscored: {summary['unscored']} (stage values left "
                    "out of the means).", kind="note")
    rows = [r for group in ("rows", "reference_rows") for r in (summary.get(group) or {}).values()
            if isinstance(r, dict) and "Unscored" in r]
    if rows:
        return Text(f"unscored: {sum(r['Unscored'] for r in rows)} runs whose judge failed (left out of every "
                    "judge-derived mean).", kind="note")
    return None


def question_analysis_section(inputs: ReportInputs, used: set[str]) -> Section:
    """CLARITI RQ2: what makes a question answerable (tasks/reporting/question_section.py)."""
    from tasks.reporting.question_section import FIGURES, FINDINGS, question_blocks

    pngs = {name: data for name in FIGURES if (data := inputs.png(f"data/analysis/questions/{name}")) is not None}
    return stage_or_missing(inputs, used, "question_analysis", "Question answerability (CLARITI RQ2)",
                            "question-analysis", "no data/metrics/stages/question_analysis.json",
                            extra=question_blocks(inputs.json(FINDINGS), pngs))


ABSTAIN_COMPARED = ("hidden_recall", "weighted_recovery", "reward_mean", "questions_per_issue")


def abstention_table(block: dict[str, Any], backend: str) -> Table:
    """evaluate@swe's abstain-with-warning block (``tasks/evaluation/abstain.py``): per method, how often it
    abstains and each compared metric asking -> abstaining (change)."""
    rows = []
    for name, row in block.get("methods", {}).items():
        cells = [f"{fmt(row[m]['asking'])} -> {fmt(row[m]['abstaining'])} ({fmt(row[m]['change'])})"
                 for m in ABSTAIN_COMPARED]
        rows.append([name, f"{fmt(row['abstention_rate'])} ({row['abstained']}/{row['cases']})", *cells,
                     str(row["unanswerable_not_asked"]), backend])
    return Table(["method", "abstention rate", *(f"{m} (ask -> abstain, change)" for m in ABSTAIN_COMPARED),
                  "unanswerable questions not asked", "backend"], rows,
                 caption=f"Abstain with warning: under a best staged reward of {fmt(block.get('threshold'))}, ask "
                         f"nothing and flag the task \"{block.get('flag', 'information insufficient')}\"")


REFERENCE_TITLE = "Reference rows (not ranked)"
REFERENCE_NOTE = ("Reference rows read what a method may not (privileged: the hidden slots or categories, or the "
                  "full issue) or nothing at all (a bound): they bracket the methods and are never ranked with them.")
LAYOUTS = (("rows", "reference_rows"), ("methods", "reference_methods"))
"""Where an evaluation keeps its ranked and its reference rows (stage metrics and episode summaries; SWE summary)."""


def _rows_of(value: Any) -> dict[str, dict[str, Any]]:
    ok = isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
    return value if ok else {}


def method_rows(data: dict[str, Any], summary: dict[str, Any]) -> tuple[dict[str, dict], dict[str, dict]]:
    """The ranked and the reference rows, from the stage metrics, else from summary.json (an older flat summary:
    every row ranked)."""
    for source in (data, summary):
        for ranked, reference in LAYOUTS:
            if _rows_of(source.get(ranked)) or _rows_of(source.get(reference)):
                return _rows_of(source.get(ranked)), _rows_of(source.get(reference))
    return {k: v for k, v in summary.items() if isinstance(v, dict)}, {}


def _summary_row(summary: dict[str, Any], name: str) -> dict[str, Any]:
    for key in (*LAYOUTS[0], *LAYOUTS[1]):
        if isinstance(summary.get(key), dict) and isinstance(summary[key].get(name), dict):
            return summary[key][name]
    value = summary.get(name)
    return value if isinstance(value, dict) else {}


def split_line(split: Any) -> Text | None:
    """Which split was evaluated, its cases and source ids, and what each trained policy was trained on."""
    if not isinstance(split, dict) or not isinstance(split.get("cases"), dict):
        return None
    counts = ", ".join(f"{v.get('cases', 0)} {k} cases from {v.get('source_ids', 0)} source ids"
                       for k, v in split["cases"].items() if isinstance(v, dict) and v.get("cases"))
    parts = [f"Split evaluated: {split.get('evaluated', 'unspecified')} ({counts or 'no cases'})."]
    for name, row in (split.get("policies") or {}).items():
        if isinstance(row, dict) and "trained_on_source_ids" in row:
            parts.append(f"{name}: {row.get('cases')} {row.get('split')} cases from {row.get('source_ids')} source "
                         f"ids; trained on {row['trained_on_source_ids']} source ids, overlap {row.get('overlap')}.")
    return Text(" ".join(parts))


def _run_settings(config: dict[str, Any]) -> Table:
    rows = [[k, fmt(v)] for k, v in config.items() if isinstance(v, str | int | float)]
    methods = config.get("methods")
    if isinstance(methods, list) and methods:
        names = [str(m.get("name", m)) if isinstance(m, dict) else str(m) for m in methods]
        rows.append(["methods", ", ".join(names)])
    return Table(["setting", "value"], rows, caption="Run settings")


def _metric_cells(rows: dict[str, dict[str, Any]], summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Metric columns and one line of cells per row (``[low, high]`` from the summary's CI95)."""
    from tasks.evaluation.surrogate import base_metric

    flat = {name: _flat_cells(values) for name, values in rows.items()}
    columns = list(dict.fromkeys(c for cells in flat.values() for c in cells))
    lines = []
    for name, cells in flat.items():
        intervals = _summary_row(summary, name).get("CI95") or {}
        line = []
        for column in columns:
            cell = cells.get(column, "–")
            bounds = intervals.get(column, intervals.get(base_metric(column)))
            if isinstance(bounds, list) and len(bounds) == 2 and cell != "–":
                cell = f"{cell} [{fmt(bounds[0])}, {fmt(bounds[1])}]"
            line.append(cell)
        lines.append(line)
    return columns, lines


def method_table(rows: dict[str, dict[str, Any]], summary: dict[str, Any]) -> Table:
    """One row per ranked method (or protocol::method) with its headline metrics; ``[low, high]`` from the summary's
    CI95."""
    columns, lines = _metric_cells(rows, summary)
    return Table(["method", *columns], [[name, *line] for name, line in zip(rows, lines)],
                 caption="Headline metrics per method (95% bootstrap intervals where the evaluation computed them)")


def reference_table(rows: dict[str, dict[str, Any]], summary: dict[str, Any]) -> Table:
    """The reference rows apart from the methods: what each is (privileged, bound) and reads, then its metrics."""
    columns, lines = _metric_cells(rows, summary)
    table = []
    for (name, values), line in zip(rows.items(), lines):
        reference = values.get("reference") or _summary_row(summary, name).get("reference") or {}
        table.append([name, str(reference.get("kind", "–")), str(reference.get("reads", "–")), *line])
    return Table(["method", "reference", "reads", *columns], table, caption=REFERENCE_TITLE)


def _flat_cells(values: dict[str, Any], prefix: str = "") -> dict[str, str]:
    cells: dict[str, str] = {}
    for key, value in values.items():
        if key in ("CI95", "backend", "reference"):
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            point = next((value[k] for k in ("mean", "value", "point") if k in value), None)
            bounds = next(((value[a], value[b]) for a, b in INTERVAL_KEYS if a in value and b in value), None)
            if point is not None and bounds is not None:
                cells[name] = f"{fmt(point)} [{fmt(bounds[0])}, {fmt(bounds[1])}]"
            else:
                cells.update(_flat_cells(value, f"{name}."))
        elif value is None or isinstance(value, str | int | float):
            cells[name] = fmt(value)
    return cells
