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

A :class:`CompiledTests` (``ReferenceCache.compiled``) keeps the judge's compiled assert tests in the same
folder, one file per (sandbox version, interpreter): building HumanEval's 164 jobs cold spends ~140 ms
rewriting and compiling test code, which every ``corecode check`` paid again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import marshal
import os
import re
import sys
import tempfile
import threading
from pathlib import Path
from types import CodeType
from typing import Any, Callable

__all__ = ["CompiledTests", "ReferenceCache", "default_cache_dir", "sandbox_version"]

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


class _DiskCache:
    """Entries kept in one file: read once, when first needed; ``save`` merges them with what another
    process saved meanwhile and writes the file atomically. Subclasses say how the file is read
    (``_read``: a damaged file is an empty cache) and written (``_encode``)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict | None = None
        self._dirty = False
        self.hits = 0
        self.misses = 0

    def _read(self) -> dict:
        raise NotImplementedError

    def _encode(self, entries: dict) -> bytes:
        raise NotImplementedError

    def _load(self) -> dict:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def save(self) -> None:
        """Write the entries (merged with what another process saved meanwhile) atomically; no-op if unchanged."""
        with self._lock:
            if not self._dirty or self._entries is None:
                return
            mine = self._entries
            self._entries = None
            merged = {**self._load(), **mine}
            self._entries = merged
            if _write_atomic(self.path, self._encode(merged)):
                self._dirty = False


class ReferenceCache(_DiskCache):
    """Reference CPU times per test (``None`` where the reference failed), on disk; thread-safe."""

    def __init__(self, config: Any, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        super().__init__(self.directory / f"reference-times-{sandbox_version()}-{_config_digest(config)}.json")
        self.compiled = CompiledTests(self.directory)

    @staticmethod
    def key(parts: tuple) -> str | None:
        """The entry key of a reference job built from ``parts``; None if it cannot be made stable."""
        text = repr(parts)
        if _ADDRESS.search(text):
            return None
        return hashlib.sha256(text.encode()).hexdigest()

    def _read(self) -> dict[str, list[float | None]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = data.get("entries", {}) if isinstance(data, dict) else {}
            return {k: v for k, v in entries.items()
                    if isinstance(v, list) and all(t is None or isinstance(t, (int, float)) for t in v)}
        except (OSError, ValueError):
            return {}

    def _encode(self, entries: dict) -> bytes:
        return json.dumps({"sandbox_version": sandbox_version(), "entries": entries}).encode()

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
        """As every cache here; saves ``compiled`` too."""
        self.compiled.save()
        super().save()


def _write_atomic(path: Path, data: bytes) -> bool:
    """``data`` into ``path`` through a temp file and ``os.replace``; False if it cannot be written (a cache
    we cannot write is only slower next time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True


class CompiledTests(_DiskCache):
    """The judge's code objects of assert tests (``marshal`` bytes), keyed by the test's source; on disk
    across runs, thread-safe.

    The file name carries the sandbox version (a hash of the sandbox package's source, so a changed rewrite
    in ``asserts.py`` starts a new file) and the interpreter's bytecode magic number; tests are compiled
    with ``optimize=0`` whatever the harness runs with, so ``python -O`` stores the same code. Every entry
    carries a SHA-256 of its key and code and is unmarshalled and type-checked when the file is read; a
    file that fails any of that is an empty cache, never a test that fails for our reasons. The file is
    trusted as the package's own source is: ``Sandbox.compiled_tests`` uses it only where programs see a
    read-only disk, and a program run without isolation (``isolate=False``: trusted code only) could
    rewrite it as it could the package.
    """

    def __init__(self, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        tag = f"{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}"
        super().__init__(self.directory / f"judge-code-{sandbox_version()}-{tag}.marshal")

    @staticmethod
    def _key(source: str) -> bytes:
        return hashlib.sha256(source.encode("utf-8", "surrogatepass")).digest()

    def _read(self) -> dict[bytes, bytes]:
        entries: dict[bytes, bytes] = {}
        try:
            data = marshal.loads(self.path.read_bytes())
            if type(data) is not dict:
                return {}
            for key, value in data.items():
                # (code, sha256(key + code)): a damaged entry that still unmarshals as a code object
                # (one changed byte of bytecode) killed the judge on every run of a right program
                if type(key) is bytes and type(value) is tuple and len(value) == 2 and \
                        all(type(v) is bytes for v in value) and value[1] == _digest(key, value[0]) and \
                        type(marshal.loads(value[0])) is CodeType:
                    entries[key] = value[0]
        except Exception:  # noqa: BLE001 - any damage (marshal raises ValueError, EOFError, SystemError...)
            return {}
        return entries

    def _encode(self, entries: dict) -> bytes:
        return marshal.dumps({k: (v, _digest(k, v)) for k, v in entries.items()})

    def get(self, source: str, build: Callable[[str], bytes]) -> bytes:
        """The compiled form of ``source``: from the cache, or ``build(source)`` (kept for next time)."""
        key = self._key(source)
        with self._lock:
            blob = self._load().get(key)
            if blob is not None:
                self.hits += 1
                return blob
            self.misses += 1
        blob = build(source)  # outside the lock; SyntaxError and ValueError reach the caller
        with self._lock:
            self._load()[key] = blob
            self._dirty = True
        return blob


def _digest(key: bytes, code: bytes) -> bytes:
    return hashlib.sha256(key + b"\0" + code).digest()
