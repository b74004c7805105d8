"""What the llama.cpp guard's safe mode costs: tokens per second of the default model, in the same run,

  * this interpreter's llama.cpp (the setup.sh build) with default settings, and with extra buffer types off
    (the guard's "safe" mode);
  * optionally another interpreter's llama.cpp (e.g. a venv holding a -march=native build) in both modes;
    a mode that crashes is reported with its signal.

Each measurement is a fresh child process: load, one warm-up, then greedy generation of --tokens tokens,
timed alone (prompt excluded); rounds alternate between the variants and the best round is kept.

    python benchmarks/llama_modes.py [--other-python /tmp/venv_native/bin/python] [--threads 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys

CHILD = r"""
import json, sys, time
from corecode.backends.llama_probe import model_params_patch
from llama_cpp import Llama
path, mode, threads, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with model_params_patch(mode):
    llm = Llama(model_path=path, n_ctx=512, n_threads=threads, n_threads_batch=threads, verbose=False)
prompt = "Write a Python function that returns the n-th Fibonacci number, with a docstring and tests."
llm.create_completion(prompt, max_tokens=8, temperature=0.0)
llm.reset()
llm.eval(llm.tokenize(prompt.encode()))
start = time.perf_counter()
made = 0
for tok in llm.generate(llm.tokenize(prompt.encode()), temp=0.0, reset=True):
    made += 1
    if made >= tokens:
        break
print(json.dumps({"tok_s": made / (time.perf_counter() - start)}))
"""


def one(python: str, path: str, mode: str, threads: int, tokens: int) -> float | str:
    proc = subprocess.run([python, "-c", CHILD, path, mode, str(threads), str(tokens)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode < 0:
        return f"crashed ({signal.Signals(-proc.returncode).name})" if -proc.returncode in signal.valid_signals() \
            else f"crashed (signal {-proc.returncode})"
    if proc.returncode != 0:
        return f"failed: {proc.stderr.strip().splitlines()[-1][:120]}"
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["tok_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--other-python", help="an interpreter with another llama-cpp-python build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from corecode.backends import ensure_model

    path = str(ensure_model("qwen2.5-coder-0.5b"))
    variants = [("setup.sh build", sys.executable, "default"), ("setup.sh build", sys.executable, "safe")]
    if args.other_python:
        variants += [("other build", args.other_python, "default"), ("other build", args.other_python, "safe")]
    best: dict[tuple[str, str], float | str] = {}
    for _ in range(args.rounds):
        for name, python, mode in variants:
            r = one(python, path, mode, args.threads, args.tokens)
            prev = best.get((name, mode))
            if isinstance(r, str):
                best[(name, mode)] = r
            elif not isinstance(prev, float) or r > prev:
                best[(name, mode)] = r
    base = best[("setup.sh build", "default")]
    print(f"qwen2.5-coder-0.5b Q4_K_M, {args.threads} thread(s), {args.tokens} greedy tokens, best of {args.rounds}")
    for (name, mode), r in best.items():
        ratio = f"  ({r / base:.2f}x the setup.sh build)" if isinstance(r, float) and isinstance(base, float) else ""
        print(f"  {name:15s} {mode:8s} " + (f"{r:6.1f} tok/s{ratio}" if isinstance(r, float) else r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
