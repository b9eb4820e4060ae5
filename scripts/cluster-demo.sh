#!/usr/bin/env bash
# The cluster issue's done-when check, on one machine under tmux: two node_exporter
# targets (two local ports, as nodeA and nodeB), one headless rlmon serving a job of
# two ranks (a NaN loss at step 30: a critical alert) that the login node's rlmon
# follows with --attach http://, and Prometheus scraping the served rlmon. Prints
# the screen with both hosts and the remote runs, Prometheus's answer for the
# alert, then the screen after nodeB's exporter is killed (nodeB stale).
#   scripts/cluster-demo.sh [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin="${CARGO_TARGET_DIR:-target}/release/rlmon"
out="${1:-$(mktemp -d)}"; mkdir -p "$out"
tmp="$(mktemp -d)"
pids=()
cleanup() { tmux -L rlmon-cluster kill-server 2>/dev/null || true; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
a=$(port); b=$(port); served=$(port); prom=$(port)
prometheus-node-exporter --web.listen-address=127.0.0.1:$a >/dev/null 2>&1 & pids+=($!)
prometheus-node-exporter --web.listen-address=127.0.0.1:$b >/dev/null 2>&1 & node_b=$!; pids+=($node_b)

# The job on the "node": two ranks, a step every 0.2 s, a NaN loss at step 30.
cat > "$tmp/node.toml" <<TOML
[[run]]
name = "lm"
workload = "command"
command = ["python3", "-c", """
import json, math, time
for s in range(1, 2000):
    for r in (0, 1):
        loss = float('nan') if s == 30 and r == 1 else 4 * math.exp(-s / 80) + 1.5 + 0.01 * r
        print(json.dumps({'step': s, 'rank': r, 'loss': loss, 'tokens': 4096, 'step_time_s': 0.2 + 0.05 * r}), flush=True)
    time.sleep(0.2)
"""]
TOML
"$bin" watch --headless --serve 127.0.0.1:$served --config "$tmp/node.toml" --session-dir "$tmp/node-sessions" >"$tmp/node.log" 2>&1 & pids+=($!)
cat > "$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: rlmon
    static_configs:
      - targets: ['127.0.0.1:$served']
YML
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" --web.listen-address=127.0.0.1:$prom >/dev/null 2>&1 & pids+=($!)
until curl -sf "http://127.0.0.1:$served/api/runs" >/dev/null; do sleep 0.2; done

# The login node: both exporters, and the served rlmon's runs.
cat > "$tmp/login.toml" <<TOML
session = "login"
[[telemetry.scrape]]
url = "http://127.0.0.1:$a/metrics"
host = "nodeA"
interval_s = 1
[[telemetry.scrape]]
url = "http://127.0.0.1:$b/metrics"
host = "nodeB"
interval_s = 1
TOML
tmux -L rlmon-cluster new-session -d -x 160 -y 48 "$bin watch --config $tmp/login.toml --attach http://127.0.0.1:$served/ --session-dir $tmp/login-sessions; sleep 60"
sleep 12
tmux -L rlmon-cluster capture-pane -p > "$out/both-hosts.txt"
echo "== the login node, both hosts up =="; cat "$out/both-hosts.txt"

echo "== Prometheus: rlmon_alert{severity=\"critical\"} =="
for _ in $(seq 60); do
  answer=$(curl -s "http://127.0.0.1:$prom/api/v1/query" --data-urlencode 'query=rlmon_alert{severity="critical"}')
  if grep -q nonfinite <<<"$answer"; then break; fi
  sleep 1
done
echo "$answer" | tee "$out/prometheus-alert.json"; echo

kill "$node_b"
sleep 15
tmux -L rlmon-cluster capture-pane -p > "$out/node-b-stale.txt"
echo "== nodeB's exporter killed 15 s ago =="; cat "$out/node-b-stale.txt"
echo "(captures in $out)"
