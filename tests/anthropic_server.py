"""A loopback server speaking Anthropic's Messages API (``POST /v1/messages``), for tests that drive litellm's
Anthropic translation over real HTTP.

Replies are the response bodies in ``tests/data/anthropic/`` (written by hand in the format of Anthropic's API
reference): a forced tool call gets ``tool_use.json`` (the record as the tool's ``input``), a native structured
output request (``output_format``) gets ``output_format.json``, or ``thinking_output_format.json`` (a thinking block
before the answer) when ``thinking`` is set. ``record(body)`` gives the record (a JSON string) to fill in. Like
Anthropic's API, it answers 400 to a schema keyword its structured outputs refuse (numeric bounds, ``minItems``
other than 0 or 1). Not a test module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

from tests.json_http import start_json_server, stop_json_server

FIXTURES = Path(__file__).parent / "data" / "anthropic"
REFUSED_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
                    "maxLength")


def refused(schema) -> str:
    """The first keyword Anthropic's structured outputs refuse in ``schema`` ("" when none)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in REFUSED_KEYWORDS:
                return f"property '{key}' is not supported"
            if key == "minItems" and value not in (0, 1):
                return f"minItems {value} is not supported (only 0 or 1)"
            inner = refused(value) if key not in ("properties", "$defs") else next(
                (r for r in map(refused, value.values()) if r), "")
            if inner:
                return inner
    elif isinstance(schema, list):
        return next((r for r in map(refused, schema) if r), "")
    return ""


@dataclass
class MessagesServer:
    record: Callable[[dict], str]
    thinking: bool = False
    requests: list[dict] = field(default_factory=list)
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MessagesServer:
        self._server = start_json_server(lambda path, body, headers: self.handle(path, body))
        self.port = self._server.server_address[1]
        return self

    def stop(self) -> None:
        stop_json_server(self._server)

    def handle(self, path: str, body: dict) -> tuple[int, dict]:
        self.requests.append(body)
        if path.rstrip("/") != "/v1/messages":
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": f"no route {path}"}}
        tools = body.get("tools") or []
        schema = body.get("output_format", {}).get("schema") if "output_format" in body else (
            tools[0].get("input_schema") if tools else None)
        problem = refused(schema)
        if problem:
            return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": f"output_format.schema: {problem}"}}
        record = self.record(body)
        if tools:
            reply = json.loads((FIXTURES / "tool_use.json").read_text())
            reply["content"][0]["name"] = body.get("tool_choice", {}).get("name", tools[0]["name"])
            reply["content"][0]["input"] = json.loads(record)
        else:
            name = "thinking_output_format.json" if self.thinking else "output_format.json"
            reply = json.loads((FIXTURES / name).read_text())
            reply["content"][-1]["text"] = record
        reply["model"] = body.get("model", reply["model"])
        return 200, reply
