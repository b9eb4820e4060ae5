#!/usr/bin/env bash
# The figures of docs/cluster.md: a simulated 64-node job (512 GPUs, 512 ranks) fed
# through rlmon's hub for 10 minutes and 1 hour of cluster time, then 128 nodes.
#   scripts/bench-cluster.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --release --example cluster_scale
bin="${CARGO_TARGET_DIR:-target}/release/examples/cluster_scale"
for run in "600 64 512" "3600 64 512" "600 128 1024"; do
  # shellcheck disable=SC2086
  "$bin" $run
  echo
done
