"""Reading benchmark rows from local files and from the Hugging Face Hub, with row numbers for errors.

Every reader yields ``(row_number, row)`` pairs, row numbers 1-based as a person counts lines (JSONL) or
list items (JSON) or table rows (parquet, Hub), so that a :class:`DatasetError` can point at the row.

Local formats: ``.jsonl`` / ``.jsonl.gz`` (one object a line), ``.json`` / ``.json.gz`` (a list of objects,
or an object holding such a list under ``"data"``/``"rows"``), ``.parquet`` (needs pyarrow, extra ``hub``).
The Hub path imports ``datasets`` only inside :func:`hub_rows`; a missing package names the ``hub`` extra.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from corecode.errors import DatasetError, MissingDependencyError

__all__ = ["file_rows", "hub_rows", "SUFFIXES"]

SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet")

Row = Mapping[str, Any]


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return suffix
    raise DatasetError(str(path), None, None, f"unknown file type; expected one of {', '.join(SUFFIXES)}")


def _open_text(path: Path):
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Row]]:
    with _open_text(path) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue  # a trailing blank line is not a row
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(str(path), number, None, f"not valid JSON ({exc.msg} at column {exc.colno})")
            if not isinstance(row, dict):
                raise DatasetError(str(path), number, None, f"expected a JSON object, got {type(row).__name__}")
            yield number, row


def _json_rows(path: Path) -> Iterator[tuple[int, Row]]:
    with _open_text(path) as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise DatasetError(str(path), None, None, f"not valid JSON ({exc.msg} at line {exc.lineno})")
    if isinstance(data, dict):
        # Some exports wrap the list; accept the two usual wrappers, nothing else.
        for key in ("data", "rows"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        raise DatasetError(str(path), None, None, "expected a JSON list of objects (or {'data': [...]})")
    for number, row in enumerate(data, start=1):
        if not isinstance(row, dict):
            raise DatasetError(str(path), number, None, f"expected a JSON object, got {type(row).__name__}")
        yield number, row


def _parquet_rows(path: Path) -> Iterator[tuple[int, Row]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError("pyarrow", "hub", "reading parquet files") from exc
    table = pq.read_table(path)
    for number, row in enumerate(table.to_pylist(), start=1):
        yield number, row


def file_rows(path: str | Path) -> Iterator[tuple[int, Row]]:
    """Yield ``(row_number, row)`` from a local JSONL / JSON / parquet file (optionally gzipped)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(str(path), None, None, "file not found")
    suffix = _suffix(path)
    if suffix.startswith(".jsonl"):
        return _jsonl_rows(path)
    if suffix.startswith(".json"):
        return _json_rows(path)
    return _parquet_rows(path)


def hub_rows(
    dataset_id: str, config: str | None, split: str, **kwargs: Any
) -> Iterator[tuple[int, Row]]:
    """Yield ``(row_number, row)`` from ``datasets.load_dataset(dataset_id, config, split=split)``.

    ``kwargs`` go to ``load_dataset`` unchanged (tests pass ``data_files`` with ``dataset_id="json"`` to run
    this exact path offline).
    """
    try:
        import datasets
    except ImportError as exc:
        raise MissingDependencyError("datasets", "hub", f"loading {dataset_id!r} from the Hugging Face Hub") from exc
    args = (dataset_id, config) if config else (dataset_id,)
    try:
        table = datasets.load_dataset(*args, split=split, **kwargs)
    except Exception as exc:  # noqa: BLE001 - datasets raises a zoo of types (offline, gated, missing, script)
        where = f"hub:{dataset_id}" + (f"[{config}]" if config else "") + f"/{split}"
        raise DatasetError(
            where, None, None,
            f"could not load ({type(exc).__name__}: {exc}); pass a local file with --path/path= instead",
        ) from exc
    return ((number, row) for number, row in enumerate(table, start=1))
