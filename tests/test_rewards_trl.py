"""The TRL-signature callables: grouping like TRL (consecutive G rows of the gathered batch), processes
simulated with threads and a real barrier-based gather, None for sandbox errors, logs that recompute."""

import json
import threading

import pytest

from corecode.errors import SandboxError
from corecode.rewards import (
    CoderReward,
    ExecutionLog,
    GroupLayout,
    Outcome,
    PlannerReward,
    RewardConfig,
    coder_group_rewards,
    planner_group_rewards,
    sandbox_executor,
)
from corecode.types import AssertTest, ExecutionResult, Problem, Status, TestResult

PROBLEMS = {
    f"p{i}": Problem(id=f"p{i}", source="toy", statement="return x", tests=(AssertTest("assert f(1) == 1"),),
                     entry_point="f")
    for i in range(4)
}


def result(pass_rate: float, mem: int, n: int = 2) -> ExecutionResult:
    n_pass = round(pass_rate * n)
    tests = tuple(
        TestResult(i, Status.PASSED if i < n_pass else Status.WRONG_ANSWER, cpu_time_s=0.01, peak_memory_bytes=mem)
        for i in range(n)
    )
    return ExecutionResult(tests=tests, n_tests=n)


def answer(tag: str) -> str:
    # the tag is code, not only a comment: programs that differ only in comments are the same program
    return f"Here you go:\n```python\ndef f(x):\n    tag = {tag!r}\n    return x  # {tag}\n```"


def fake_execute(jobs):
    """Programs say what they should score: '# pass-<mem>', '# fail', '# half', '# crash' (our failure)."""
    out = []
    for program, _problem in jobs:
        tag = program.split("# ")[-1].strip()
        if tag == "crash":
            out.append(None)
        elif tag.startswith("pass-"):
            out.append(result(1.0, int(tag[5:]) * 1024 * 1024))
        else:
            out.append(result(0.5 if tag == "half" else 0.0, 0))
    return out


class ThreadGather:
    """all-gather of Python lists across N threads (what accelerate.utils.gather_object does across ranks)."""

    def __init__(self, world: int):
        self.barrier = threading.Barrier(world)
        self.parts: dict[int, list] = {}

    def for_rank(self, rank: int):
        def gather(items):
            self.parts[rank] = items
            self.barrier.wait()
            merged = [x for r in sorted(self.parts) for x in self.parts[r]]
            self.barrier.wait()
            return merged
        return gather


# G = 2, 6 rows: groups (p0,p0) (p1,p1) (p2,p2); on 2 processes of 3 rows the p1 group straddles them
IDS = ["p0", "p0", "p1", "p1", "p2", "p2"]
TAGS = ["pass-1", "pass-2", "pass-4", "pass-1", "crash", "half"]
CFG = RewardConfig()


def test_coder_reward_single_process_matches_hand_values(tmp_path):
    reward = CoderReward(PROBLEMS, fake_execute, GroupLayout(num_generations=2), CFG, ExecutionLog(tmp_path / "x.jsonl"))
    got = reward(["q"] * 6, [answer(t) for t in TAGS], IDS)
    assert got[:4] == pytest.approx([1.2, 1.1, 1.05, 1.2]) and got[4] is None and got[5] == pytest.approx(0.5)


def test_coder_reward_split_across_two_processes_equals_one_process():
    single = CoderReward(PROBLEMS, fake_execute, GroupLayout(num_generations=2), CFG)(
        ["q"] * 6, [answer(t) for t in TAGS], IDS)
    gather = ThreadGather(2)
    results: dict[int, list] = {}

    def rank_main(rank):
        rows = slice(3 * rank, 3 * rank + 3)
        layout = GroupLayout(num_generations=2, gather=gather.for_rank(rank), process_index=rank)
        reward = CoderReward(PROBLEMS, fake_execute, layout, CFG)
        results[rank] = reward(["q"] * 3, [answer(t) for t in TAGS[rows]], IDS[rows])

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(2)]
    [t.start() for t in threads]
    [t.join(10) for t in threads]
    assert results[0] + results[1] == single
    # the p1 group straddles the processes: rank 0's 4 MiB program is measured against rank 1's 1 MiB one
    assert results[0][2] == pytest.approx(1.05)


def test_group_layout_rejects_partial_groups():
    with pytest.raises(ValueError, match="num_generations"):
        GroupLayout(num_generations=4).group_and_slice([1, 2, 3], lambda g: [0.0] * len(g))


def test_planner_reward_calls_the_coder_per_plan_and_logs_recomputable_rewards(tmp_path):
    complete = ("1. Input-Output Definition: x\n2. Linear Progression: y\n3. Conditional Logic: z\n"
                "4. Iteration: none\n")
    plans = [complete + "#good", "just write it #good", complete + "#bad", complete + "#crash"]
    seen = []

    def write_programs(plan_texts, problems):
        seen.append(list(plan_texts))
        tag = {"#good": ["pass-1", "pass-2"], "#bad": ["fail", "half"], "#crash": ["pass-1", "crash"]}
        return [[answer(t) for t in tag[p.split()[-1]]] for p in plan_texts]

    log = ExecutionLog(tmp_path / "plans.jsonl")
    reward = PlannerReward(PROBLEMS, write_programs, fake_execute, GroupLayout(num_generations=2), CFG, log)
    got = reward(["q"] * 4, plans, ["p0", "p0", "p1", "p1"])
    assert seen == [plans]
    assert got[0] > 1.0 and got[1] == pytest.approx(got[0] - 0.1)  # same programs, format miss
    assert got[3] is None and 0.0 < got[2] < 0.5
    rows = [json.loads(line) for line in (tmp_path / "plans.jsonl").read_text().splitlines()]
    recomputed = []
    for start in (0, 2):
        group = rows[start : start + 2]
        outs = [[None if o is None else Outcome.from_dict(o) for o in r["outcomes"]] for r in group]
        recomputed += planner_group_rewards(outs, [bool(r["missing"]) for r in group], CFG)
    assert recomputed == [r["reward"] for r in rows] == got


def test_sandbox_executor_falls_back_to_one_by_one_and_marks_our_failures():
    class FlakySandbox:
        def run_batch(self, jobs, tests="all"):
            raise SandboxError("worker pool died")

        def run(self, program, problem, tests="all"):
            if "boom" in program:
                raise SandboxError("could not start the interpreter")
            return result(1.0, 0)

    execute = sandbox_executor(FlakySandbox(), measure=False)
    got = execute([("ok", PROBLEMS["p0"]), ("boom", PROBLEMS["p0"])])
    assert got[0].passed and got[1] is None
    assert coder_group_rewards([Outcome.from_execution(got[0]), None], CFG) == [1.2, None]


def test_a_group_that_mixes_prompts_is_refused_not_scored():
    """G = 2 rows of p0 then p1, p1, then p0: the middle run (p0, p1) is not one prompt's group."""
    ids = ["p0", "p1", "p1", "p0"]
    with pytest.raises(ValueError, match="2 prompts"):
        CoderReward(PROBLEMS, fake_execute, GroupLayout(num_generations=2), CFG)(["q"] * 4, [answer("pass-1")] * 4, ids)
    # same problem id, different prompt texts (two debugging cases of one problem): also not one group
    with pytest.raises(ValueError, match="one prompt"):
        CoderReward(PROBLEMS, fake_execute, GroupLayout(num_generations=2), CFG)(
            [[{"role": "user", "content": "case 1"}], [{"role": "user", "content": "case 2"}]],
            [answer("pass-1")] * 2, ["p0", "p0"])
    planner = PlannerReward(PROBLEMS, lambda plans, problems: [[answer("pass-1")] for _ in plans], fake_execute,
                            GroupLayout(num_generations=2), CFG)
    with pytest.raises(ValueError, match="one prompt"):
        planner(["q"] * 2, ["plan a", "plan b"], ["p0", "p1"])


def test_the_prompt_check_sees_groups_across_processes():
    """Two processes, G = 2, rows (p0 | p0) are one group split across ranks: accepted; (p0 | p1): refused."""
    for ids, ok in ((["p0", "p0"], True), (["p0", "p1"], False)):
        gather = ThreadGather(2)
        outcome: dict[int, object] = {}

        def rank_main(rank):
            layout = GroupLayout(num_generations=2, gather=gather.for_rank(rank), process_index=rank)
            try:
                outcome[rank] = CoderReward(PROBLEMS, fake_execute, layout, CFG)(["q"], [answer("pass-1")], [ids[rank]])
            except ValueError as exc:
                outcome[rank] = exc

        threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(2)]
        [t.start() for t in threads]
        [t.join(10) for t in threads]
        if ok:
            assert outcome == {0: [pytest.approx(1.2)], 1: [pytest.approx(1.2)]}
        else:
            assert all(isinstance(outcome[r], ValueError) for r in (0, 1))


def test_plans_out_of_order_or_with_code_pay_the_format_penalty_like_missing_parts():
    """Same programs for every plan (both pass, 1 MiB): only the format term differs, so R differs by 0.1."""
    complete = ("1. Input-Output Definition: x\n2. Linear Progression: y\n3. Conditional Logic: z\n"
                "4. Iteration: none\n")
    reordered = ("1. Input-Output Definition: x\n2. Iteration: none\n3. Conditional Logic: z\n"
                 "4. Linear Progression: y\n")
    with_code = complete + "```python\ndef f(x):\n    return x\n```\n"
    plans = [complete, reordered, complete, with_code]
    log_rows = []

    class Log(ExecutionLog):
        def write(self, records):
            log_rows.extend(records)

    reward = PlannerReward(PROBLEMS, lambda texts, problems: [[answer("pass-1")] * 2 for _ in texts], fake_execute,
                           GroupLayout(num_generations=2), CFG, Log(None))
    got = reward(["q"] * 4, plans, ["p0", "p0", "p1", "p1"])
    assert got[0] == pytest.approx(1.1) and got[2] == pytest.approx(1.1)  # all at the median time: e = 0.5
    assert got[1] == pytest.approx(1.0) and got[3] == pytest.approx(1.0)
    assert [r["missing"] for r in log_rows] == [[], ["order"], [], ["code"]]
