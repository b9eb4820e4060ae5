#!/usr/bin/env bash
# Tokens/s of the MoE lm workload (workloads/moe.toml without its [run.ndt] table):
# rlmon's tch loop (headless, monitor running) next to the same model and step in
# PyTorch eager, alternating in one run so both see the same machine load.
#   scripts/bench-moe.sh [STEPS] [REPEATS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
./scripts/setup.sh
cargo build --release --quiet
exec .venv/bin/python benches/moe_throughput.py --steps "${1:-300}" --repeats "${2:-5}"
