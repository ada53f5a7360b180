"""new_domain: scaffold a domain from the template (its package, params entries, sample records, a test).

``python -m flows.new_domain NAME`` writes

- ``tasks/domains/NAME/``: the domain's package, as the shipped domains are: ``domain.py``, a working copy of
  ``tasks/domains/template.py`` (kinds, cue words, templates), and an ``__init__.py`` that loads its ``DOMAIN``;
- ``data/samples/NAME/records.jsonl`` (the template's example records) and ``data/samples/NAME/README.md``;
- ``tests/test_domain_NAME.py``: the domain satisfies the API, its records become gated cases, its agents ask;
- ``params.yaml``: NAME appended to ``domains:``, plus ``construct.NAME`` and ``evaluate.NAME`` sections,

The samples stay under ``data/samples/NAME/`` (``construct@NAME``'s DVC dep and ``construct.NAME.samples_path``) and
the test under ``tests/`` (pytest's ``testpaths``). After this ``dvc.yaml``'s matrices have ``construct@NAME`` and
``evaluate@NAME``. A name that is not a lower-case identifier, is reserved, or already names a domain, a params
section, a samples folder or a test is refused with one line and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from pathlib import Path

from flows import cli
from flows.cli import run_main

RESERVED = frozenset({"template", "api", "units", "or_toml", "domains", "tasks", "flows", "tests", "data", "test",
                      "all", "default", "params", "report", "shap", "sft", "grpo", "sft_data"})


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.ArgumentParser(prog="python -m flows.new_domain", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the new domain's name: lower-case letters, digits and underscores (e.g. legal)")
    parser.add_argument("--params", default="params.yaml", help="params file to extend (default: params.yaml)")
    return parser.parse_args(argv)


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def paths(root: Path, name: str) -> dict[str, Path]:
    package = root / "tasks" / "domains" / name
    return {"package": package / "__init__.py", "module": package / "domain.py",
            "samples": root / "data" / "samples" / name, "test": root / "tests" / f"test_domain_{name}.py"}


def check_name(name: str, root: Path, params_path: Path) -> None:
    """Raise InputError (one line) unless ``name`` is a safe, unused domain name."""

    from tasks.domains import module_name
    from tasks.errors import InputError
    from tasks.records import DOMAIN_NAME

    if not DOMAIN_NAME.match(name) or keyword.iskeyword(name):
        raise InputError(name, "not a valid domain name: use 2-40 lower-case letters, digits or underscores, "
                               "starting with a letter")
    if name in RESERVED:
        raise InputError(name, "reserved name; choose another")
    taken = [str(p.relative_to(root)) for key, p in paths(root, name).items() if key != "package" and p.exists()]
    if (root / "tasks" / "domains" / name).is_dir():
        taken.append(f"tasks/domains/{name}/")
    if (root / "tasks" / "domains" / f"{name}.py").is_file():
        taken.append(f"tasks/domains/{name}.py")
    if module_name(name) is not None and not taken:
        taken.append(f"tasks/domains ({module_name(name)})")
    if not params_path.is_file():
        raise InputError(params_path, "file not found")
    from tasks.params_yaml import load_yaml_file

    params = load_yaml_file(params_path) or {}
    if name in (params.get("domains") or []):
        taken.append(f"{params_path.name}: domains")
    for section in ("construct", "evaluate"):
        if name in (params.get(section) or {}):
            taken.append(f"{params_path.name}: {section}.{name}")
    if taken:
        raise InputError(name, f"domain already exists ({', '.join(taken)})")


# ---- what gets written ------------------------------------------------------------------------------------------


def module_text(name: str) -> str:
    from tasks.domains import template

    text = Path(template.__file__).read_text(encoding="utf-8")
    first = text.splitlines()[0]
    replacements = {
        first: f'"""{camel(name)} domain, scaffolded by ``python -m flows.new_domain {name}`` from '
               f'tasks/domains/template.py.',
        'NAME = "template"': f'NAME = "{name}"',
        "TemplateConstructParams": f"{camel(name)}ConstructParams",
        "TemplateDomain": f"{camel(name)}Domain",
        "data/samples/template/": f"data/samples/{name}/",
    }
    for old, new in replacements.items():
        if old not in text:
            raise RuntimeError(f"tasks/domains/template.py no longer contains {old!r}; update flows/new_domain.py")
        text = text.replace(old, new)
    return text


def package_text(name: str) -> str:
    return f'''"""{camel(name)} domain, scaffolded by ``python -m flows.new_domain {name}``: the domain object in
:mod:`.domain`, loaded on first use (PEP 562). Samples: ``data/samples/{name}/records.jsonl``."""

from tasks.lazy_exports import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {{"DOMAIN": "domain", "{camel(name)}Domain": "domain"}})
'''


def samples_text() -> str:
    from tasks.domains.template import EXAMPLES

    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in EXAMPLES)


def samples_readme(name: str) -> str:
    from tasks.domains.template import DESCRIPTIONS, HIDEABLE

    rows = "\n".join(f"| `{k}` | {'yes' if k in HIDEABLE else 'no'} | {v} |" for k, v in DESCRIPTIONS.items())
    return f"""# Sample records for the {name} domain

`records.jsonl` is the input of `construct@{name}`: one complete record per line (`tasks.domains.units.TextRecord`:
`id`, `title`, `text`, optionally `units`). The records written by `python -m flows.new_domain` are the template's
examples; replace them with your own complete requests (write them yourself, with no text copied from other
datasets) and say here where they come from and under which licence.

The decomposer in `tasks/domains/{name}/domain.py` cuts each `text` into sentences and list items and types each piece:

| kind | hideable | meaning |
|---|---|---|
{rows}
"""


def test_text(name: str) -> str:
    return f'''"""The {name} domain (scaffolded): it satisfies the domain API, its records become cases that pass
the gate's checks, and its local agents ask about what a brief leaves open."""

from __future__ import annotations

from pathlib import Path

from tasks.domains import ConstructResult, get_domain
from tasks.domains.api import check_domain
from tasks.domains.units import build_unit_chunk
from tasks.records import Case

ROOT = Path(__file__).resolve().parents[1]
DOMAIN = get_domain("{name}")


def _cases() -> list[Case]:
    cfg = DOMAIN.params_model()
    records = [r.model_dump(mode="json") for r in DOMAIN.load_records(cfg, ROOT)]
    out = build_unit_chunk(DOMAIN.name, records, cfg.model_dump(mode="json"), {{"rewriter": {{"backend": "local"}}}})
    assert out["failures"] == []
    return [Case.model_validate(c) for c in out["cases"]]


def test_the_domain_satisfies_the_api():
    assert check_domain(DOMAIN) == []


def test_records_become_cases_that_pass_the_gate_checks():
    cases = _cases()
    assert cases and all(c.hidden_slots for c in cases)
    _, table = DOMAIN.validation_table(ConstructResult(cases=cases, metrics={{}}))
    checks = [column for column in table.columns if table[column].dtype == bool]
    assert checks and table[checks].all().all(), table[checks]


def test_local_agents_ask_about_the_hidden_kinds():
    for case in _cases():
        asked = {{gap.key for gap in DOMAIN.gap_inventory.gaps(case.brief.content)}}
        hidden = {{u.kind for u in case.units if any(u.id in s.unit_ids for s in case.hidden_slots)}}
        assert hidden & asked, (case.case_id, hidden, asked)
'''


def construct_entry(name: str) -> str:
    return f"""  {name}:
    source: samples                 # complete records, decomposed by tasks/domains/{name}/domain.py
    samples_path: data/samples/{name}/records.jsonl
    limit: null                     # keep the first N records
    hide_fraction: 0.5              # share of the hideable units a case hides ...
    min_hidden: 1                   # ... at least this many ...
    max_hidden: 3                   # ... and at most this many
    seed: 0                         # the hidden choice is deterministic per (record id, seed)
    chunk_size: 8                   # records per cached construction task
    task_runner: threads            # the construction chunks: threads | dask (on cluster) | serial
    heldout_fraction: 0.3           # share of record ids held out from training (all variants of a record share it)
    split_seed: 0                   # the split is a stable hash of (split_seed, record id)
"""


def evaluate_entry(name: str) -> str:
    return f"""  {name}:
    cases: data/cases/{name}/cases.jsonl
    case_ids: null
    limit: null
    repeats: 3
    max_turns: 20
    seed: 0
    concurrency: 8
    task_runner: threads
    over_questioning_after: 4
    bootstrap: 2000
    methods:                        # local agents ask from the domain's gap inventory (tasks/domains/{name}/)
      - {{name: freeqa, protocols: [open]}}
      - {{name: mc_d, protocols: [mc_d]}}
      - {{name: interopt, protocols: [open, mc_d]}}
"""


TOP_LEVEL = re.compile(r"^[A-Za-z_][\w-]*\s*:")


def _append_to_block(lines: list[str], key: str, entry: str) -> list[str]:
    """Insert ``entry`` (indented lines) at the end of the top-level block ``key:``."""
    start = next((i for i, ln in enumerate(lines) if re.match(rf"^{key}\s*:\s*(#.*)?$", ln)), None)
    if start is None:
        return [*lines, f"{key}:", *entry.rstrip("\n").splitlines()]
    end = next((i for i in range(start + 1, len(lines)) if TOP_LEVEL.match(lines[i])), len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return lines[:end] + entry.rstrip("\n").splitlines() + lines[end:]


def params_text(text: str, name: str) -> str:
    """``params.yaml`` with ``name`` in ``domains`` and its construct/evaluate entries, comments kept."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        flow = re.match(r"^domains:\s*\[([^\]]*)\](.*)$", line)
        if flow:
            items = [x.strip() for x in flow.group(1).split(",") if x.strip()]
            lines[i] = f"domains: [{', '.join([*items, name])}]{flow.group(2)}"
            break
        if re.match(r"^domains:\s*(#.*)?$", line):
            end = i + 1
            while end < len(lines) and re.match(r"^\s*-\s", lines[end]):
                end += 1
            indent = re.match(r"^(\s*)", lines[end - 1]).group(1) if end > i + 1 else "  "
            lines.insert(end, f"{indent}- {name}")
            break
    else:
        lines.insert(0, f"domains: [{name}]")
    lines = _append_to_block(lines, "construct", construct_entry(name))
    lines = _append_to_block(lines, "evaluate", evaluate_entry(name))
    return "\n".join(lines) + "\n"


def scaffold(name: str, params: str = "params.yaml") -> list[str]:
    """Write the new domain's files and params entries; the written paths, relative to the repository."""
    import yaml

    from tasks.errors import InputError
    from tasks.store import atomic_write_text, repo_root

    root = repo_root()
    params_path = root / params
    check_name(name, root, params_path)
    new_params = params_text(params_path.read_text(encoding="utf-8"), name)
    parsed = yaml.safe_load(new_params)
    if name not in parsed.get("domains", []) or name not in parsed["construct"] or name not in parsed["evaluate"]:
        raise InputError(params_path, "could not add the domain's entries (unexpected layout); add them by hand")
    where = paths(root, name)
    atomic_write_text(where["package"], package_text(name))
    atomic_write_text(where["module"], module_text(name))
    atomic_write_text(where["samples"] / "records.jsonl", samples_text())
    atomic_write_text(where["samples"] / "README.md", samples_readme(name))
    atomic_write_text(where["test"], test_text(name))
    atomic_write_text(params_path, new_params)
    written = [where["package"], where["module"], where["samples"] / "records.jsonl", where["samples"] / "README.md",
               where["test"], params_path]
    return [str(p.relative_to(root)) for p in written]


def describe(name: str, written: list[str]) -> str:
    return (f"new domain {name!r}: wrote {', '.join(written)} (domains, construct.{name}, evaluate.{name}); next: "
            f"edit tasks/domains/{name}/domain.py and data/samples/{name}/records.jsonl, then `pytest "
            f"tests/test_domain_{name}.py` and `dvc repro construct@{name} evaluate@{name}`")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_main(lambda: print(describe(args.name, scaffold(args.name, args.params))))


if __name__ == "__main__":
    sys.exit(main())
