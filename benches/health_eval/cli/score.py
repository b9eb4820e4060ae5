#!/usr/bin/env python3
"""Score a health-monitor binary against ./runs + ./labels.json.

A label's "steps" (the steps its log spans) is used where given; else the run is
JSONL and its "step" fields are read.

usage: python3 score.py BINARY [DIR]    (DIR: gen.py's OUTDIR, default target/health-cli-corpus)
Runs `BINARY check --json FILE` per run file, 2 in parallel.
"""
import json
import math
import os
import subprocess
import sys
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

HERE = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "target", "health-cli-corpus")
RUNS = os.path.join(HERE, "runs")
LOSS_FAMILY = {"loss_spike", "loss_divergence", "slow_drift"}
SERIOUS = {"warn", "critical"}


def accepted(kind):
    if kind in LOSS_FAMILY:
        return LOSS_FAMILY
    if kind == "grad_explosion":
        return {"grad_explosion", "nonfinite"}
    return {kind}


def run_steps(path):
    """Number of steps a run spans (last step - first step + 1)."""
    lo = hi = None
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                s = json.loads(line).get("step")
            except (ValueError, AttributeError):
                continue
            if isinstance(s, (int, float)):
                lo = s if lo is None else min(lo, s)
                hi = s if hi is None else max(hi, s)
    return 0 if lo is None else int(hi - lo + 1)


def check(binary, label):
    path = os.path.join(RUNS, label["file"])
    try:
        p = subprocess.run([binary, "check", "--json", path], capture_output=True,
                           text=True, timeout=600)
    except Exception as e:  # noqa: BLE001
        return label, None, f"failed to run: {e}"
    if p.returncode not in (0, 1):
        return label, None, f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[:200]}"
    try:
        doc = json.loads(p.stdout)
        alerts = doc.get("alerts", []) if isinstance(doc, dict) else []
    except ValueError as e:
        return label, None, f"bad JSON ({e}): {p.stdout[:200]!r}"
    return label, alerts, None


def pct(vals, q):
    if not vals:
        return None
    v = sorted(vals)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def fmt(x):
    return "-" if x is None else (f"{x:g}" if isinstance(x, (int, float)) else str(x))


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/rlmon"
    labels = json.load(open(os.path.join(HERE, "labels.json")))
    with ThreadPoolExecutor(max_workers=2) as ex:
        results = list(ex.map(lambda l: check(binary, l), labels))

    errors = [(l["file"], err) for l, a, err in results if err]
    per_kind = defaultdict(lambda: {"n": 0, "caught": 0, "lat": []})
    missed = []
    healthy_alerts = Counter()
    healthy_runs_by_kind = defaultdict(set)
    healthy_steps = 0
    healthy_n = 0
    healthy_flagged = []  # (file, kind, step, message, count)
    for label, alerts, err in results:
        if err:
            continue
        serious = [a for a in alerts if isinstance(a, dict) and a.get("severity") in SERIOUS]
        kind = label["kind"]
        if kind == "healthy":
            healthy_n += 1
            healthy_steps += label.get("steps") or run_steps(os.path.join(RUNS, label["file"]))
            first = {}
            cnt = Counter()
            for a in serious:
                k = a.get("kind")
                healthy_alerts[k] += 1
                healthy_runs_by_kind[k].add(label["file"])
                cnt[k] += 1
                first.setdefault(k, a)
            for k, a in first.items():
                healthy_flagged.append((label["file"], k, a.get("step"),
                                        str(a.get("message", ""))[:120], cnt[k]))
            continue
        rec = per_kind[kind]
        rec["n"] += 1
        onset = label["onset"]
        ok = accepted(kind)
        steps = [a.get("step") for a in serious
                 if a.get("kind") in ok and isinstance(a.get("step"), (int, float))
                 and a.get("step") >= onset - 5]
        if steps:
            rec["caught"] += 1
            rec["lat"].append(min(steps) - onset)
        else:
            kinds_seen = sorted({a.get("kind") for a in serious})
            missed.append((label["file"], kind, label.get("notes", ""), kinds_seen))

    print(f"binary: {binary}   runs: {len(labels)}   errors: {len(errors)}\n")
    print(f"{'fault kind':24s} {'runs':>4s} {'caught':>6s} {'recall':>7s} {'lat_med':>8s} {'lat_p90':>8s}")
    tot_n = tot_c = 0
    for kind in sorted(per_kind):
        r = per_kind[kind]
        tot_n += r["n"]
        tot_c += r["caught"]
        print(f"{kind:24s} {r['n']:4d} {r['caught']:6d} {r['caught'] / r['n']:7.2f} "
              f"{fmt(pct(r['lat'], 0.5)):>8s} {fmt(pct(r['lat'], 0.9)):>8s}")
    if tot_n:
        print(f"{'ALL FAULTS':24s} {tot_n:4d} {tot_c:6d} {tot_c / tot_n:7.2f}")

    k_steps = healthy_steps / 1000 if healthy_steps else float("nan")
    flagged_runs = {f for f, *_ in healthy_flagged}
    print(f"\nhealthy runs: {healthy_n}, total steps {healthy_steps}, "
          f"runs with any warn/critical alert: {len(flagged_runs)}")
    print(f"{'alert kind':24s} {'alerts':>6s} {'runs':>5s} {'per_1k_steps':>12s}")
    for k, c in sorted(healthy_alerts.items(), key=lambda kv: -kv[1]):
        print(f"{str(k):24s} {c:6d} {len(healthy_runs_by_kind[k]):5d} {c / k_steps:12.4f}")
    tot = sum(healthy_alerts.values())
    print(f"{'TOTAL':24s} {tot:6d} {len(flagged_runs):5d} {tot / k_steps if healthy_steps else 0:12.4f}")

    print(f"\nmissed faulty runs ({len(missed)}):")
    for f, kind, notes, seen in sorted(missed, key=lambda x: (x[1], x[0])):
        print(f"  {f}  {kind:22s} {notes}" + (f"  [other warn/crit: {', '.join(map(str, seen))}]" if seen else ""))

    print(f"\nhealthy runs with warn/critical alerts ({len(flagged_runs)} runs; first alert per kind, xN = count):")
    for f, k, step, msg, n in sorted(healthy_flagged, key=lambda x: (x[0], str(x[1]))):
        print(f"  {f}  {str(k):22s} step={fmt(step):>6s} x{n}  {msg}")

    if errors:
        print(f"\nerrors ({len(errors)}):")
        for f, e in errors:
            print(f"  {f}: {e}")


if __name__ == "__main__":
    main()
