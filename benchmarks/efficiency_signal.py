"""Do the efficiency rewards rank programs by what they do, above the noise? (issue 13, METHOD.md section 3a)

    PYTHONPATH=src python3 benchmarks/efficiency_signal.py [--trials 3] [--busy 1] [--workers 1] [--json OUT]

Corpus: benchmarks/efficiency_corpus.py (real MBPP / HumanEval problems; every program is checked to pass
its problem's tests first). With ``--busy`` cores kept busy by ``while True: pass`` loops for the whole run,
it prints:

- time pairs (faster, slower): how often the faster program's stage-1 time score e_i (group of the two
  programs, t_ref = their median) is strictly higher -- with the measurement pass and the tie band, and,
  for comparison, with the old per-test times and the 1 ms floor;
- memory pairs (smaller, larger): how often the smaller program's stage-2 space score is strictly higher;
- identical programs (same normalized source, e.g. a comment added at the end) through the training executor:
  the largest reward gap (must be exactly 0);
- the noise band: the spread of repeated measurements of one program (no cache), and how often
  renamed twins (different source, same work) tie;
- module-level twins: the module-level variant must score no better than its in-function twin;
- what the measurement pass costs per program (CPU of the measurement job).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import efficiency_corpus as corpus  # noqa: E402

from corecode.benchmarks import load_benchmark  # noqa: E402
from corecode.rewards import Outcome, RewardConfig, coder_group_rewards, planner_group_rewards  # noqa: E402
from corecode.rewards import sandbox_executor  # noqa: E402
from corecode.sandbox import MeasureConfig, Sandbox, SandboxConfig, measure  # noqa: E402


def time_rewards(a, b, config: RewardConfig) -> tuple[float, float]:
    """Stage-1 rewards of two one-program plans of one problem (lambda_time on, t_ref = group median)."""
    plans = [[Outcome(1.0, a[0], a[1])], [Outcome(1.0, b[0], b[1])]]
    ra, rb = planner_group_rewards(plans, [False, False], config)
    return ra, rb


def space_rewards(a, b, config: RewardConfig) -> tuple[float, float]:
    ra, rb = coder_group_rewards([Outcome(1.0, a[0], a[1]), Outcome(1.0, b[0], b[1])], config)
    return ra, rb


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3, help="independent measurements per program")
    parser.add_argument("--busy", type=int, default=1, help="cores kept busy by a spinning process")
    parser.add_argument("--workers", type=int, default=1, help="sandbox workers")
    parser.add_argument("--json", default=None, help="write every figure here too")
    parser.add_argument("--slack-us", type=float, default=None, help="MeasureConfig.cache_slack_s, in microseconds")
    parser.add_argument("--rounds", type=int, default=None, help="MeasureConfig.rounds")
    args = parser.parse_args()

    problems = {p.id: p for name in ("mbpp", "humaneval") for p in load_benchmark(name, "all")}
    config = RewardConfig()
    old = RewardConfig(time_floor_s=1e-3, memory_floor_bytes=64 * 1024, time_tie_band=0.0, memory_tie_band=0.0)
    out: dict = {"trials": args.trials, "busy": args.busy, "workers": args.workers,
                 "time_tie_band": config.time_tie_band, "memory_tie_band": config.memory_tie_band}
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    t_start = time.time()
    try:
        with Sandbox(SandboxConfig(workers=args.workers)) as sb:
            # 0. every program passes its problem's tests
            every = [(p[2], p[1]) for p in corpus.TIME_PAIRS] + [(p[3], p[1]) for p in corpus.TIME_PAIRS]
            every += [(p[2], p[1]) for p in corpus.MEMORY_PAIRS] + [(p[3], p[1]) for p in corpus.MEMORY_PAIRS]
            every += [(p[2], p[1]) for p in corpus.MODULE_PAIRS] + [(p[3], p[1]) for p in corpus.MODULE_PAIRS]
            every += [(p[3], p[1]) for p in corpus.RENAMED]
            checked = sb.run_batch([(program, problems[task]) for program, task in every])
            failing = {(program, task) for (program, task), r in zip(every, checked) if not r.passed}
            for (program, task), r in zip(every, checked):
                if not r.passed:
                    print(f"NOT PASSING {task}: {r.status.value} {r.tests[0].detail[:100]}", file=sys.stderr)
            out["failing_programs"] = len(failing)

            def ok(pair) -> bool:
                return (pair[2], pair[1]) not in failing and (pair[3], pair[1]) not in failing

            mconfig = MeasureConfig()
            if args.slack_us is not None:
                mconfig = replace(mconfig, cache_slack_s=args.slack_us * 1e-6)
            if args.rounds is not None:
                mconfig = replace(mconfig, rounds=args.rounds)
            out["measure_config"] = {"cache_slack_s": mconfig.cache_slack_s, "rounds": mconfig.rounds,
                                     "memory_slack_bytes": mconfig.memory_slack_bytes, "prefault": mconfig.prefault}

            def measured(program: str, task: str):
                m = measure(sb, program, problems[task], config=mconfig)
                return m

            costs: list[float] = []

            def pair_trials(pairs, score, label):
                correct = ties = total = 0
                old_correct = 0
                ratios = []
                rows = []
                per_task: dict[str, list[float]] = {}
                for bench, task, good, bad in (p for p in pairs if ok(p)):
                    for _ in range(args.trials):
                        mg, mb = measured(good, task), measured(bad, task)
                        costs.extend([mg.cost_cpu_s, mb.cost_cpu_s])
                        a, b = (mg.cpu_time_s, mg.peak_memory_bytes), (mb.cpu_time_s, mb.peak_memory_bytes)
                        rg, rb = score(a, b, config)
                        total += 1
                        correct += rg > rb
                        ties += rg == rb
                        rg_old, rb_old = sb.run(good, problems[task]), sb.run(bad, problems[task])
                        og = (rg_old.cpu_time_s, rg_old.peak_memory_bytes)
                        ob = (rb_old.cpu_time_s, rb_old.peak_memory_bytes)
                        so = score(og, ob, old)
                        old_correct += so[0] > so[1]
                        index = 0 if label == "time" else 1
                        ratios.append(b[index] / max(a[index], 1e-12))
                        per_task.setdefault(task, []).append(ratios[-1])
                        rows.append({"task": task, "good": a, "bad": b, "reward_good": rg, "reward_bad": rb})
                n_pairs = len([p for p in pairs if ok(p)])
                summary = {"pairs": n_pairs, "comparisons": total, "rank_accuracy": correct / total,
                           "ties": ties, "old_rank_accuracy": old_correct / total,
                           "ratio_min": min(ratios), "ratio_median": statistics.median(ratios)}
                print(f"{label} pairs: {n_pairs} pairs x {args.trials} trials: rank accuracy "
                      f"{correct}/{total} = {100 * correct / total:.1f}% (ties {ties}); "
                      f"old measure (per-test times, 1 ms / 64 KiB floors, no ties): "
                      f"{100 * old_correct / total:.1f}%; measured ratio min {min(ratios):.2f}x, "
                      f"median {statistics.median(ratios):.1f}x")
                small = {t: statistics.median(r) for t, r in per_task.items() if statistics.median(r) < 2.0}
                summary["pairs_below_2x"] = small
                if small:
                    print("   pairs whose measured ratio is below 2x on these tests: "
                          + ", ".join(f"{t} {r:.2f}x" for t, r in sorted(small.items())))
                for row in rows:
                    if not row["reward_good"] > row["reward_bad"]:
                        print(f"   misranked/tied: {row['task']} good={row['good']} bad={row['bad']}")
                return summary

            out["time"] = pair_trials(corpus.TIME_PAIRS, time_rewards, "time")
            out["memory"] = pair_trials(corpus.MEMORY_PAIRS, space_rewards, "memory")

            # identical programs through the training executor (one step = one call)
            execute = sandbox_executor(sb)
            gaps = []
            for bench, task, fast, slow in corpus.TIME_PAIRS[:20]:
                if (fast, task) in failing:
                    continue
                twin = fast + "\n# the same program, another comment\n"  # same AST, same positions
                r1, r2 = execute([(fast, problems[task]), (twin, problems[task])])
                o1, o2 = Outcome.from_execution(r1), Outcome.from_execution(r2)
                planner = planner_group_rewards([[o1], [o2]], [False, False], config)
                coder = coder_group_rewards([o1, o2], config)
                gaps += [abs(planner[0] - planner[1]), abs(coder[0] - coder[1])]
            out["identical"] = {"programs": len(gaps) // 2, "max_reward_gap": max(gaps)}
            print(f"identical programs: {len(gaps) // 2} pairs through sandbox_executor: largest reward gap "
                  f"{max(gaps)!r} (stage 1 and stage 2)")

            # the noise band: the same program measured independently, no cache
            spreads = []
            for bench, task, fast, slow in corpus.TIME_PAIRS[::4]:
                for program in (fast, slow):
                    times = [measured(program, task).cpu_time_s for _ in range(max(3, args.trials + 2))]
                    spreads += [abs(math.log(x / y)) for i, x in enumerate(times) for y in times[i + 1:]]
            band = [math.expm1(s) for s in spreads]
            within = sum(b <= config.time_tie_band for b in band) / len(band)
            out["noise"] = {"comparisons": len(band), "p50": pct(band, 0.5), "p90": pct(band, 0.9),
                            "p95": pct(band, 0.95), "max": max(band), "within_tie_band": within}
            print(f"noise band (same program, independent measurements, {len(band)} comparisons): relative "
                  f"difference p50 {100 * pct(band, 0.5):.1f}%, p90 {100 * pct(band, 0.9):.1f}%, "
                  f"p95 {100 * pct(band, 0.95):.1f}%, max {100 * max(band):.1f}%; within the tie band "
                  f"({100 * config.time_tie_band:.0f}%): {100 * within:.1f}%")

            tied = total = 0
            for bench, task, program, twin in corpus.RENAMED:
                for _ in range(args.trials):
                    a, b = measured(program, task), measured(twin, task)
                    rt = time_rewards((a.cpu_time_s, a.peak_memory_bytes), (b.cpu_time_s, b.peak_memory_bytes), config)
                    rs = space_rewards((a.cpu_time_s, a.peak_memory_bytes), (b.cpu_time_s, b.peak_memory_bytes), config)
                    total += 1
                    tied += rt[0] == rt[1] and rs[0] == rs[1]
            out["renamed"] = {"comparisons": total, "tied": tied}
            print(f"renamed twins (same work, different source, measured separately): time and space rewards "
                  f"tie in {tied}/{total} = {100 * tied / total:.1f}%")

            no_better = total = 0
            for bench, task, inside, module in corpus.MODULE_PAIRS:
                for _ in range(args.trials):
                    a, b = measured(inside, task), measured(module, task)
                    ta = time_rewards((a.cpu_time_s, a.peak_memory_bytes), (b.cpu_time_s, b.peak_memory_bytes), config)
                    sa = space_rewards((a.cpu_time_s, a.peak_memory_bytes), (b.cpu_time_s, b.peak_memory_bytes), config)
                    total += 1
                    no_better += ta[1] <= ta[0] and sa[1] <= sa[0]
                    if not (ta[1] <= ta[0] and sa[1] <= sa[0]):
                        print(f"   module-level scores better: {task} in-function {a} module {b}")
            out["module_level"] = {"comparisons": total, "no_better": no_better}
            print(f"module-level twins: the module-level variant scores no better (time and space) in "
                  f"{no_better}/{total}")

            out["cost"] = {"programs": len(costs), "mean_cpu_s": statistics.fmean(costs),
                           "median_cpu_s": statistics.median(costs), "max_cpu_s": max(costs)}
            print(f"measurement cost per program (CPU of the measurement job): median "
                  f"{statistics.median(costs) * 1000:.0f} ms, mean {statistics.fmean(costs) * 1000:.0f} ms, "
                  f"max {max(costs):.2f} s over {len(costs)} measurements")
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    out["wall_s"] = time.time() - t_start
    out["loadavg"] = os.getloadavg()
    print(f"wall {out['wall_s']:.0f} s; load average at the end {out['loadavg'][0]:.2f} "
          f"(busy spinners: {args.busy}, workers: {args.workers}, cores: {os.cpu_count()})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
