"""The output schema as the client sends it (``sent_schema``), the check that it meets OpenAI's strict structured-output
rules (``strict_problems``), and the way back from a strict reply to the record (``drop_sent_nulls``).

OpenAI's documented rules for ``response_format: json_schema`` with ``strict: true`` (Structured Outputs, "Supported
schemas"), which the other providers' schema modes accept as a common subset:

- the root is an object, never ``anyOf``; every object sets ``additionalProperties: false`` and lists every one of
  its properties in ``required`` (an optional field is a required one that may be ``null``);
- only these keywords: types string, number, integer, boolean, object, array, null, ``enum``, ``const``, ``anyOf``
  (nested), ``$ref``/``$defs``; string ``pattern`` and ``format``; number ``minimum``, ``maximum``,
  ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``; array ``minItems``, ``maxItems``; ``title`` and
  ``description``. Not ``allOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, ``dependent*``, ``patternProperties``,
  ``propertyNames``, ``unevaluated*``, ``min/maxProperties``, ``contains``, ``uniqueItems``, ``default``, nor
  ``minLength``/``maxLength`` (listed only among the keywords fine-tuned models lack, and absent from the supported
  list, so left out here);
- at most 5,000 object properties in all, 10 levels of object nesting, 120,000 characters over all property names,
  definition names, enum values and const values, 1,000 enum values in all, and 15,000 characters over the values of
  any one enum of more than 250 values.

``sent_schema`` derives the schema from the role's pydantic record, so the record stays the one place that says what
an output is: defaults and length, size and number bounds are dropped (the record's own validation still enforces
them on the reply, and a reply that breaks one gets the repair retry),
every property becomes required and the optional ones nullable, every object closed. An open map
(``dict[str, str]``) is left as it is, so the check catches it: such a field must be reshaped in the record.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from pydantic import BaseModel

SUPPORTED_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs",
    "title", "description",
    "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems",
})
TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
MAX_PROPERTIES = 5000
MAX_NESTING = 10
MAX_STRING_CHARS = 120_000
MAX_ENUM_VALUES = 1000
LARGE_ENUM = 250
MAX_LARGE_ENUM_CHARS = 15_000

DROPPED_WHEN_SENT = ("default", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
                     "exclusiveMaximum", "multipleOf", "minItems", "maxItems")
"""Keywords ``sent_schema`` removes: the record's validation enforces them on the reply anyway, and not every
provider's schema mode takes them (Anthropic's native output format refuses ``minimum`` on an integer and
``minItems`` other than 0 or 1), so the sent schema keeps to what all of them accept."""


def _resolve(ref: str, root: dict) -> dict | None:
    if ref == "#":
        return root
    if not ref.startswith("#/$defs/"):
        return None
    return root.get("$defs", {}).get(ref[len("#/$defs/"):])


def _is_nullable(node: dict) -> bool:
    if node.get("type") == "null" or (isinstance(node.get("type"), list) and "null" in node["type"]):
        return True
    return any(isinstance(b, dict) and _is_nullable(b) for b in node.get("anyOf", []))


# ---- the schema sent ------------------------------------------------------------------------------------------------

def _strictify(node: Any, root: dict) -> Any:
    if isinstance(node, list):
        return [_strictify(x, root) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node and len(node) > 1:  # a $ref with siblings (a described sub-record): inline its definition
        target = _resolve(node["$ref"], root)
        if target is not None and target is not root:
            node = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in DROPPED_WHEN_SENT:
            continue
        if key in ("properties", "$defs"):
            out[key] = {name: _strictify(sub, root) for name, sub in value.items()}
        else:
            out[key] = _strictify(value, root)
    if "properties" in out:
        required = set(node.get("required", []))
        for name, sub in out["properties"].items():
            if name not in required and not _is_nullable(sub):
                notes = {k: sub[k] for k in ("title", "description") if k in sub}
                body = {k: v for k, v in sub.items() if k not in notes}
                out["properties"][name] = {"anyOf": [body, {"type": "null"}], **notes}
        out["required"] = list(out["properties"])
    if out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


@cache
def _sent_text(model: type[BaseModel]) -> str:
    schema = model.model_json_schema()
    return json.dumps(_strictify(schema, schema), ensure_ascii=False)


def sent_schema(model: type[BaseModel]) -> dict:
    """The strict JSON schema of ``model`` as the client sends it (a fresh copy)."""
    return json.loads(_sent_text(model))


def response_format(model: type[BaseModel]) -> dict:
    """``response_format`` for a strict ``json_schema`` request."""
    return {"type": "json_schema", "json_schema": {"name": model.__name__[:64], "schema": sent_schema(model),
                                                   "strict": True}}


# ---- the check ------------------------------------------------------------------------------------------------------

def strict_problems(schema: dict) -> list[str]:
    """Every way ``schema`` breaks the strict rules above, one line each naming where (empty when it meets them)."""
    problems: list[str] = []
    totals = {"properties": 0, "chars": 0, "enum_values": 0}
    if schema.get("type") != "object" or "anyOf" in schema:
        problems.append("(root): must be an object schema, not anyOf")
    for name in schema.get("$defs", {}):
        totals["chars"] += len(name)

    def check(node: Any, where: str, depth: int, seen: frozenset[str]) -> None:
        if not isinstance(node, dict):
            problems.append(f"{where}: a schema must be an object")
            return
        for key in node:
            if key not in SUPPORTED_KEYWORDS:
                problems.append(f"{where}: unsupported keyword {key!r}")
        types = node.get("type")
        for t in types if isinstance(types, list) else [types] if types is not None else []:
            if t not in TYPES:
                problems.append(f"{where}: unsupported type {t!r}")
        if "format" in node and node["format"] not in FORMATS:
            problems.append(f"{where}: unsupported format {node['format']!r}")
        if "enum" in node:
            values = node["enum"]
            totals["enum_values"] += len(values)
            chars = sum(len(str(v)) for v in values)
            totals["chars"] += chars
            if len(values) > LARGE_ENUM and chars > MAX_LARGE_ENUM_CHARS:
                problems.append(f"{where}: an enum of {len(values)} values has {chars} characters (> "
                                f"{MAX_LARGE_ENUM_CHARS})")
        if "const" in node:
            totals["chars"] += len(str(node["const"]))
        is_object = types == "object" or (isinstance(types, list) and "object" in types) or "properties" in node
        if is_object:
            depth += 1
            if depth > MAX_NESTING:
                problems.append(f"{where}: {depth} levels of object nesting (> {MAX_NESTING})")
                return
            props = node.get("properties", {})
            if node.get("additionalProperties") is not False:
                problems.append(f"{where}: additionalProperties must be false (an open map is not allowed)")
            missing = [p for p in props if p not in node.get("required", [])]
            if missing:
                problems.append(f"{where}: every property must be required (not: {', '.join(missing)})")
            extra = [r for r in node.get("required", []) if r not in props]
            if extra:
                problems.append(f"{where}: required names unknown properties: {', '.join(extra)}")
            totals["properties"] += len(props)
            for name, sub in props.items():
                totals["chars"] += len(name)
                check(sub, f"{where}.{name}", depth, seen)
        if "items" in node:
            check(node["items"], f"{where}[]", depth, seen)
        if isinstance(node.get("additionalProperties"), dict):
            check(node["additionalProperties"], f"{where}{{*}}", depth, seen)
        for i, branch in enumerate(node.get("anyOf", [])):
            check(branch, f"{where}|{i}", depth, seen)
        if "$ref" in node:
            ref = node["$ref"]
            target = _resolve(ref, schema)
            if target is None:
                problems.append(f"{where}: $ref {ref!r} does not name a definition of this schema")
            elif ref not in seen:  # a recursive schema is allowed; each definition is walked once per path
                check(target, f"{where}->{ref.rsplit('/', 1)[-1]}", depth, seen | {ref})

    check({k: v for k, v in schema.items() if k != "$defs"}, "(root)", 0, frozenset())
    if totals["properties"] > MAX_PROPERTIES:
        problems.append(f"(schema): {totals['properties']} object properties (> {MAX_PROPERTIES})")
    if totals["chars"] > MAX_STRING_CHARS:
        problems.append(f"(schema): {totals['chars']} characters of names and values (> {MAX_STRING_CHARS})")
    if totals["enum_values"] > MAX_ENUM_VALUES:
        problems.append(f"(schema): {totals['enum_values']} enum values (> {MAX_ENUM_VALUES})")
    return list(dict.fromkeys(problems))


# ---- the way back ---------------------------------------------------------------------------------------------------

def drop_sent_nulls(data: Any, schema: dict, node: dict | None = None) -> Any:
    """``data`` (a reply to the strict schema) with each ``null`` removed where the record's own ``schema`` has an
    optional, non-nullable field: the strict schema made it required and nullable, the record fills its default."""
    node = schema if node is None else node
    if "$ref" in node:
        node = _resolve(node["$ref"], schema) or {}
    if isinstance(data, dict) and "properties" in node:
        required = set(node.get("required", []))
        out = {}
        for key, value in data.items():
            sub = node["properties"].get(key)
            if sub is None:
                out[key] = value
            elif value is None and key not in required and not _is_nullable(_deref(sub, schema)):
                continue
            else:
                out[key] = drop_sent_nulls(value, schema, sub)
        return out
    if isinstance(data, list) and isinstance(node.get("items"), dict):
        return [drop_sent_nulls(x, schema, node["items"]) for x in data]
    for branch in node.get("anyOf", []):
        branch = _deref(branch, schema)
        if (isinstance(data, dict) and "properties" in branch) or (isinstance(data, list) and "items" in branch):
            return drop_sent_nulls(data, schema, branch)
    return data


def _deref(node: dict, schema: dict) -> dict:
    return (_resolve(node["$ref"], schema) or {}) if "$ref" in node else node
