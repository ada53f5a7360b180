"""evaluate@<domain>: score every method on the domain's cases the way the domain says, gate, publish.

Reads ``params.yaml: evaluate.<domain>`` and writes ``data/eval/<domain>/`` with ``data/metrics/stages/evaluate/
<domain>.json`` and the recovery records ``data/plots/evaluate/<domain>/recovery.json``. The body is
``tasks.evaluation.stage.run_evaluation``: the domain's kind (``Domain.evaluation``: ``episodes`` plays the OR-Clarify
loop, ``questions`` scores question lists as CLARITI) scores into a staging folder, the gates handed down from here
(``tasks/validation``) check it, and the folder is swapped into place. Finished units are stored under
``.cache/eval/<domain>`` so a killed run resumes without replaying them; ``--refresh-cache`` recomputes them.
Trained policies are scored on held-out cases only (``tasks/splits.py``): a policy row whose evaluated source ids meet
its adapter's recorded training ids stops the stage with one line. Nothing here names a domain.
"""

from __future__ import annotations

import argparse
import sys

from flows import cli


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.ArgumentParser(prog="python -m flows.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--domain", required=True, help="domain with an evaluate.<domain> section (e.g. optimization)")
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument("--out", default=None, help="output folder (default: data/eval/<domain>)")
    parser.add_argument("--runner", choices=["threads", "dask", "serial"], default=None,
                        help="override evaluate.<domain>.task_runner")
    parser.add_argument("--refresh-cache", action="store_true",
                        help="recompute every unit instead of reusing the stored ones under .cache/eval/<domain>")
    return parser.parse_args(argv)


def evaluate(domain: str, params: str = "params.yaml", out: str | None = None,
             runner: str | None = None, refresh_cache: bool = False) -> dict:
    """The flow body (``refresh_cache``: no unit from the store)."""
    from tasks.evaluation.stage import run_evaluation
    from tasks.store import repo_root
    from tasks.validation.eval_gates import EvaluationChecks

    checks = EvaluationChecks(repo_root() / ".cache" / "gx" / "results")
    return run_evaluation(domain, params, checks=checks, out=out, runner=runner, refresh=refresh_cache)


def describe(summary: dict) -> str:
    return (f"evaluate@{summary['domain']}: {summary['episodes']} episodes ({summary['played']} played, "
            f"{summary['reused']} resumed from the store), {summary['rows']} report rows -> {summary['out']}/ "
            f"({summary['seconds']} s)")


def build_flow():
    from prefect import flow

    return flow(name="evaluate", flow_run_name="evaluate@{domain}", log_prints=True)(evaluate)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def check() -> None:
        from tasks.evaluation.stage import output_dir, prepare
        from tasks.store import repo_root

        output_dir(repo_root(), args.domain, args.out)
        prepare(args.domain, args.params)

    return cli.run_stage(lambda: build_flow()(domain=args.domain, params=args.params, out=args.out, runner=args.runner,
                                              refresh_cache=args.refresh_cache), describe, check=check)


if __name__ == "__main__":
    sys.exit(main())
