"""new_domain: scaffold a domain from a template (its package, params entries, sample records, a test).

``python -m flows.new_domain NAME [--evaluation episodes|questions]`` writes

- ``tasks/domains/NAME/``: the domain's package, as the shipped domains are: ``domain.py``, a working copy of the
  template (kinds, cue words, templates), and an ``__init__.py`` that loads its ``DOMAIN``. ``episodes`` (the
  default) copies ``tasks/domains/template.py``: typed units of a request, played in the OR-Clarify loop.
  ``questions`` copies ``tasks/domains/question_template.py``: units typed by CLARITI's six categories, cases that
  hide whole categories (``UnitDomain.case_categories``), scored by the question-list evaluation;
- ``data/samples/NAME/records.jsonl`` (the template's example records) and ``data/samples/NAME/README.md``;
- ``tests/test_domain_NAME.py``: the domain satisfies the API, its records become gated cases, and its agents ask
  (episodes) or its cases hide whole categories and its ``evaluate.NAME`` is a question-list section (questions);
- ``params.yaml``: NAME appended to ``domains:``, plus ``construct.NAME`` and ``evaluate.NAME`` sections
  (``EvalSettings`` or ``QuestionSettings``). ruamel.yaml parses the file and writes the new YAML, which goes where
  the parser places the end of ``domains`` and of the two blocks: every other byte stays, comments included, and
  the result must parse to the old data plus the entries.

The samples stay under ``data/samples/NAME/`` (``construct@NAME``'s DVC dep and ``construct.NAME.samples_path``) and
the test under ``tests/`` (pytest's ``testpaths``). After this ``dvc.yaml``'s matrices have ``construct@NAME`` and
``evaluate@NAME``. A name that is not a lower-case identifier, is reserved, or already names a domain, a params
section, a samples folder or a test is refused with one line and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import json
import keyword
import sys
from pathlib import Path
from typing import Any

from flows import cli
from flows.cli import run_main

RESERVED = frozenset({"template", "question_template", "api", "units", "or_toml", "domains", "tasks", "flows",
                      "tests", "data", "test", "all", "default", "params", "report", "shap", "sft", "grpo",
                      "sft_data"})
TEMPLATES = {"episodes": "template", "questions": "question_template"}
"""The generic module each kind of evaluation is scaffolded from (``tasks/domains/<module>.py``)."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.ArgumentParser(prog="python -m flows.new_domain", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the new domain's name: lower-case letters, digits and underscores (e.g. legal)")
    parser.add_argument("--evaluation", choices=tuple(TEMPLATES), default="episodes",
                        help="episodes: the OR-Clarify loop over the cases (from tasks/domains/template.py, the "
                             "default); questions: CLARITI question lists scored by the hidden categories they "
                             "recover (from tasks/domains/question_template.py)")
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


def template(evaluation: str) -> Any:
    """The generic template module of ``evaluation``."""
    import importlib

    return importlib.import_module(f"tasks.domains.{TEMPLATES[evaluation]}")


def module_text(name: str, evaluation: str = "episodes") -> str:
    module = TEMPLATES[evaluation]
    source = f"tasks/domains/{module}.py"
    text = Path(template(evaluation).__file__).read_text(encoding="utf-8")
    first = text.splitlines()[0]
    head = (f'"""{camel(name)} domain, scaffolded by ``python -m flows.new_domain {name}`` from {source}.'
            if evaluation == "episodes" else f'"""{camel(name)} question-list domain, scaffolded from {source}.')
    replacements = {
        first: head,
        f'NAME = "{module}"': f'NAME = "{name}"',
        f"{camel(module)}Domain": f"{camel(name)}Domain",
        f"data/samples/{module}/": f"data/samples/{name}/",
    }
    for old, new in replacements.items():
        if old not in text:
            raise RuntimeError(f"{source} no longer contains {old!r}; update flows/new_domain.py")
        text = text.replace(old, new)
    return text


def package_text(name: str) -> str:
    return f'''"""{camel(name)} domain, scaffolded by ``python -m flows.new_domain {name}``: the domain object in
:mod:`.domain`, loaded on first use (PEP 562). Samples: ``data/samples/{name}/records.jsonl``."""

from tasks.lazy_exports import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {{"DOMAIN": "domain", "{camel(name)}Domain": "domain"}})
'''


def samples_text(evaluation: str = "episodes") -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in template(evaluation).EXAMPLES)


def samples_readme(name: str, evaluation: str = "episodes") -> str:
    module = template(evaluation)
    lead = (f"The decomposer in `tasks/domains/{name}/domain.py` cuts each `text` into sentences and list items and "
            f"types each piece")
    if evaluation == "questions":
        lead += " (a case hides whole categories: every unit of each category it hides)"
    rows = "\n".join(f"| `{k}` | {'yes' if k in module.HIDEABLE else 'no'} | {v} |"
                     for k, v in module.DESCRIPTIONS.items())
    return f"""# Sample records for the {name} domain

`records.jsonl` is the input of `construct@{name}`: one complete record per line (`tasks.domains.units.TextRecord`:
`id`, `title`, `text`, optionally `units`). The records written by `python -m flows.new_domain` are the template's
examples; replace them with your own complete requests (write them yourself, with no text copied from other
datasets) and say here where they come from and under which licence.

{lead}:

| kind | hideable | meaning |
|---|---|---|
{rows}
"""


def _test_common(name: str, docstring: str, imports: str = "", api_check: str = "") -> str:
    """The shared head of a scaffolded domain's test: its imports, its cases built with the local roles, the API and
    gate checks (``api_check``: a further condition on the domain)."""
    return f'''"""{docstring}"""

from __future__ import annotations

from pathlib import Path
{imports}
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
    assert check_domain(DOMAIN) == []{api_check}


def test_records_become_cases_that_pass_the_gate_checks():
    cases = _cases()
    assert cases and all(c.hidden_slots for c in cases)
    _, table = DOMAIN.validation_table(ConstructResult(cases=cases, metrics={{}}))
    checks = [column for column in table.columns if table[column].dtype == bool]
    assert checks and table[checks].all().all(), table[checks]
'''


def test_text(name: str) -> str:
    docstring = (f"The {name} domain (scaffolded): it satisfies the domain API, its records become cases that pass\n"
                 "the gate's checks, and its local agents ask about what a brief leaves open.")
    return _test_common(name, docstring) + '''

def test_local_agents_ask_about_the_hidden_kinds():
    for case in _cases():
        asked = {gap.key for gap in DOMAIN.gap_inventory.gaps(case.brief.content)}
        hidden = {u.kind for u in case.units if any(u.id in s.unit_ids for s in case.hidden_slots)}
        assert hidden & asked, (case.case_id, hidden, asked)
'''


def question_test_text(name: str) -> str:
    docstring = (f"The {name} domain (scaffolded): it satisfies the domain API, its records become cases that pass\n"
                 "the gate's checks and hide whole CLARITI categories, and its params entry is a valid question-list "
                 "evaluation.")
    head = _test_common(name, docstring, imports="\nimport yaml\n", api_check=' and DOMAIN.evaluation == "questions"')
    head = head.replace("from tasks.domains.units import build_unit_chunk\n",
                        "from tasks.domains.units import build_unit_chunk\n"
                        "from tasks.evaluation.question_inputs import QuestionSettings\n")
    return head + f'''

def test_cases_hide_whole_categories():
    for case in _cases():
        hidden_units = [u for u in case.units if any(u.id in s.unit_ids for s in case.hidden_slots)]
        hidden = {{c.key for c in case.hidden_categories}}
        assert hidden and hidden == {{u.kind for u in hidden_units}}, case.case_id
        assert set(case.present_categories) == set(case.hidden_categories) | set(case.visible_categories)
        assert not hidden & {{c.key for c in case.visible_categories}}
        assert all(u.id not in case.brief.visible_unit_ids for u in case.units if u.kind in hidden)


def test_the_params_entry_is_a_question_evaluation():
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    settings = QuestionSettings.model_validate(params["evaluate"]["{name}"])
    assert settings.cases == "data/cases/{name}/cases.jsonl" and settings.methods
'''


# ---- the params entries, written with a YAML library --------------------------------------------------------------


def _eol(mapping: Any, comments: dict[str, str], column: int = 36) -> Any:
    for key, comment in comments.items():
        mapping.yaml_add_eol_comment(f"# {comment}", key, column=column)
    return mapping


def _flow(rows: list[dict]) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    seq = CommentedSeq()
    for row in rows:
        item = CommentedMap(row)
        item.fa.set_flow_style()
        seq.append(item)
    return seq


def construct_entry(name: str, evaluation: str = "episodes") -> Any:
    """``construct.<name>``: a ``UnitConstructParams`` section (a ruamel mapping, with its comments)."""
    from ruamel.yaml.comments import CommentedMap

    entry = CommentedMap([
        ("source", "samples"), ("samples_path", f"data/samples/{name}/records.jsonl"), ("limit", None),
        ("hide_fraction", 0.5), ("min_hidden", 1), ("max_hidden", 3), ("seed", 0), ("chunk_size", 8),
        ("task_runner", "threads"), ("heldout_fraction", 0.3), ("split_seed", 0),
    ])
    hidden = "categories" if evaluation == "questions" else "hideable units"
    return _eol(entry, {
        "source": f"complete records, decomposed by tasks/domains/{name}/domain.py",
        "limit": "keep the first N records",
        "hide_fraction": f"share of the {hidden} a case hides ...",
        "min_hidden": "... at least this many ...",
        "max_hidden": "... and at most this many",
        "seed": "the hidden choice is deterministic per (record id, seed)",
        "chunk_size": "records per cached construction task",
        "task_runner": "the construction chunks: threads | dask (on cluster) | serial",
        "heldout_fraction": f"share of record ids held out (all variants of a record share it): evaluate.{name}'s"
                            if evaluation == "questions" else
                            "share of record ids held out from training (all variants of a record share it)",
        "split_seed": "the split is a stable hash of (split_seed, record id)",
    })


def evaluate_entry(name: str, evaluation: str = "episodes") -> Any:
    """``evaluate.<name>``: an ``EvalSettings`` (episodes) or ``QuestionSettings`` (questions) section."""
    from ruamel.yaml.comments import CommentedMap

    cases = f"data/cases/{name}/cases.jsonl"
    if evaluation == "questions":
        entry = CommentedMap([
            ("cases", cases), ("case_ids", None), ("split", "heldout"), ("limit", None), ("seed", 0),
            ("bootstrap", 200), ("batch_size", 64), ("task_runner", "serial"),
            ("methods", _flow([{"name": "no_questions"}, {"name": "oracle_template"}, {"name": "ask_everything"},
                               {"name": "evpi", "options": {"question_cost": 0.1, "prior_cases": cases}}])),
        ])
        return _eol(entry, {
            "split": "held-out records only: evpi's prior (below) is learnt on the training split",
            "bootstrap": "resamples over records for the 95% intervals",
            "task_runner": "batches of question units: serial | threads | dask (on cluster)",
            "methods": "no_questions: the floor; oracle_template asks about each hidden category (reads them)",
        })
    entry = CommentedMap([
        ("cases", cases), ("case_ids", None), ("limit", None), ("repeats", 3), ("max_turns", 20), ("seed", 0),
        ("concurrency", 8), ("task_runner", "threads"), ("over_questioning_after", 4), ("bootstrap", 2000),
        ("methods", _flow([{"name": "freeqa", "protocols": ["open"]}, {"name": "mc_d", "protocols": ["mc_d"]},
                           {"name": "interopt", "protocols": ["open", "mc_d"]}])),
    ])
    return _eol(entry, {"methods": f"local agents ask from the domain's gap inventory (tasks/domains/{name}/)"})


def entries(name: str, evaluation: str = "episodes") -> dict[str, Any]:
    """The new domain's params sections: ``{"construct": ..., "evaluate": ...}``."""
    return {"construct": construct_entry(name, evaluation), "evaluate": evaluate_entry(name, evaluation)}


def _yaml(indent: int = 2) -> Any:
    """A round-trip ruamel.yaml writer in the style of params.yaml: ``null`` spelt out, block mappings indented by
    ``indent``, list items two further in, no line folding."""
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    class Representer(RoundTripRepresenter):  # a subclass: ruamel's own (dvc's too) keeps writing nulls as it does
        pass

    Representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    yaml = YAML(typ="rt")
    yaml.Representer = Representer
    yaml.width = 4096
    yaml.indent(mapping=indent, sequence=indent + 2, offset=indent)
    return yaml


def _dump(data: Any, indent: int = 2) -> str:
    import io

    buf = io.StringIO()
    _yaml(indent).dump(data, buf)
    return buf.getvalue()


def _line_end(text: str, index: int) -> int:
    """The index just past the newline of the line holding ``index`` (the text's end on its last line)."""
    end = text.find("\n", index)
    return len(text) if end < 0 else end + 1


def _last_leaf(node: Any) -> Any:
    """The last scalar or flow collection of a block node: where its text really ends (a block collection's end mark
    is the next token's start, past blank lines and comments)."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    while isinstance(node, MappingNode | SequenceNode) and not node.flow_style and node.value:
        node = node.value[-1][1] if isinstance(node, MappingNode) else node.value[-1]
    return node


def _block_end(text: str, node: Any) -> int:
    """Where a block mapping's content ends: after the line of its last value and any indented comment lines that
    follow it (a comment at column 0 belongs to what comes next)."""
    end = _line_end(text, _last_leaf(node).end_mark.index)
    while end < len(text):
        line = text[end:_line_end(text, end)]
        if not (line[:1] in (" ", "\t") and line.lstrip().startswith("#")):
            break
        end = _line_end(text, end)
    return end


def params_text(text: str, name: str, evaluation: str = "episodes") -> str:
    """``params.yaml`` with ``name`` in ``domains`` and its construct/evaluate entries; every other byte kept.

    ruamel.yaml parses the file (round trip: flow or block ``domains``, indented or not) and writes the new YAML; the
    new text goes where the parser places the end of ``domains`` and of the ``construct`` and ``evaluate`` blocks, so
    comments, alignment and layout elsewhere stay as they are (a full round-trip dump would rewrite ``null``, aligned
    flow mappings and multi-line flow collections). The result is parsed again and must equal the old data plus
    the entries (ValueError otherwise)."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    root = _yaml().compose(text)
    if root is not None and not isinstance(root, MappingNode):
        raise ValueError("the params file is not a mapping")
    nodes = {key.value: value for key, value in (root.value if root is not None else [])}
    edits: list[tuple[int, int, str]] = []  # (start, end, new text), applied from the end

    domains = nodes.get("domains")
    item = _dump(_flow_seq("domains", [name])).split("[", 1)[1].rsplit("]", 1)[0]  # the name as a YAML scalar
    if domains is None:
        edits.append((0, 0, _dump(_flow_seq("domains", [name]))))
    elif isinstance(domains, SequenceNode) and domains.flow_style:
        close = domains.end_mark.index - 1  # the closing bracket
        edits.append((close, close, f", {item}" if domains.value else item))
    elif isinstance(domains, SequenceNode) and domains.value:
        last = domains.value[-1]
        line_start = text.rfind("\n", 0, last.start_mark.index) + 1
        prefix = text[line_start:last.start_mark.index]  # the indent and the dash of the last item
        end = _line_end(text, last.end_mark.index)
        edits.append((end, end, ("" if text[:end].endswith("\n") else "\n") + f"{prefix}{item}\n"))
    else:
        raise ValueError("domains: is neither a list nor absent")

    for key, entry in entries(name, evaluation).items():
        block = nodes.get(key)
        if block is None and key not in nodes:
            sep = "" if not text or text.endswith("\n") else "\n"
            edits.append((len(text), len(text), sep + _dump({key: {name: entry}})))
            continue
        if not (isinstance(block, MappingNode) and not block.flow_style and block.value):
            raise ValueError(f"{key}: is not a block mapping")
        indent = block.value[0][0].start_mark.column
        dumped = _dump({key: {name: entry}}, indent=indent).split("\n", 1)[1]
        end = _block_end(text, block)
        edits.append((end, end, ("" if text[:end].endswith("\n") else "\n") + dumped))

    out = text
    for _, (start, end, new) in sorted(enumerate(edits), key=lambda e: (e[1][0], e[0]), reverse=True):
        out = out[:start] + new + out[end:]  # from the end, so earlier positions stay valid
    _check_added(text, out, name, evaluation)
    return out


def _flow_seq(key: str, items: list[str]) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return CommentedMap([(key, seq)])


def _check_added(before: str, after: str, name: str, evaluation: str) -> None:
    """``after`` parses to ``before``'s data plus ``name``'s three entries, and nothing else (ValueError)."""
    import yaml

    old, new = yaml.safe_load(before) or {}, yaml.safe_load(after)
    want = dict(old)
    want["domains"] = [*(old.get("domains") or []), name]
    for key, entry in entries(name, evaluation).items():
        want[key] = {**(old.get(key) or {}), name: yaml.safe_load(_dump({name: entry}))[name]}
    if new != want:
        raise ValueError("the edited params file does not parse to the old one plus the new entries")


def scaffold(name: str, params: str = "params.yaml", evaluation: str = "episodes") -> list[str]:
    """Write the new domain's files and params entries; the written paths, relative to the repository."""
    from tasks.errors import InputError
    from tasks.store import atomic_write_text, repo_root

    if evaluation not in TEMPLATES:
        raise InputError(evaluation, f"unknown evaluation (expected one of: {', '.join(TEMPLATES)})")
    root = repo_root()
    params_path = root / params
    check_name(name, root, params_path)
    try:
        new_params = params_text(params_path.read_text(encoding="utf-8"), name, evaluation)
    except ValueError as err:
        raise InputError(params_path, f"could not add the domain's entries ({err}); add them by hand") from None
    where = paths(root, name)
    atomic_write_text(where["package"], package_text(name))
    atomic_write_text(where["module"], module_text(name, evaluation))
    atomic_write_text(where["samples"] / "records.jsonl", samples_text(evaluation))
    atomic_write_text(where["samples"] / "README.md", samples_readme(name, evaluation))
    atomic_write_text(where["test"], question_test_text(name) if evaluation == "questions" else test_text(name))
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
    return run_main(lambda: print(describe(args.name, scaffold(args.name, args.params, args.evaluation))))


if __name__ == "__main__":
    sys.exit(main())
