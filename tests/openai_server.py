"""A small OpenAI-compatible chat server on a loopback port, for tests that drive litellm over real HTTP.

``POST /v1/chat/completions`` answers with ``reply(body)`` (the request's JSON; a string back), counts and keeps
every request (its model, messages, ``response_format`` and ``Authorization`` header), and plays scripted faults
first: ``faults`` is a list of ``429``, ``500`` or ``"malformed"`` (the reply cut in half), each used once by the
next request that arrives. A model named ``reject`` gets a 401 whose message echoes the request's key, as some
providers do. Not a test module: ``tests/test_http_endpoints.py`` uses it.

Provider dialects (``tests/test_providers.py``), each its own option: ``strict_schemas`` answers 400, as OpenAI does,
to a strict ``json_schema`` that breaks the strict rules (``tasks/llm/strict_schema.py``); ``json_mode_only``
answers 400 to any ``json_schema``, as DeepSeek does, and accepts ``json_object``; ``scripted`` is a list of reply
shapes, each used once by the next request that gets a 200: ``content`` (``{reply}`` stands for ``reply(body)``),
an optional ``reasoning_content`` field and a ``finish_reason`` (``stop`` unless given).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

from tests.json_http import start_json_server, stop_json_server


@dataclass
class Request:
    model: str
    messages: list[dict]
    authorization: str
    response_format: dict | None
    status: int = 200
    fault: str | int | None = None
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass
class ChatServer:
    reply: Callable[[dict], str]
    faults: list = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0
    strict_schemas: bool = False
    json_mode_only: bool = False
    scripted: list[dict] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    def start(self) -> ChatServer:
        self._server = start_json_server(
            lambda path, body, headers: self.handle(path, body, headers.get("Authorization", "")))
        self.port = self._server.server_address[1]
        return self

    def stop(self) -> None:
        stop_json_server(self._server)

    def handle(self, path: str, body: dict, authorization: str) -> tuple[int, dict]:
        if path.rstrip("/") != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {path}", "type": "not_found"}}
        request = Request(model=body.get("model", ""), messages=body.get("messages", []),
                          authorization=authorization, response_format=body.get("response_format"),
                          max_tokens=body.get("max_tokens", body.get("max_completion_tokens")),
                          temperature=body.get("temperature"))
        with self.lock:
            self.requests.append(request)
            fault = request.fault = self.faults.pop(0) if self.faults else None
        if request.model == "reject":
            request.status = 401
            return 401, {"error": {"message": f"Incorrect API key provided: {authorization}",
                                   "type": "invalid_request_error", "code": "invalid_api_key"}}
        if fault in (429, 500):
            request.status = fault
            kind = "rate_limit_exceeded" if fault == 429 else "server_error"
            return fault, {"error": {"message": f"injected {fault}", "type": kind}}
        refusal = self.format_refusal(request.response_format)
        if refusal:
            request.status = 400
            return 400, {"error": {"message": refusal, "type": "invalid_request_error", "param": "response_format"}}
        text = self.reply(body)
        if fault == "malformed":
            text = text[: max(1, len(text) // 2)]
        message, finish = self.scripted_message(text)
        generated = len(str(message["content"]).split()) + len(str(message.get("reasoning_content", "")).split())
        prompt = sum(len(str(m.get("content", "")).split()) for m in request.messages)
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": request.model,
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": prompt + generated},
        }

    def format_refusal(self, response_format: dict | None) -> str:
        """The 400 message a provider of this server's dialect gives for ``response_format`` ("" if accepted)."""
        kind = (response_format or {}).get("type")
        if self.json_mode_only and kind == "json_schema":
            return "This response_format type is unavailable now"
        if self.strict_schemas and kind == "json_schema" and response_format["json_schema"].get("strict"):
            from tasks.llm.strict_schema import strict_problems

            spec = response_format["json_schema"]
            problems = strict_problems(spec.get("schema", {}))
            if problems:
                return f"Invalid schema for response_format '{spec.get('name', '')}': {problems[0]}"
        return ""

    def scripted_message(self, text: str) -> tuple[dict, str]:
        """The assistant message and finish reason: the next scripted shape around ``text``, or ``text`` as is."""
        with self.lock:
            shape = self.scripted.pop(0) if self.scripted else None
        if shape is None:
            return {"role": "assistant", "content": text}, "stop"
        message = {"role": "assistant", "content": shape.get("content", "{reply}").replace("{reply}", text)}
        if "reasoning_content" in shape:
            message["reasoning_content"] = shape["reasoning_content"]
        return message, shape.get("finish_reason", "stop")
