"""Driver for scripts/bench-ndt-overhead.sh: tokens/s of workloads/tiny.toml with and
without a `[run.ndt]` table (representation dimensionality of every layer every N
steps), alternating in one run; prints tokens/s per repeat, medians and the
overhead."""
import argparse
import os
import statistics
import sys
import tempfile
import time
import tomllib

from throughput import CONFIG, rlmon_run


def ndt_cost_ms(rows, d, repeats=50):
    """Median time of src/workload/lm/mod.rs dimensionality_metrics for one layer
    output [rows, d] on one thread: to f64, Gram matrix, eigvalsh, back to the host.
    The same libtorch ops as rlmon, called from PyTorch."""
    import torch
    torch.set_num_threads(1)
    h = torch.randn(rows, d)
    times = []
    for i in range(repeats + 5):
        t0 = time.perf_counter()
        hd = h.double()
        torch.linalg.eigvalsh(hd.t() @ hd).tolist()
        if i >= 5:
            times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--cost-only", action="store_true", help="only time the ndt computation itself")
    args = ap.parse_args()
    with open(CONFIG, "rb") as f:
        run = tomllib.load(f)["run"][0]
    m = run.get("model", {})
    rows, d, layers = run.get("batch_size", 16) * m.get("seq_len", 64), m.get("d_model", 128), m.get("layers", 2)
    cost = ndt_cost_ms(rows, d)
    print(f"ndt computation alone: {cost:.2f} ms per layer ([{rows}, {d}] activations, 1 thread), "
          f"{cost * layers / args.every:.2f} ms per step on average at every = {args.every}, {layers} layers")
    if args.cost_only:
        return
    with tempfile.TemporaryDirectory() as tmp:
        with_ndt = os.path.join(tmp, "tiny-ndt.toml")
        with open(CONFIG) as f:
            text = f.read()
        assert "[run.ndt]" not in text
        with open(with_ndt, "w") as f:
            f.write(text.rstrip("\n") + f"\n\n[run.ndt]\nevery = {args.every}\n")
        off, on = [], []
        threads = device = None
        for rep in range(args.repeats):
            tps, threads, device = rlmon_run(CONFIG, args.steps, tmp)
            off.append(tps)
            on.append(rlmon_run(with_ndt, args.steps, tmp)[0])
            print(f"repeat {rep + 1}/{args.repeats}: without {off[-1]:,.0f} tok/s, "
                  f"with ndt {on[-1]:,.0f} tok/s, overhead {100 * (1 - on[-1] / off[-1]):+.1f}%", file=sys.stderr)
    print(f"tiny workload, {args.steps} steps, {args.repeats} repeats, [run.ndt] every = {args.every} "
          f"(all layers), device {device}, auto intra-op threads = {threads}, {os.cpu_count()} logical cores")
    print("| repeat | without ndt tokens/s | with ndt tokens/s | overhead |")
    print("|---|---:|---:|---:|")
    for i, (a, b) in enumerate(zip(off, on)):
        print(f"| {i + 1} | {a:,.0f} | {b:,.0f} | {100 * (1 - b / a):+.1f}% |")
    ma, mb = statistics.median(off), statistics.median(on)
    print(f"| median | {ma:,.0f} | {mb:,.0f} | {100 * (1 - mb / ma):+.1f}% |")
    step_ms = 1e3 * rows / ma
    print(f"\nexpected from the computation alone: {100 * cost * layers / args.every / step_ms:.1f}% "
          f"of the median {step_ms:.0f} ms step")
    print(f"overhead of medians = {100 * (1 - mb / ma):.1f}%; median of per-repeat overheads = "
          f"{statistics.median(100 * (1 - b / a) for a, b in zip(off, on)):.1f}%")


if __name__ == "__main__":
    main()
