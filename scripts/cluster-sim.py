#!/usr/bin/env python3
"""A simulated cluster for rlmon on a login node, all on 127.0.0.1.

Each of NODES machines gets one port that answers like its exporters
(node_exporter's CPU and memory and dcgm-exporter's 8 GPUs on /metrics) and like a
headless `rlmon watch --serve` following its 8 ranks of job `lm` (/api/runs and
/api/points: a step a second per rank, 6 metrics a step). Then rlmon is started
headless against all of them (NODES scrape targets and NODES --attach URLs) and its
CPU time and resident memory are read from /proc while it follows the job.

    scripts/cluster-sim.py [NODES] [SECONDS] [RLMON]
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NODES = int(sys.argv[1]) if len(sys.argv) > 1 else 64
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 60
RLMON = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "rlmon")
GPUS, RANKS_PER_NODE, FEED_CAPACITY = 8, 8, 20000
START = time.time()


class Node:
    def __init__(self, n):
        self.n, self.points, self.seq, self.lock = n, [], 0, threading.Lock()
        self.cpu = [10000.0, 500.0]  # idle and user seconds

    def step(self, step):
        t = time.time() - START
        with self.lock:
            for r in range(RANKS_PER_NODE):
                rank = self.n * RANKS_PER_NODE + r
                for metric, value in (("loss", 2 + 3 / (1 + step / 100) + 0.01 * math.sin(step + rank)), ("lr", 3e-4), ("grad_norm", 0.8), ("tokens", 8192), ("samples", 4), ("step_time_s", 1.0)):
                    self.points.append({"seq": self.seq, "run": f"lm/rank{rank}", "job": "lm", "rank": rank, "step": step, "time_s": t, "metric": metric, "value": value})
                    self.seq += 1
            del self.points[:-FEED_CAPACITY]
            self.cpu[0] += 8 * 0.1
            self.cpu[1] += 8 * 0.9

    def metrics(self):
        lines = [f'node_cpu_seconds_total{{cpu="{c}",mode="idle"}} {self.cpu[0]}\nnode_cpu_seconds_total{{cpu="{c}",mode="user"}} {self.cpu[1]}' for c in range(8)]
        lines += ["node_memory_MemTotal_bytes 1.0e12", "node_memory_MemAvailable_bytes 8.0e11"]
        for g in range(GPUS):
            w = math.sin(time.time() + g)
            for name, value in (("DCGM_FI_DEV_GPU_UTIL", 95 + 3 * w), ("DCGM_FI_DEV_FB_USED", 62000), ("DCGM_FI_DEV_FB_FREE", 19000), ("DCGM_FI_DEV_POWER_USAGE", 600 + 20 * w), ("DCGM_FI_DEV_GPU_TEMP", 65), ("DCGM_FI_DEV_SM_CLOCK", 1980)):
                lines.append(f'{name}{{gpu="{g}",Hostname="node{self.n:02}"}} {value}')
        return "\n".join(lines) + "\n"

    def runs(self, step):
        runs = [{"name": "lm", "state": "running", "step": step}]
        runs += [{"name": f"lm/rank{r}", "state": "running", "step": step, "job": "lm", "rank": r} for r in range(self.n * RANKS_PER_NODE, (self.n + 1) * RANKS_PER_NODE)]
        return {"next": self.seq, "runs": runs}

    def page(self, since):
        with self.lock:
            fresh = [p for p in self.points if p["seq"] >= since][:5000]
            nxt = fresh[-1]["seq"] + 1 if fresh else self.seq
            return {"next": nxt, "points": fresh}


nodes = [Node(n) for n in range(NODES)]
state = {"step": 0}


def handler_for(node):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            path, _, query = self.path.partition("?")
            if path == "/metrics":
                body, kind = node.metrics(), "text/plain; version=0.0.4"
            elif path == "/api/runs":
                body, kind = json.dumps(node.runs(state["step"])), "application/json"
            elif path == "/api/points":
                since = int(dict(kv.split("=", 1) for kv in query.split("&") if "=" in kv).get("since", "0") or 0)
                body, kind = json.dumps(node.page(since)), "application/json"
            else:
                self.send_response(404)
                self.end_headers()
                return
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return H


servers = []
for node in nodes:
    s = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(node))
    threading.Thread(target=s.serve_forever, daemon=True).start()
    servers.append(s)


def stepper():
    while True:
        state["step"] += 1
        for node in nodes:
            node.step(state["step"])
        time.sleep(1.0)


threading.Thread(target=stepper, daemon=True).start()
time.sleep(1.5)

ports = [s.server_address[1] for s in servers]
tmp = tempfile.mkdtemp()
config = os.path.join(tmp, "cluster.toml")
with open(config, "w") as f:
    for n, port in enumerate(ports):
        f.write(f'[[telemetry.scrape]]\nurl = "http://127.0.0.1:{port}/metrics"\nhost = "node{n:02}"\n\n')
args = [RLMON, "watch", "--headless", "--config", config, "--session-dir", os.path.join(tmp, "sessions"), "--attach"] + [f"http://127.0.0.1:{p}/" for p in ports]
rlmon = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "rlmon.err"), "w"))


def usage(pid):
    stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    rss = int(open(f"/proc/{pid}/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return (int(stat[11]) + int(stat[12])) / ticks, rss


time.sleep(10)  # start-up and the first points
cpu0, rss0 = usage(rlmon.pid)
t0 = time.time()
time.sleep(SECONDS)
cpu1, rss1 = usage(rlmon.pid)
wall = time.time() - t0
rlmon.terminate()
rlmon.wait(timeout=60)
points_per_s = NODES * RANKS_PER_NODE * 6 + NODES * (3 + GPUS * 6) / 2
print(f"simulated: {NODES} nodes x {GPUS} GPUs ({NODES * GPUS} GPUs), {NODES * RANKS_PER_NODE} ranks, {points_per_s:.0f} points/s")
print(f"rlmon headless over {wall:.0f} s: CPU {100 * (cpu1 - cpu0) / wall:.1f}% of one core, RSS {rss0 / 2**20:.0f} MiB -> {rss1 / 2**20:.0f} MiB ({(rss1 - rss0) / 2**20 / wall * 3600:.0f} MiB an hour)")
print(f"rlmon's stderr: {os.path.join(tmp, 'rlmon.err')}")
