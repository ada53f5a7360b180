"""construct@optimization with served roles: what the server is sent leaves room for a full decomposition.

No server here: the schema a grammar-constrained server compiles (``tasks/llm/client.py: json_object_schema_format``)
is checked directly against decompositions of the sample problems (docs/served-models.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tasks.domains.optimization.decompose import DecomposeOutput
from tasks.llm.client import json_object_schema_format

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples" / "optimization" / "problems.jsonl"


def line_units(text: str) -> dict:
    """A decomposition as the decomposer is asked to write it: every table with its lead-in one unit, every other
    non-empty line one unit (a stand-in for a model's reply; only its shape matters here)."""
    units, table = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            lead = units.pop()["content"] if units and units[-1]["content"].endswith(":") else ""
            units.append({"kind": "data", "content": "\n".join([lead, *table]).strip()})
            table = []
        if line.strip():
            units.append({"kind": "constraint", "content": line.strip("- ").strip()})
    if table:
        units.append({"kind": "data", "content": "\n".join(table)})
    return {"units": units}


def test_the_grammar_sent_for_the_decomposer_admits_a_full_decomposition_of_every_sample_problem():
    sent = json_object_schema_format(DecomposeOutput)["schema"]
    problems = [json.loads(line) for line in SAMPLES.read_text().splitlines() if line.strip()]
    replies = [line_units(p["text"]) for p in problems]
    # the samples need it: more units than a grammar's default list cap, tables longer than its string cap
    assert max(len(r["units"]) for r in replies) > 8
    assert max(len(u["content"]) for r in replies for u in r["units"]) > 240
    for reply in replies:
        jsonschema.validate(reply, sent)  # raises when the grammar could not produce this reply
        assert DecomposeOutput.model_validate(reply).units


SERVED = {"backend": "llm", "model": "hosted_vllm/smollm2-135m-instruct", "api_base": "http://127.0.0.1:9/v1",
          "structured_output": "json_object_schema"}


def served_roles(*names: str):
    from tasks.llm.records import RoleConfig
    from tasks.roles.config import RolesParams

    return RolesParams(**{name: RoleConfig(**SERVED) for name in names})


def chunk_usage(requests: int, failures: dict[str, int]) -> dict:
    """A chunk's accounting snapshot of the slot annotator, as a served run records it; the rewriter ran locally."""
    return {"slot_annotator": {"backend": "llm", "model": SERVED["model"], "requests": requests,
                               "provider_calls": requests + 1, "failures": sum(failures.values()),
                               "regenerations": 2, "failure_kinds": failures, "latency_s": 1.5},
            "rewriter": {"backend": "local", "requests": requests, "failures": 0, "failure_kinds": {}}}


def test_construct_metrics_give_each_llm_roles_failures_by_kind_summed_over_chunks():
    from tasks.domains import get_domain
    from tasks.domains.units import sum_usage

    dom = get_domain("optimization")
    usage = sum_usage([chunk_usage(4, {"invalid_output": 2}), chunk_usage(3, {"invalid_output": 1, "truncated": 1})],
                      dom.roles_used)
    metrics = dom.metrics(dom.params_model(), [], [], {}, [], usage, served_roles("slot_annotator"))
    annotator = metrics["roles"]["slot_annotator"]
    assert annotator["failures_by_kind"] == {"invalid_output": 3, "truncated": 1}
    assert (annotator["requests"], annotator["failures"], annotator["regenerations"]) == (7, 4, 4)
    assert annotator["model"] == SERVED["model"]
    assert "failures_by_kind" not in metrics["roles"]["rewriter"]  # local roles: the default metrics are unchanged
    assert "failure_kinds" not in annotator and "failure_kinds" not in metrics["roles"]["rewriter"]


def test_an_empty_case_set_is_refused_with_one_line_that_says_why():
    import pytest

    from flows.construct import check_not_empty
    from tasks.errors import GateError

    metrics = {"skipped": {"no unit that may be hidden": 3},
               "roles": {"decomposer": {"backend": "llm", "model": SERVED["model"], "requests": 3, "failures": 0,
                                        "failures_by_kind": {}},
                         "slot_annotator": {"backend": "llm", "model": SERVED["model"], "requests": 2, "failures": 2,
                                            "failures_by_kind": {"invalid_output": 2}},
                         "rewriter": {"backend": "local", "requests": 3}}}
    with pytest.raises(GateError) as err:
        check_not_empty("optimization", metrics, 0)
    line = str(err.value)
    assert "\n" not in line and line.startswith("validation gate failed for data/cases/optimization: no case")
    assert "skipped 3 (no unit that may be hidden)" in line
    assert f"decomposer ({SERVED['model']}) failed 0 of 3 requests;" in line
    assert "slot_annotator" in line and "failed 2 of 2 requests (invalid_output 2)" in line
    assert "rewriter" not in line
    check_not_empty("optimization", metrics, 1)  # a case to publish: the case suite decides


def test_with_served_evaluation_roles_the_sanity_ladder_reports_instead_of_failing(capsys):
    from tasks.evaluation.episode_kind import check_ladder
    from tasks.evaluation.runs import EvalSettings

    methods = [{"name": "oracle", "protocols": ["open"]}, {"name": "ready_now", "protocols": ["open"]},
               {"name": "a", "method": "freeqa", "protocols": ["open"]}]
    floor = {"AllSlotExactRestoreRate": 0.0, "CoreExactRestoreRate": 0.0, "WeightedSlotScore_macro": 0.0,
             "PrematureStopRate": 1.0}
    # what a 135M model gives: the oracle recovers nothing, so every row sits at the floor
    summary = {"rows": {"open::a": dict(floor)},
               "reference_rows": {"open::oracle": dict(floor), "open::ready_now": dict(floor)}}
    found = check_ladder(summary, EvalSettings(methods=methods), artifact="x", served=True)
    assert any("oracle" in line for line in found) and any("between" in line for line in found)
    assert "sanity ladder: " in capsys.readouterr().out  # printed, and returned for the stage metrics


def test_llama_cpp_compiles_every_schema_the_served_preset_sends():
    """llama-cpp-python's server turns a schema it cannot convert into free JSON without saying so (its
    ``_grammar_for_json_schema`` falls back): the slot annotator's name pattern with ``(?:`` did that, so the 135M
    model wrote ``{"type": "json", ...}`` and every annotation failed validation. A grammar llama.cpp's parser
    refuses kills the server: the decomposer's first content bound (1,500 characters) did that."""
    import pytest

    llama_cpp = pytest.importorskip("llama_cpp", reason="the serve extra is not installed")
    from llama_cpp import llama_grammar

    from tasks.llm.smollm2_weights import gguf_path
    from tasks.roles.registry import ROLE_NAMES, get_spec
    from tests.test_registry import import_every_role

    import_every_role()
    # the served model's vocabulary only (no weights): llama.cpp's own grammar parser, as the server runs it
    vocab = llama_cpp.llama_model_get_vocab(llama_cpp.Llama(model_path=str(gguf_path()), vocab_only=True,
                                                            verbose=False).model)
    refused = {}
    for name in ROLE_NAMES:
        schema = json_object_schema_format(get_spec(name).output_model)["schema"]
        try:
            text = llama_grammar.json_schema_to_gbnf(json.dumps(schema))
        except Exception as err:  # noqa: BLE001 - any refusal is the finding
            refused[name] = f"converter: {type(err).__name__}: {err}"
            continue
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode(), b"root")
        if not sampler:  # llama-cpp-python's server goes on with no grammar and dies (segfault)
            refused[name] = "llama.cpp's grammar parser refused it"
            continue
        llama_cpp.llama_sampler_free(sampler)
    assert refused == {}


def test_the_annotators_schema_pattern_admits_exactly_the_names_its_validation_admits():
    import re

    from tasks.domains.optimization.annotate import SNAKE, SlotAnnotation

    sent = re.compile(SlotAnnotation.model_json_schema()["properties"]["name"]["pattern"])
    for name in ("maximum_weekly_kiln_hours", "budget", "a1_b2_c3_d4_e5_f6", "week_4_overtime"):
        assert SNAKE.match(name) and sent.match(name)
    for name in ("Budget", "two words", "a_b_c_d_e_f_g", "trailing_", "_leading", ""):
        assert not SNAKE.match(name) and not sent.match(name)
