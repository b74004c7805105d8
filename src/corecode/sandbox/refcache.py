"""Reference-solution CPU times kept on disk across runs, so a command does not re-time every reference.

The sandbox derives each problem's per-test time limits from its first reference solution's CPU time
(``SandboxConfig.reference_timing``). Within one :class:`~corecode.sandbox.Sandbox` those times are kept in
memory; a :class:`ReferenceCache` passed to ``Sandbox(..., reference_cache=...)`` also keeps them in
``$CORECODE_CACHE/sandbox/`` (default ``~/.cache/corecode``), one JSON file per
(sandbox version, config) pair:

  * the sandbox version is a hash of the sandbox package's own source files (any change re-times);
  * the config fields are every ``SandboxConfig`` field but ``workers`` and ``dedupe_jobs`` (limits,
    isolation, interpreter; neither of those two changes how a reference job runs);
  * each entry's key is a hash of everything the reference job is built from: benchmark source and id,
    the reference solution, setup code, the tests, the checker, limits, files, starter code, entry point.
    A changed benchmark file changes these, so its problems are timed again; an entry whose key
    would contain a memory address (a checker object without a stable repr) is never cached.

Writes go through a temp file and ``os.replace`` (atomic); a missing or unreadable file is an empty cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["ReferenceCache", "default_cache_dir", "sandbox_version"]

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_version: str | None = None


def default_cache_dir() -> Path:
    """``$CORECODE_CACHE/sandbox`` (default ``~/.cache/corecode/sandbox``)."""
    return Path(os.environ.get("CORECODE_CACHE") or Path.home() / ".cache" / "corecode") / "sandbox"


def sandbox_version() -> str:
    """A hash of the sandbox package's source files (this module's folder, ``*.py``)."""
    global _version
    if _version is None:
        h = hashlib.sha256()
        for path in sorted(Path(__file__).parent.glob("*.py")):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        _version = h.hexdigest()[:16]
    return _version


def _config_digest(config: Any) -> str:
    fields = {f.name: repr(getattr(config, f.name)) for f in dataclasses.fields(config)
              if f.name not in ("workers", "dedupe_jobs")}
    fields["python_version"] = sys.version
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


class ReferenceCache:
    """Reference CPU times per test (``None`` where the reference failed), on disk; thread-safe."""

    def __init__(self, config: Any, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.path = self.directory / f"reference-times-{sandbox_version()}-{_config_digest(config)}.json"
        self._lock = threading.Lock()
        self._entries: dict[str, list[float | None]] | None = None
        self._dirty = False
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(parts: tuple) -> str | None:
        """The entry key of a reference job built from ``parts``; None if it cannot be made stable."""
        text = repr(parts)
        if _ADDRESS.search(text):
            return None
        return hashlib.sha256(text.encode()).hexdigest()

    def _load(self) -> dict[str, list[float | None]]:
        if self._entries is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                entries = data.get("entries", {}) if isinstance(data, dict) else {}
                self._entries = {k: v for k, v in entries.items()
                                 if isinstance(v, list) and all(t is None or isinstance(t, (int, float)) for t in v)}
            except (OSError, ValueError):
                self._entries = {}
        return self._entries

    def get(self, key: str | None) -> list[float | None] | None:
        if key is None:
            return None
        with self._lock:
            found = self._load().get(key)
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
            return list(found) if found is not None else None

    def put(self, key: str | None, times: list[float | None]) -> None:
        if key is None:
            return
        with self._lock:
            self._load()[key] = list(times)
            self._dirty = True

    def save(self) -> None:
        """Write the entries (merged with what another process saved meanwhile) atomically; no-op if unchanged."""
        with self._lock:
            if not self._dirty or self._entries is None:
                return
            mine = self._entries
            self._entries = None
            merged = {**self._load(), **mine}
            self._entries = merged
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.directory)
                try:
                    with os.fdopen(fd, "w", encoding="utf-8") as f:
                        json.dump({"sandbox_version": sandbox_version(), "entries": merged}, f)
                    os.replace(tmp, self.path)
                except BaseException:
                    os.unlink(tmp)
                    raise
            except OSError:
                return  # a cache we cannot write is only slower next time
            self._dirty = False
