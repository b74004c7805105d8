"""Client for any OpenAI-compatible chat server: vLLM serve, SGLang, llama.cpp server, Ollama, hosted APIs.

Requests run on a thread pool of ``max_concurrency`` workers sharing one httpx connection pool. A request
that fails with 429, a 5xx, a dropped connection or a timeout is retried after an exponential backoff
(``backoff_s * 2**attempt``, or the server's ``Retry-After`` when it sends one); 401/403 and 404 fail at once
with :class:`BackendAuthError` / :class:`BackendModelNotFoundError`, since retrying cannot fix them.

``n`` samples are either asked of the server in one request (``n_strategy="server"``: vLLM, SGLang, OpenAI)
or sent as ``n`` separate requests (``"repeat"``: llama.cpp server and Ollama ignore ``n``). With
``"server"`` the server reports only the total completion tokens of a request; each completion then carries
an even share of that total (documented approximation).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from corecode.backends.base import Completion, Conversation, SamplingConfig
from corecode.errors import (
    BackendAuthError,
    BackendError,
    BackendModelNotFoundError,
    BackendTimeoutError,
    ConfigError,
)

__all__ = ["OpenAIConfig", "OpenAIBackend", "create"]

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class OpenAIConfig:
    """Where the server is and how hard to try."""

    model: str = field(metadata={"help": "model name the server knows, e.g. 'Qwen/Qwen2.5-Coder-7B-Instruct'"})
    base_url: str = field(default="", metadata={"help": "e.g. http://127.0.0.1:8000/v1; '' = $OPENAI_BASE_URL"})
    api_key: str | None = field(default=None, metadata={"help": "bearer token; None = $OPENAI_API_KEY if set"})
    max_concurrency: int = field(default=8, metadata={"help": "requests in flight at once"})
    timeout_s: float = field(default=300.0, metadata={"help": "seconds to wait for one response"})
    max_retries: int = field(default=4, metadata={"help": "retries after 429/5xx/connection errors/timeouts"})
    backoff_s: float = field(default=1.0, metadata={"help": "first retry delay; doubles on each retry"})
    n_strategy: str = field(default="server", metadata={"help": "'server' sends n; 'repeat' sends n requests"})

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("openai backend needs a model name: 'openai:MODEL@BASE_URL'")
        if self.max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.timeout_s <= 0:
            raise ConfigError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.max_retries < 0 or self.backoff_s < 0:
            raise ConfigError("max_retries and backoff_s must be >= 0")
        if self.n_strategy not in ("server", "repeat"):
            raise ConfigError(f"n_strategy must be 'server' or 'repeat', got {self.n_strategy!r}")


class OpenAIBackend:
    """Chat completions from an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(self, config: OpenAIConfig, name: str | None = None):
        import httpx  # a core dependency; imported here to keep `import corecode.backends` light

        self._httpx = httpx
        self.config = config
        self.name = name or config.model
        base_url = config.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.base_url = base_url.rstrip("/")
        api_key = config.api_key if config.api_key is not None else os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=config.timeout_s,
            limits=httpx.Limits(max_connections=config.max_concurrency),
        )
        self._pool = ThreadPoolExecutor(config.max_concurrency, thread_name_prefix="corecode-openai")
        self._closed = threading.Event()

    def generate(
        self, conversations: Sequence[Conversation], sampling: SamplingConfig, n: int = 1
    ) -> list[list[Completion]]:
        if self._closed.is_set():
            raise BackendError(f"backend {self.name!r} is closed")
        if n < 1:
            raise ConfigError(f"n must be >= 1, got {n}")
        # one job per request: (conversation index, samples asked, seed offset)
        if self.config.n_strategy == "server":
            jobs = [(i, n, 0) for i in range(len(conversations))]
        else:
            jobs = [(i, 1, j) for i in range(len(conversations)) for j in range(n)]
        futures = [
            self._pool.submit(self._request, conversations[i], sampling, count, offset) for i, count, offset in jobs
        ]
        out: list[list[Completion]] = [[] for _ in conversations]
        try:
            for (i, _, _), future in zip(jobs, futures):
                out[i].extend(future.result())  # re-raises the first error in input order
        except BaseException:
            for future in futures:  # requests not started yet are dropped, not sent for nothing
                future.cancel()
            raise
        return out

    def _payload(self, conversation: Conversation, sampling: SamplingConfig, n: int, offset: int) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in conversation],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if n > 1:
            payload["n"] = n
        if sampling.stop:
            payload["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            payload["seed"] = sampling.seed + offset
        return payload

    def _request(self, conversation: Conversation, sampling: SamplingConfig, n: int, offset: int) -> list[Completion]:
        payload = self._payload(conversation, sampling, n, offset)
        start = time.perf_counter()
        body = self._post_with_retries("/chat/completions", payload)
        latency = time.perf_counter() - start
        choices = sorted(body.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) != n:
            hint = " (this server ignores 'n': use n_strategy='repeat')" if len(choices) == 1 else ""
            raise BackendError(f"{self.base_url} returned {len(choices)} choices, asked for {n}{hint}")
        usage = body.get("usage") or {}
        completion_share = int(usage.get("completion_tokens", 0)) // n
        return [
            Completion(
                text=(choice.get("message") or {}).get("content") or "",
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=completion_share,
                finish_reason=choice.get("finish_reason") or "stop",
                latency_s=latency,
            )
            for choice in choices
        ]

    def _post_with_retries(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        httpx = self._httpx
        url = self.base_url + path
        last = ""
        retry_after: str | None = None
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, retry_after))
            retry_after = None
            try:
                response = self._client.post(url, json=payload)
            except httpx.TimeoutException as exc:
                last = f"timeout after {self.config.timeout_s} s ({type(exc).__name__})"
                continue
            except httpx.TransportError as exc:  # refused / dropped connections
                last = f"connection error: {exc}"
                continue
            if response.status_code == 200:
                try:
                    return response.json()
                except ValueError as exc:
                    raise BackendError(f"{url} returned invalid JSON: {response.text[:200]!r}") from exc
            self._raise_final(response, url)
            last = f"HTTP {response.status_code}: {_server_message(response)}"
            retry_after = response.headers.get("retry-after") if response.status_code == 429 else None
        tries = self.config.max_retries + 1
        if last.startswith("timeout"):
            raise BackendTimeoutError(f"{url}: {last}, after {tries} attempt(s)")
        raise BackendError(f"{url}: {last}, after {tries} attempt(s)")

    def _raise_final(self, response: Any, url: str) -> None:
        """Raise for statuses that retrying cannot fix; return for retryable ones."""
        status = response.status_code
        message = _server_message(response)
        if status in (401, 403):
            raise BackendAuthError(
                f"{url} refused the credentials (HTTP {status}: {message}); set api_key= or $OPENAI_API_KEY"
            )
        lowered = message.lower()
        unknown_model = "model" in lowered and ("does not exist" in lowered or "not found" in lowered)
        if status == 404 or (status == 400 and unknown_model):  # some servers answer 400 for a bad model
            raise BackendModelNotFoundError(
                f"{url} does not serve model {self.config.model!r} (HTTP {status}: {message}); "
                f"list the served models at {self.base_url}/models"
            )
        if status not in _RETRY_STATUS and status < 500:
            raise BackendError(f"{url} rejected the request (HTTP {status}: {message})")

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        """Exponential backoff, or the server's Retry-After (seconds, capped at a minute) after a 429."""
        if retry_after:
            try:
                return min(float(retry_after), 60.0)
            except ValueError:
                pass
        return self.config.backoff_s * 2 ** (attempt - 1)

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._pool.shutdown(wait=True)
            self._client.close()

    def __enter__(self) -> "OpenAIBackend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _server_message(response: Any) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return str(body)[:200]


def create(target: str, *, name: str | None = None, **options: Any) -> OpenAIBackend:
    """``openai:MODEL@BASE_URL`` (or ``openai:MODEL`` with base_url= / $OPENAI_BASE_URL)."""
    model, _, base_url = target.partition("@")
    if base_url:
        if options.get("base_url"):
            raise ConfigError(f"openai:{target} names a base URL; do not also pass base_url=")
        options["base_url"] = base_url
    try:
        config = OpenAIConfig(model=model, **options)
    except TypeError as exc:
        raise ConfigError(f"openai backend: {exc}") from exc
    return OpenAIBackend(config, name=name)
