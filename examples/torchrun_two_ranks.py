"""Two-rank data-parallel training on the CPU (gloo), one JSONL file per rank.

Run it with torchrun (rlmon does, through workloads/torchrun-two-ranks.toml):

    .venv/bin/python -m torch.distributed.run --standalone --nproc-per-node 2 \
        examples/torchrun_two_ranks.py --steps 200 --out logs/two-ranks

Each rank trains the same tiny model on its own shard of a synthetic regression
task and all-reduces its gradients; rank R appends one line per step to
OUT/rankR.jsonl. `step_time_s` is the rank's own compute time (forward, backward,
and the --straggle delay), taken before the gradient all-reduce: after it every
rank has waited for the slowest, so a straggler shows only in what came before.
`--straggle S` makes rank 1 sleep S seconds more per step, a slow rank for rlmon's
rank_straggler alert to find.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--sleep", type=float, default=0.02, help="seconds of simulated work per step, every rank")
    p.add_argument("--straggle", type=float, default=0.0, help="extra seconds per step on rank 1")
    p.add_argument("--out", default="logs/two-ranks")
    args = p.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    true_w = torch.randn(16, 1)
    gen = torch.Generator().manual_seed(1000 + rank)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"rank{rank}.jsonl")
    with open(path, "w", buffering=1) as log:
        for step in range(1, args.steps + 1):
            start = time.perf_counter()
            x = torch.randn(args.batch, 16, generator=gen)
            y = x @ true_w + 0.1 * torch.randn(args.batch, 1, generator=gen)
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            time.sleep(args.sleep + (args.straggle if rank == 1 else 0.0))
            compute_s = time.perf_counter() - start
            for p_ in model.parameters():
                dist.all_reduce(p_.grad)
                p_.grad /= world
            grad_norm = torch.norm(torch.stack([p_.grad.norm() for p_ in model.parameters()])).item()
            opt.step()
            record = {
                "step": step,
                "rank": rank,
                "loss": loss.item(),
                "grad_norm": grad_norm,
                "lr": 0.05,
                "tokens": args.batch * 16,
                "samples": args.batch,
                "step_time_s": compute_s,
            }
            log.write(json.dumps(record) + "\n")
            if rank == 0 and step % 50 == 0:
                print(f"step {step}/{args.steps} loss {loss.item():.4f}", flush=True)
    # Every rank finishes its last all-reduce before the group goes away.
    dist.barrier()
    dist.destroy_process_group()
    # Gloo's threads sometimes abort the interpreter's shutdown ("terminate called
    # without an active exception"), failing a finished job: leave at once instead.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
