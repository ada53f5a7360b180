"""Evaluation fan-out: 100 cases x K = 5 InterOPT episodes on the mock provider, wall time vs the critical path.

    .venv/bin/python benchmarks/or_eval_throughput.py [--cases ../shared/data/or-clarify] [--repeats 5]
        [--latency 0.2] [--concurrency 32] [--protocol mc_d] [--runner threads]

InterOPT's agent roles (gap search, candidates, selector; open: gap search and candidates) answer through a mock
model with ``--latency`` seconds per call that replays each role's local output, so the episodes are the real ones
and every agent call pays the latency; the simulated user, detector and judge stay local. Episodes fan out over
Prefect's ThreadPoolTaskRunner inside a flow (``--runner threads``), with a fresh call cache and unit store.

The latency ideal: each episode's agent calls are sequential, so an episode needs at least ``calls_i x latency``;
with ``c`` episodes in flight the run needs at least ``max(max_i calls_i, sum_i calls_i / c) x latency``. The
compute floor: the same episodes with zero latency (the CPU work of the local user, detector, judge and the replayed
agents). The critical path is bounded by the larger of the two; the target (issue 7) is wall time <= 1.3x the
ideal, and both ratios are reported. Figures go to stdout and benchmarks/out/or_eval_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "out" / "or_eval_throughput.json"
AGENT_ROLES = ("or_gap_search", "or_candidate_agent", "or_question_selector", "or_open_gap_search",
               "or_open_candidate_agent")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=str(ROOT.parent / "shared" / "data" / "or-clarify"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--protocol", default="mc_d", choices=["open", "mc_d"])
    parser.add_argument("--runner", default="threads", choices=["threads", "dask", "serial"])
    parser.add_argument("--no-floor", action="store_true", help="skip the zero-latency pass (compute floor)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="or-eval-bench-"))
    # the MiniLM embedding cache is the repo's (warm); the LLM call cache and the unit store are fresh
    from flows import _env

    _env.configure(ROOT)
    from prefect import flow

    from tasks.domains import domain_context
    from tasks.evaluation.evaluate import play
    from tasks.evaluation.runs import EvalSettings, episode_store, load_cases
    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MOCK, replay_local
    from tasks.llm.records import RoleConfig
    from tasks.roles.config import RolesParams

    ensure_registered()
    cases = load_cases(Path(args.cases), limit=args.limit)
    settings = EvalSettings(methods=[{"name": "interopt", "protocols": [args.protocol]}], repeats=args.repeats,
                            concurrency=args.concurrency, task_runner=args.runner, bootstrap=200)

    def measure(latency: float, tag: str):
        model = replay_local(f"bench-eval-{tag}", latency_s=latency)
        roles = RolesParams(**{r: RoleConfig(backend="llm", model=model, max_retries=0) for r in AGENT_ROLES})
        client = LLMClient(CallCache(tmp / f"calls-{tag}.sqlite"))

        @flow(name=f"or-eval-throughput-{tag}")
        def bench():
            started = time.perf_counter()
            results, stats = play(cases, settings, roles, episode_store(tmp / f"store-{tag}"),
                                  domain=domain_context("optimization"), client=client, runner=args.runner)
            return results, stats, time.perf_counter() - started

        return bench()

    floor = None
    if not args.no_floor:
        # the same episodes with no latency: what the CPU work alone takes on this machine (local user, detector,
        # judge and the replayed agent compute), the other bound on the critical path
        _, _, floor = measure(0.0, "floor")
    results, stats, elapsed = measure(args.latency, "latency")
    calls = [sum(u.calls for role, u in r.episode.usage.items() if role in AGENT_ROLES) for r in results]
    ideal = max(max(calls), sum(calls) / args.concurrency) * args.latency
    bound = max(ideal, floor or 0.0)
    figures = {
        "cases": len(cases), "repeats": args.repeats, "episodes": len(results), "protocol": args.protocol,
        "runner": args.runner, "latency_s": args.latency, "concurrency": args.concurrency,
        "provider_calls": sum(calls), "provider_calls_seen_by_mock": MOCK.scripts.get("bench-eval-latency").calls,
        "max_calls_per_episode": max(calls), "elapsed_s": round(elapsed, 2),
        "latency_ideal_s": round(ideal, 2), "ratio_vs_latency_ideal": round(elapsed / ideal, 3) if ideal else None,
        "compute_floor_s": round(floor, 2) if floor is not None else None,
        "critical_path_bound_s": round(bound, 2), "ratio_vs_bound": round(elapsed / bound, 3) if bound else None,
        "target_ratio": 1.3, "ok_vs_latency_ideal": bool(ideal) and elapsed <= 1.3 * ideal,
        "ok_vs_bound": bool(bound) and elapsed <= 1.3 * bound,
        "played": stats.computed, "reused": stats.reused,
        "backend": "InterOPT agent roles: mock provider replaying the local backends; user, detector, judge: local",
    }
    print(json.dumps(figures, indent=1))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
