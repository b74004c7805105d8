"""Sampling the LoRA policy: through the adapter (PEFT's layers) vs through a merged copy.

Validation samples the policy being trained (stage 1's plans, stage 2's programs) through
``corecode.training.partners.PolicyBackend``, i.e. through PEFT's LoRA layers, which add two small matmuls
and fp32 casts to every linear layer. Would sampling a copy with the adapter merged into the weights be
faster? This script runs both on the same model, prompts and greedy settings, alternating, and prints the
CPU time and wall time of each and the ratio; the copy's cost (deepcopy + merge) is timed separately and
counted in "merged". The answer (docs/training.md, "Measurements") decided that PolicyBackend stays on the
adapter.

    python benchmarks/policy_generation.py                      # built-in Qwen2.5-Coder-0.5B, bf16, LoRA r16
    python benchmarks/policy_generation.py --rounds 3 --tokens 128

CPU time is the process's (both threads), so the ratio holds up better than wall time on a shared machine.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="builtin:qwen2.5-coder-0.5b")
    parser.add_argument("--batch", type=int, default=16, help="conversations per generate() call")
    parser.add_argument("--tokens", type=int, default=64, help="tokens per completion (forced: no early stop)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of the two ways")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from corecode.training.models import resolve_model

    torch.set_num_threads(args.threads)
    path = resolve_model(args.model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    torch.manual_seed(0)
    # the trainer's LoRA (corecode's defaults: r 16, alpha 32, all linear layers); random B so it is not a no-op
    policy = get_peft_model(AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16),
                            LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM",
                                       init_lora_weights=False))
    prompts = [f"Explain, step by step, how to sort a list of {i + 3} numbers." for i in range(args.batch)]
    inputs = tokenizer(prompts, return_tensors="pt", padding=True)

    def generate(model) -> None:
        model.eval()
        with torch.inference_mode():
            model.generate(**inputs, max_new_tokens=args.tokens, min_new_tokens=args.tokens, do_sample=False,
                           pad_token_id=tokenizer.pad_token_id)

    def timed(fn) -> tuple[float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        fn()
        return time.process_time() - cpu, time.perf_counter() - wall

    def merged_for_generation(model):
        return copy.deepcopy(model).merge_and_unload()

    def merged_way() -> None:
        merged = merged_for_generation(policy)
        generate(merged)
        del merged

    results: dict[str, list[tuple[float, float]]] = {"adapter": [], "merged": []}
    generate(policy)  # warm-up: first-call allocations and kernel choices
    for r in range(args.rounds):
        for name, fn in (("adapter", lambda: generate(policy)), ("merged", merged_way))[:: 1 if r % 2 == 0 else -1]:
            results[name].append(timed(fn))
            print(f"round {r + 1} {name:8s}: cpu {results[name][-1][0]:6.1f} s, wall {results[name][-1][1]:6.1f} s",
                  flush=True)
    copy_cpu, copy_wall = timed(lambda: merged_for_generation(policy))
    med = {name: (statistics.median(c for c, _ in rows), statistics.median(w for _, w in rows))
           for name, rows in results.items()}
    print(f"\n{args.model}, LoRA r16 all-linear, bf16, {args.batch} x {args.tokens} tokens greedy, "
          f"{args.threads} threads, median of {args.rounds}:")
    print(f"  adapter (PEFT layers):        cpu {med['adapter'][0]:6.1f} s   wall {med['adapter'][1]:6.1f} s")
    print(f"  merged copy (incl. the copy): cpu {med['merged'][0]:6.1f} s   wall {med['merged'][1]:6.1f} s"
          f"   (copy + merge alone: cpu {copy_cpu:.1f} s, wall {copy_wall:.1f} s)")
    print(f"  adapter / merged:             cpu {med['adapter'][0] / med['merged'][0]:5.2f}x   "
          f"wall {med['adapter'][1] / med['merged'][1]:5.2f}x")


if __name__ == "__main__":
    main()
