"""A small OpenAI-compatible HTTP server that serves any corecode Backend.

    python -m corecode.backends.server --model qwen2.5-coder-0.5b --port 8000

serves ``POST /v1/chat/completions`` (non-streaming; ``n``, ``temperature``, ``top_p``, ``max_tokens``,
``stop``, ``seed``) and ``GET /v1/models``. It is a standard-library threaded server: enough to share one
loaded model between processes on a laptop, and what the tests use to exercise the HTTP client against a
real socket. It is not a production server (no streaming, no batching across requests, no TLS).

``max_concurrent`` sheds load: a request beyond that many in flight gets HTTP 429
(what hosted APIs do; clients back off and retry), instead of queueing without bound.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from corecode.backends.base import Backend, SamplingConfig
from corecode.errors import BackendError, ConfigError, CorecodeError

__all__ = ["OpenAIServer", "serve", "main"]


class OpenAIServer(ThreadingHTTPServer):
    """Serves ``backend`` under the model name ``model_name``."""

    daemon_threads = True

    def __init__(
        self,
        backend: Backend,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        model_name: str | None = None,
        api_key: str | None = None,
        max_concurrent: int | None = None,
    ):
        super().__init__((host, port), _Handler)
        self.backend = backend
        self.model_name = model_name or backend.name
        self.api_key = api_key
        self.max_concurrent = max_concurrent
        self.in_flight = 0
        self.peak_in_flight = 0  # most requests seen in flight at once (tests check client limits with it)
        self.requests = 0  # chat requests received, refused ones included
        self._count_lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def enter(self) -> bool:
        """Count a request in; False when ``max_concurrent`` are already in flight."""
        with self._count_lock:
            if self.max_concurrent is not None and self.in_flight >= self.max_concurrent:
                return False
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            return True

    def count_request(self) -> None:
        with self._count_lock:
            self.requests += 1

    def leave(self) -> None:
        with self._count_lock:
            self.in_flight -= 1


class _Handler(BaseHTTPRequestHandler):
    server: OpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, as OpenAI clients expect

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests and pipelines own stderr
        pass

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": kind, "code": status}}, headers)

    def _authorized(self) -> bool:
        if self.server.api_key is None:
            return True
        if self.headers.get("Authorization") == f"Bearer {self.server.api_key}":
            return True
        self._error(401, "invalid or missing API key", "authentication_error")
        return False

    def do_GET(self) -> None:
        if not self._authorized():
            return
        if self.path.rstrip("/") != "/v1/models":
            self._error(404, f"no route {self.path}", "not_found")
            return
        model = {"id": self.server.model_name, "object": "model", "owned_by": "corecode"}
        self._send(200, {"object": "list", "data": [model]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        self.server.count_request()
        if not self._authorized():
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, f"no route {self.path}", "not_found")
            return
        if not self.server.enter():
            self._error(429, f"more than {self.server.max_concurrent} requests in flight", "rate_limit_error")
            return
        try:
            self._chat(raw)
        finally:
            self.server.leave()

    def _chat(self, raw: bytes) -> None:
        try:
            request = json.loads(raw)
            messages, sampling, n = _parse_request(request)
        except (ValueError, KeyError, TypeError, ConfigError) as exc:
            self._error(400, f"bad request: {exc}", "invalid_request_error")
            return
        if request.get("model") not in (None, self.server.model_name):
            self._error(404, f"The model `{request['model']}` does not exist.", "model_not_found")
            return
        try:
            group = self.server.backend.generate([messages], sampling, n)[0]
        except BackendError as exc:
            self._error(500, f"backend failed: {exc}", "server_error")
            return
        except CorecodeError as exc:
            self._error(400, str(exc), "invalid_request_error")
            return
        self._send(200, _response(self.server.model_name, group))


def _parse_request(request: dict[str, Any]) -> tuple[list[dict[str, str]], SamplingConfig, int]:
    if request.get("stream"):
        raise ValueError("streaming is not supported by this server")
    messages = request["messages"]
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
        for m in messages
    ):
        raise ValueError("'messages' must be a list of {role, content} objects with string content")
    stop = request.get("stop") or ()
    defaults = SamplingConfig()
    sampling = SamplingConfig(
        temperature=float(request.get("temperature", 1.0)),  # OpenAI's default
        top_p=float(request.get("top_p", 1.0)),
        max_tokens=int(request.get("max_tokens") or request.get("max_completion_tokens") or defaults.max_tokens),
        stop=(stop,) if isinstance(stop, str) else tuple(stop),
        seed=None if request.get("seed") is None else int(request["seed"]),
    )
    n = int(request.get("n", 1))
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return [{"role": m["role"], "content": m["content"]} for m in messages], sampling, n


def _response(model: str, group: list[Any]) -> dict[str, Any]:
    prompt_tokens = group[0].prompt_tokens if group else 0
    completion_tokens = sum(c.completion_tokens for c in group)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": c.text}, "finish_reason": c.finish_reason}
            for i, c in enumerate(group)
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


@contextmanager
def serve(backend: Backend, host: str = "127.0.0.1", port: int = 0, **options: Any) -> Iterator[OpenAIServer]:
    """Run a server in a background thread for the ``with`` block (``port=0`` picks a free port)."""
    server = OpenAIServer(backend, host, port, **options)
    thread = threading.Thread(target=server.serve_forever, name="corecode-openai-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def main(argv: list[str] | None = None) -> int:
    from corecode.backends import load_backend

    parser = argparse.ArgumentParser(prog="python -m corecode.backends.server", description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="backend spec (see docs/backends.md)")
    parser.add_argument("--served-name", default=None, help="model name clients send (default: the spec)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    parser.add_argument("--max-concurrent", type=int, default=None, help="answer 429 beyond this many requests")
    args = parser.parse_args(argv)
    backend = load_backend(args.model)
    server = OpenAIServer(
        backend, args.host, args.port,
        model_name=args.served_name or args.model, api_key=args.api_key, max_concurrent=args.max_concurrent,
    )
    print(f"serving {args.model!r} as {server.model_name!r} at {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
