#!/usr/bin/env python3
"""A stand-in for your own training script: writes one JSON object per step on
stdout (step, loss, lr, tokens, step_time_s), the way rlmon reads metrics from a
command run. Standard library only.

    python3 examples/train_minimal.py --steps 200 --sleep 0.05

With --progress-bar it draws a tqdm-style bar on stderr instead, its postfix
carrying the loss and lr (`12/200 [00:01<00:15, 11.9it/s, loss=3.21, lr=3e-04]`),
as scripts that only use tqdm do: rlmon reads it with `metrics = "stderr"`.
"""
import argparse
import json
import math
import random
import sys
import time


def clock(seconds):
    """`mm:ss`, as a progress bar shows time."""
    seconds = int(seconds)
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300, help="steps to train")
    p.add_argument("--sleep", type=float, default=0.05, help="seconds per step")
    p.add_argument("--exit-code", type=int, default=0, help="exit with this status at the end")
    p.add_argument("--lr", type=float, default=3e-4, help="peak learning rate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--progress-bar", action="store_true", help="a progress bar on stderr instead of JSON on stdout")
    args = p.parse_args()

    rng = random.Random(args.seed)
    tokens_per_step = 8 * 512
    print(f"training for {args.steps} steps", flush=True)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        time.sleep(args.sleep)
        # A cosine schedule and a loss that decays towards 2.0 with a little noise.
        lr = args.lr * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        loss = 2.0 + 3.5 * math.exp(-step / (0.3 * args.steps + 1)) + rng.gauss(0, 0.03)
        record = {
            "step": step,
            "loss": round(loss, 5),
            "lr": lr,
            "tokens": tokens_per_step,
            "step_time_s": round(time.perf_counter() - t0, 6),
        }
        if args.progress_bar:
            # Drawn over itself with a carriage return, as tqdm does.
            elapsed = time.perf_counter() - start
            rate = step / elapsed if elapsed > 0 else 0.0
            filled = 10 * step // args.steps
            bar = "#" * filled + " " * (10 - filled)
            sys.stderr.write(f"\r{100 * step // args.steps:3d}%|{bar}| {step}/{args.steps} [{clock(elapsed)}<{clock((args.steps - step) / rate if rate else 0)}, {rate:.2f}it/s, loss={loss:.4f}, lr={lr:.2e}]")
            sys.stderr.flush()
        else:
            print(json.dumps(record), flush=True)
    if args.progress_bar:
        sys.stderr.write("\n")
    print("done", file=sys.stderr, flush=True)
    sys.exit(args.exit_code)


if __name__ == "__main__":
    main()
