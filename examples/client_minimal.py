#!/usr/bin/env python3
"""rlmon's Python client in a training loop: init, log, alert, finish (as wandb's).

    pip install <path to rlmon>           # or PYTHONPATH=python from a checkout
    python3 examples/client_minimal.py &  # writes ./rlmon-runs/minimal-<time>/
    rlmon watch                           # follows the recent runs there, live
    rlmon check rlmon-runs/minimal-*      # the detectors over the run afterwards
"""
import argparse
import math
import random
import time

import rlmon

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--steps", type=int, default=300)
p.add_argument("--sleep", type=float, default=0.02, help="seconds per step")
p.add_argument("--spike-at", type=int, default=None, help="make the loss spike at this step")
p.add_argument("--fail", action="store_true", help="raise an exception halfway (the run is recorded as failed)")
args = p.parse_args()

rng = random.Random(0)
with rlmon.init(project="examples", name="minimal", config={"lr": 3e-4, "steps": args.steps}) as run:
    for step in range(args.steps):
        time.sleep(args.sleep)
        loss = 2.0 + 3.0 * math.exp(-step / 60) + rng.gauss(0, 0.02)
        if args.spike_at is not None and args.spike_at <= step < args.spike_at + 3:
            loss *= 4
        run.log({"loss": loss, "lr": 3e-4 * min(1.0, (step + 1) / 20), "tokens": 4096}, step=step)
        if step == args.steps // 2:
            rlmon.alert("halfway", f"loss {loss:.3f} at step {step}", level="info")
            if args.fail:
                raise RuntimeError("the data loader ran dry")
