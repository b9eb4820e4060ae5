#!/usr/bin/env python3
"""A job rlmon did not start, for scripts/gpu-check.sh's attach step.

On a GPU (torch with CUDA): takes MIB MiB of GPU memory with a plain allocation,
keeps the GPU busy with float32 matrix products, and writes one JSONL metrics line
per step (step, loss, memory_allocated, memory_reserved) to OUT, for
`rlmon watch --attach OUT --attach-pid PID`. Once the memory is held it writes
READY (a JSON object: pid, device, memory_allocated, memory_reserved) so the check
can compare what rlmon attributes to this process with what it holds. Exits after
SECONDS.

Without CUDA (or without torch) it writes the same metrics lines from the CPU and
holds no GPU memory: the attach and serve plumbing still runs.
"""
import argparse
import json
import math
import os
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="JSONL metrics file to write")
    ap.add_argument("--ready", required=True, help="file written once the memory is held")
    ap.add_argument("--mib", type=int, default=2048, help="GPU memory to hold, MiB")
    ap.add_argument("--seconds", type=float, default=12.0)
    args = ap.parse_args()

    torch = None
    try:
        import torch as _torch

        if _torch.cuda.is_available():
            torch = _torch
    except ImportError:
        pass

    held = a = b = None
    info = {"pid": os.getpid(), "device": "cpu", "memory_allocated": 0, "memory_reserved": 0}
    if torch is not None:
        dev = torch.device("cuda:0")
        # A plain allocation (cudaMalloc through the caching allocator), touched so
        # the pages are really taken.
        held = torch.empty(args.mib * (1 << 20) // 4, dtype=torch.float32, device=dev)
        held.fill_(1.0)
        a = torch.randn(2048, 2048, device=dev)
        b = torch.randn(2048, 2048, device=dev)
        torch.cuda.synchronize()
        info.update(
            device=torch.cuda.get_device_name(0),
            memory_allocated=torch.cuda.memory_allocated(),
            memory_reserved=torch.cuda.memory_reserved(),
        )

    start = time.monotonic()
    step = 0
    with open(args.out, "a", buffering=1) as out:
        ready_written = False
        while time.monotonic() - start < args.seconds:
            step += 1
            t0 = time.monotonic()
            if torch is not None:
                for _ in range(20):
                    c = a @ b
                torch.cuda.synchronize()
                loss = float(c[0, 0].abs().log1p().item())
                alloc, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
            else:
                time.sleep(0.05)
                loss = 2.0 + math.exp(-step / 50.0)
                alloc = reserved = 0
            line = {"step": step, "loss": loss, "step_time_s": time.monotonic() - t0, "memory_allocated": alloc, "memory_reserved": reserved}
            out.write(json.dumps(line) + "\n")
            if not ready_written:
                with open(args.ready + ".tmp", "w") as r:
                    json.dump(info, r)
                os.replace(args.ready + ".tmp", args.ready)
                ready_written = True
            time.sleep(0.1)
    del held


if __name__ == "__main__":
    main()
