#!/usr/bin/env python3
"""A stand-in for your own training script: writes one JSON object per step on
stdout (step, loss, lr, tokens, step_time_s), the way rlmon reads metrics from a
command run. Standard library only.

    python3 examples/train_minimal.py --steps 200 --sleep 0.05
"""
import argparse
import json
import math
import random
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300, help="steps to train")
    p.add_argument("--sleep", type=float, default=0.05, help="seconds per step")
    p.add_argument("--exit-code", type=int, default=0, help="exit with this status at the end")
    p.add_argument("--lr", type=float, default=3e-4, help="peak learning rate")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    rng = random.Random(args.seed)
    tokens_per_step = 8 * 512
    print(f"training for {args.steps} steps", flush=True)
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
        print(json.dumps(record), flush=True)
    print("done", file=sys.stderr, flush=True)
    sys.exit(args.exit_code)


if __name__ == "__main__":
    main()
