#!/usr/bin/env python3
"""Soak: many command runs writing metrics fast while the live display renders.

Starts `rlmon watch` inside tmux (a real terminal, so the display draws every frame)
on --runs command runs. Each run prints --metrics values per step at --rate points
per second for --seconds, then exits. While it runs, rlmon's resident memory is
sampled every --sample-s seconds. At the end the display is quit, and the session's
snapshot is read back with `rlmon check --json`: every run must hold every step it
printed (no point lost). Frame times come from rlmon's log (`rlmon::frame` debug
events). Prints a report; exits 1 when a point was lost.

Usage: scripts/soak.py [--runs 32] [--rate 10000] [--seconds 600] [--metrics 10] [--values fractions|printed]
Needs tmux. The full issue's load (32 runs x 10,000 points/s x 10 min) is 192M
points; see docs/reliability.md for the scale this machine sustains today.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PRODUCER = r"""
import json, random, sys, time
steps_per_s, seconds, metrics = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
printed = sys.argv[4] == "printed"
rng = random.Random(7)
total = int(steps_per_s * seconds)
start = time.time()
batch = max(1, int(steps_per_s / 50))
out = sys.stdout
for step in range(total):
    if printed:
        # As trainers print them: a few significant digits, noise on every value.
        row = {"step": step, "loss": round(2.0 / (1 + step * 1e-3) + rng.gauss(0, 0.02), 4), "tokens_per_s": round(1000.0 + rng.gauss(0, 30))}
        for m in range(metrics - 2):
            row[f"m{m}"] = float(f"{(m + 1) * (1 + 0.1 * rng.random()):.4g}")
    else:
        row = {"step": step, "loss": 2.0 / (1 + step * 1e-3), "tokens_per_s": 1000.0}
        for m in range(metrics - 2):
            row[f"m{m}"] = (step * (m + 1)) % 97 / 97.0
    out.write(json.dumps(row) + "\n")
    if step % batch == batch - 1:
        out.flush()
        lag = start + (step + 1) / steps_per_s - time.time()
        if lag > 0:
            time.sleep(lag)
out.flush()
"""


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=32)
    ap.add_argument("--rate", type=float, default=10000.0, help="points per second per run")
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--metrics", type=int, default=10, help="values per step")
    ap.add_argument("--sample-s", type=float, default=5.0)
    ap.add_argument("--values", choices=["fractions", "printed"], default="fractions", help="fractions: full-precision values (few distinct ones, and a smooth curve); printed: noisy values of 4 significant digits, as trainers print them")
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "rlmon"))
    args = ap.parse_args()
    if not shutil.which("tmux"):
        print("soak needs tmux", file=sys.stderr)
        return 2
    binary = os.path.abspath(args.binary)
    steps_per_s = args.rate / args.metrics
    expected_steps = int(steps_per_s * args.seconds)
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "soak.toml")
        with open(config, "w") as f:
            f.write('session = "soak"\n')
            for i in range(args.runs):
                argv = [sys.executable, "-c", PRODUCER, str(steps_per_s), str(args.seconds), str(args.metrics), args.values]
                f.write(f'[[run]]\nname = "r{i:02}"\nworkload = "command"\ncommand = {json.dumps(argv)}\n')
        sessions = os.path.join(d, "sessions")
        sock = f"rlmon-soak-{os.getpid()}"
        cmd = f"TERM=xterm-256color RLMON_LOG=info,rlmon::frame=debug {binary} watch --config {config} --session-dir {sessions}; sleep 30"
        subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-x", "200", "-y", "50", cmd], check=True)
        try:
            time.sleep(1.0)
            pid = None
            for _ in range(50):
                out = subprocess.run(["pgrep", "-f", f"^{binary} watch --config {config}"], capture_output=True, text=True)
                if out.stdout.strip():
                    pid = int(out.stdout.split()[0])
                    break
                time.sleep(0.2)
            if pid is None:
                print("rlmon did not start", file=sys.stderr)
                return 2
            start = time.time()
            samples = []
            while True:
                screen = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p"], capture_output=True, text=True).stdout
                kib = rss_kib(pid)
                samples.append((time.time() - start, kib))
                print(f"{time.time() - start:7.1f}s  rss {kib / 1024 if kib else 0:8.1f} MiB", flush=True)
                if f"{args.runs} finished" in screen or kib is None:
                    break
                time.sleep(args.sample_s)
            elapsed = time.time() - start
            subprocess.run(["tmux", "-L", sock, "send-keys", "q"])
            # rlmon writes the snapshot of every point after the display closes:
            # wait for it to exit (minutes for a hundred million points).
            quit_at = time.time()
            while rss_kib(pid) is not None and time.time() - quit_at < 1800:
                time.sleep(1.0)
            print(f"rlmon exited {time.time() - quit_at:.0f} s after q (the snapshot written)", flush=True)
        finally:
            subprocess.run(["tmux", "-L", sock, "kill-server"], stderr=subprocess.DEVNULL)
        frames = []
        log = os.path.join(sessions, "rlmon.log")
        if os.path.exists(log):
            for line in open(log):
                m = re.search(r"rlmon::frame: frame us=(\d+)", line)
                if m:
                    frames.append(int(m.group(1)) / 1000.0)
        snaps = [p for p in os.listdir(sessions) if p.endswith(".rlmon.parquet")] if os.path.isdir(sessions) else []
        lost = None
        if snaps:
            out = subprocess.run([binary, "check", "--json", os.path.join(sessions, snaps[0])], capture_output=True, text=True)
            report = json.loads(out.stdout)
            short = {r["name"]: r["points"] for r in report["runs"] if r["points"] != expected_steps}
            lost = sum(expected_steps - p for p in short.values())
        after_first_min = [k for t, k in samples if t >= 60 and k]
        total_points = args.runs * expected_steps * args.metrics
        print()
        print(f"load: {args.runs} runs x {args.rate:.0f} points/s x {args.seconds:.0f} s = {total_points / 1e6:.1f}M points ({elapsed:.0f} s wall)")
        if samples:
            peak = max(k for _, k in samples if k)
            first = samples[0][1] or peak
            print(f"rss: first {first / 1024:.0f} MiB, peak {peak / 1024:.0f} MiB, "
                  f"growth {(peak - first) * 1024 / max(total_points, 1):.1f} bytes per point")
            if after_first_min:
                print(f"rss after the first minute: min {min(after_first_min) / 1024:.0f} MiB, max {max(after_first_min) / 1024:.0f} MiB")
        if frames:
            frames.sort()
            print(f"frames: {len(frames)}, median {statistics.median(frames):.2f} ms, "
                  f"p99 {frames[int(len(frames) * 0.99) - 1]:.2f} ms, max {frames[-1]:.2f} ms")
        if lost is None:
            print("points: no snapshot found")
            return 1
        print(f"points: {'none lost' if lost == 0 else f'{lost} steps lost'} (each run {expected_steps} steps)")
        return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
