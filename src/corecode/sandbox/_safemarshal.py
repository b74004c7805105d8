"""Bounded decoding of marshal frames written by program processes (standard library only, never raises
anything but ``ValueError``).

``marshal.loads`` is not safe on untrusted bytes: a code object with inconsistent counts raises
``SystemError``, a container header claiming 2**31-1 items allocates gigabytes or spins for minutes, and
deep nesting recurses. The worker (``_run.Frames``) and the judge (``_judge.Program.receive``) therefore
never hand a program's bytes to ``marshal.loads`` before :func:`check` has walked them: only scalars
(None, bools, ints, floats, complex, str, bytes, Ellipsis, StopIteration) and tuples / lists / sets /
frozensets / dicts of them are accepted; code objects and unknown type codes are rejected; every claimed
length or item count must fit in the bytes that remain (each item takes at least one byte), so the decoded
size is linear in the frame's size; nesting deeper than ``max_depth`` is rejected.
"""

from __future__ import annotations

import marshal
import struct

_FLAG_REF = 0x80
_FIXED = {ord(c): n for c, n in (("0", 0), ("N", 0), ("F", 0), ("T", 0), ("S", 0), (".", 0), ("i", 4), ("I", 8),
                                  ("g", 8), ("y", 16), ("r", 4))}
_SIZED32 = frozenset(map(ord, "stuaA"))  # int32 length, then that many bytes
_SIZED8 = frozenset(map(ord, "zZ"))  # 1-byte length
_SEQ32 = frozenset(map(ord, "([<>"))  # int32 count, then that many objects
_INT32 = struct.Struct("<i")


def check(data: bytes, max_depth: int = 64) -> None:
    """Raise ValueError unless ``data`` is exactly one marshal object of the accepted shapes."""
    end = _walk(data, 0, max_depth)
    if end != len(data):
        raise ValueError("trailing bytes after the marshal object")


def loads(data: bytes, max_depth: int = 64):
    """``marshal.loads(data)`` after :func:`check`; any failure is ``ValueError``."""
    check(data, max_depth)
    try:
        return marshal.loads(data)
    except Exception as exc:  # noqa: BLE001 - whatever marshal says, the frame is malformed
        raise ValueError(f"malformed marshal data: {type(exc).__name__}") from None


def _need(data: bytes, pos: int, n: int) -> None:
    if n < 0 or pos + n > len(data):
        raise ValueError("a length or count exceeds the remaining bytes")


def _count(data: bytes, pos: int) -> int:
    _need(data, pos, 4)
    return _INT32.unpack_from(data, pos)[0]


def _walk(data: bytes, pos: int, depth: int) -> int:
    if depth < 0:
        raise ValueError("nested too deeply")
    _need(data, pos, 1)
    code = data[pos] & ~_FLAG_REF
    pos += 1
    if code in _FIXED:
        n = _FIXED[code]
        _need(data, pos, n)
        return pos + n
    if code in _SIZED32:
        n = _count(data, pos)
        _need(data, pos + 4, n)
        return pos + 4 + n
    if code in _SIZED8 or code == ord("f"):
        _need(data, pos, 1)
        n = data[pos]
        _need(data, pos + 1, n)
        return pos + 1 + n
    if code == ord("x"):  # complex as two text floats
        for _ in range(2):
            _need(data, pos, 1)
            n = data[pos]
            _need(data, pos + 1, n)
            pos += 1 + n
        return pos
    if code == ord("l"):
        n = abs(_count(data, pos))
        _need(data, pos + 4, 2 * n)
        return pos + 4 + 2 * n
    if code in _SEQ32 or code == ord(")"):
        if code == ord(")"):
            _need(data, pos, 1)
            n, pos = data[pos], pos + 1
        else:
            n, pos = _count(data, pos), pos + 4
        _need(data, pos, n)  # each item takes at least one byte
        for _ in range(n):
            pos = _walk(data, pos, depth - 1)
        return pos
    if code == ord("{"):
        while True:
            _need(data, pos, 1)
            if data[pos] == ord("0"):
                return pos + 1
            pos = _walk(data, pos, depth - 1)
            pos = _walk(data, pos, depth - 1)
    raise ValueError(f"type code {chr(code)!r} is not accepted in a result frame")


__all__ = ["check", "loads"]
