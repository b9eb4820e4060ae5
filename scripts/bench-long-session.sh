#!/usr/bin/env bash
# Replay and compare of a long recorded session: wall time, peak resident memory,
# and memory per point above what the process holds at start (its `--version`).
# The session is the snapshot benchmark's (STEPS steps x 20 metrics, default 1M =
# 20M points), written once with `cargo bench --bench snapshot`. Each given binary
# runs in turn, so two builds compare side by side in one run.
#   scripts/bench-long-session.sh [STEPS] [BINARY...]
# e.g. scripts/bench-long-session.sh 1000000 /tmp/rlmon-main target/release/rlmon
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
steps="${1:-1000000}"; shift || true
bins=("$@"); [ ${#bins[@]} -eq 0 ] && bins=(target/release/rlmon)
dir="${RLMON_BENCH_KEEP:-${TMPDIR:-/tmp}/rlmon-bench-session-$steps}"
session="$dir/bench-step-blocks.rlmon.parquet"
if [ ! -s "$session" ]; then
  mkdir -p "$dir"
  RLMON_BENCH_KEEP="$dir" cargo bench --bench snapshot -- "$steps" >/dev/null
fi
points=$((steps * 20))
echo "session: $session ($(du -m "$session" | cut -f1) MB, $steps steps x 20 metrics = $points points)"
# Prints "seconds peak-KB" of a command, whatever its exit status (compare exits 1 on a regression).
measure() {
  local out
  out="$( { /usr/bin/time -f "TIME %e %M" "$@" >/dev/null; } 2>&1 || true)"
  grep '^TIME' <<<"$out" | cut -d' ' -f2-
}
for bin in "${bins[@]}"; do
  read -r _ start_kb <<<"$(measure "$bin" --version)"
  for cmd in replay compare; do
    if [ "$cmd" = replay ]; then
      read -r wall kb <<<"$(measure "$bin" replay --headless --json --speed max "$session")"
    else
      read -r wall kb <<<"$(measure "$bin" compare --json "$session" "$session")"
    fi
    awk -v b="$bin" -v c="$cmd" -v w="$wall" -v k="$kb" -v s="$start_kb" -v n="$points" \
      'BEGIN { printf "%-24s %-8s %6.1f s  %6d MB peak  %5.1f bytes/point above the %d MB at start\n", b, c, w, k / 1024, (k - s) * 1024 / n, s / 1024 }'
  done
done
