#!/usr/bin/env bash
# Tokens/s of the tiny lm workload: rlmon's tch loop (headless, monitor running)
# next to the same model and step in PyTorch eager, interleaved in one run so both
# see the same machine load. Also rlmon with 2 intra-op threads, to show what the
# "auto" thread choice avoids on a small machine.
#   scripts/bench-throughput.sh [STEPS] [REPEATS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
./scripts/setup.sh
cargo build --release --quiet
exec .venv/bin/python benches/throughput.py --steps "${1:-300}" --repeats "${2:-3}"
