#!/usr/bin/env python3
"""Verdicts for scripts/gpu-check.sh, from the files its steps wrote (standard
library only: it runs under whatever python3 the machine has).

Each subcommand prints its verdict as the first line, `PASS|FAIL|SKIP phrase`,
then detail lines for the report. It exits 0 whatever the verdict.

  doctor  DOCTOR_JSON GPU(0|1)
  probe   PROBE_JSON GPU
  summary SUMMARY_JSON GPU [RUN_NAME]       a headless `watch --json` summary
  attach  SUMMARY_JSON READY_JSON APPS_CSV GPU
  nvml    METRICS_TXT SMI_CSV GPU           rlmon's /metrics against nvidia-smi
  live    SCREEN_TXT GPU
"""
import json
import re
import sys

GIB = float(1 << 30)
MIB = float(1 << 20)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return e


def fmt_bytes(v):
    return "-" if v is None else f"{v / GIB:.2f} GiB"


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def doctor(path, gpu):
    d = load(path)
    if isinstance(d, Exception):
        return "FAIL", f"no doctor report: {d}", []
    lt, cuda, nvml = d["libtorch"], d["cuda"], d["nvml"]
    lines = [f"libtorch {lt.get('version')} at {lt.get('path')}, cuda_library_loaded={lt.get('cuda_library_loaded')}, worker {lt.get('worker')}",
             f"cuda available={cuda['available']} devices={cuda['device_count']} cudnn={cuda['cudnn']}",
             f"nvml {json.dumps(nvml)}"]
    if lt.get("error"):
        return "FAIL", f"worker not usable: {lt['error']}", lines
    # The version as torch/version.py says it: `2.11.0+cu130` is 2.11.0.
    if (lt.get("version") or "").split("+")[0] != lt.get("built_for"):
        return "FAIL", f"libtorch {lt.get('version')} loaded, built for {lt.get('built_for')}", lines
    if not gpu:
        return "PASS", f"no GPU: libtorch {lt['version']} loaded, cuda available={cuda['available']}, nvml: {nvml.get('reason', nvml['state'])}", lines
    if not cuda["available"]:
        return "FAIL", "a GPU is here but the worker's libtorch sees no CUDA", lines
    if nvml["state"] != "available":
        return "FAIL", f"NVML not usable: {nvml.get('reason')}", lines
    names = ", ".join(g["name"] for g in nvml["gpus"])
    return "PASS", f"cuda {cuda['device_count']} device(s), cudnn={cuda['cudnn']}, NVML driver {nvml['driver']}: {names}", lines


def probe(path, gpu):
    p = load(path)
    if isinstance(p, Exception):
        return "FAIL", f"no probe answer: {p}", []
    lines = [json.dumps(p)]
    if not p.get("cuda_library_loaded"):
        return "FAIL", "libtorch_cuda.so not loaded into the worker", lines
    if gpu and not p.get("cuda_available"):
        return "FAIL", "libtorch_cuda.so loaded but CUDA not available", lines
    return "PASS", f"libtorch {p.get('version')}, cuda_available={p.get('cuda_available')}, devices={p.get('cuda_devices')}, cudnn={p.get('cudnn')}", lines


def run_figures(r):
    return (f"{r['name']}: {r['state']} {r['steps']}/{r['total_steps']} steps on {r['device']}, "
            f"tokens/s {fmt(r.get('tokens_per_s'), '.0f')}, samples/s {fmt(r.get('samples_per_s'), '.1f')}, "
            f"peak memory {fmt_bytes(r.get('peak_memory_bytes'))} (reported), GPU memory peak {fmt_bytes(r.get('peak_gpu_memory_bytes'))} (NVML), "
            f"model TFLOP/s {fmt(None if r.get('model_flops_per_s') is None else r['model_flops_per_s'] / 1e12, '.3f')}, "
            f"peak TFLOP/s {fmt(None if r.get('peak_flops_per_s') is None else r['peak_flops_per_s'] / 1e12, '.1f')}, "
            f"MFU {fmt(None if r.get('mfu') is None else 100 * r['mfu'], '.2f')}%")


def summary(path, gpu, name=None):
    s = load(path)
    if isinstance(s, Exception):
        return "FAIL", f"no JSON summary: {s}", []
    runs = [r for r in s.get("runs", []) if name is None or r["name"] == name]
    if not runs:
        return "FAIL", f"no run {name!r} in the summary", []
    r = runs[0]
    lines = [run_figures(r), f"gpu: {json.dumps(s.get('gpu'))}"]
    if r.get("error"):
        lines.append(f"error: {r['error']}")
    if r["state"] != "finished":
        return "FAIL", f"run {r['state']}: {r.get('error') or 'no reason given'}", lines
    missing = [k for k in ("tokens_per_s", "model_flops_per_s") if r.get(k) is None]
    if gpu:
        if r["device"] != "cuda:0":
            return "FAIL", f"trained on {r['device']}, not cuda:0", lines
        missing += [k for k in ("mfu",) if r.get(k) is None]
    if missing:
        return "FAIL", "summary lacks " + ", ".join(missing), lines
    # The shipped workloads are clean runs: any warn or critical alert is a false one.
    loud = [a for a in r.get("alerts", []) if a.get("severity") in ("warn", "critical")]
    for a in r.get("alerts", []):
        lines.append(f"alert: {a.get('severity')} {a.get('kind')} @{a.get('step')}: {a.get('message')}")
    if loud:
        return "FAIL", f"a clean run raised {len(loud)} warn/critical alert(s): " + ", ".join(sorted({a['kind'] for a in loud})), lines
    if gpu:
        # The worker's GPU memory needs NVML to list its pid: the attach step judges
        # that mechanism; here its absence is said, not failed.
        mem = r.get("peak_gpu_memory_bytes")
        mem = f"GPU mem peak {fmt_bytes(mem)}" if mem is not None else "no GPU memory attributed to the worker (NVML listed no process of it)"
        return "PASS", f"{r['tokens_per_s']:.0f} tok/s, MFU {100 * r['mfu']:.2f}%, {mem}", lines
    return "PASS", f"on {r['device']}: {r['tokens_per_s']:.0f} tok/s, {r['model_flops_per_s'] / 1e9:.2f} GFLOP/s, MFU null without a GPU", lines


def read_csv(path):
    """nvidia-smi's --format=csv: a header line, then rows; values keep their units."""
    try:
        with open(path) as f:
            rows = [[c.strip() for c in line.split(",")] for line in f if line.strip()]
    except OSError:
        return None, []
    if not rows:
        return None, []
    return rows[0], rows[1:]


def number(text):
    """`1234 MiB` -> 1234.0; `[N/A]` -> None."""
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def attach(summary_path, ready_path, apps_path, gpu):
    s = load(summary_path)
    ready = load(ready_path)
    lines = []
    if isinstance(s, Exception):
        return "FAIL", f"no JSON summary from the attached session: {s}", lines
    if isinstance(ready, Exception):
        return "FAIL", f"the external process never held its memory: {ready}", lines
    if not s.get("runs"):
        return "FAIL", "the attached session has no run", lines
    r = s["runs"][0]
    lines.append(run_figures(r))
    lines.append(f"the process itself: pid {ready['pid']} on {ready['device']}, torch allocated {fmt_bytes(ready['memory_allocated'])}, reserved {fmt_bytes(ready['memory_reserved'])}")
    if r["steps"] == 0:
        return "FAIL", "the attached run read no step", lines
    if not gpu:
        return "SKIP", f"no GPU: attached and followed {r['steps']} steps of a CPU stand-in, no GPU memory to attribute", lines
    header, rows = read_csv(apps_path)
    smi, listed = None, None
    for row in rows:
        if header and len(row) == len(header) and row[0] == str(ready["pid"]):
            listed = row[-1]
            smi = number(row[header.index("used_gpu_memory [MiB]")]) if "used_gpu_memory [MiB]" in header else None
    said = "pid not listed" if listed is None else f"{smi:.0f} MiB" if smi is not None else f"listed, memory {listed}"
    lines.append(f"nvidia-smi --query-compute-apps: {said} for pid {ready['pid']} ({len(rows)} process(es) listed)")
    mine = r.get("peak_gpu_memory_bytes")
    if mine is None:
        return "FAIL", "rlmon attributed no GPU memory to the attached process", lines
    if smi is None:
        return "FAIL", f"rlmon says {fmt_bytes(mine)}, nvidia-smi: {said}", lines
    diff = abs(mine / MIB - smi)
    within = diff <= max(64.0, 0.05 * smi)
    return ("PASS" if within else "FAIL"), f"rlmon {mine / MIB:.0f} MiB vs nvidia-smi {smi:.0f} MiB for pid {ready['pid']} (torch reserved {ready['memory_reserved'] / MIB:.0f} MiB)", lines


def prometheus(path):
    """`family{gpu="0"} value` lines of rlmon's /metrics, GPU 0's only."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#") or 'gpu="0"' not in line:
                    continue
                name, _, value = line.rpartition(" ")
                family = name.split("{")[0]
                if "run=" not in name:
                    out[family] = float(value)
    except OSError:
        pass
    return out


def nvml(metrics_path, smi_path, gpu):
    if not gpu:
        return "SKIP", "no GPU: nothing to compare with nvidia-smi", []
    rlmon = prometheus(metrics_path)
    header, rows = read_csv(smi_path)
    if not rlmon:
        return "FAIL", "rlmon's /metrics had no GPU 0 figures", []
    if not header or not rows:
        return "FAIL", "nvidia-smi gave no figures", []
    smi = dict(zip(header, rows[0]))
    # (what, rlmon family, scale to nvidia-smi's unit, nvidia-smi column, relative
    # tolerance, absolute tolerance): agreeing within either counts.
    checks = [
        ("memory total MiB", "rlmon_gpu_mem_total_bytes", 1 / MIB, "memory.total [MiB]", 0.02, 16),
        ("memory used MiB", "rlmon_gpu_mem_used_bytes", 1 / MIB, "memory.used [MiB]", 0.05, 256),
        ("utilization %", "rlmon_gpu_util_percent", 1, "utilization.gpu [%]", 0.0, 35),
        ("power W", "rlmon_gpu_power_watts", 1, "power.draw [W]", 0.25, 20),
        ("temperature C", "rlmon_gpu_temp_celsius", 1, "temperature.gpu", 0.0, 3),
        # `--query-gpu=clocks.sm` comes back headed `clocks.current.sm [MHz]`.
        ("SM clock MHz", "rlmon_gpu_sm_clock_mhz", 1, ("clocks.current.sm [MHz]", "clocks.sm [MHz]"), 0.2, 50),
    ]
    lines = [f"{'figure':<18} {'rlmon (NVML)':>14} {'nvidia-smi':>12}  agree"]
    bad, missing = [], []
    for what, family, scale, column, rel, absolute in checks:
        mine = rlmon.get(family)
        columns = column if isinstance(column, tuple) else (column,)
        theirs = next((number(smi[c]) for c in columns if c in smi), None)
        if mine is None or theirs is None:
            lines.append(f"{what:<18} {fmt(None if mine is None else mine * scale):>14} {fmt(theirs):>12}  n/a")
            missing.append(what)
            continue
        mine *= scale
        ok = abs(mine - theirs) <= max(absolute, rel * abs(theirs))
        lines.append(f"{what:<18} {mine:>14.1f} {theirs:>12.1f}  {'yes' if ok else 'NO'}")
        if not ok:
            bad.append(what)
    # Memory is what the attach step holds steady; the rest moves between samples.
    if any(b.startswith("memory") for b in bad):
        return "FAIL", "memory figures disagree: " + ", ".join(bad), lines
    if any(m.startswith("memory") for m in missing):
        return "FAIL", "memory figures missing: " + ", ".join(missing), lines
    note = f"; outside tolerance (moving figures): {', '.join(bad)}" if bad else ""
    note += f"; not reported: {', '.join(missing)}" if missing else ""
    return "PASS", f"memory agrees; {len(checks) - len(bad) - len(missing)}/{len(checks)} figures within tolerance{note}", lines


def live(screen_path, gpu):
    try:
        with open(screen_path) as f:
            screen = f.read()
    except OSError as e:
        return "FAIL", f"no screen captured: {e}", []
    if "hardware" not in screen:
        return "FAIL", "the capture shows no hardware pane", []
    if gpu:
        rows = [w for w in ("gpu0 util", "VRAM", "power", "SM") if w not in screen]
        if rows:
            return "FAIL", "GPU rows missing from the hardware pane: " + ", ".join(rows), []
        jobs = "jobs" in screen
        # The live run is the clean tiny workload: a WARN or CRIT on screen is a false alert.
        loud = [l.strip() for l in screen.splitlines() if re.search(r"(?<![A-Za-z])(WARN|CRIT)(?![A-Za-z])", l)]
        if loud:
            return "FAIL", f"the clean tiny run shows warn/critical alerts ({len(loud)} line(s) on screen)", loud[:6]
        return "PASS", "hardware pane shows gpu0 util, VRAM, power, temp, SM" + (" and the run's GPU memory (jobs line)" if jobs else "; no jobs line (the worker's GPU memory not shown)"), []
    if "NO GPU" in screen or "none:" in screen:
        return "PASS", "no GPU: the display ran and says NO GPU with the reason", []
    return "FAIL", "no GPU here, but the display does not say so", []


def eager(summary_path, eager_path, name):
    """rlmon's tch loop against the same model and step in PyTorch eager on the same GPU."""
    s, e = load(summary_path), load(eager_path)
    if isinstance(e, Exception):
        return "FAIL", f"the eager script gave no result: {e}", []
    runs = [] if isinstance(s, Exception) else [r for r in s.get("runs", []) if r.get("tokens_per_s")]
    if not runs:
        return "FAIL", f"no rlmon {name} run to compare with", [f"eager: {json.dumps(e)}"]
    ours, theirs = runs[0]["tokens_per_s"], e["tokens_per_s"]
    lines = [f"rlmon (tch) {ours:.0f} tok/s over {runs[0]['steps']} steps; eager {theirs:.0f} tok/s over {e['steps']} steps on {e.get('device')}"]
    return "PASS", f"{name}: rlmon {ours:.0f} tok/s, eager PyTorch {theirs:.0f} tok/s, ratio {ours / theirs:.2f}", lines


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    gpu_flag = lambda s: s == "1"
    if cmd == "doctor":
        result = doctor(args[0], gpu_flag(args[1]))
    elif cmd == "probe":
        result = probe(args[0], gpu_flag(args[1]))
    elif cmd == "summary":
        result = summary(args[0], gpu_flag(args[1]), args[2] if len(args) > 2 else None)
    elif cmd == "attach":
        result = attach(args[0], args[1], args[2], gpu_flag(args[3]))
    elif cmd == "nvml":
        result = nvml(args[0], args[1], gpu_flag(args[2]))
    elif cmd == "eager":
        result = eager(args[0], args[1], args[2])
    elif cmd == "live":
        result = live(args[0], gpu_flag(args[1]))
    else:
        result = ("FAIL", f"unknown verdict {cmd}", [])
    status, phrase, lines = result
    print(f"{status} {phrase}")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
