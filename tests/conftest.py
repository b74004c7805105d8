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
    loaders against them (provenance, not features: every feature's test, the end-to-end evaluation and CG
    tests, the sandbox's known-answer and cheat suites included, uses the data shipped in corecode).
    In CI (the CI environment variable set) a missing folder fails them; on a clone without that folder they
    skip, with a reason that names it."""
    if not SHARED_DATA.is_dir():
        message = (f"shared benchmark data not found at {SHARED_DATA}: these tests compare corecode's shipped "
                   "copies with the real files; set CORECODE_SHARED_DATA to their folder (README, 'Tests')")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_DATA
