"""Generation throughput of each CPU backend on one built-in model: batched vs one request at a time.

    python benchmarks/generation_throughput.py [--model qwen2.5-coder-0.5b] [--prompts 4] [--samples 2]

For each backend (llama.cpp, transformers with the GGUF dequantized) it generates ``samples`` completions
for each of ``prompts`` coding prompts twice: one ``generate([conv], n=1)`` call per completion (the
baseline), then one ``generate(all_convs, n=samples)`` call (batched). It prints completion tokens per
second of each, the batched/one-by-one ratio, and each backend against llama.cpp one-by-one (the named
baseline), all measured in the same run. Sampling is seeded (temperature 0.7) so both modes sample.
Timings on a shared 2-core machine vary 30-50% between runs: compare ratios from one run, not across runs.
"""

from __future__ import annotations

import argparse
import os
import time

from corecode.backends import SamplingConfig, load_backend
from corecode.backends.llamacpp import default_threads

TASKS = [
    "Write a Python function is_prime(n) that returns True when n is a prime number.",
    "Write a Python function fizzbuzz(n) that returns the FizzBuzz strings for 1..n as a list.",
    "Write a Python function reverse_words(s) that reverses the order of the words in s.",
    "Write a Python function flatten(xs) that flattens a nested list of integers.",
    "Write a Python function gcd(a, b) using Euclid's algorithm.",
    "Write a Python function count_vowels(s) that counts the vowels in a string.",
    "Write a Python function merge_sorted(a, b) that merges two sorted lists.",
    "Write a Python function is_palindrome(s) that ignores case and spaces.",
]
SYSTEM = {"role": "system", "content": "You are a Python programmer. Reply with code only."}


def measure(backend, conversations, sampling, samples):
    """(one-by-one tok/s, batched tok/s) for the same amount of work."""
    start = time.perf_counter()
    tokens = 0
    for conv in conversations:
        for j in range(samples):
            [[c]] = backend.generate([conv], sampling.replace(seed=sampling.seed + j))
            tokens += c.completion_tokens
    single = tokens / (time.perf_counter() - start)
    start = time.perf_counter()
    groups = backend.generate(conversations, sampling, n=samples)
    batched = sum(c.completion_tokens for g in groups for c in g) / (time.perf_counter() - start)
    return single, batched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="built-in model name")
    parser.add_argument("--prompts", type=int, default=4, help="conversations per batch")
    parser.add_argument("--samples", type=int, default=2, help="completions per conversation")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--backends", default="llamacpp,transformers")
    parser.add_argument("--dtype", default="bfloat16", help="transformers dtype")
    args = parser.parse_args()
    conversations = [[SYSTEM, {"role": "user", "content": t}] for t in TASKS[: args.prompts]]
    sampling = SamplingConfig(temperature=0.7, top_p=0.95, max_tokens=args.max_tokens, seed=1234)
    threads = default_threads()  # the free cores now; llama.cpp picks the same by default
    print(f"model {args.model}, {args.prompts} prompts x {args.samples} samples, max_tokens {args.max_tokens}, "
          f"{threads} of {os.cpu_count()} cores free, load average {os.getloadavg()[0]:.1f}")
    results = {}
    for kind in args.backends.split(","):
        if kind == "transformers":
            options = {"dtype": args.dtype, "batch_size": args.prompts, "n_threads": threads}
        else:
            options = {"n_threads": threads}
        start = time.perf_counter()
        backend = load_backend(f"{kind}:{args.model}", **options)
        load_s = time.perf_counter() - start
        backend.generate(conversations[:1], sampling.replace(max_tokens=4))  # warm-up
        results[kind] = measure(backend, conversations, sampling, args.samples)
        backend.close()
        single, batched = results[kind]
        print(f"{kind:13s} load {load_s:6.1f} s   one-by-one {single:6.1f} tok/s   batched {batched:6.1f} tok/s   "
              f"batched/one-by-one {batched / single:4.2f}x", flush=True)
    if "llamacpp" in results:
        base = results["llamacpp"][0]
        for kind, (single, batched) in results.items():
            print(f"vs llama.cpp one-by-one: {kind} one-by-one {single / base:4.2f}x, batched {batched / base:4.2f}x")


if __name__ == "__main__":
    main()
