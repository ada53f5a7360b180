"""construct@<domain>: turn a domain's sources into benchmark cases, validate them, publish them atomically.

Outputs: ``data/cases/<domain>/`` (cases) and ``data/metrics/stages/construct/<domain>.json`` (DVC metrics; the
roles' wall-clock ``latency_s`` goes to ``data/metrics/timings/construct/<domain>.json``, ``tasks/stage_metrics.py``).
A role whose share of failed requests is above ``roles.max_failure_rate`` stops the stage (``tasks/roles/failures.py``).
Every case records the domain's one train/heldout split of its source id (``construct.<domain>.heldout_fraction``,
``split_seed``; ``tasks/splits.py``); the metrics count cases and source ids per split.
The gate runs before anything is published: a failing suite leaves the previous outputs untouched.
The cached chunk tasks run on ``construct.<domain>.task_runner`` (construct@swe's annotator chunks on
``annotate_runner``): ``threads``, ``dask`` on ``params.yaml: cluster``, or ``serial`` (``tasks/cluster.py``).
"""

from __future__ import annotations

import argparse
import sys
import time

from flows import cli


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.ArgumentParser(prog="python -m flows.construct", description=__doc__.splitlines()[0])
    parser.add_argument("--domain", required=True, help="domain name from params.yaml 'domains' (e.g. swe)")
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument("--refresh-cache", action="store_true", help="recompute every task instead of reusing results")
    return parser.parse_args(argv)


def prepare(domain: str, params: str = "params.yaml"):
    """Validate params and the domain's inputs; raises InputError before any Prefect machinery starts."""
    from tasks.domains import get_domain
    from tasks.errors import DomainError, InputError
    from tasks.params import load_params
    from tasks.store import repo_root

    root = repo_root()
    params_path = root / params
    all_params = load_params(params_path)
    if domain not in all_params.domains:
        raise InputError(params_path, f"domain {domain!r} is not listed", field="domains")
    try:
        dom = get_domain(domain)
    except DomainError as err:
        raise InputError(params_path, str(err), field="domains") from None
    cfg = dom.parse_params(params_path, all_params.construct_.get(domain))
    return root, dom, cfg, all_params


def construct(domain: str, params: str = "params.yaml", refresh_cache: bool = False) -> dict:
    """The flow body: returns a summary with the number of task bodies executed and served from cache."""
    from tasks.roles.failures import check_failure_rates, counts_from_usage
    from tasks.splits import construct_split, split_frame
    from tasks.stage_metrics import publish_with_metrics
    from tasks.store import staged_dir
    from tasks.validation import gate
    from tasks.validation.stage_metrics import check_stage_metrics, count_lines

    root, dom, cfg, all_params = prepare(domain, params)
    roles = all_params.roles
    started = time.monotonic()
    result = dom.construct(cfg, root, roles=roles, refresh_cache=refresh_cache, cluster=all_params.cluster)
    # the one train/heldout split of this domain, by source id (after the cached tasks: it never reruns them)
    result.cases, result.metrics["split"] = construct_split(result.cases, cfg.heldout_fraction, cfg.split_seed)
    # a role that failed on too many requests stops the stage before anything is written
    check_failure_rates(counts_from_usage(result.metrics.get("roles", {})), roles.max_failure_rate,
                        stage=f"construct@{domain}")
    check_not_empty(domain, result.metrics, len(result.cases))
    out_dir = root / "data" / "cases" / domain
    results_dir = root / ".cache" / "gx" / "results"
    with staged_dir(out_dir) as staging:
        dom.write(result, staging)
        suite, table = dom.validation_table(result)
        gate(suite, table, artifact=f"data/cases/{domain}", results_dir=results_dir)
        gate("case_splits", split_frame(result.cases), artifact=f"data/cases/{domain}", results_dir=results_dir)
        check_stage_metrics(f"construct/{domain}", result.metrics,
                            counts={"cases": count_lines(staging / "cases.jsonl")})
        publish_with_metrics(staging, out_dir, root, f"construct/{domain}", result.metrics)
    summary = {
        "domain": domain,
        "cases": len(result.cases),
        "split": result.metrics["split"],
        "seconds": round(time.monotonic() - started, 2),
        **result.stats.model_dump(),
    }
    return summary


def check_not_empty(domain: str, metrics: dict, cases: int) -> None:
    """An empty case set is never published (the case suite refuses it too). This says why in one line instead of
    the suite's failed expectations: what was skipped and how each LLM role's requests failed. With served roles it
    is what a model that writes no usable decomposition or rubric gets (docs/served-models.md)."""
    from tasks.errors import GateError

    if cases:
        return
    parts = [f"skipped {n} ({reason})" for reason, n in (metrics.get("skipped") or {}).items()]
    for role, row in sorted((metrics.get("roles") or {}).items()):
        if row.get("backend") == "llm" and row.get("requests"):
            kinds = ", ".join(f"{kind} {n}" for kind, n in (row.get("failures_by_kind") or {}).items())
            parts.append(f"{role} ({row.get('model')}) failed {int(row.get('failures', 0))} of {int(row['requests'])}"
                         f" requests{f' ({kinds})' if kinds else ''}")
    raise GateError(f"data/cases/{domain}", "no case to publish" + (": " + "; ".join(parts) if parts else ""))


def describe(summary: dict) -> str:
    train, heldout = summary["split"]["train"], summary["split"]["heldout"]
    return (
        f"construct@{summary['domain']}: {summary['cases']} cases -> data/cases/{summary['domain']}/cases.jsonl "
        f"({summary['executed']} task(s) executed, {summary['cached']} from cache, {summary['seconds']} s); split: "
        f"{train['cases']} train / {heldout['cases']} held-out cases from {train['source_ids']} / "
        f"{heldout['source_ids']} source ids"
    )


def build_flow():
    from prefect import flow

    return flow(name="construct", flow_run_name="construct@{domain}", log_prints=True)(construct)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def check() -> None:
        root, dom, cfg, _ = prepare(args.domain, args.params)
        dom.check_inputs(cfg, root)

    return cli.run_stage(lambda: build_flow()(domain=args.domain, params=args.params, refresh_cache=args.refresh_cache),
                         describe, check=check)


if __name__ == "__main__":
    sys.exit(main())
