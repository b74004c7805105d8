"""The stdout comparison the workers use, importable by the harness (same code, loaded by path there)."""

from corecode.sandbox._verdict import outputs_match

__all__ = ["outputs_match"]
