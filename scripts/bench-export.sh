#!/usr/bin/env bash
# `rlmon export` of a long recorded session: wall time and peak resident memory,
# CSV and JSONL, each given binary in turn (two builds side by side in one run), and
# whether each build wrote the same bytes as the first. The session is the one
# scripts/bench-long-session.sh writes (STEPS steps x 20 metrics, default 1M = 20M
# points); run that script first.
#   scripts/bench-export.sh [STEPS] [BINARY...]
# e.g. scripts/bench-export.sh 1000000 /tmp/rlmon-main target/release/rlmon
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
steps="${1:-1000000}"; shift || true
bins=("$@"); [ ${#bins[@]} -eq 0 ] && bins=(target/release/rlmon)
session="${RLMON_BENCH_KEEP:-${TMPDIR:-/tmp}/rlmon-bench-session-$steps}/bench-step-blocks.rlmon.parquet"
[ -s "$session" ] || { echo "no session at $session: run scripts/bench-long-session.sh $steps first" >&2; exit 2; }
echo "session: $session ($(du -m "$session" | cut -f1) MB, $((steps * 20)) points)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
declare -A first
for format in csv jsonl; do
  for bin in "${bins[@]}"; do
    file="$out/export.$format"
    res="$( { /usr/bin/time -f "TIME %e %M" "$bin" export --format "$format" -o "$file" "$session"; } 2>&1 || true)"
    read -r wall kb <<<"$(grep '^TIME' <<<"$res" | cut -d' ' -f2-)"
    sum="$(sha256sum "$file" | cut -d' ' -f1)"
    mb="$(du -m "$file" | cut -f1)"
    rm -f "$file"
    if [ -z "${first[$format]:-}" ]; then first[$format]="$sum"; same=""
    elif [ "${first[$format]}" = "$sum" ]; then same="same bytes as ${bins[0]}"
    else same="OUTPUT DIFFERS from ${bins[0]}"; fi
    awk -v b="$bin" -v f="$format" -v w="$wall" -v k="$kb" -v m="$mb" -v same="$same" \
      'BEGIN { printf "%-32s %-6s %6.2f s  %6d MB peak  %6d MB written  %s\n", b, f, w, k / 1024, m, same }'
  done
done
