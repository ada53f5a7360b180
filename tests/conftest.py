"""Shared fixtures: one real Prefect server for the whole run, and throwaway copies of the project."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
OR_CLARIFY = SHARED / "data" / "or-clarify"
"""The 100 published OR-Clarify cases (TOML), when ../shared exists."""
CLARITI_WORKBOOK = SHARED / "data" / "clariti" / "data.xlsx"
SAMPLES = ROOT / "data" / "samples" / "swe" / "issues.jsonl"
MINI = ROOT / "tests" / "data" / "mini_issues.jsonl"

# Everything Prefect writes during tests goes to a private folder; a user's PREFECT_API_URL is never used.
_TMP = Path(tempfile.mkdtemp(prefix="clarifyflow-tests-"))
os.environ.pop("PREFECT_API_URL", None)
os.environ["PREFECT_HOME"] = str(_TMP / "prefect-home")
os.environ["PREFECT_LOCAL_STORAGE_PATH"] = str(_TMP / "prefect-results")
for key, value in {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "DO_NOT_TRACK": "1",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
    "DVC_NO_ANALYTICS": "1",
    "GX_ANALYTICS_ENABLED": "false",
    "LITELLM_OFFLINE_MODE": "true",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    # one torch thread per process: pytest -n auto already runs a worker per core, so more would only contend
    "CLARIFYFLOW_TORCH_THREADS": "1",
    # test projects share this checkout's model caches (the SmolLM2 conversion, embeddings) instead of redoing them
    "CLARIFYFLOW_CACHE_DIR": str(ROOT / ".cache"),
}.items():
    os.environ.setdefault(key, value)


SERVER_DIR_ENV = "CLARIFYFLOW_TEST_SERVER_DIR"
"""Set by the controller of a ``pytest -n N`` run: the folder where its one Prefect server writes ``ready`` (the
URL) or ``failed`` (why). Workers inherit it, so the whole run shares one server."""
SERVER_TIMEOUT_S = 240


def _start_server(folder: Path) -> None:
    """Start a Prefect server for the run and write its URL (or the reason it failed) under ``folder``."""
    from tasks import prefect_server

    try:
        url = prefect_server.start(ROOT, port=prefect_server.free_port(), folder=folder, home=folder / "home",
                                   timeout=SERVER_TIMEOUT_S)
    except Exception as err:  # noqa: BLE001 - reported to every worker that asks for the server
        (folder / "failed").write_text(f"{type(err).__name__}: {err}")
        return
    (folder / "ready").write_text(url)


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


def pytest_configure(config):
    config._suite_started = time.monotonic()
    if _is_controller(config):
        # One server for every worker, started in the background while the workers collect.
        import threading

        folder = _TMP / "server"
        folder.mkdir(parents=True, exist_ok=True)
        os.environ[SERVER_DIR_ENV] = str(folder)
        config._server_thread = threading.Thread(target=_start_server, args=(folder,), daemon=True)
        config._server_thread.start()


def pytest_unconfigure(config):
    thread = getattr(config, "_server_thread", None)
    if thread is not None:
        from tasks import prefect_server

        thread.join(timeout=SERVER_TIMEOUT_S)
        prefect_server.stop(ROOT, folder=_TMP / "server")


def _wait_for_shared_server(folder: Path) -> str:
    deadline = time.monotonic() + SERVER_TIMEOUT_S + 30
    while time.monotonic() < deadline:
        if (folder / "ready").is_file():
            return (folder / "ready").read_text().strip()
        if (folder / "failed").is_file():
            raise RuntimeError(f"the run's Prefect server did not start: {(folder / 'failed').read_text()}")
        time.sleep(0.2)
    raise RuntimeError(f"the run's Prefect server was not ready after {SERVER_TIMEOUT_S + 30} s ({folder})")


def server_folder() -> Path:
    """Where the run's Prefect server keeps its state (its database under ``home``)."""
    return Path(os.environ.get(SERVER_DIR_ENV) or _TMP / "server")


@pytest.fixture(scope="session")
def prefect_api() -> str:
    """A real Prefect server on a free loopback port, shared by the whole test run (every xdist worker too)."""
    assert "prefect" not in sys.modules or os.environ.get("PREFECT_API_URL"), \
        "prefect imported before the server fixture"
    shared = os.environ.get(SERVER_DIR_ENV)
    if shared:
        url = _wait_for_shared_server(Path(shared))
        os.environ["PREFECT_API_URL"] = url
        yield url
        return
    from tasks import prefect_server

    folder = _TMP / "server"
    url = prefect_server.start(ROOT, port=prefect_server.free_port(), folder=folder, home=folder / "home",
                               timeout=SERVER_TIMEOUT_S)
    os.environ["PREFECT_API_URL"] = url
    yield url
    prefect_server.stop(ROOT, folder=folder)


def tiny_params(**construct_overrides) -> dict:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    swe = params["construct"]["swe"]
    swe.update({"limit": 4, "variants_per_issue": 2, "chunk_size": 2})
    swe.update(construct_overrides)
    params["construct"]["optimization"].update({"limit": 4, "chunk_size": 2})
    params["construct"]["analytics"].update({"limit": 3, "chunk_size": 2})
    params["shap"].update({"bootstrap": 50})
    params["training"]["overrides"] = {
        "sft": {"max_steps": 1, "batch_size": 2, "max_length": 256},
        "grpo": {"max_steps": 1, "batch_size": 2, "num_generations": 2, "max_completion_length": 16},
    }
    params["training"]["grpo_prompts"] = 2
    params["training"]["heldout"] = {"every": 1, "max_new_tokens": 16, "limit": 2}
    params["shap"]["simulated"].update({"n_variants": 600})
    params["evaluate"]["optimization"].update({
        "limit": 2, "repeats": 1, "max_turns": 6, "bootstrap": 200, "concurrency": 2,
        "personas": [{"name": "cooperative"}], "persona_methods": None,  # the persona sweep: tests/test_personas.py
        "methods": [{"name": "freeqa", "protocols": ["open"]}, {"name": "mc_d", "protocols": ["mc_d"]},
                    {"name": "interopt", "protocols": ["open", "mc_d"]}],
    })
    params["evaluate"]["analytics"].update({
        "limit": 2, "repeats": 1, "max_turns": 6, "bootstrap": 200, "concurrency": 2,
        "methods": [{"name": "freeqa", "protocols": ["open"]}, {"name": "mc_d", "protocols": ["mc_d"]}],
    })
    params["evaluate"]["swe"].update({
        "limit": 3, "bootstrap": 200,
        "methods": [{"name": "no_questions"}, {"name": "oracle_template"}, {"name": "ask_everything"},
                    {"name": "grpo_policy", "method": "policy",
                     "options": {"adapter": "data/models/grpo/adapter", "max_new_tokens": 24}}],
    })
    return params


def write_params(repo: Path, params: dict) -> None:
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh copy of the pipeline (code, dvc.yaml, samples, .dvc with its plot templates) as its own git + DVC
    repository, tiny params."""
    repo = tmp_path / "repo"
    repo.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("flows", "tasks", "recipes"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=ignore)
    shutil.copytree(ROOT / "data" / "samples", repo / "data" / "samples")
    for name in ("dvc.yaml", ".dvcignore", ".gitignore"):
        shutil.copy(ROOT / name, repo / name)
    (repo / ".dvc").mkdir()
    for name in ("config", ".gitignore"):
        shutil.copy(ROOT / ".dvc" / name, repo / ".dvc" / name)
    shutil.copytree(ROOT / ".dvc" / "plots", repo / ".dvc" / "plots")  # the plot templates dvc.yaml names
    write_params(repo, tiny_params())
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def load_benchmark(name: str):
    """The script ``benchmarks/<name>.py`` as a module (benchmarks are scripts, not a package)."""
    from benchmarks.siblings import load

    return load(name)


RUN_TIMEOUT_S = 1200
"""A hang guard for one command (a whole stage, or the whole DAG: 165-194 s alone on 2 cores), several times what
it takes on a busy machine; never a performance check."""


def run(repo: Path, *args: str, check: bool = True, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    """Run a command in a project copy with the venv first on PATH and the project's own Prefect state."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PREFECT_HOME", None)
    env.pop("PREFECT_LOCAL_STORAGE_PATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a project copy's processes compile its modules once, not each time
    env["PYTHONPATH"] = str(repo)
    proc = subprocess.run(list(args), cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def python(repo: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return run(repo, sys.executable, *args, **kw)


def dvc(repo: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return run(repo, sys.executable, "-m", "dvc", *args, **kw)


def pytest_collection_modifyitems(config, items):
    # the longest tests first: under xdist the first chunk of the list starts at once, so the run's longest test
    # does not start last and set the wall time alone
    items.sort(key=lambda item: "long" not in item.keywords)
    if SHARED.is_dir():
        return
    skip = pytest.mark.skip(reason="../shared is absent")
    for item in items:
        if "realdata" in item.keywords:
            item.add_marker(skip)


SUITE_BUDGET_S = 360
"""The default suite's budget, alone on 2 cores (README: Two commands)."""
SUITE_GUARD_FACTOR = 2.0
"""The guard fails a full default run only past budget x this: a wide margin, so a loaded machine does not trip it
(the same code's suite took 475 s and 539 s in two runs on the same idle 2-core machine, 2026-12-04)."""
DEFAULT_MARKEXPR = "not slow and not gpu"


def _full_default_run(config) -> bool:
    return (config.args_source == pytest.Config.ArgsSource.TESTPATHS
            and config.option.markexpr == DEFAULT_MARKEXPR and not config.option.keyword)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput") or not _full_default_run(config):
        return
    budget = float(os.environ.get("CLARIFYFLOW_SUITE_BUDGET_S", SUITE_BUDGET_S))
    elapsed = time.monotonic() - config._suite_started
    config._suite_over = (elapsed, budget) if elapsed > budget * SUITE_GUARD_FACTOR else None
    if config._suite_over and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    over = getattr(config, "_suite_over", None)
    if over:
        elapsed, budget = over
        terminalreporter.write_line(
            f"suite budget exceeded: the default suite took {elapsed:.0f} s, over {SUITE_GUARD_FACTOR} x its "
            f"{budget:.0f} s budget; the slowest tests are listed above (--durations)", red=True)
