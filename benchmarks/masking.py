"""Masking throughput on the CLARITI workbook: every 1-3-category variant of the 496 annotated issues.

    .venv/bin/python benchmarks/masking.py [--workbook ../shared/data/clariti/data.xlsx] [--variants all]

Loading the workbook is timed separately (excluded from the target). Target: masking <= 30 s on 2 cores.
Also reports leaks (must be 0) and how many workbook spans could not be located in the issue text
(CLARITI spans may quote the gold patch instead).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.files import CLARITI_WORKBOOK, input_exists  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workbook", default=str(CLARITI_WORKBOOK))
    parser.add_argument("--variants", default="all", help="'all' (up to 41 per issue) or a number per issue")
    parser.add_argument("--target-seconds", type=float, default=30.0)
    args = parser.parse_args(argv)

    from tqdm import tqdm

    from tasks.domains.swe import load_clariti, mask_issue
    from tasks.domains.swe.masking import find_leaks
    from tasks.params import SweConstructParams

    path = Path(args.workbook)
    if not input_exists(path):
        return 2
    t0 = time.perf_counter()
    issues = [i for i in load_clariti(path) if i.spans is not None]
    load_s = time.perf_counter() - t0
    variants = "all" if args.variants == "all" else int(args.variants)
    cfg = SweConstructParams(variants_per_issue=variants)

    t0 = time.perf_counter()
    cases = []
    notes: Counter = Counter()
    for issue in tqdm(issues, desc="mask", unit="issue"):
        issue_cases, issue_notes = mask_issue(issue, cfg)
        cases.extend(issue_cases)
        notes.update(issue_notes)
    mask_s = time.perf_counter() - t0

    leaks = 0
    for case in cases:
        hidden = [u.content for u in case.units if u.category in case.hidden_categories]
        leaks += bool(find_leaks(case.brief.content, hidden))
    ratio = sum(len(c.brief.content) / len(c.full_text) for c in cases) / max(len(cases), 1)
    print(f"issues: {len(issues)} annotated (workbook load {load_s:.1f} s, excluded)")
    print(f"variants: {len(cases)} in {mask_s:.1f} s = {len(cases) / mask_s:.0f} variants/s "
          f"(target <= {args.target_seconds:.0f} s)")
    print(f"leaks: {leaks}; skipped variants (empty or unchanged): {notes['variants_skipped_empty_or_unchanged']}")
    print(f"spans: {notes['spans']} annotated, {notes['spans_not_in_text']} not found in the issue text "
          "(patch quotes etc.)")
    print(f"mean brief/original length: {ratio:.3f}")
    ok = leaks == 0 and mask_s <= args.target_seconds
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
