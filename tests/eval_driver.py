"""A standalone evaluation run for the kill/resume test and the mock benchmark (not a test module).

Agent roles answer through a mock model that replays each role's local output (real LLM-path traffic: call
cache, retries, latency, a call log counted across processes). Usage:
    python tests/eval_driver.py --cases F --store DIR --out summary.json --call-log LOG [--latency 0.05]
The LLM call cache lives under $CLARIFYFLOW_CACHE_DIR (set it to a private folder).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

AGENT_ROLES = ("or_generic_agent", "or_choice_agent", "or_gap_search", "or_candidate_agent", "or_question_selector",
               "or_open_gap_search", "or_open_candidate_agent")


def settings_for(methods: list[dict], *, repeats: int, max_turns: int, concurrency: int):
    from tasks.evaluation.runs import EvalSettings

    return EvalSettings(methods=methods, repeats=repeats, max_turns=max_turns, concurrency=concurrency,
                        bootstrap=200, task_runner="serial")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", required=True)
    parser.add_argument("--limit", type=int, default=3)
    parser.add_argument("--store", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--call-log", required=True)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--runner", default="serial")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--methods", default="freeqa:open,interopt:mc_d")
    args = parser.parse_args()

    from tasks.domains import domain_context
    from tasks.evaluation.evaluate import play
    from tasks.evaluation.metrics import summarise
    from tasks.evaluation.runs import episode_store, load_cases
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import replay_local
    from tasks.llm.records import RoleConfig
    from tasks.roles.config import RolesParams

    ensure_registered()
    model = replay_local("replay-driver", latency_s=args.latency, call_log=args.call_log)
    roles = RolesParams(**{r: RoleConfig(backend="llm", model=model, concurrency=args.concurrency, max_retries=0)
                           for r in AGENT_ROLES})
    methods = [{"name": m.split(":")[0], "protocols": [m.split(":")[1]]} for m in args.methods.split(",")]
    settings = settings_for(methods, repeats=args.repeats, max_turns=8, concurrency=args.concurrency)
    cases = load_cases(Path(args.cases), limit=args.limit)
    results, stats = play(cases, settings, roles, episode_store(Path(args.store)),
                          domain=domain_context("optimization"), client=LLMClient(), runner=args.runner)
    summary = summarise([r.episode for r in results], [r.judge for r in results], {c.case_id: c for c in cases},
                        n_resamples=200, seed=0)
    Path(args.out).write_text(json.dumps({"summary": summary, "played": stats.computed, "reused": stats.reused},
                                         sort_keys=True, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
