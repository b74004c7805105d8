"""Shared test setup: one torch thread (two torch threads on two busy cores run 5-10x slower)."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CORECODE_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        message = f"shared benchmark data not found at {SHARED_DATA} (set CORECODE_SHARED_DATA)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI always has it: a missing copy must not pass as skipped
        pytest.skip(message)
    return SHARED_DATA
