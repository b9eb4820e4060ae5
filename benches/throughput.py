"""Driver for scripts/bench-throughput.sh: alternates rlmon and PyTorch eager runs
of workloads/tiny.toml and prints a table with medians and the ratio."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "workloads", "tiny.toml")
# RLMON_BIN: another build (a packed one on a lent machine); the worker is found
# beside it or by RLMON_TRAIN_BIN.
RLMON = os.environ.get("RLMON_BIN") or os.path.join(ROOT, "target", "release", "rlmon")


def rlmon_run(config, steps, session_dir):
    out = subprocess.run([RLMON, "watch", "--config", config, "--headless", "--json",
                          "--max-steps", str(steps), "--session-dir", session_dir],
                         capture_output=True, text=True, check=True)
    run = json.loads(out.stdout)["runs"][0]
    assert run["state"] == "finished", run
    return run["tokens_per_s"], run["intra_op_threads"], run["device"]


def eager_run(config, steps, threads, device="cpu"):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benches", "torch_eager_tiny.py"),
                          "--config", config, "--steps", str(steps), "--threads", str(threads),
                          "--device", device],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["tokens_per_s"]


class Competitor:
    """One busy process on another core, as another job or a busy terminal would be."""

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        two_threads = os.path.join(tmp, "tiny-2threads.toml")
        with open(CONFIG) as f:
            text = f.read().replace('intra_op_threads = "auto"', "intra_op_threads = 2")
        with open(two_threads, "w") as f:
            f.write(text)
        rows = {k: [] for k in ["rlmon (tch, auto threads)", "pytorch eager (same threads)",
                                "rlmon (tch, 2 threads)", "rlmon (tch, auto threads) + 1 busy process",
                                "rlmon (tch, 2 threads) + 1 busy process"]}
        threads = device = None
        for rep in range(args.repeats):
            tps, threads, device = rlmon_run(CONFIG, args.steps, tmp)
            rows["rlmon (tch, auto threads)"].append(tps)
            rows["pytorch eager (same threads)"].append(eager_run(CONFIG, args.steps, threads))
            rows["rlmon (tch, 2 threads)"].append(rlmon_run(two_threads, args.steps, tmp)[0])
            with Competitor():
                rows["rlmon (tch, auto threads) + 1 busy process"].append(rlmon_run(CONFIG, args.steps, tmp)[0])
            with Competitor():
                rows["rlmon (tch, 2 threads) + 1 busy process"].append(rlmon_run(two_threads, args.steps, tmp)[0])
            print(f"repeat {rep + 1}/{args.repeats} done", file=sys.stderr)
    print(f"tiny workload, {args.steps} steps, {args.repeats} repeats, device {device}, "
          f"auto intra-op threads = {threads}, {os.cpu_count()} logical cores")
    print("| loop | tokens/s (median) | runs |")
    print("|---|---:|---|")
    for name, values in rows.items():
        print(f"| {name} | {statistics.median(values):,.0f} | {', '.join(f'{v:,.0f}' for v in values)} |")
    ratio = statistics.median(rows["rlmon (tch, auto threads)"]) / statistics.median(rows["pytorch eager (same threads)"])
    print(f"\nratio rlmon / pytorch eager = {ratio:.2f}")


if __name__ == "__main__":
    main()
