#!/usr/bin/env bash
# Cost of representation dimensionality to training: tokens/s of workloads/tiny.toml
# with `[run.ndt] every = N` (all layers) and without, alternating in one run.
#   scripts/bench-ndt-overhead.sh [STEPS] [REPEATS] [EVERY]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
./scripts/setup.sh
cargo build --release --quiet
exec .venv/bin/python benches/ndt_overhead.py --steps "${1:-400}" --repeats "${2:-5}" --every "${3:-10}"
