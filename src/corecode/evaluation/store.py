"""Append-only JSONL record files that survive being killed at any instant.

Each record is one line, written with a single ``write`` and then ``flush`` + ``fsync``, so a finished
sample is on disk before the next one starts. A kill (SIGKILL, power loss) can leave at most the *last*
line torn (no newline, or not valid JSON): :meth:`JsonlStore.open` cuts it off and the run regenerates that
one record. A bad line anywhere else is not a kill's doing; it is reported with its file and row.

Records are keyed by ``(task_id, sample_index)``; a key is never written twice.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corecode.errors import DatasetError

__all__ = ["JsonlStore", "SampleKey"]

SampleKey = tuple[str, int]


class JsonlStore:
    """A JSONL file of records keyed by (task_id, sample_index); thread-safe appends."""

    def __init__(self, path: Path, records: dict[SampleKey, dict[str, Any]]):
        self.path = path
        self._records = records
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str | Path) -> "JsonlStore":
        """Load the records already in ``path`` (creating it if missing), repairing a torn last line."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        records: dict[SampleKey, dict[str, Any]] = {}
        if path.exists():
            data = path.read_bytes()
            good_end = _load_lines(path, data, records)
            if good_end < len(data):
                # the torn tail of a killed write: drop it so the next append starts on a fresh line
                with open(path, "r+b") as fh:
                    fh.truncate(good_end)
                    fh.flush()
                    os.fsync(fh.fileno())
        else:
            path.touch()
        return cls(path, records)

    def __contains__(self, key: SampleKey) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self._records.values()))

    def get(self, key: SampleKey) -> dict[str, Any] | None:
        return self._records.get(key)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record durably; refuses a key that is already stored."""
        key = (str(record["task_id"]), int(record["sample_index"]))
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        with self._lock:
            if key in self._records:
                raise ValueError(f"{self.path}: sample {key} is already stored; it must not be generated twice")
            with open(self.path, "ab") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self._records[key] = record


def _load_lines(path: Path, data: bytes, records: dict[SampleKey, dict[str, Any]]) -> int:
    """Parse complete lines into ``records``; return the byte offset where valid data ends."""
    offset = 0
    lines = data.split(b"\n")
    for row, raw in enumerate(lines, start=1):
        is_last = row == len(lines)
        if is_last:  # text after the final newline: a torn write (or nothing)
            return offset
        try:
            record = json.loads(raw)
            key = (str(record["task_id"]), int(record["sample_index"]))
        except (ValueError, KeyError, TypeError) as exc:
            if row == len(lines) - 1 and not lines[-1]:
                # the last complete line is bad: a write torn mid-line that still got its newline is
                # impossible (one write per line), but a zero-filled tail after power loss looks like this
                return offset
            raise DatasetError(str(path), row, None, f"not a valid sample record ({exc})") from exc
        if key in records:
            raise DatasetError(str(path), row, "task_id", f"sample {key} appears twice")
        records[key] = record
        offset += len(raw) + 1
    return offset
