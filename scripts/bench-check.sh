#!/usr/bin/env bash
# `rlmon check` of a long JSONL log: wall time, values per second and peak memory.
# Generates a deterministic log (STEPS steps x 10 metrics, default 500k = 5M values,
# about 133 MB) once, then runs each given binary on it, alternating, REPEATS times.
#   scripts/bench-check.sh [STEPS] [REPEATS] [BINARY...]
# e.g. scripts/bench-check.sh 500000 3 /tmp/rlmon-main target/release/rlmon
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
steps="${1:-500000}"; repeats="${2:-3}"; shift 2 || true
bins=("$@"); [ ${#bins[@]} -eq 0 ] && bins=(target/release/rlmon)
log="${RLMON_BENCH_LOG:-${TMPDIR:-/tmp}/rlmon-bench-check-$steps.jsonl}"
if [ ! -s "$log" ]; then
  python3 - "$steps" "$log" <<'PY'
import math, random, sys
steps, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(14)
with open(path, "w") as f:
    t = 1_700_000_000.0
    for s in range(1, steps + 1):
        t += 0.25 + 0.01 * rng.random()
        loss = 2.0 + 3.0 / math.sqrt(s) + 0.02 * rng.gauss(0, 1)
        f.write('{"step": %d, "timestamp": %.3f, "loss": %.6f, "lr": %.6g, "grad_norm": %.5f, '
                '"tokens": %d, "step_time_s": %.5f, "kl": %.6f, "entropy": %.5f, '
                '"reward_mean": %.5f, "val_loss": %.6f}\n'
                % (s, t, loss, 3e-4 * min(1.0, s / 2000), 0.5 + 0.05 * rng.random(), 4096,
                   0.25 + 0.01 * rng.random(), 0.02 + 0.002 * rng.random(), 1.5 - 0.1 * rng.random(),
                   0.5 + 0.05 * rng.gauss(0, 1), loss + 0.05))
PY
fi
values=$((steps * 10))
echo "log: $log ($(du -m "$log" | cut -f1) MB, $steps steps x 10 metrics = $values values)"
for i in $(seq "$repeats"); do
  for bin in "${bins[@]}"; do
    out="$( { /usr/bin/time -f "TIME %e %M" "$bin" check --json "$log" >/dev/null; } 2>&1 || true)"
    read -r wall kb <<<"$(grep '^TIME' <<<"$out" | cut -d' ' -f2-)"
    awk -v b="$bin" -v w="$wall" -v k="$kb" -v n="$values" \
      'BEGIN { printf "%-40s %6.2f s  %6.2fM values/s  %5d MB peak\n", b, w, n / w / 1e6, k / 1024 }'
  done
done
