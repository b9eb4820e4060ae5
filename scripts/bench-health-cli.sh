#!/usr/bin/env bash
# The detectors through `rlmon check`, on runs from a second, independent generator
# (benches/health_eval/cli/gen.py: 144 faulty and 96 healthy JSONL runs, fixed seed):
# recall and latency per fault kind, false warn/critical alerts per 1,000 healthy steps.
#   scripts/bench-health-cli.sh [BINARY...]     (default target/release/rlmon)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bins=("$@"); [ ${#bins[@]} -eq 0 ] && bins=(target/release/rlmon)
corpus="${RLMON_CLI_CORPUS:-target/health-cli-corpus}"
# (RLMON_CLI_GEN: another generator of the same labels, as scripts/bench-health-wild.sh's.)
[ -s "$corpus/labels.json" ] || python3 "${RLMON_CLI_GEN:-benches/health_eval/cli/gen.py}" "$corpus"
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "no binary at $b (build with: cargo build --release)" >&2; exit 2; }
  python3 benches/health_eval/cli/score.py "$b" "$corpus"
done
