"""Driver for scripts/bench-moe.sh: alternates rlmon and PyTorch eager runs of
workloads/moe.toml (without its [run.ndt] table, so both sides do the same work) and
prints tokens/s per repeat, medians and the ratio. `--config workloads/tiny.toml`
makes the same side-by-side of the dense model; `--device cpu` keeps both on the CPU
on a machine that has a GPU."""
import re
import argparse
import os
import statistics
import sys
import tempfile

from throughput import ROOT, eager_run, rlmon_run

CONFIG = os.path.join(ROOT, "workloads", "moe.toml")


def without_table(text, table):
    """`text` without the TOML table `[table]` (its header up to the next header)."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("["):
            skipping = line.strip() == f"[{table}]"
        if not skipping:
            out.append(line)
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--config", default=CONFIG, help="an lm workload config (default workloads/moe.toml)")
    ap.add_argument("--device", help="the device both sides train on (default: the config's)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "no-ndt.toml")
        with open(args.config) as f:
            text = without_table(f.read(), "run.ndt")
        assert "[run.ndt]" not in text
        if args.device:
            text = re.sub(r"(?m)^device = .*$", f'device = "{args.device}"', text)
        with open(config, "w") as f:
            f.write(text)
        rlmon, eager = [], []
        threads = device = None
        for rep in range(args.repeats):
            tps, threads, device = rlmon_run(config, args.steps, tmp)
            rlmon.append(tps)
            eager.append(eager_run(config, args.steps, threads, device))
            print(f"repeat {rep + 1}/{args.repeats}: rlmon {rlmon[-1]:,.0f} tok/s, "
                  f"pytorch eager {eager[-1]:,.0f} tok/s, ratio {rlmon[-1] / eager[-1]:.2f}", file=sys.stderr)
    print(f"{os.path.basename(args.config)} (no ndt), {args.steps} steps, {args.repeats} repeats, device {device}, "
          f"auto intra-op threads = {threads}, {os.cpu_count()} logical cores")
    print("| repeat | rlmon (tch) tokens/s | pytorch eager tokens/s | ratio |")
    print("|---|---:|---:|---:|")
    for i, (a, b) in enumerate(zip(rlmon, eager)):
        print(f"| {i + 1} | {a:,.0f} | {b:,.0f} | {a / b:.2f} |")
    ma, mb = statistics.median(rlmon), statistics.median(eager)
    print(f"| median | {ma:,.0f} | {mb:,.0f} | {ma / mb:.2f} |")
    print(f"\nratio of medians rlmon / pytorch eager = {ma / mb:.2f}; "
          f"per-repeat ratios {min(a / b for a, b in zip(rlmon, eager)):.2f}..{max(a / b for a, b in zip(rlmon, eager)):.2f}")


if __name__ == "__main__":
    main()
