"""rlmon JSONL from a TRL trainer (PPO, GRPO, ...): a TrainerCallback.

    from trl_callback import RlmonCallback
    trainer = GRPOTrainer(..., callbacks=[RlmonCallback("logs/grpo.jsonl")])

Every time the trainer logs, one line goes to the file: the step and each number
of TRL's logs dict under TRL's own name (`reward`, `kl`, `objective/kl`,
`completions/mean_length`, `num_tokens`, ...). rlmon reads those names as its
canonical metrics through the catalog's TRL names, so nothing is renamed here.
Follow the file live with `metrics = { file = "logs/grpo.jsonl" }` (see
workloads/trl-callback.toml) or check it afterwards: `rlmon check logs/grpo.jsonl`.

Without TRL installed the callback still works (it only needs a logs dict), and
`python3 examples/trl_callback.py --demo grpo --out logs/grpo.jsonl` writes the
logs a GRPO run would, for trying rlmon without a model.
"""
import argparse
import json
import math
import os
import random
import time

try:  # TRL's trainers are Hugging Face Trainers: their callbacks come from transformers.
    from transformers import TrainerCallback
except ImportError:  # the callback needs nothing from it to write its file
    TrainerCallback = object


class RlmonCallback(TrainerCallback):
    """Appends one JSON line per `on_log` to `path` (flushed at once, so rlmon
    sees each step as it is logged). Only the main process writes, unless `rank`
    is given: then every process writes its own file with its rank in it."""

    def __init__(self, path, rank=None):
        self.path = path
        self.rank = rank
        self._file = None

    def _open(self):
        if self._file is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            self._file = open(self.path, "a", buffering=1)
        return self._file

    def record(self, step, logs):
        """The line for one logs dict: numbers only (TRL also logs strings and lists)."""
        line = {"step": int(step)}
        if self.rank is not None:
            line["rank"] = int(self.rank)
        for key, value in logs.items():
            if isinstance(value, bool):
                continue
            if isinstance(value, (int, float)):
                line[key] = value if math.isfinite(value) else str(value)
        return line

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or (self.rank is None and not getattr(state, "is_world_process_zero", True)):
            return
        self._open().write(json.dumps(self.record(state.global_step, logs)) + "\n")

    def on_train_end(self, args, state, control, **kwargs):
        if self._file is not None:
            self._file.close()
            self._file = None


def demo_logs(trainer, step, steps, rng):
    """What TRL's PPO or GRPO trainer logs at `step`, made up: reward rising, KL
    growing slowly, entropy falling."""
    progress = step / steps
    if trainer == "ppo":
        return {
            "objective/kl": 0.02 + 0.05 * progress + rng.gauss(0, 0.002),
            "objective/entropy": 2.0 - 0.5 * progress + rng.gauss(0, 0.02),
            "objective/scores": -1.0 + 2.0 * progress + rng.gauss(0, 0.05),
            "policy/approxkl_avg": 0.01 + rng.gauss(0, 0.001),
            "policy/clipfrac_avg": 0.1 + rng.gauss(0, 0.01),
            "loss/policy_avg": -0.05 + rng.gauss(0, 0.01),
            "loss/value_avg": 0.5 * (1 - progress) + 0.05,
            "lr": 1e-5,
            "episode": step * 64,
        }
    return {
        "loss": 0.01 + rng.gauss(0, 0.002),
        "grad_norm": 0.5 + rng.gauss(0, 0.05),
        "learning_rate": 1e-6,
        "reward": 0.2 + 0.6 * progress + rng.gauss(0, 0.02),
        "reward_std": 0.3 - 0.1 * progress + rng.gauss(0, 0.01),
        "kl": 0.001 + 0.01 * progress + abs(rng.gauss(0, 0.0005)),
        "entropy": 1.5 - 0.4 * progress + rng.gauss(0, 0.01),
        "completions/mean_length": 120 + 30 * progress + rng.gauss(0, 2),
        "num_tokens": float(step * 8192),
        "epoch": progress,
    }


class _State:
    """The part of transformers' TrainerState the callback reads."""

    def __init__(self):
        self.global_step = 0
        self.is_world_process_zero = True


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--demo", choices=["ppo", "grpo"], default="grpo")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--sleep", type=float, default=0.05)
    p.add_argument("--out", default="logs/trl.jsonl")
    args = p.parse_args()
    if os.path.exists(args.out):
        os.remove(args.out)
    rng = random.Random(0)
    callback, state = RlmonCallback(args.out), _State()
    print(f"{args.demo} demo: {args.steps} steps of made-up TRL logs to {args.out}", flush=True)
    for step in range(1, args.steps + 1):
        state.global_step = step
        callback.on_log(None, state, None, logs=demo_logs(args.demo, step, args.steps, rng))
        time.sleep(args.sleep)
    callback.on_train_end(None, state, None)


if __name__ == "__main__":
    main()
