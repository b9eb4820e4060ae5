#!/usr/bin/env bash
# Training throughput with the live display up (inside tmux, 15 fps) vs headless,
# alternating, same config and steps. Needs tmux.
#   scripts/bench-tui-overhead.sh [STEPS] [REPEATS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
steps="${1:-400}"; repeats="${2:-3}"
bin=target/release/rlmon
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"; tmux -L rlmon-bench kill-server 2>/dev/null || true' EXIT
tui_rate() {
  tmux -L rlmon-bench new-session -d -x 160 -y 45 \
    "$bin watch --config workloads/tiny.toml --max-steps $steps --session-dir $tmp 2> $tmp/summary.txt; sleep 30"
  until tmux -L rlmon-bench capture-pane -p | grep -q "1 finished"; do sleep 0.5; done
  tmux -L rlmon-bench send-keys q
  until grep -q "tok/s" "$tmp/summary.txt" 2>/dev/null; do sleep 0.2; done
  tmux -L rlmon-bench kill-server
  grep -o '[0-9.]*k tok/s' "$tmp/summary.txt"
}
headless_rate() {
  $bin watch --config workloads/tiny.toml --max-steps "$steps" --headless --session-dir "$tmp" 2>&1 | grep -o '[0-9.]*k tok/s' | tail -1
}
for i in $(seq "$repeats"); do
  echo "headless: $(headless_rate)   live display: $(tui_rate)"
done
