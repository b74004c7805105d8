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
    """The real benchmark files of ../shared/data, for the few tests that check corecode's shipped copies and
    loaders against them. A missing copy fails those tests (never a skip that passes unnoticed); every
    other test, the end-to-end evaluation and CG tests included, uses the data shipped in corecode."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared benchmark data not found at {SHARED_DATA}: put the real files there or set "
                    "CORECODE_SHARED_DATA to their folder (README, 'Tests')")
    return SHARED_DATA
