"""construct@optimization with served roles: what the server is sent leaves room for a full decomposition.

No server here: the schema a grammar-constrained server compiles (``tasks/llm/client.py: json_object_schema_format``)
is checked directly against decompositions of the sample problems (docs/served-models.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tasks.construction.decompose import DecomposeOutput
from tasks.llm.client import json_object_schema_format

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples" / "optimization" / "problems.jsonl"


def line_units(text: str) -> dict:
    """A decomposition as the decomposer is asked to write it: every table with its lead-in one unit, every other
    non-empty line one unit (a stand-in for a model's reply; only its shape matters here)."""
    units, table = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            lead = units.pop()["content"] if units and units[-1]["content"].endswith(":") else ""
            units.append({"kind": "data", "content": "\n".join([lead, *table]).strip()})
            table = []
        if line.strip():
            units.append({"kind": "constraint", "content": line.strip("- ").strip()})
    if table:
        units.append({"kind": "data", "content": "\n".join(table)})
    return {"units": units}


def test_the_grammar_sent_for_the_decomposer_admits_a_full_decomposition_of_every_sample_problem():
    sent = json_object_schema_format(DecomposeOutput)["schema"]
    problems = [json.loads(line) for line in SAMPLES.read_text().splitlines() if line.strip()]
    replies = [line_units(p["text"]) for p in problems]
    # the samples need it: more units than a grammar's default list cap, tables longer than its string cap
    assert max(len(r["units"]) for r in replies) > 8
    assert max(len(u["content"]) for r in replies for u in r["units"]) > 240
    for problem, reply in zip(problems, replies):
        jsonschema.validate(reply, sent)  # raises when the grammar could not produce this reply
        assert DecomposeOutput.model_validate(reply).units
