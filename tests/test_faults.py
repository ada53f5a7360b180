"""Real faults (issue 43): a judge that fails, a call that failed once, a key in a URL, a params file that lies.

Each test is one probe of the hostile review; bad inputs are data-driven cases. Every refusal is one line naming
the file and the key or field; nothing is published and no secret is echoed.
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import ROOT
from tests.test_http_endpoints import loopback_only  # noqa: F401 - a fixture

KEY = "sk-faults-0123456789abcdefSECRET"

# ---- params files that lie (fail 4, fail 5; partial: domains) ----------------------------------------------------

BASE = (ROOT / "params.yaml").read_text(encoding="utf-8")


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines)


BAD_PARAMS = [
    # (id, text, what the one line must say)
    ("duplicate-top-level", BASE + "\nevaluate: {}\n", "duplicate key 'evaluate'"),
    ("duplicate-nested", BASE.replace("  max_failure_rate: 0.2", "  max_failure_rate: 0.2\n  max_failure_rate: 0.9"),
     "duplicate key 'max_failure_rate'"),
    ("alias-bomb-in-extra", BASE + "\nbomb:\n" + "\n".join("  " + ln for ln in _bomb().splitlines()) + "\n",
     "YAML aliases"),
    ("too-many-aliases", BASE + "\nx: &x 1\ny: [" + ", ".join(["*x"] * 100) + "]\n", "more than 64 YAML aliases"),
    ("oversized", BASE + "\n# " + "x" * (1024 * 1024) + "\n", "over the 1.0 MiB limit"),
    ("domain-escapes", BASE.replace("domains: [", 'domains: ["../../evil", ', 1), "'../../evil' is not a domain"),
    ("domain-trailing-newline", BASE.replace("domains: [", 'domains: ["swe\\n", ', 1), "is not a domain name"),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in BAD_PARAMS], ids=[c[0] for c in BAD_PARAMS])
def test_a_params_file_that_lies_is_refused_with_one_line(tmp_path, text, message):
    from tasks.errors import InputError
    from tasks.params import load_params

    assert "domains: [" in BASE  # the cases above edit this line
    path = tmp_path / "params.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:  # the alias bomb is refused by its alias count, never expanded
        load_params(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(str(path)) and message in line, line


def test_the_domain_name_pattern_refuses_a_trailing_newline():
    from tasks.domains import module_name
    from tasks.records import DOMAIN_NAME

    assert DOMAIN_NAME.match("swe") and not DOMAIN_NAME.match("swe\n") and not DOMAIN_NAME.match("../../evil")
    assert module_name("swe\n") is None


def test_pipeline_list_refuses_a_bad_domain_with_one_line(tmp_path, monkeypatch, capsys):
    from flows import pipeline

    (tmp_path / "params.yaml").write_text(BASE.replace("domains: [", 'domains: ["../../evil", ', 1))
    monkeypatch.setattr("flows._env.configure", lambda: tmp_path)
    assert pipeline.main(["--list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "../../evil" in err[0], err


# ---- keys in URLs and in api_key_env (fail 3; partial: api_key_env echo) ------------------------------------------

def _refused(tmp_path, edit) -> str:
    """The one line ``load_params`` refuses the repository's params with, after ``edit(params)``."""
    from tasks.errors import InputError
    from tasks.params import load_params

    params = yaml.safe_load(BASE)
    edit(params)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    with pytest.raises(InputError) as err:
        load_params(path)
    return str(err.value)


CREDENTIAL_URLS = [
    "http://127.0.0.1:8000/v1?key=" + KEY,
    "http://127.0.0.1:8000/v1?api_key=" + KEY,
    "http://127.0.0.1:8000/v1?x=1&access_token=" + KEY,
    "http://127.0.0.1:8000/v1?sig=" + KEY,
    "http://user:" + KEY + "@127.0.0.1:8000/v1",
    "http://" + KEY + "@127.0.0.1:8000/v1",
]


@pytest.mark.parametrize("url", CREDENTIAL_URLS)
def test_an_api_base_with_credentials_of_any_form_is_refused_without_echoing_them(tmp_path, url):
    from tasks.llm.redact import redact

    line = _refused(tmp_path, lambda p: p["roles"]["preset"].update(
        judge={"model": "openai/gpt-4o-mini", "api_base": url}))
    assert "must not carry credentials" in line and KEY not in line and "\n" not in line, line
    assert KEY not in redact(f"POST {url} failed")  # and in any text that quotes the URL (errors, logs)


def test_a_plain_api_base_with_an_innocent_query_is_kept():
    from tasks.llm.records import RoleConfig

    assert RoleConfig(api_base="http://127.0.0.1:8000/v1?api-version=2024-06-01").api_base.endswith("2024-06-01")


@pytest.mark.parametrize("pasted", ["ABCDEF0123456789ABCDEF0123456789", "sk_live_0123456789abcdef"])
def test_a_key_pasted_into_api_key_env_is_not_echoed(tmp_path, monkeypatch, pasted):
    from tasks.llm.client import LLMCallFailed, endpoint_kwargs
    from tasks.llm.records import RoleConfig

    monkeypatch.delenv(pasted, raising=False)
    line = _refused(tmp_path, lambda p: p["roles"]["preset"].update(
        judge={"model": "openai/gpt-4o-mini", "api_key_env": pasted}))
    assert pasted not in line and "api_key_env" in line
    cfg = RoleConfig.model_construct(backend="llm", model="openai/x", api_key_env=pasted, extra={}, api_base=None)
    with pytest.raises(LLMCallFailed) as failed:
        endpoint_kwargs(cfg)
    assert pasted not in str(failed.value)


@pytest.mark.parametrize(("address", "message"), [
    ("file:///etc/passwd", "Dask scheduler address"),
    ("127.0.0.1:8786", "Dask scheduler address"),
    ("tcp://user:" + KEY + "@127.0.0.1:8786", "must not carry credentials"),
])
def test_a_bad_cluster_address_is_one_line(tmp_path, address, message):

    line = _refused(tmp_path, lambda p: p["cluster"].update(address=address))
    assert "field 'cluster.address'" in line and message in line and KEY not in line and "\n" not in line, line


def test_an_unreachable_scheduler_is_one_line():
    from tasks.cluster import ClusterUnreachable, _entered

    class Refusing:
        def __enter__(self):
            raise OSError("Timed out trying to connect to tcp://127.0.0.1:9 after 1 s")

        def __exit__(self, *exc):
            return False

    cluster = type("C", (), {"address": "tcp://127.0.0.1:9"})()
    with pytest.raises(ClusterUnreachable) as err, _entered(Refusing(), "dask", cluster):
        pass
    assert str(err.value).startswith("task_runner dask: could not reach cluster.address tcp://127.0.0.1:9")


# ---- a reply that echoes the key never reaches the call cache (partial) -------------------------------------------


@pytest.mark.slow  # litellm's import and a real HTTP round trip
@pytest.mark.usefixtures("loopback_only")
def test_a_reply_echoing_the_key_is_stored_redacted(tmp_path, monkeypatch):
    from pydantic import BaseModel

    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMClient
    from tasks.llm.records import RoleConfig
    from tests.openai_server import ChatServer

    class Answer(BaseModel):
        answer: str

    monkeypatch.setenv("FAULTS_TEST_API_KEY", KEY)
    server = ChatServer(reply=lambda body: json.dumps({"answer": f"your key is {KEY}"})).start()
    try:
        cache = CallCache(tmp_path / "calls.sqlite")
        client = LLMClient(cache)
        cfg = RoleConfig(backend="llm", model="openai/echo", api_base=server.url, api_key_env="FAULTS_TEST_API_KEY",
                         max_retries=0)
        [got] = client.map_structured(role="probe", cfg=cfg, messages=[[{"role": "user", "content": "hi"}]],
                                      schema=Answer)
        assert server.count() == 1 and KEY not in got.answer
        cache.close()
        assert KEY.encode() not in (tmp_path / "calls.sqlite").read_bytes()
        for extra in tmp_path.glob("calls.sqlite-*"):
            assert KEY.encode() not in extra.read_bytes()
    finally:
        server.stop()


# ---- a role failure is never a cache hit; evaluate@swe has the failure-rate gate (fail 1, fail 2) ----------------


def _unit(key: str, **fields):
    from tasks.evaluation.question_units import QuestionUnit

    return QuestionUnit(key=key, method="m", case_id="c", source_id="s", **fields)


def test_the_unit_store_keeps_only_successes_and_refresh_serves_none(tmp_path):
    from tasks.evaluation.engine import UnitStore
    from tasks.evaluation.question_units import QuestionUnit
    from tasks.store import atomic_write_text

    store = UnitStore(tmp_path, QuestionUnit)
    ok = _unit("a" * 64)
    failed = [_unit("b" * 64, failure="question_writer: provider: 500"),
              _unit("c" * 64, role_failures={"redundancy_judge": 2}),
              _unit("d" * 64, usage={"answerability_judge": {"requests": 2, "failures": 1}})]
    assert store.put(ok) and store.get(ok.key) == ok
    for unit in failed:
        assert not store.put(unit) and not store.path(unit.key).exists()
        atomic_write_text(store.path(unit.key), unit.model_dump_json())  # stored by an older version
        assert store.get(unit.key) is None  # ... is retried, never replayed
    assert UnitStore(tmp_path, QuestionUnit, refresh=True).get(ok.key) is None


def test_an_episode_unit_with_a_failed_judge_is_not_stored(tmp_path):
    from types import SimpleNamespace

    from tasks.evaluation.engine import role_failed
    from tasks.evaluation.runs import UnitResult

    judged = SimpleNamespace(judge=SimpleNamespace(judge_failed=True), episode=SimpleNamespace(usage={}))
    assert UnitResult.role_failed.fget(judged) is True
    fine = SimpleNamespace(judge=SimpleNamespace(judge_failed=False), episode=SimpleNamespace(usage={}))
    assert UnitResult.role_failed.fget(fine) is False
    assert role_failed(SimpleNamespace(role_failed=True))


@pytest.mark.slow  # ~30 s on a busy machine: two whole question evaluations
def test_evaluate_swe_with_both_judges_failing_is_gated_and_a_rerun_retries(tmp_path):
    from tasks.evaluation.question_inputs import load_question_inputs
    from tasks.evaluation.question_lists import evaluate_questions, unit_store
    from tasks.roles.config import RolesParams
    from tasks.roles.failures import RoleFailureRateError, check_failure_rates
    from tests.test_role_failures import FAILING
    from tests.test_swe_eval import project

    roles = RolesParams(redundancy_judge=FAILING, answerability_judge=FAILING)
    root, settings = project(tmp_path, [{"name": "no_questions"}, {"name": "ask_everything"}])
    inputs = load_question_inputs(root, settings, domain="swe")
    summary = evaluate_questions(inputs.cases, settings, roles, tmp_path / "out", root=root, inputs=inputs)
    counts = {c.role: c for c in summary["run"]["failure_counts"]}
    assert {"redundancy_judge", "answerability_judge"} <= set(counts)
    assert counts["redundancy_judge"].rate == 1.0 and counts["answerability_judge"].rate == 1.0
    with pytest.raises(RoleFailureRateError) as err:
        check_failure_rates(summary["run"]["failure_counts"], roles.max_failure_rate, stage="evaluate@swe")
    assert str(err.value).startswith("evaluate@swe: role answerability_judge failed") and "\n" not in str(err.value)
    stored = list(unit_store(root, "swe").rglob("*.json"))
    assert all("ask_everything" not in p.read_text() for p in stored)  # only the units without a judge call
    again = evaluate_questions(inputs.cases, settings, roles, tmp_path / "out2", root=root, inputs=inputs)
    assert again["run"]["computed"] == len(inputs.cases)  # the failed units were retried, not replayed


def test_evaluate_has_a_refresh_cache_option():
    from flows.evaluate import parse_args

    assert parse_args(["--domain", "optimization", "--refresh-cache"]).refresh_cache is True
    assert parse_args(["--domain", "optimization"]).refresh_cache is False


# ---- metrics staged with the outputs (partial) --------------------------------------------------------------------


def test_a_failing_metrics_write_leaves_old_outputs_and_old_metrics(tmp_path, monkeypatch):
    import errno

    from tasks import stage_metrics
    from tasks.errors import ClarifyflowError
    from tasks.stage_metrics import metrics_path, publish_with_metrics
    from tasks.store import staged_dir

    final = tmp_path / "data" / "eval" / "x"
    with staged_dir(final) as staging:
        (staging / "summary.json").write_text('{"old": true}\n')
        publish_with_metrics(staging, final, tmp_path, "evaluate/x", {"cases": 1, "seconds": 3.0})
    metrics = metrics_path(tmp_path, "evaluate/x")
    before = metrics.read_bytes()
    assert json.loads(before) == {"cases": 1} and (final / "summary.json").read_text() == '{"old": true}\n'

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(stage_metrics.tempfile, "mkstemp", full_disk)
    with staged_dir(final) as staging:
        (staging / "summary.json").write_text('{"new": true}\n')
        with pytest.raises(ClarifyflowError) as err:
            publish_with_metrics(staging, final, tmp_path, "evaluate/x", {"cases": 2})
    line = str(err.value)
    assert "\n" not in line and "nothing was published" in line and "data/metrics/stages" in line, line
    assert (final / "summary.json").read_text() == '{"old": true}\n' and metrics.read_bytes() == before
    monkeypatch.undo()
    leftovers = [p.name for p in metrics.parent.iterdir() if p.name != metrics.name]
    assert leftovers == []


# ---- an error inside a flow is one line; no exception pickles left behind (partials) ------------------------------

FLOW_SCRIPT = """
import sys
from flows import _env
_env.configure()
from flows.cli import run_main
from prefect import flow, task
from tasks.errors import InputError

@task
def fails():
    raise InputError("params.yaml", "boom", field="evaluate.swe")

@flow
def probe():
    return fails()

sys.exit(run_main(lambda: probe()))
"""


@pytest.mark.prefect
@pytest.mark.slow  # two flow runs in fresh processes (Prefect's import, a server round trip)
def test_an_error_inside_a_flow_is_one_line_and_leaves_no_pickles(tmp_path, prefect_api):
    import os
    import subprocess
    import sys

    script = tmp_path / "probe.py"
    script.write_text(FLOW_SCRIPT)
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_API_URL": prefect_api, "PREFECT_HOME": str(tmp_path / "h"),
           "PREFECT_LOCAL_STORAGE_PATH": str(results)}
    env.pop("CLARIFYFLOW_DEBUG", None)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2 and lines == ["error: params.yaml: field 'evaluate.swe': boom"], proc.stderr
    assert not results.is_dir() or list(results.iterdir()) == []
    debug = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env={**env, "CLARIFYFLOW_DEBUG": "1"},
                           capture_output=True, text=True, timeout=600)
    assert debug.returncode == 2 and "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.rstrip().endswith("error: params.yaml: field 'evaluate.swe': boom")


def test_a_bug_is_one_line_without_the_debug_switch(monkeypatch, capsys):
    from flows.cli import EXIT_ERROR, run_main

    def bug():
        raise KeyError(f"no such thing {KEY}")

    monkeypatch.delenv("CLARIFYFLOW_DEBUG", raising=False)
    monkeypatch.setenv("FAULTS_TEST_API_KEY", KEY)
    assert run_main(bug) == EXIT_ERROR
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: unexpected KeyError") and "CLARIFYFLOW_DEBUG=1" in line and KEY not in line
    monkeypatch.setenv("CLARIFYFLOW_DEBUG", "1")
    with pytest.raises(KeyError):
        run_main(bug)


# ---- problems with nothing left to brief, requests of control characters (partial) -------------------------------

SKIPPED_RECORDS = [
    ("optimization", {"problem_id": "opt_min", "title": "t", "text": "Minimise cost."}, "empty brief"),
    ("analytics", {"id": "ana_ctrl", "title": "t", "text": "\x01\x02\x03\x7f"}, "only control characters"),
]


@pytest.mark.parametrize(("domain", "record", "reason"), SKIPPED_RECORDS, ids=[r[0] for r in SKIPPED_RECORDS])
def test_a_record_with_nothing_to_brief_is_skipped_with_a_named_reason(domain, record, reason):
    from tasks.domains import get_domain
    from tasks.domains.units import build_unit_chunk, skipped_reasons
    from tasks.params import RUNNER_KEYS, SPLIT_KEYS
    from tasks.roles.config import RolesParams

    dom = get_domain(domain)
    cfg = dom.params_model().model_dump(mode="json", exclude=SPLIT_KEYS | RUNNER_KEYS)
    roles = RolesParams()
    out = build_unit_chunk(domain, [record], cfg, {n: roles.get(n).model_dump(mode="json") for n in dom.roles_used})
    assert out["cases"] == []  # never published with an empty brief
    [(named, count)] = skipped_reasons(out["notes"]).items()
    assert reason in named and count == 1


def test_a_chunk_with_a_failed_call_is_dropped_from_the_task_cache(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from tasks.caching import forget_result

    stored = tmp_path / "results" / "0123abcd"
    stored.parent.mkdir()
    stored.write_text("{}")
    monkeypatch.setenv("PREFECT_LOCAL_STORAGE_PATH", str(stored.parent))
    state = SimpleNamespace(data=SimpleNamespace(metadata=SimpleNamespace(storage_key="0123abcd")))
    assert forget_result(state) and not stored.exists()
    stored.write_text("{}")
    assert forget_result(SimpleNamespace(data=SimpleNamespace(metadata=SimpleNamespace(storage_key=str(stored)))))
    assert not forget_result(SimpleNamespace(data=None))  # an unpersisted result: nothing to drop


def test_a_failing_question_writer_is_reported_as_the_role_that_failed():
    from tasks.llm.records import RoleConfig
    from tasks.roles.config import RolesParams
    from tasks.roles.failures import RoleFailureRateError, check_failure_rates, unit_failure_counts

    roles = RolesParams(question_writer=RoleConfig(backend="llm", model="mock/x"))
    units = [_unit(f"{n:064d}", failure="question_writer: provider: 500 Internal Server Error") for n in range(8)]
    with pytest.raises(RoleFailureRateError) as err:
        check_failure_rates(unit_failure_counts(units, roles), roles.max_failure_rate, stage="evaluate@swe")
    assert "role question_writer failed 8 of 8" in str(err.value) and "expectations" not in str(err.value)
    local = unit_failure_counts(units, RolesParams())  # a local role's failure is not an outage
    assert local == []
