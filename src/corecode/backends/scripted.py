"""A scripted model double for unit tests of control flow (never the only test of a feature).

Replies are produced by a list of strings (consumed in order), or by a function of the conversation.
A reply that is an Exception instance is raised, to test failure paths.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence

from corecode.backends.base import Completion, Conversation, SamplingConfig
from corecode.errors import BackendError, ConfigError

__all__ = ["ScriptedBackend", "create"]

Reply = str | BaseException


class ScriptedBackend:
    """Answers from a script. ``calls`` records every conversation it was asked about."""

    def __init__(
        self,
        replies: Sequence[Reply] | Callable[[Conversation], Reply],
        name: str = "scripted",
    ):
        self.name = name
        self._replies = replies if callable(replies) else list(replies)
        self._index = 0
        self._lock = threading.Lock()
        self.calls: list[list[dict[str, str]]] = []

    def _next(self, conversation: Conversation) -> Reply:
        if callable(self._replies):
            return self._replies(conversation)
        with self._lock:
            if self._index >= len(self._replies):
                raise BackendError(f"scripted backend {self.name!r} ran out of replies after {self._index}")
            reply = self._replies[self._index]
            self._index += 1
        return reply

    def generate(
        self, conversations: Sequence[Conversation], sampling: SamplingConfig, n: int = 1
    ) -> list[list[Completion]]:
        out: list[list[Completion]] = []
        for conv in conversations:
            self.calls.append([dict(m) for m in conv])
            group = []
            for _ in range(n):
                reply = self._next(conv)
                if isinstance(reply, BaseException):
                    raise reply
                prompt_tokens = sum(len(m["content"].split()) for m in conv)
                group.append(Completion(text=reply, prompt_tokens=prompt_tokens, completion_tokens=len(reply.split())))
            out.append(group)
        return out

    def close(self) -> None:
        pass


def create(target: str = "", *, replies: Sequence[Reply] | None = None, name: str = "scripted") -> ScriptedBackend:
    """``load_backend("scripted", replies=[...])`` or ``load_backend("scripted:REPLIES.json")`` (a JSON list)."""
    if replies is None:
        if not target:
            raise ConfigError("the scripted backend needs replies=[...] or a file: 'scripted:REPLIES.json'")
        try:
            replies = json.loads(open(target, encoding="utf-8").read())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{target}: cannot read scripted replies: {exc}") from exc
        if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
            raise ConfigError(f"{target}: scripted replies must be a JSON list of strings")
    return ScriptedBackend(replies, name=name)
