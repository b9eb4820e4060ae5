#!/usr/bin/env python3
"""kill -9 rlmon at random moments and check that each session recovers.

Each round starts `rlmon watch --headless` on a command run that prints one JSON
metrics line per step (at --rate steps per second) and notes the wall time of every
step it printed in a side file. At a random moment rlmon is killed with SIGKILL. The
next `rlmon watch` (any config) finds the interrupted journal and turns it into a
snapshot; `rlmon check --json` then reads that snapshot. A round passes when the
recovered steps are exactly 0..N with no hole, and N covers every step printed more
than --sync-slack seconds before the kill (the journal syncs once a second).

Usage: scripts/kill9_recovery.py [--rounds 20] [--rate 200] [--binary target/release/rlmon]
Prints one line per round and a closing summary; exits 1 if a round failed.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

PRODUCER = r"""
import json, sys, time
rate, times_path = float(sys.argv[1]), sys.argv[2]
with open(times_path, "w", buffering=1) as times:
    step = 0
    start = time.time()
    while True:
        print(json.dumps({"step": step, "loss": 2.0 / (1 + step * 0.01), "tokens_per_s": 1000.0 + step}), flush=True)
        times.write(f"{step} {time.time()}\n")
        step += 1
        time.sleep(max(0.0, start + step / rate - time.time()))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--rate", type=float, default=200.0, help="steps per second the producer prints")
    ap.add_argument("--min-s", type=float, default=2.0, help="earliest kill, seconds after start")
    ap.add_argument("--max-s", type=float, default=8.0, help="latest kill")
    ap.add_argument("--sync-slack", type=float, default=1.5, help="seconds before the kill that may be lost")
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "rlmon"))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    binary = os.path.abspath(args.binary)
    failures = 0
    for round_no in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory() as d:
            times_path = os.path.join(d, "times.txt")
            config = os.path.join(d, "k.toml")
            argv = [sys.executable, "-c", PRODUCER, str(args.rate), times_path]
            with open(config, "w") as f:
                f.write('session = "k"\n[[run]]\nname = "k"\nworkload = "command"\n')
                f.write(f"command = {json.dumps(argv)}\n")
            sessions = os.path.join(d, "sessions")
            proc = subprocess.Popen([binary, "watch", "--headless", "--config", config, "--session-dir", sessions],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            delay = rng.uniform(args.min_s, args.max_s)
            time.sleep(delay)
            killed_at = time.time()
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            # The producer leads its own process group; it dies of SIGPIPE on its next
            # write, or here.
            time.sleep(0.2)
            printed = [tuple(map(float, l.split())) for l in open(times_path) if l.strip()]
            must_have = max((int(s) for s, t in printed if t < killed_at - args.sync_slack), default=-1)
            # Recovery as a user meets it: the next watch converts the journal.
            with open(os.path.join(d, "noop.toml"), "w") as f:
                f.write('session = "noop"\n[[run]]\nname = "noop"\nworkload = "command"\ncommand = ["true"]\n')
            subprocess.run([binary, "watch", "--headless", "--config", os.path.join(d, "noop.toml"), "--session-dir", sessions],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            snaps = sorted(p for p in os.listdir(sessions) if p.startswith("k-") and p.endswith(".rlmon.parquet"))
            journals = [p for p in os.listdir(sessions) if p.endswith(".rlmon.journal")]
            if not snaps:
                print(f"round {round_no:2}: kill at {delay:.2f}s: FAIL no recovered snapshot (journals left: {journals})")
                failures += 1
                continue
            out = subprocess.run([binary, "check", "--json", os.path.join(sessions, snaps[0])], capture_output=True, text=True)
            try:
                report = json.loads(out.stdout)
            except json.JSONDecodeError:
                print(f"round {round_no:2}: kill at {delay:.2f}s: FAIL check said: {out.stderr.strip()}")
                failures += 1
                continue
            run = next(r for r in report["runs"] if r["name"] == "k")
            points, last = run["points"], run["last_step"]
            contiguous = points == last + 1
            ok = contiguous and last >= must_have
            failures += not ok
            print(f"round {round_no:2}: kill at {delay:.2f}s: printed {len(printed)} steps, "
                  f"{must_have + 1} older than {args.sync_slack}s, recovered {points} (steps 0..{last}) "
                  f"{'ok' if ok else 'FAIL'}{'' if contiguous else ' (holes)'}")
    print(f"{args.rounds - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
