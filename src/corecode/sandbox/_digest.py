"""Hashes of test results that the harness can check without running, or trusting, the program.

Standard library only: loaded by the worker from this directory (for the measurement children, which
hash what the program returned or printed) and imported by the harness as ``corecode.sandbox._digest``
(which hashes the *expected* values it keeps to itself). A measured execution is accepted only if every
hash it reports is one the harness computed from the expected values (``measure.py``): a program that
does less work when it is measured cannot report them without knowing the answers.

Two values get the same ``eq`` hash if and only if they are ``==`` as plain data (``1 == 1.0 == True``,
``{1, 2} == frozenset({2, 1})``, ``(1,) != [1]``); ``is`` hashes tell ``True``/``False``/``None`` apart
from everything else; ``json`` hashes compare as the judge's call tests do (lists == tuples, dict keys as
strings); ``tokens`` hashes compare stdout as the judge's ``outputs_match`` does, within its tolerance
(every number rounded to 6 significant digits: a little more lenient than the judge, never stricter
except for two numbers within the judge's tolerance that round differently).
"""

from __future__ import annotations

import hashlib
import struct

ENTRY = struct.Struct("<II16s16s")  # item, site, eq/json/tokens hash, is hash
ERROR_SITE = 0xFFFFFFFF
NONE16 = bytes(16)


class Unplain(Exception):
    """A value that is not plain built-in data (never equal to an expected literal in the judge)."""


def _canon(value, out: list, depth: int = 0) -> None:
    if depth > 200:
        raise Unplain("too deep")
    t = type(value)
    if t is bool or t is int:
        out.append(b"i%d;" % int(value))
    elif t is float:
        if value != value:
            out.append(b"nan;")
        elif value in (float("inf"), float("-inf")) or not value.is_integer():
            out.append(b"f" + repr(value).encode() + b";")
        else:
            out.append(b"i%d;" % int(value))
    elif t is complex:
        if value.imag == 0:
            _canon(value.real, out, depth + 1)
        else:
            out.append(b"c" + repr(value).encode() + b";")
    elif t is str:
        data = value.encode("utf-8", "surrogatepass")
        out.append(b"s%d:" % len(data) + data)
    elif t is bytes:
        out.append(b"b%d:" % len(value) + value)
    elif value is None:
        out.append(b"N;")
    elif t is list or t is tuple:
        out.append(b"L%d[" % len(value) if t is list else b"T%d[" % len(value))
        for item in value:
            _canon(item, out, depth + 1)
    elif t is dict:
        pairs = sorted(canonical(k, depth + 1) + canonical(v, depth + 1) for k, v in value.items())
        out.append(b"D%d[" % len(pairs) + b"".join(pairs))
    elif t is set or t is frozenset:
        members = sorted(canonical(x, depth + 1) for x in value)
        out.append(b"S%d[" % len(members) + b"".join(members))
    else:
        # Subclasses (Counter, OrderedDict, namedtuple, IntEnum...) count as their base type, read through
        # the base type's own methods (an overridden __eq__/__iter__ is never consulted), as the judge's
        # program child converts them before the judge compares.
        if isinstance(value, bool):
            return _canon(bool(int.__int__(value)), out, depth)
        for base, copy in ((int, int.__int__), (float, float.__float__), (str, str.__str__),
                           (bytes, bytes.__bytes__), (complex, complex.__complex__), (dict, dict.copy),
                           (list, list.copy), (tuple, lambda v: tuple.__getitem__(v, slice(None))),
                           (frozenset, frozenset.copy), (set, set.copy)):
            if isinstance(value, base):
                return _canon(copy(value), out, depth + 1)
        raise Unplain(t.__name__)


def canonical(value, depth: int = 0) -> bytes:
    out: list = []
    _canon(value, out, depth)
    return b"".join(out)


def _h(tag: bytes, data: bytes) -> bytes:
    return hashlib.sha256(tag + data).digest()[:16]


def h_eq(value) -> bytes:
    try:
        return _h(b"eq", canonical(value))
    except (Unplain, RecursionError, MemoryError, ValueError, OverflowError):
        return _h(b"unplain", b"")


def h_is(value) -> bytes:
    return _h(b"is", b"T" if value is True else b"F" if value is False else b"N" if value is None else b"?")


def json_normal(value):
    """As the judge's ``_verdict.json_normal``: lists and tuples alike, dict keys as strings."""
    if type(value) in (list, tuple):
        return [json_normal(v) for v in value]
    if type(value) is dict:
        return {str(k) if type(k) is not str else k: json_normal(v) for k, v in value.items()}
    return value


def h_json(value) -> bytes:
    try:
        return _h(b"eq", canonical(json_normal(value)))
    except (Unplain, RecursionError, MemoryError, ValueError, OverflowError):
        return _h(b"unplain", b"")


def h_pair(equal: bool) -> bytes:
    return _h(b"pair", b"1" if equal else b"0")


def h_tokens(text: str) -> bytes:
    parts = []
    for token in text.split():
        try:
            number = float(token)
        except ValueError:
            number = None
        if number is not None and number - number == 0:  # finite
            parts.append(b"n" + ("%.5e" % number).encode())
        else:
            parts.append(b"t" + token.encode("utf-8", "surrogatepass"))
    return _h(b"tokens", b"\x00".join(parts))


def h_error(name: str) -> bytes:
    return _h(b"error", name.encode("utf-8", "replace"))


def pack(entries) -> bytes:
    return b"".join(ENTRY.pack(*e) for e in sorted(entries))


def unpack(blob: bytes) -> list[tuple[int, int, bytes, bytes]] | None:
    """The entries of a report; None if the blob is malformed (then the report is not accepted)."""
    if type(blob) is not bytes or len(blob) % ENTRY.size:
        return None
    return [ENTRY.unpack_from(blob, i) for i in range(0, len(blob), ENTRY.size)]
