"""A PyTorch training loop that logs through torch.utils.tensorboard, as many do.

    .venv/bin/python examples/train_tensorboard.py --steps 200 --logdir runs/tensorboard-example

SummaryWriter needs the `tensorboard` package (scripts/setup.sh installs it into
the project's virtualenv). rlmon reads the event files it writes: live with
`metrics = { tensorboard = "runs/..." }` (workloads/tensorboard-python.toml), or
afterwards with `rlmon check runs/tensorboard-example`. The scalar tags are
written under names rlmon's catalog knows (`train/loss` is read as `loss`).
"""
import argparse
import time

import torch
from torch.utils.tensorboard import SummaryWriter


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--sleep", type=float, default=0.02)
    p.add_argument("--logdir", default="runs/tensorboard-example")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    true_w = torch.randn(8, 1)
    batch = 64
    writer = SummaryWriter(log_dir=args.logdir, flush_secs=1)
    print(f"training for {args.steps} steps, TensorBoard events in {args.logdir}", flush=True)
    for step in range(1, args.steps + 1):
        start = time.perf_counter()
        x = torch.randn(batch, 8)
        loss = torch.nn.functional.mse_loss(model(x), x @ true_w)
        opt.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        sched.step()
        time.sleep(args.sleep)
        writer.add_scalar("train/loss", loss.item(), step)
        writer.add_scalar("train/grad_norm", grad_norm.item(), step)
        writer.add_scalar("train/learning_rate", sched.get_last_lr()[0], step)
        writer.add_scalar("tokens", batch * 8, step)
        writer.add_scalar("step_time_s", time.perf_counter() - start, step)
    writer.close()


if __name__ == "__main__":
    main()
