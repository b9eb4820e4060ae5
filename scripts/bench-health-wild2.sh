#!/usr/bin/env bash
# The readers and detectors together, through `rlmon check`, on a fourth generator's
# runs, written in fourteen more trainers' own log formats
# (benches/health_eval/wild2/gen.py: fairseq, MMEngine, detectron2, Ultralytics,
# timm, torchtune, OpenRLHF, verl, NeMo, Composer, DeepSpeed, RLlib, CLU/T5X,
# PaddleNLP; fixed seed): recall and latency per fault kind, false warn/critical
# alerts per 1,000 healthy steps.
#   scripts/bench-health-wild2.sh [BINARY...]     (default target/release/rlmon)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RLMON_CLI_GEN=benches/health_eval/wild2/gen.py RLMON_CLI_CORPUS="${RLMON_WILD2_CORPUS:-target/health-wild2-corpus}" exec "$root/scripts/bench-health-cli.sh" "$@"
