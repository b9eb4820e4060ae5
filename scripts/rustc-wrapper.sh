#!/bin/sh
# Every rustc run of this project's builds goes through here (.cargo/config.toml),
# so a build started before ./scripts/setup.sh stops at once with the fix, instead
# of failing minutes later inside torch-sys's C++ build.
root="$(cd "$(dirname "$0")/.." && pwd)"
lib="${LIBTORCH:-$root/.venv/libtorch}/lib/libtorch_cpu.so"
if [ ! -f "$lib" ]; then
  echo "error: libtorch not found ($lib)" >&2
  echo "       run ./scripts/setup.sh first: it installs torch==2.11.0 (libtorch) into .venv" >&2
  exit 1
fi
exec "$@"
