#!/usr/bin/env bash
# The readers and detectors together, through `rlmon check`, on runs from a third
# generator that writes each run in a real trainer's own log format
# (benches/health_eval/wild/gen.py: HF Trainer, TRL, Lightning CSV, hand-written
# text loops, Megatron, Stable-Baselines3, W&B-style JSONL; fixed seed): recall and
# latency per fault kind, false warn/critical alerts per 1,000 healthy steps.
#   scripts/bench-health-wild.sh [BINARY...]     (default target/release/rlmon)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RLMON_CLI_GEN=benches/health_eval/wild/gen.py RLMON_CLI_CORPUS="${RLMON_WILD_CORPUS:-target/health-wild-corpus}" exec "$root/scripts/bench-health-cli.sh" "$@"
