"""A small OpenAI-compatible chat server on a loopback port, for tests that drive litellm over real HTTP.

``POST /v1/chat/completions`` answers with ``reply(body)`` (the request's JSON; a string back), counts and keeps
every request (its model, messages, ``response_format`` and ``Authorization`` header), and plays scripted faults
first: ``faults`` is a list of ``429``, ``500`` or ``"malformed"`` (the reply cut in half), each used once by the
next request that arrives. A model named ``reject`` gets a 401 whose message echoes the request's key, as some
providers do. Not a test module: ``tests/test_http_endpoints.py`` uses it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Request:
    model: str
    messages: list[dict]
    authorization: str
    response_format: dict | None
    status: int = 200
    fault: str | int | None = None


@dataclass
class ChatServer:
    reply: Callable[[dict], str]
    faults: list = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    def start(self) -> ChatServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                status, payload = owner.handle(self.path, body, self.headers.get("Authorization", ""))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def handle(self, path: str, body: dict, authorization: str) -> tuple[int, dict]:
        if path.rstrip("/") != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {path}", "type": "not_found"}}
        request = Request(model=body.get("model", ""), messages=body.get("messages", []),
                          authorization=authorization, response_format=body.get("response_format"))
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
        text = self.reply(body)
        if fault == "malformed":
            text = text[: max(1, len(text) // 2)]
        prompt = sum(len(str(m.get("content", "")).split()) for m in request.messages)
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": request.model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(text.split()),
                      "total_tokens": prompt + len(text.split())},
        }
