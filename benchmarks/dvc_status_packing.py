"""No-op ``dvc status`` / ``dvc repro`` on an evaluation folder of N small run-folder files vs the packed layout.

    .venv/bin/python benchmarks/dvc_status_packing.py [--files 10432] [--repeats 5]

Two throw-away DVC projects (``dvc init --no-scm`` in a temp folder), each shaped like the pipeline's evaluate ->
report pair: stage ``evaluate`` writes ``data/eval/`` and stage ``report`` depends on it. *Run folders*: ``data/eval``
holds ``--files`` small files, ten per episode folder ``runs/<protocol>/<method>/run_KK/<case>/`` (the default run
left 10,432 before the episodes were packed). *Packed*: the same bytes as one ``episodes.jsonl`` plus one
``episodes.eval`` (and a ``summary.json``), what ``evaluate.<domain>.run_folders: false`` writes. Each project is
reproduced once, then the no-op commands are timed ``--repeats`` times, the two layouts in turn (median and min),
next to ``dvc status`` in a project with no stage: DVC's own start-up, which is in every figure. Nothing of the
real pipeline runs. Figures go to stdout and benchmarks/out/dvc_status_packing.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out" / "dvc_status_packing.json"
FILES_PER_EPISODE = 10
FILE_BYTES = 600

WRITER = """import pathlib, sys
layout, files, size, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
out = pathlib.Path("data/eval")
out.mkdir(parents=True, exist_ok=True)
if layout == "folders":
    for i in range(files // per):
        d = out / "runs" / ("open", "mc", "mc_d")[i % 3] / f"m{i % 13}" / f"run_{i % 3 + 1:02d}" / f"case_{i}"
        d.mkdir(parents=True, exist_ok=True)
        for j in range(per):
            (d / f"file_{j}.json").write_text(f"{i}:{j}:" + "x" * size)
else:
    (out / "episodes.jsonl").write_text("".join(f"{i}:" + "x" * (size * per) + "\\n" for i in range(files // per)))
    (out / "episodes.eval").write_bytes(b"z" * (size * files // 3))
(out / "summary.json").write_text("{}")
"""

DVC_YAML = """stages:
  evaluate:
    cmd: {python} write.py {layout} {files} {size} {per}
    deps: [write.py]
    outs:
      - data/eval:
          persist: true
  report:
    cmd: {python} -c "import pathlib; pathlib.Path('report.md').write_text('ok')"
    deps: [data/eval]
    outs: [report.md]
"""


def dvc(project: Path, *args: str) -> float:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    started = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).with_name("dvc")), *args], cwd=project, env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"dvc {' '.join(args)} failed in {project}: {proc.stderr.strip()[-400:]}")
    return elapsed


def project(base: Path, layout: str, files: int) -> Path:
    folder = base / layout
    folder.mkdir()
    (folder / "write.py").write_text(WRITER)
    (folder / "dvc.yaml").write_text(DVC_YAML.format(python=sys.executable, layout=layout, files=files,
                                                     size=FILE_BYTES, per=FILES_PER_EPISODE))
    dvc(folder, "init", "--no-scm", "-q")
    return folder


def measure(folders: dict[str, Path], baseline: Path, repeats: int) -> dict[str, dict]:
    """Reproduce each project once, then time the no-op commands, alternating the layouts (and ``dvc status`` in
    ``baseline``, a project with no stage: DVC's own start-up) so that all see the same machine load."""
    first = {layout: dvc(folder, "repro", "-q") for layout, folder in folders.items()}
    times: dict[str, dict[str, list[float]]] = {layout: {"status": [], "repro": []} for layout in folders}
    empty: list[float] = []
    for _ in range(repeats):
        empty.append(dvc(baseline, "status", "-q"))
        for command in ("status", "repro"):
            for layout, folder in folders.items():
                times[layout][command].append(dvc(folder, command, "-q"))
    out: dict[str, dict] = {"no_stage": {"status_median_s": round(statistics.median(empty), 3),
                                         "status_min_s": round(min(empty), 3)}}
    for layout, folder in folders.items():
        t = times[layout]
        out[layout] = {"files": sum(1 for p in (folder / "data" / "eval").rglob("*") if p.is_file()),
                       "first_repro_s": round(first[layout], 2),
                       "status_median_s": round(statistics.median(t["status"]), 3),
                       "status_min_s": round(min(t["status"]), 3),
                       "noop_repro_median_s": round(statistics.median(t["repro"]), 3),
                       "noop_repro_min_s": round(min(t["repro"]), 3)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10432)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="dvc-packing-bench-"))
    try:
        baseline = base / "no_stage"
        baseline.mkdir()
        dvc(baseline, "init", "--no-scm", "-q")
        results = measure({layout: project(base, layout, args.files) for layout in ("folders", "packed")}, baseline,
                          args.repeats)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    results["load_average_1min"] = round(os.getloadavg()[0], 1)  # other work on the machine inflates both layouts
    results["cpus"] = os.cpu_count()
    results["speedup_status"] = round(results["folders"]["status_median_s"] / results["packed"]["status_median_s"], 1)
    for layout in ("folders", "packed"):
        r = results[layout]
        print(f"{layout:8s} {r['files']:6d} files: no-op dvc status {r['status_median_s']:.2f} s (min "
              f"{r['status_min_s']:.2f}), no-op dvc repro {r['noop_repro_median_s']:.2f} s (min "
              f"{r['noop_repro_min_s']:.2f}); first repro {r['first_repro_s']:.1f} s")
    print(f"no stage (DVC's start-up): dvc status {results['no_stage']['status_median_s']:.2f} s (min "
          f"{results['no_stage']['status_min_s']:.2f})")
    print(f"packed is {results['speedup_status']}x faster on a no-op dvc status (load average "
          f"{results['load_average_1min']} on {results['cpus']} CPUs)")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"args": vars(args), **results}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
