#!/usr/bin/env bash
# The long-run benchmark: STEPS steps x SERIES series through the hub at full
# speed, the display drawing off-screen every FRAME_EVERY steps; resident memory,
# series bytes per point, hub cost per point and frame times at each tenth.
#   scripts/bench-longrun.sh [STEPS] [SERIES] [FRAME_EVERY]    (default 1000000 200 1000)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo bench --bench longrun -- "${1:-1000000}" "${2:-200}" "${3:-1000}"
