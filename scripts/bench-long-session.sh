#!/usr/bin/env bash
# Replay and compare of a long recorded session: wall time, peak resident memory,
# and memory per point above what the process holds at start (its `--version`).
# The session is the snapshot benchmark's (STEPS steps x 20 metrics, default 1M =
# 20M points), written once with `cargo bench --bench snapshot -- STEPS --session-only`. Each given binary
# runs in turn, so two builds compare side by side in one run.
# With RLMON_BENCH_ROW_GROUPS=ROWS the session is first rewritten by another
# Parquet writer (pyarrow, scripts/rewrite-row-groups.py) in row groups of ROWS rows
# cut inside steps, and that file is measured instead.
#   scripts/bench-long-session.sh [STEPS] [BINARY...]
# e.g. scripts/bench-long-session.sh 1000000 /tmp/rlmon-main target/release/rlmon
#      RLMON_BENCH_ROW_GROUPS=2000000 scripts/bench-long-session.sh 1000000 target/release/rlmon
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
steps="${1:-1000000}"; shift || true
bins=("$@"); [ ${#bins[@]} -eq 0 ] && bins=(target/release/rlmon)
dir="${RLMON_BENCH_KEEP:-${TMPDIR:-/tmp}/rlmon-bench-session-$steps}"
session="$dir/bench-step-blocks.rlmon.parquet"
if [ ! -s "$session" ]; then
  mkdir -p "$dir"
  # In parts of 1M steps, so a 200M-point session is written in bounded memory.
  RLMON_BENCH_KEEP="$dir" cargo bench --bench snapshot -- "$steps" --session-only >/dev/null
fi
if [ -n "${RLMON_BENCH_ROW_GROUPS:-}" ]; then
  rewritten="$dir/bench-groups-$RLMON_BENCH_ROW_GROUPS.parquet"
  if [ ! -s "$rewritten" ]; then
    .venv/bin/python scripts/rewrite-row-groups.py "$session" "$rewritten" "$RLMON_BENCH_ROW_GROUPS" >/dev/null
  fi
  session="$rewritten"
fi
points=$((steps * 20))
echo "session: $session ($(du -m "$session" | cut -f1) MB, $steps steps x 20 metrics = $points points)"
# Each command's output is kept ($out/<binary number>-<command>.json) and compared
# with the first binary's: the builds must print the same summary and comparison.
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# Prints "seconds peak-KB" of a command, whatever its exit status (compare exits 1
# on a regression); its stdout goes to the file named first.
measure() {
  local keep="$1" res
  shift
  res="$( { /usr/bin/time -f "TIME %e %M" "$@" >"$keep"; } 2>&1 || true)"
  grep '^TIME' <<<"$res" | cut -d' ' -f2-
}
n=0
for bin in "${bins[@]}"; do
  n=$((n + 1))
  read -r _ start_kb <<<"$(measure /dev/null "$bin" --version)"
  for cmd in replay compare; do
    if [ "$cmd" = replay ]; then
      read -r wall kb <<<"$(measure "$out/$n-$cmd.json" "$bin" replay --headless --json --speed max "$session")"
    else
      read -r wall kb <<<"$(measure "$out/$n-$cmd.json" "$bin" compare --json "$session" "$session")"
    fi
    if [ "$n" -gt 1 ]; then
      # The summary names the binary's snapshot path only; nothing else may differ.
      if cmp -s "$out/1-$cmd.json" "$out/$n-$cmd.json"; then same="same output as ${bins[0]}"; else same="OUTPUT DIFFERS from ${bins[0]}"; fi
    else
      same=""
    fi
    awk -v b="$bin" -v c="$cmd" -v w="$wall" -v k="$kb" -v s="$start_kb" -v n="$points" \
      -v same="$same" 'BEGIN { printf "%-24s %-8s %6.1f s  %6d MB peak  %5.1f bytes/point above the %d MB at start  %s\n", b, c, w, k / 1024, (k - s) * 1024 / n, s / 1024, same }'
  done
done
