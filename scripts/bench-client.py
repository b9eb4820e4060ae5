#!/usr/bin/env python3
"""The cost of rlmon.log() to the training loop: a log() of 10 metrics, timed one
call at a time (median, p99) and in a batch (mean), with the writer thread
writing to a real run folder meanwhile. Standard library only.

    python3 scripts/bench-client.py [--calls 200000]

Runs the package from python/ of this checkout unless `import rlmon` finds an
installed one first (--installed).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200_000)
    p.add_argument("--installed", action="store_true", help="use the installed rlmon package")
    args = p.parse_args()
    if not args.installed:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import rlmon

    with tempfile.TemporaryDirectory() as tmp:
        run = rlmon.init(project="bench", name="log10", config={"calls": args.calls}, dir=tmp)
        names = ["loss", "lr", "grad_norm", "tokens", "step_time_s", "reward", "kl", "entropy", "clip_frac", "response_len"]
        values = {n: 0.5 + i for i, n in enumerate(names)}
        clock = time.perf_counter_ns
        # One call at a time (the timer's own cost, measured below, is subtracted).
        empty = []
        for _ in range(20_000):
            t0 = clock()
            empty.append(clock() - t0)
        overhead = statistics.median(empty)
        per_call = []
        for step in range(args.calls):
            values["loss"] = 1.0 / (step + 1)
            t0 = clock()
            rlmon.log(values, step=step)
            per_call.append(clock() - t0 - overhead)
        # A batch: the mean with no timer around each call.
        t0 = clock()
        for step in range(args.calls, 2 * args.calls):
            rlmon.log(values, step=step)
        batch_mean = (clock() - t0) / args.calls
        t0 = clock()
        run.finish()
        finish_ms = (clock() - t0) / 1e6
        lines = sum(1 for _ in open(os.path.join(run.dir, "metrics.jsonl")))
        size = os.path.getsize(os.path.join(run.dir, "metrics.jsonl"))
    per_call.sort()
    q = lambda f: per_call[int(f * (len(per_call) - 1))] / 1000
    print(f"python {sys.version.split()[0]}, {args.calls} calls of log() with 10 metrics")
    print(f"  one at a time: median {q(0.5):.2f} us, p90 {q(0.9):.2f} us, p99 {q(0.99):.2f} us, max {q(1.0):.1f} us (timer overhead {overhead / 1000:.2f} us subtracted)")
    print(f"  in a batch:    mean {batch_mean / 1000:.2f} us per call")
    print(f"  finish() wrote what was left in {finish_ms:.0f} ms; {lines} lines, {size / lines:.0f} bytes per line")
    assert lines == 2 * args.calls, f"{lines} lines written, {2 * args.calls} logged"


if __name__ == "__main__":
    main()
