#!/usr/bin/env bash
# The monitor builds and runs with no libtorch anywhere: copies this checkout's
# files (tracked and new, not .venv nor target) into a fresh folder, then with
# LIBTORCH unset and no .venv there:
#   cargo build --release -p rlmon    (timed)
#   rlmon --version, rlmon check on a fixture, rlmon doctor
#   a built-in workload refused before it starts (exit 2, saying how to get the worker)
#   a full `cargo build --release` stopping at once with the setup message.
# A cold build of the monitor: many minutes on two cores, so not part of `cargo test`.
#
#   scripts/check-monitor-only.sh [WORK_DIR]   # default: a temporary folder, removed after
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d)}"
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
say() { printf 'check-monitor-only: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
src="$work/rlmon"
mkdir -p "$src"
git -C "$root" ls-files -z --cached --others --exclude-standard | (cd "$root" && tar --null -T - -cf -) | tar -C "$src" -xf -
[ ! -e "$src/.venv" ] || fail ".venv was copied"
export CARGO_TARGET_DIR="$work/target"
unset LIBTORCH

say "cargo build --release -p rlmon (no LIBTORCH, no .venv)"
t0=$(date +%s)
(cd "$src" && cargo build --release -p rlmon)
t1=$(date +%s)
say "monitor built in $((t1 - t0)) s"
# Installed alone, as `cargo install --path .` does (a target folder may also hold a
# worker built earlier, which rlmon would find beside it).
mkdir -p "$work/bin"
cp "$CARGO_TARGET_DIR/release/rlmon" "$work/bin/rlmon"
rlmon="$work/bin/rlmon"
"$rlmon" --version
fixture="$src/tests/fixtures/logs/nanogpt.log"
set +e
"$rlmon" check "$fixture"; code=$?
set -e
[ "$code" -le 1 ] || fail "rlmon check $fixture: exit $code"
"$rlmon" doctor >/dev/null 2>&1 || true
set +e
msg="$(cd "$src" && "$rlmon" watch --headless --config workloads/tiny.toml 2>&1)"; code=$?
set -e
[ "$code" = 2 ] || fail "a built-in workload from the monitor alone: exit $code: $msg"
say "built-in workload: exit 2: $(echo "$msg" | head -c 200)..."
set +e
t0=$(date +%s)
msg="$(cd "$src" && cargo build --release 2>&1)"; code=$?
t1=$(date +%s)
set -e
[ "$code" != 0 ] && echo "$msg" | grep -q "libtorch not found" || fail "the full build without libtorch: exit $code: $(echo "$msg" | tail -5)"
say "full build without libtorch stops after $((t1 - t0)) s: $(echo "$msg" | grep -m1 'libtorch not found')"
say "ok"
