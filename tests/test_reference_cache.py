"""Reference-solution times kept on disk across runs (sandbox/refcache.py), and `check` using them."""

from __future__ import annotations

import json

from corecode.cli import main
from corecode.sandbox import ReferenceCache, Sandbox, SandboxConfig
from corecode.types import CallTest, Problem

REFERENCE = "def f(n):\n    return sum(range(n))\n"


def _problem(reference: str = REFERENCE) -> Problem:
    return Problem(id="t/cached", source="test", statement="", tests=(CallTest("f", (1000,), sum(range(1000))),),
                   reference_solutions=(reference,))


def _count_reference_runs(monkeypatch) -> list[int]:
    calls = [0]
    original = Sandbox._execute_reference

    def counting(self, job):
        calls[0] += 1
        return original(self, job)

    monkeypatch.setattr(Sandbox, "_execute_reference", counting)
    return calls


def _one_run(config: SandboxConfig, directory, problem: Problem) -> list:
    with Sandbox(config, reference_cache=ReferenceCache(config, directory)) as sandbox:
        assert sandbox.run(problem.reference_solutions[0], problem).passed
        return sandbox.reference_times(problem, "all", problem.tests)


def test_second_run_reuses_times_and_a_changed_problem_is_timed_again(tmp_path, monkeypatch):
    calls = _count_reference_runs(monkeypatch)
    config = SandboxConfig(workers=1)
    first = _one_run(config, tmp_path, _problem())
    assert calls[0] == 1 and first[0] is not None
    files = list(tmp_path.glob("reference-times-*.json"))
    assert len(files) == 1 and not list(tmp_path.glob("*.tmp"))  # written through a temp file, renamed
    second = _one_run(config, tmp_path, _problem())
    assert calls[0] == 1 and second == first  # reused from disk, not re-timed
    _one_run(config, tmp_path, _problem(REFERENCE + "# changed\n"))
    assert calls[0] == 2  # a changed reference (a changed benchmark file) is timed again
    _one_run(SandboxConfig(workers=1, memory_limit_mb=config.memory_limit_mb + 1), tmp_path, _problem())
    assert calls[0] == 3  # another config that matters: another cache file
    _one_run(SandboxConfig(workers=2), tmp_path, _problem())
    assert calls[0] == 3  # the worker count does not matter


def test_unreadable_cache_is_empty_and_unstable_keys_are_not_cached(tmp_path):
    cache = ReferenceCache(SandboxConfig(workers=1), tmp_path)
    tmp_path.mkdir(exist_ok=True)
    cache.path.write_text("{not json")
    assert cache.get("k") is None
    cache.put("k", [0.5, None])
    cache.save()
    assert json.loads(cache.path.read_text())["entries"]["k"] == [0.5, None]
    assert ReferenceCache(SandboxConfig(workers=1), tmp_path).get("k") == [0.5, None]
    assert ReferenceCache.key(("checker", "<function c at 0x7f00deadbeef>")) is None


def test_check_reuses_reference_times_across_commands(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CORECODE_CACHE", str(tmp_path / "cache"))
    calls = _count_reference_runs(monkeypatch)
    from corecode.benchmarks import load_benchmark

    problem = load_benchmark("humaneval")[0]
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": problem.id, "solution": problem.reference_solutions[0]}) + "\n")
    argv = ["check", str(samples), "--benchmark", "humaneval", "--workers", "1", "--no-measure", "--json"]
    assert main(argv) == 0 and calls[0] == 1
    assert list((tmp_path / "cache" / "sandbox").glob("reference-times-*.json"))
    assert main(argv) == 0 and calls[0] == 1
    assert main(argv + ["--no-reference-cache"]) == 0 and calls[0] == 2
    assert all(json.loads(line)["pass@1"] == 1.0 for line in capsys.readouterr().out.strip().splitlines())


def test_implausible_cached_times_are_ignored(tmp_path, monkeypatch):
    """A cache file edited to hold an enormous reference time must not lift the limits: it is re-timed."""
    calls = _count_reference_runs(monkeypatch)
    config = SandboxConfig(workers=1)
    first = _one_run(config, tmp_path, _problem())
    cache = ReferenceCache(config, tmp_path)
    data = json.loads(cache.path.read_text())
    data["entries"] = {k: [1e9] for k in data["entries"]}
    cache.path.write_text(json.dumps(data))
    again = _one_run(config, tmp_path, _problem())
    assert calls[0] == 2 and again[0] is not None and again[0] < 1.0 and first[0] < 1.0


# -- the judge's compiled tests (CompiledTests, ReferenceCache.compiled) --------------------------------------
ASSERT_PROBLEM_TESTS = ("assert f(10) == 45", "assert f(0) == 0")


def _assert_problem() -> Problem:
    from corecode.types import AssertTest

    return Problem(id="t/asserts", source="test", statement="", tests=tuple(AssertTest(t) for t in ASSERT_PROBLEM_TESTS),
                   reference_solutions=(REFERENCE,))


def test_compiled_tests_are_reused_across_runs_and_still_judge(tmp_path, monkeypatch):
    """A second run takes every assert test's judge code from disk (no rewrite, no compile), and that code
    still fails a wrong program: the cache holds the judge's tests, not verdicts."""
    from corecode.sandbox import jobs

    built: list[str] = []
    original = jobs._judge_code.__wrapped__

    def counting(code: str) -> bytes:
        built.append(code)
        return original(code)

    monkeypatch.setattr(jobs, "_judge_code", counting)
    config = SandboxConfig(workers=1, reference_timing=False)
    problem = _assert_problem()
    with Sandbox(config, reference_cache=ReferenceCache(config, tmp_path)) as sandbox:
        assert sandbox.run(REFERENCE, problem).passed
    assert sorted(built) == sorted(ASSERT_PROBLEM_TESTS)
    assert len(list(tmp_path.glob("judge-code-*.marshal"))) == 1 and not list(tmp_path.glob("*.tmp"))
    built.clear()
    cache = ReferenceCache(config, tmp_path)
    with Sandbox(config, reference_cache=cache) as sandbox:
        assert sandbox.run(REFERENCE, problem).passed
        wrong = sandbox.run("def f(n):\n    return sum(range(n + 1))\n", problem)
        assert not wrong.passed and wrong.n_passed == 1  # f(0) == 0 still holds; f(10) == 55 != 45
    assert built == [] and cache.compiled.hits == 4 and cache.compiled.misses == 0


def test_damaged_compiled_tests_file_is_an_empty_cache(tmp_path):
    """Garbage, a truncated file, an entry that is not a code object, one whose counts make ``marshal``
    raise SystemError, and one with a changed byte of bytecode that still unmarshals (the red team's: it
    killed the judge on every run of a right program): nothing of any of them is used."""
    import marshal

    from corecode.sandbox.refcache import CompiledTests, _digest

    def build(source: str) -> bytes:
        return marshal.dumps(compile(source, "test.py", "exec"))

    key, good = CompiledTests._key("assert 1"), build("assert 1")
    code = marshal.loads(good)
    flipped = bytearray(code.co_code)
    flipped[-2] ^= 0xFF
    counts = bytearray(good)
    counts[5:9] = (1).to_bytes(4, "little")  # posonlyargcount 1 > argcount 0
    damaged = [b"\x00garbage", marshal.dumps({key: (good, _digest(key, good))})[:-7],
               marshal.dumps({key: (marshal.dumps("not code"), _digest(key, marshal.dumps("not code")))}),
               marshal.dumps({key: (bytes(counts), _digest(key, bytes(counts)))}),
               marshal.dumps({key: (marshal.dumps(code.replace(co_code=bytes(flipped))), _digest(key, good))}),
               marshal.dumps({key: good})]  # the unchecked layout of the first version
    tmp_path.mkdir(exist_ok=True)
    for n, blob in enumerate(damaged):
        CompiledTests(tmp_path).path.write_bytes(blob)
        fresh = CompiledTests(tmp_path)
        assert fresh.get("assert 1", build) == good, n
        assert (fresh.hits, fresh.misses) == (0, 1), n
    cache = CompiledTests(tmp_path)
    cache.path.unlink()
    cache.get("assert 2", build)
    cache.save()
    again = CompiledTests(tmp_path)
    again.get("assert 1", build)  # the instances above never saved: only `cache` did, holding "assert 2"
    again.get("assert 2", build)
    assert (again.hits, again.misses) == (1, 1)


def test_judge_keeps_asserts_under_python_O(tmp_path):
    """Under ``python -O`` the harness compiled the judge's tests with their asserts stripped: a test that
    stays an ``assert`` (not an ``==`` the rewrite turns into a check) passed every program (red team), and
    the disk cache carried that into later runs without -O. Now compiled with ``optimize=0``."""
    import os
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from corecode.sandbox import ReferenceCache, Sandbox, SandboxConfig\n"
        "from corecode.types import AssertTest, Problem\n"
        "p = Problem(id='t/o', source='test', statement='', tests=(AssertTest('assert abs(f(7) - 21) < 1e-9'),),"
        " reference_solutions=('def f(n):\\n    return 3 * n\\n',))\n"
        "c = SandboxConfig(workers=1, reference_timing=False)\n"
        "with Sandbox(c, reference_cache=ReferenceCache(c, sys.argv[1])) as sb:\n"
        "    print(sys.flags.optimize, sb.run('def f(n):\\n    return 2 * n\\n', p).passed,"
        " sb.run(p.reference_solutions[0], p).passed)\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for flags in (["-O"], []):  # -O first: it fills the cache the plain run then reads
        out = subprocess.run([sys.executable, *flags, "-c", script, str(tmp_path)], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.stdout.split() == [str(len(flags)), "False", "True"], out.stderr[-2000:]


def test_programs_cannot_rewrite_compiled_tests_and_without_isolation_none_are_used(tmp_path):
    """The judge runs the cached code objects, so the cache is used only where programs see a read-only
    disk: a program that overwrites the file (here with a test that passes anything) changes nothing, and
    with ``isolate=False`` (the program has the harness's view of the disk) nothing is read from or kept
    in the file."""
    import marshal

    config = SandboxConfig(workers=1, reference_timing=False)
    problem = _assert_problem()
    with Sandbox(config, reference_cache=ReferenceCache(config, tmp_path)) as sandbox:
        assert sandbox.run(REFERENCE, problem).passed
    path = next(tmp_path.glob("judge-code-*.marshal"))
    original = path.read_bytes()
    forged = marshal.dumps({k: marshal.dumps(compile("pass", "test.py", "exec")) for k in marshal.loads(original)})
    attack = (f"try:\n    open({str(path)!r}, 'wb').write({forged!r})\nexcept OSError:\n    pass\n"
              "def f(n):\n    return -1\n")
    cache = ReferenceCache(config, tmp_path)
    with Sandbox(config, reference_cache=cache) as sandbox:
        assert sandbox.compiled_tests() is cache.compiled
        assert sandbox.run(attack, problem).n_passed == 0
    assert path.read_bytes() == original
    open_config = SandboxConfig(workers=1, reference_timing=False, isolate=False)
    bare = ReferenceCache(open_config, tmp_path / "open")
    with Sandbox(open_config, reference_cache=bare) as sandbox:
        assert sandbox.compiled_tests() is None
        assert sandbox.run(REFERENCE, problem).passed
    assert (bare.compiled.hits, bare.compiled.misses) == (0, 0) and not list((tmp_path / "open").glob("judge-code-*"))
