"""The loopback HTTP server the fake providers share: POSTed JSON in, ``(status, JSON)`` out, one thread per request."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Handle = Callable[[str, dict, Mapping[str, str]], tuple[int, dict]]
"""(path, body, headers) -> (status, payload)."""


def start_json_server(handle: Handle) -> ThreadingHTTPServer:
    """Serve ``handle`` on 127.0.0.1 at a free port (``server.server_address[1]``) in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            status, payload = handle(self.path, body, self.headers)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop_json_server(server: ThreadingHTTPServer | None) -> None:
    """Stop a server :func:`start_json_server` started (nothing when it never started)."""
    if server is not None:
        server.shutdown()
        server.server_close()
