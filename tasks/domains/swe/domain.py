"""SWE domain (CLARITI): annotated GitHub issues -> masked variants as cases.

Sources (``construct.swe.source``): the project's own samples (JSONL), the CLARITI workbook (xlsx), or a
SWE-bench dataset through ``datasets`` from a local path or the local cache.

Domain API (``tasks/domains/api.py``): the taxonomy is the six CLARITI categories, a unit is one annotated span, a
slot hides every span of one category, the masking policy draws 1-3 category sets per issue, slots carry no
severity (the judge counts P1; the ``shap`` weights rank categories), questions come from the ``question_writer``
templates and the simulated answer is the hidden spans themselves. Evaluation: ``questions`` (CLARITI §7).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from tqdm import tqdm

from tasks import caching, categories, records, store, swe_samples, text
from tasks.caching import RunStats
from tasks.categories import Category
from tasks.cluster import ClusterParams, fan_out
from tasks.domain_context import JudgeHints
from tasks.domains.api import ConstructResult, Severity, Taxonomy
from tasks.domains.swe import masking
from tasks.errors import InputError
from tasks.params import RUNNER_KEYS, SPLIT_KEYS, SweConstructParams, section
from tasks.records import Brief, Case, CaseMetadata, Eligibility, HiddenSlot, IssueRecord, SpanAnnotation, Unit
from tasks.roles.config import RolesParams, describe_roles
from tasks.swe_samples import check_unique, load_samples
from tasks.text import normalise_newlines

BENCHMARK = "clarifyflow-swe"
MASKING_BACKEND = "rules: span removal + fluency clean-up (no model)"


# ---- loading ---------------------------------------------------------------------------------------------------------


def parse_category_mapping(raw: Any, *, path: Path, record: str) -> tuple[list[SpanAnnotation], list[Category]]:
    """CLARITI's ``category_mapping``: ``{category: {"present": bool, "examples": [span, ...]}}``."""
    try:
        mapping = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as err:
        raise InputError(path, f"malformed JSON ({err.msg})", record=record, field="category_mapping") from None
    if not isinstance(mapping, dict):
        raise InputError(path, "expected a JSON object", record=record, field="category_mapping")
    spans: list[SpanAnnotation] = []
    present: list[Category] = []
    for name, entry in mapping.items():
        try:
            category = Category.parse(name)
        except ValueError as err:
            raise InputError(path, str(err), record=record, field="category_mapping") from None
        if not isinstance(entry, dict):
            raise InputError(path, f"entry for {name!r} is not an object", record=record, field="category_mapping")
        if entry.get("present"):
            present.append(category)
        for example in entry.get("examples") or []:
            if isinstance(example, str) and example.strip():
                spans.append(SpanAnnotation(category=category, text=example))
    return spans, present


def _cell(value: Any) -> str:
    if value is None:
        return ""
    try:
        import pandas as pd

        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    return str(value)


def load_clariti(path: Path) -> list[IssueRecord]:
    """The CLARITI workbook: ``original issue`` + ``category_mapping`` (rows without a mapping are unannotated)."""
    import pandas as pd

    if not path.is_file():
        raise InputError(path, "file not found (set construct.swe.clariti_path)")
    try:
        frame = pd.read_excel(path, dtype=str)
    except Exception as err:  # noqa: BLE001 - openpyxl raises many types for a damaged workbook
        raise InputError(path, f"cannot read workbook: {err}") from None
    for column in ("instance_id", "original issue", "category_mapping"):
        if column not in frame.columns:
            raise InputError(path, "missing column", field=column)
    issues = []
    for idx, row in enumerate(frame.to_dict("records"), start=2):
        iid = _cell(row.get("instance_id"))
        where = f"row {idx} ({iid})" if iid else f"row {idx}"
        raw_mapping = _cell(row.get("category_mapping"))
        spans, present = (None, None)
        if raw_mapping.strip():
            spans, present = parse_category_mapping(raw_mapping, path=path, record=where)
            if not spans and not present:  # an empty mapping: the row was never annotated
                spans, present = None, None
        data = {
            "instance_id": iid,
            "repo": _cell(row.get("repo")),
            "version": _cell(row.get("version")),
            "created_at": _cell(row.get("created_at")),
            "text": _cell(row.get("original issue")),
            "hints_text": _cell(row.get("hints_text")),
            "spans": spans,
            "present": present,
        }
        issues.append(store.parse_record(IssueRecord, data, path=path, record=where))
    check_unique(issues, path)
    return issues


def load_swebench(path_or_name: str | None, split: str, root: Path) -> list[IssueRecord]:
    """A SWE-bench dataset from disk or the local ``datasets`` cache (offline: never downloads)."""
    if not path_or_name:
        raise InputError("params.yaml", "no dataset given", field="construct.swe.swebench.path")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datasets

    local = (root / path_or_name) if not Path(path_or_name).is_absolute() else Path(path_or_name)
    try:
        if local.is_dir():
            loaded = datasets.load_from_disk(str(local))
            dataset = loaded[split] if isinstance(loaded, datasets.DatasetDict) else loaded
        elif local.is_file():
            kind = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}.get(local.suffix)
            if kind is None:
                raise InputError(local, "unsupported data file (use .jsonl, .json, .parquet or .csv)")
            dataset = datasets.load_dataset(kind, data_files=str(local), split="train")
        else:
            dataset = datasets.load_dataset(path_or_name, split=split)
    except InputError:
        raise
    except Exception as err:  # noqa: BLE001 - any loader failure becomes one clear input error
        raise InputError(path_or_name, f"cannot load dataset offline: {str(err).splitlines()[0]}") from None
    missing = [c for c in ("instance_id", "problem_statement") if c not in dataset.column_names]
    if missing:
        raise InputError(path_or_name, "missing column", field=missing[0])
    issues = [swebench_issue(row, Path(path_or_name), f"row {idx} ({row.get('instance_id', '')})")
              for idx, row in enumerate(dataset, start=1)]
    check_unique(issues, Path(path_or_name))
    return issues


def swebench_issue(row: dict, path: Path, where: str) -> IssueRecord:
    """One SWE-bench dataset row as an issue record (its commits kept for the harness export)."""
    spans, present = (None, None)
    if row.get("category_mapping"):
        spans, present = parse_category_mapping(row["category_mapping"], path=path, record=where)
    data = {
        "instance_id": row["instance_id"],
        "repo": str(row.get("repo") or ""),
        "version": str(row.get("version") or ""),
        "created_at": str(row.get("created_at") or ""),
        "text": row["problem_statement"] or "",
        "hints_text": row.get("hints_text") or "",
        "base_commit": str(row.get("base_commit") or ""),
        "environment_setup_commit": str(row.get("environment_setup_commit") or ""),
        "spans": spans,
        "present": present,
    }
    return store.parse_record(IssueRecord, data, path=path, record=where)


def source_path(cfg: SweConstructParams, root: Path) -> Path | None:
    if cfg.source == "samples":
        return root / cfg.samples_path
    if cfg.source == "clariti":
        return root / cfg.clariti_path
    if cfg.swebench.path and (root / cfg.swebench.path).exists():
        return root / cfg.swebench.path
    return None


def load_issues(cfg: SweConstructParams, root: Path) -> list[IssueRecord]:
    """Load the configured source and keep the annotated issues (or fail on unannotated ones, per params)."""
    path = source_path(cfg, root)
    if cfg.source == "samples":
        issues = load_samples(path)
    elif cfg.source == "clariti":
        issues = load_clariti(path)
    else:
        issues = load_swebench(cfg.swebench.path, cfg.swebench.split, root)
    where = path or cfg.swebench.path or "params.yaml"
    unannotated = [i for i in issues if i.spans is None]
    if unannotated and cfg.on_unannotated == "error":
        raise InputError(
            where,
            f"{len(unannotated)} of {len(issues)} issues have no span annotations "
            f"(first: {unannotated[0].instance_id}); "
            "set construct.swe.on_unannotated: annotate to tag them with the annotator role, or skip to drop them",
        )
    if cfg.on_unannotated == "skip":
        issues = [i for i in issues if i.spans is not None]
    if not issues:
        raise InputError(where, "no annotated issues to mask")
    if cfg.limit:
        issues = issues[: cfg.limit]
    return issues


# ---- annotating raw issues -------------------------------------------------------------------------------------------


def annotate_chunk(issues: list[dict], role_cfg: dict, weights: Path | None = None) -> dict:
    """Tag unannotated issues with the annotator role. JSON in, JSON out (cacheable by content).

    ``weights`` is only here so the cache key covers the annotator's learned weights file. An issue whose
    annotation fails (an LLM backend that never returned valid output) is left out and reported, never fatal.
    """
    from tasks.llm.client import LLMClient
    from tasks.llm.records import RoleConfig, RoleFailure
    from tasks.roles import annotator
    from tasks.roles.base import run_role

    cfg = RoleConfig.model_validate(role_cfg)
    records = [IssueRecord.model_validate(raw) for raw in issues]
    inputs = [annotator.AnnotateInput(instance_id=r.instance_id, text=r.text, hints=r.hints_text) for r in records]
    client = LLMClient()
    outputs = run_role(annotator.SPEC, inputs, cfg, client=client)
    annotated: list[dict] = []
    failures: list[dict] = []
    for record, output in zip(records, outputs):
        if isinstance(output, RoleFailure):
            failures.append({"instance_id": record.instance_id, "kind": output.kind, "message": output.message})
            continue
        if cfg.backend == "llm":
            output = annotator.verbatim_spans(output, record.text)
        data = record.model_dump(mode="json")
        data["spans"] = [s.model_dump(mode="json") for s in annotator.to_span_annotations(output)]
        data["present"] = [c.value for c in output.present]
        annotated.append(IssueRecord.model_validate(data).model_dump(mode="json"))
    return {"issues": annotated, "failures": failures, "usage": client.accounting.snapshot().get("annotator", {})}


def annotator_weights() -> Path | None:
    from tasks.roles import annotator

    path = getattr(annotator, "WEIGHTS", None)
    return path if isinstance(path, Path) and path.is_file() else None


# ---- masking one issue -----------------------------------------------------------------------------------------------


def case_id_for(instance_id: str, hidden: tuple[Category, ...]) -> str:
    return f"{instance_id}__{'+'.join(c.key for c in hidden)}"


def span_pairs(issue: IssueRecord) -> list[tuple[Category, str]]:
    """The issue's distinct (category, span) annotations, in order."""
    return list(dict.fromkeys((s.category, s.text) for s in issue.spans or []))


def issue_units(issue: IssueRecord) -> list[Unit]:
    """The decomposition: one unit per distinct annotated span, typed by its category key."""
    return [Unit(id=f"U{i}", kind=cat.key, content=span, category=cat)
            for i, (cat, span) in enumerate(span_pairs(issue), start=1)]


def mask_issue(issue: IssueRecord, cfg: SweConstructParams) -> tuple[list[Case], Counter]:
    """All variants of one issue, plus counters of what was skipped and why."""
    notes: Counter = Counter()
    text = normalise_newlines(issue.text)
    pairs = span_pairs(issue)
    located, missing = masking.locate_all(text, pairs)
    notes["spans"] += len(pairs)
    notes["spans_not_in_text"] += len(missing)
    present = issue.present_categories()
    maskable = [c for c in present if any(span.category == c for span in located)]
    units = issue_units(issue)
    combos = masking.choose_hidden(issue.instance_id, cfg.seed, maskable, cfg.n_variants, cfg.min_hidden,
                                   cfg.max_hidden)
    if not combos:
        notes["issues_without_maskable_category"] += 1
    cases = []
    for hidden in combos:
        cid = case_id_for(issue.instance_id, hidden)
        hidden_spans = ([span for cat, span in pairs if cat in hidden]
                        + [s.text for s in located if s.category in hidden])
        brief = masking.mask_text(text, [(s.start, s.end) for s in located if s.category in hidden])
        brief = masking.remove_leaks(brief, hidden_spans)
        if not brief.strip() or masking.normalise_ws(brief) == masking.normalise_ws(text):
            notes["variants_skipped_empty_or_unchanged"] += 1
            continue
        masking.assert_no_leak(cid, brief, hidden_spans)
        norm_brief = masking.normalise_ws(brief)
        slots = []
        for n, cat in enumerate(hidden, start=1):
            cat_units = [u for u in units if u.category == cat]
            slots.append(
                HiddenSlot(
                    slot_id=f"H{n}",
                    name=cat.key,
                    category=cat,
                    unit_ids=[u.id for u in cat_units],
                    simulator_answer="\n\n".join(u.content for u in cat_units),
                    semantic_hit_rule=f"The question asks for {cat.value.lower()}: {categories.DEFINITIONS[cat]}",
                )
            )
        visible_units = [
            u.id for u in units if u.category not in hidden and masking.normalise_ws(u.content) in norm_brief
        ]
        cases.append(
            Case(
                metadata=CaseMetadata(benchmark=BENCHMARK, case_id=cid, domain="swe", source_id=issue.instance_id,
                                      seed=cfg.seed),
                units=units,
                hidden_slots=slots,
                brief=Brief(content=brief, visible_unit_ids=visible_units),
                full_text=text,
                hints=issue.hints_text,
                present_categories=present,
                hidden_categories=list(hidden),
                visible_categories=[c for c in present if c not in hidden],
                extra={"repo": issue.repo, "version": issue.version, **swebench_commits(issue)},
            )
        )
    return cases, notes


def swebench_commits(issue: IssueRecord) -> dict[str, str]:
    """The SWE-bench commits an issue carries, for the harness export (only those given: no empty keys)."""
    return {k: v for k in ("base_commit", "environment_setup_commit") if (v := getattr(issue, k))}


def mask_chunk(issues: list[dict], cfg: dict) -> dict:
    """Mask a chunk of issues; JSON in, JSON out, so the result can be cached by content."""
    params = SweConstructParams.model_validate(cfg)
    out: list[dict] = []
    notes: Counter = Counter()
    for raw in issues:
        cases, issue_notes = mask_issue(IssueRecord.model_validate(raw), params)
        out.extend(c.model_dump(mode="json") for c in cases)
        notes.update(issue_notes)
    return {"cases": out, "notes": dict(notes)}


_MODULES = (masking, text, records, categories)


def _prefect_tasks():
    from tasks.roles import annotator, base

    load_task = caching.cached_task("swe-load-issues", modules=(store, records, masking, text, swe_samples,
                                                              sys.modules[__name__]), retries=0)(_load_for_cache)
    annotate_task = caching.cached_task("swe-annotate-chunk",
                                        modules=(*caching.package_modules(annotator), base, records),
                                        retries=0)(annotate_chunk)
    mask_task = caching.cached_task("swe-mask-chunk", modules=_MODULES, retries=0)(mask_chunk)
    return load_task, annotate_task, mask_task


def _load_for_cache(source: Path | None, cfg: dict, root: str) -> list[dict]:
    # ``source`` is only here so the cache key covers the source file's content.
    issues = load_issues(SweConstructParams.model_validate(cfg), Path(root))
    return [i.model_dump(mode="json") for i in issues]


# ---- the domain ------------------------------------------------------------------------------------------------------


class SweDomain:
    name = "swe"
    evaluation = "questions"
    taxonomy = Taxonomy(kinds=tuple(c.key for c in Category), hideable=tuple(c.key for c in Category),
                        descriptions={c.key: categories.DEFINITIONS[c] for c in Category})
    judge_hints = JudgeHints(
        subject="a GitHub issue (bug report or feature request)", deliverable="a patch that resolves the issue",
        analyst="a software engineer",
        core="Every hidden category counts as core (P1); the shap stage's category weights rank them.",
    )
    user_aspects: ClassVar[dict[str, list[str]]] = {}
    gap_inventory = None
    """Question-set evaluation: methods write their own questions (``question_writer`` templates locally)."""

    # ---- the finer hooks of the domain API (construct uses them through mask_issue) ------------------------------

    def load_records(self, cfg: SweConstructParams, root: Path) -> list[IssueRecord]:
        return load_issues(cfg, root)

    def decompose(self, record: IssueRecord) -> list[Unit]:
        return issue_units(record)

    def hide_candidates(self, units) -> list[Eligibility]:
        """Every annotated span may be hidden (with the rest of its category); ``mask_issue`` then keeps only the
        categories that are present and have a span that occurs in the text."""
        return [Eligibility(unit_id=u.id, eligible=u.category is not None,
                            reason=u.category.key if u.category is not None else "no category") for u in units]

    def choose_hidden(self, record_id: str, candidates, cfg: SweConstructParams, units=()) -> list[list[str]]:
        """Per variant, every unit of 1-3 drawn categories (``masking.choose_hidden``, seeded per issue)."""
        cats = [c for c in Category if any(u.category == c for u in candidates)]
        combos = masking.choose_hidden(record_id, cfg.seed, cats, cfg.n_variants, cfg.min_hidden, cfg.max_hidden)
        return [[u.id for u in candidates if u.category in combo] for combo in combos]

    def severity(self, hidden, units) -> tuple[Severity | None, str]:
        return None, "CLARITI categories carry no severity: the judge counts each slot as P1."

    def reference_questions(self, hidden, units) -> list[str]:
        from tasks.roles.question_writer import entities, question_for

        ent = entities("\n\n".join(u.content for u in units))
        cats = list(dict.fromkeys(u.category for u in hidden if u.category is not None))
        return [question_for(c, ent) for c in cats]

    def simulated_answer(self, hidden, units) -> str:
        return "\n\n".join(u.content for u in hidden)

    def parse_params(self, params_path: Path, data: Any) -> SweConstructParams:
        return section(params_path, SweConstructParams, data, "construct.swe")

    def check_inputs(self, cfg: SweConstructParams, root: Path) -> None:
        """Parse and validate the sources (fast), so bad input fails before any task runs or output is written."""
        load_issues(cfg, root)

    def construct(
        self, cfg: SweConstructParams, root: Path, *, roles: RolesParams | None = None, refresh_cache: bool = False,
        cluster: ClusterParams | None = None,
    ) -> ConstructResult:
        load_task, annotate_task, mask_task = _prefect_tasks()
        if refresh_cache:
            load_task = load_task.with_options(refresh_cache=True)
            annotate_task = annotate_task.with_options(refresh_cache=True)
            mask_task = mask_task.with_options(refresh_cache=True)
        stats = RunStats()
        cfg_json = cfg.model_dump(mode="json", exclude=SPLIT_KEYS | RUNNER_KEYS)  # the split comes after the tasks
        load_state = load_task(source_path(cfg, root), cfg_json, str(root), return_state=True)
        stats.add_state(load_state)
        issues = load_state.result()
        annotation = self._annotate(issues, cfg, roles or RolesParams(), annotate_task, stats, cluster)
        issues = annotation.pop("issues")
        chunks = [issues[i : i + cfg.chunk_size] for i in range(0, len(issues), cfg.chunk_size)]
        calls = [{"issues": chunk, "cfg": cfg_json} for chunk in chunks]
        masked = fan_out(mask_task, calls, runner=cfg.task_runner, concurrency=cfg.concurrency, cluster=cluster)
        cases: list[Case] = []
        notes: Counter = Counter()
        for part, state in tqdm(masked, total=len(calls), desc="mask swe", unit="chunk", leave=False):
            stats.add_state(state)  # in submission order: the output is deterministic
            cases.extend(Case.model_validate(c) for c in part["cases"])
            notes.update(part["notes"])
        cases.sort(key=lambda c: c.case_id)
        metrics = self._metrics(cfg, issues, cases, notes)
        metrics.update(annotation)
        return ConstructResult(cases=cases, metrics=metrics, stats=stats)

    def _annotate(self, issues: list[dict], cfg: SweConstructParams, roles: RolesParams, annotate_task,
                  stats: RunStats, cluster: ClusterParams | None = None) -> dict:
        """Tag the issues that have no spans (in cached chunks on ``cfg.annotate_runner``); keeps the source order,
        drops failed ones."""
        todo = [i for i in issues if i["spans"] is None]
        if not todo:
            return {"issues": issues, "annotated_issues": 0}
        role_json = roles.annotator.model_dump(mode="json")
        weights = annotator_weights()
        chunks = [todo[i : i + cfg.chunk_size] for i in range(0, len(todo), cfg.chunk_size)]
        calls = [{"issues": chunk, "role_cfg": role_json, "weights": weights} for chunk in chunks]
        parts = fan_out(annotate_task, calls, runner=cfg.annotate_runner, concurrency=cfg.concurrency, cluster=cluster)
        done: dict[str, dict] = {}
        failures: list[dict] = []
        usage: Counter = Counter()
        for part, state in tqdm(parts, total=len(calls), desc="annotate swe", unit="chunk", leave=False):
            stats.add_state(state)
            if part["failures"]:  # only successes stay cached: a rerun retries this chunk's failed calls
                caching.forget_result(state)
            done.update((i["instance_id"], i) for i in part["issues"])
            failures.extend(part["failures"])
            usage.update({k: v for k, v in part["usage"].items() if isinstance(v, int | float)})
        kept = [done.get(i["instance_id"], i) if i["spans"] is None else i for i in issues]
        kept = [i for i in kept if i["spans"] is not None]
        role = describe_roles(roles)["annotator"]
        return {
            "issues": kept,
            "annotated_issues": len(done),
            "annotation_failures": len(failures),
            "roles": {"annotator": {**role, **{k: round(v, 4) for k, v in usage.items()}}},
        }

    def _metrics(self, cfg: SweConstructParams, issues: list[dict], cases: list[Case], notes: Counter) -> dict:
        hidden = Counter(c.key for case in cases for c in case.hidden_categories)
        sizes = Counter(str(len(case.hidden_categories)) for case in cases)
        ratio = [len(c.brief.content) / len(c.full_text) for c in cases]
        return {
            "backend": MASKING_BACKEND,
            "source": cfg.source,
            "issues": len(issues),
            "cases": len(cases),
            "spans": notes.get("spans", 0),
            "spans_not_in_text": notes.get("spans_not_in_text", 0),
            "variants_skipped": notes.get("variants_skipped_empty_or_unchanged", 0),
            "issues_without_maskable_category": notes.get("issues_without_maskable_category", 0),
            "hidden_per_category": {c.key: hidden.get(c.key, 0) for c in Category},
            "cases_by_hidden_count": {k: sizes.get(k, 0) for k in ("1", "2", "3", "4", "5", "6") if sizes.get(k)},
            "mean_brief_to_original_length": round(sum(ratio) / len(ratio), 4) if ratio else 0.0,
        }

    def write(self, result: ConstructResult, folder: Path) -> None:
        store.atomic_write_text(folder / "cases.jsonl", store.jsonl_text(result.cases))

    def validation_table(self, result: ConstructResult):
        import pandas as pd

        rows = []
        for case in result.cases:
            hidden_texts = [u.content for u in case.units if u.category in case.hidden_categories]
            rows.append(
                {
                    "case_id": case.case_id,
                    "brief": case.brief.content,
                    "brief_chars": len(case.brief.content.strip()),
                    "original_chars": len(case.full_text),
                    "hidden_subset_of_present": set(case.hidden_categories) <= set(case.present_categories),
                    "n_hidden": len(case.hidden_categories),
                    "leak_free": not masking.find_leaks(case.brief.content, hidden_texts),
                    "fences_balanced": (masking.fence_count(case.brief.content) % 2
                                        == masking.fence_count(case.full_text) % 2),
                }
            )
        return "swe_cases", pd.DataFrame(rows)


DOMAIN = SweDomain()
