#!/usr/bin/env bash
# The pip install, checked as a new user would try it: builds the wheel from this
# checkout (`pip wheel`, which runs maturin per pyproject.toml), installs it into a
# fresh virtualenv with no torch, and runs what the README promises:
#   rlmon --version, python -m rlmon --version, import rlmon (no framework imported),
#   a five-line client script, `rlmon check` on its run, and a built-in workload
#   refused with exit 2 (the worker is not in the wheel).
# Prints the wheel's size and the build and install times (docs/install.md).
# Needs python3 with venv and network access to PyPI (maturin). Not part of
# `cargo test` (a release build of the monitor: minutes on two cores).
#
#   scripts/check-wheel.sh [WORK_DIR]     # default: a temporary folder, removed after
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d)}"
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
py="${PYTHON:-python3}"
say() { printf 'check-wheel: %s\n' "$*" >&2; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

say "building the wheel (pip wheel $root)"
"$py" -m venv "$work/build"
"$work/build/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
t0=$(now)
"$work/build/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$work/dist" "$root"
t1=$(now)
wheel="$(ls "$work"/dist/rlmon-*.whl)"
size=$(stat -c %s "$wheel")
say "wheel: $(basename "$wheel"), $((size / 1024)) KiB, built in $(secs "$t0" "$t1") s"

say "installing it into a fresh virtualenv"
"$py" -m venv "$work/venv"
t0=$(now)
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel"
t1=$(now)
say "installed in $(secs "$t0" "$t1") s; site-packages: $(du -sh "$work/venv/lib" | cut -f1)"
if "$work/venv/bin/python" -c 'import torch' 2>/dev/null; then say "torch is importable in the fresh virtualenv: it should not be"; exit 1; fi

bin="$work/venv/bin"
fail() { say "FAILED: $*"; exit 1; }
"$bin/rlmon" --version | grep -q '^rlmon ' || fail "rlmon --version"
"$bin/python" -m rlmon --version | grep -q '^rlmon ' || fail "python -m rlmon --version"
[ "$("$bin/python" -c 'import sys, rlmon; print(rlmon.__version__, [m for m in ("torch", "transformers") if m in sys.modules])')" = "$("$bin/rlmon" --version | cut -d' ' -f2) []" ] \
  || fail "import rlmon: version differs from the executable's, or a framework was imported"
if ldd "$bin/rlmon" | grep -Eq 'libtorch|libc10|libnvidia-ml'; then fail "rlmon links libtorch or NVML at load time"; fi

run_dir="$work/user"
mkdir -p "$run_dir"
cat > "$run_dir/train.py" <<'PY'
import rlmon
rlmon.init(project="demo", name="five-lines", config={"lr": 3e-4})
for step in range(100):
    rlmon.log({"loss": 2.0 + 1.0 / (step + 1), "lr": 3e-4}, step=step)
rlmon.finish()
PY
(cd "$run_dir" && env -u RLMON_DIR "$bin/python" train.py)
report="$(cd "$run_dir" && "$bin/rlmon" check --json rlmon-runs/five-lines-*)"
echo "$report" | "$bin/python" -c 'import json, sys; r = json.load(sys.stdin); assert r["points"] == 100 and r["runs"][0]["name"] == "five-lines", r' \
  || fail "rlmon check on the client run: $report"
(cd "$run_dir" && "$bin/rlmon" check rlmon-runs/five-lines-*) >&2

printf '[[run]]\nname = "tiny"\nworkload = "lm"\nsteps = 5\n' > "$run_dir/tiny.toml"
set +e
msg="$(cd "$run_dir" && "$bin/rlmon" watch --headless --config tiny.toml 2>&1)"
code=$?
set -e
[ "$code" = 2 ] && echo "$msg" | grep -q 'rlmon-train' || fail "a built-in workload without the worker: exit $code: $msg"
say "a built-in workload from the wheel: exit 2, $(echo "$msg" | head -c 160)..."
say "ok: wheel $((size / 1024)) KiB"
