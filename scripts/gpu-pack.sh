#!/usr/bin/env bash
# Copies what scripts/gpu-check.sh needs on a GPU machine into .gpu/ (ignored by
# git), small enough to travel with the working tree (the device tool carries at
# most 64 MiB in all, the tracked files included):
#   .gpu/rlmon, .gpu/rlmon-train     the release binaries (debug info stripped)
#   .gpu/deps/cuda                   the tests/cuda.rs test binary; in deps/ so that
#                                    it finds ../rlmon and ../rlmon-train as cargo's
#                                    own layout would
#   .gpu/deps/rlmon_train            the worker's unit tests (the trainer-level CUDA
#                                    test), when they fit
#   .gpu/tmux/tmux, .gpu/tmux/lib/   this machine's tmux and the libraries it needs
#                                    beyond glibc (the GPU machine has no tmux)
# Build first (from the repository root):
#   cargo build --release && cargo test --release --test cuda --no-run \
#     && cargo test --release --bin rlmon-train --no-run
# then: scripts/gpu-pack.sh   (prints what it packed and the total size)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}/release"
pack="$root/.gpu"
limit_mib="${GPU_PACK_LIMIT_MIB:-56}"   # 64 MiB less the tracked tree (about 3 MiB) and room to spare
say() { printf 'gpu-pack: %s\n' "$*" >&2; }

# test_binary GLOB TEST: the newest file matching GLOB whose test list names TEST
# (deps/ also holds a copy of the rlmon-train executable under a hashed name).
test_binary() {
  local f
  for f in $(ls -t $1 2>/dev/null | grep -v '\.d$'); do
    if "$f" --list 2>/dev/null | grep "$2: test" >/dev/null; then echo "$f"; return; fi
  done
}

for bin in rlmon rlmon-train; do
  [ -x "$target/$bin" ] || { say "$target/$bin missing: run cargo build --release first"; exit 1; }
done
cuda_test="$(test_binary "$target/deps/cuda-*" a_watched_lm_run_trains_on_cuda_when_available)"
[ -n "$cuda_test" ] || { say "no tests/cuda.rs test binary under $target/deps: run cargo test --release --test cuda --no-run"; exit 1; }
worker_tests="$(test_binary "$target/deps/rlmon_train-*" lm_trains_on_cuda_when_available)"

rm -rf "$pack"
mkdir -p "$pack/deps" "$pack/tmux/lib"
cp "$target/rlmon" "$target/rlmon-train" "$pack/"
cp "$cuda_test" "$pack/deps/cuda"
# The commit the binaries were built from (a copied working tree may carry a stale .git).
{ git rev-parse --short HEAD 2>/dev/null || echo unknown; if git status --porcelain --untracked-files=no 2>/dev/null | grep -q .; then echo "(with uncommitted changes)"; fi; } | paste -sd " " >"$pack/COMMIT"
[ -n "$worker_tests" ] && cp "$worker_tests" "$pack/deps/rlmon_train"
strip --strip-debug "$pack/rlmon" "$pack/rlmon-train" "$pack/deps/"*

if command -v tmux >/dev/null; then
  cp "$(command -v tmux)" "$pack/tmux/tmux"
  # Its libraries that are not glibc's own (glibc is on every machine).
  ldd "$(command -v tmux)" | awk '$3 ~ /^\// {print $3}' \
    | grep -Ev '/(libc|libm|libresolv|libpthread|libdl|librt|ld-linux[^/]*)\.so' \
    | while read -r lib; do cp -L "$lib" "$pack/tmux/lib/"; done
else
  say "no tmux here: the live-display step will fall back to script(1)"
  rmdir "$pack/tmux/lib" "$pack/tmux"
fi

size_kib() { du -sk "$1" | cut -f1; }
if [ "$(size_kib "$pack")" -gt $((limit_mib * 1024)) ] && [ -e "$pack/deps/rlmon_train" ]; then
  say "over ${limit_mib} MiB: leaving out the worker's unit tests"
  rm "$pack/deps/rlmon_train"
fi
if [ "$(size_kib "$pack")" -gt $((limit_mib * 1024)) ]; then
  say "still over ${limit_mib} MiB: stripping all symbols"
  strip --strip-all "$pack/rlmon" "$pack/rlmon-train" "$pack/deps/"*
fi
find "$pack" -type f -exec ls -l {} + | awk '{printf "%10d  %s\n", $5, $9}' | sed "s|$root/||" >&2
total=$(size_kib "$pack")
say "total $((total / 1024)) MiB ($total KiB) in .gpu/"
if [ "$total" -gt $((limit_mib * 1024)) ]; then
  say "too large to carry (limit ${limit_mib} MiB)"
  exit 1
fi
