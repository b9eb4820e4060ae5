#!/bin/sh
# Every rustc run of this project's builds goes through here (.cargo/config.toml).
# Only the training worker needs libtorch: when rustc is asked to build the worker or
# the torch crates under it (torch-sys's build script first of all) before
# ./scripts/setup.sh, the build stops at once with the fix, instead of failing
# minutes later inside torch-sys's C++ build. The monitor (`-p rlmon`) builds
# without libtorch and never stops here.
needs_libtorch=
for arg in "$@"; do
  case "$arg" in
    torch_sys|tch|rlmon_train|*/torch-sys-*) needs_libtorch=1; break ;;
  esac
done
if [ -n "$needs_libtorch" ]; then
  root="$(cd "$(dirname "$0")/.." && pwd)"
  lib="${LIBTORCH:-$root/.venv/libtorch}/lib/libtorch_cpu.so"
  if [ ! -f "$lib" ]; then
    echo "error: libtorch not found ($lib), which the training worker rlmon-train links" >&2
    echo "       run ./scripts/setup.sh first: it installs torch==2.11.0 (libtorch) into .venv" >&2
    echo "       or build the monitor alone, without libtorch: cargo build --release -p rlmon" >&2
    exit 1
  fi
fi
exec "$@"
