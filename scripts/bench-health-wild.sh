#!/usr/bin/env bash
# The readers and detectors together, through `rlmon check`, on runs from a third
# generator that writes each run in a real trainer's own log format
# (benches/health_eval/wild/gen.py: HF Trainer, TRL, Lightning CSV, hand-written
# text loops, Megatron, Stable-Baselines3, W&B-style JSONL; fixed seed): recall and
# latency per fault kind, false warn/critical alerts per 1,000 healthy steps.
#   scripts/bench-health-wild.sh [BINARY...]     (default target/release/rlmon)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bins=("$@"); [ ${#bins[@]} -eq 0 ] && bins=(target/release/rlmon)
corpus="${RLMON_WILD_CORPUS:-target/health-wild-corpus}"
[ -s "$corpus/labels.json" ] || python3 benches/health_eval/wild/gen.py "$corpus"
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "no binary at $b (build with: cargo build --release)" >&2; exit 2; }
  python3 benches/health_eval/cli/score.py "$b" "$corpus"
done
