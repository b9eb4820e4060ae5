#!/usr/bin/env bash
# rlmon's GPU path, run for real: one script that checks the CUDA training, NVML
# telemetry, per-process GPU memory attribution and the hardware pane on a machine
# with an NVIDIA GPU, and records what it saw. docs/gpu.md says how to read it.
#
#   scripts/gpu-check.sh REPORT_DIR
#
# WHAT THE RUN NEEDS on the GPU machine (nothing is built there):
#   - this working tree (scripts/, workloads/ are tracked files);
#   - .gpu/ made here by scripts/gpu-pack.sh (ignored by git, so it travels only
#     when named in the device tool's `carry`), 42 MiB as packed on 2026-11-27
#     (the tracked tree adds about 3 MiB; the tool carries 64 MiB in all):
#       .gpu/rlmon, .gpu/rlmon-train      release binaries, debug info stripped
#       .gpu/deps/cuda                    tests/cuda.rs's test binary
#       .gpu/deps/rlmon_train             the worker's unit tests (CUDA test), if it fit
#       .gpu/tmux/tmux, .gpu/tmux/lib/    tmux and its non-glibc libraries
#   - python3 with torch 2.11.0 (the GPU machine's own): the binaries here carry a
#     runpath to /work/main/.venv/libtorch/lib, which does not exist there, so the
#     script finds torch's folder (`import torch`) and points LD_LIBRARY_PATH and
#     LIBTORCH at it. The libtorch the worker loads must be 2.11.0 (doctor checks).
#   - nvidia-smi (the driver's).
#
# BUILD HERE, from the repository root, then pack:
#   export LIBTORCH=$PWD/.venv/libtorch
#   cargo build --release
#   cargo test --release --test cuda --no-run
#   cargo test --release --bin rlmon-train --no-run
#   scripts/gpu-pack.sh                   # prints the sizes; fails above 56 MiB
#
# THEN ONE CALL of the device tool (`run`), from the same checkout:
#   command:   scripts/gpu-check.sh $OUT
#   carry:     [".gpu"]
#   timeout_s: 500     (the script caps itself at GPU_CHECK_BUDGET_S=470 s; it
#                       usually needs 2-4 minutes on an H100)
# $OUT comes back with report.txt (verdicts and figures), log.txt (every command's
# output), summaries.json, doctor.json, nvml-vs-smi.txt, live-screen.txt and
# live-screen-ansi.txt: 7 files, none deeper than $OUT itself; and, for a workload
# whose verdict failed, its recording as NAME.jsonl.
#
# Without a GPU (here) it says so, runs what can run (doctor, probe, the CUDA test
# binary, which skips, a short CPU run to check the summary's fields, the live
# display on the CPU, the attach plumbing with a CPU stand-in) and skips the rest,
# each with a reason; it exits 0 when nothing failed. tests/gpu_check.rs runs it so.
#
# Environment: GPU_CHECK_BUDGET_S (470), GPU_CHECK_LIVE_S (20 with a GPU, 5
# without), RLMON_BIN_DIR (default .gpu/ if packed, else the cargo target dir),
# PYTHON (a python with torch, tried before python3 and .venv/bin/python).
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: scripts/gpu-check.sh REPORT_DIR" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2
mkdir -p "$1" || { echo "gpu-check: cannot create $1" >&2; exit 2; }
REPORT="$(cd "$1" && pwd)"
TXT="$REPORT/report.txt"
LOG="$REPORT/log.txt"
: >"$TXT"
: >"$LOG"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rlmon-gpu-check.XXXXXX")"
BUDGET="${GPU_CHECK_BUDGET_S:-470}"
VERDICT_PY="$root/scripts/gpu-check-verdict.py"
N_PASS=0 N_FAIL=0 N_SKIP=0
START=$SECONDS

cleanup() {
  [ -n "${TM_SOCKET:-}" ] && "${TMUX_CMD[@]}" -L "$TM_SOCKET" kill-server >/dev/null 2>&1
  for pid in ${BG_PIDS:-}; do kill "$pid" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT

note() { printf '%s\n' "$*" | tee -a "$TXT"; }
log() { printf '%s\n' "$*" >>"$LOG"; }

# verdict STEP STATUS PHRASE [DETAIL_FILE]: one line on stdout and in the report,
# then the detail lines (indented) in the report only.
verdict() {
  local line
  line="$(printf '%-14s %-4s %s' "$1" "$2" "$3")"
  printf '%s\n' "$line"
  printf '%s\n' "$line" >>"$TXT"
  log "== verdict: $line"
  [ -n "${4:-}" ] && [ -s "$4" ] && sed 's/^/                    /' "$4" >>"$TXT"
  case "$2" in PASS) N_PASS=$((N_PASS + 1)) ;; FAIL) N_FAIL=$((N_FAIL + 1)) ;; *) N_SKIP=$((N_SKIP + 1)) ;; esac
}

# judge STEP KIND ARGS...: the verdict helper's answer as the step's verdict.
judge() {
  local step="$1"
  shift
  python3 "$VERDICT_PY" "$@" >"$WORK/judged" 2>>"$LOG" || echo "FAIL verdict helper failed" >"$WORK/judged"
  local status phrase
  # `first` (the verdict line) stays set for the caller.
  first="$(head -1 "$WORK/judged")"
  status="${first%% *}"
  phrase="${first#* }"
  tail -n +2 "$WORK/judged" >"$WORK/judged.detail"
  verdict "$step" "$status" "$phrase" "$WORK/judged.detail"
}

# limit WANTED: the step's time limit, cut to what is left of the budget (0: none).
limit() {
  local left=$((BUDGET - (SECONDS - START)))
  if [ "$left" -lt 5 ]; then echo 0; elif [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}

# step NAME LIMIT STDOUT_FILE CMD...: runs CMD under `timeout`, stdout to the file
# (and the log), stderr to the log. Returns CMD's status (124: time limit hit).
step() {
  local name="$1" lim="$2" out="$3"
  shift 3
  log ""
  log "== $name (limit ${lim}s, at $((SECONDS - START))s): $*"
  if [ "$lim" -le 0 ]; then
    log "   not run: the script's time budget is spent"
    return 125
  fi
  local t0=$SECONDS rc
  timeout -k 5 "$lim" "$@" >"$out" 2>"$out.err"
  rc=$?
  if [ -s "$out.err" ]; then tail -c 20000 "$out.err" >>"$LOG"; fi
  if [ -s "$out" ]; then log "-- stdout:"; head -c 20000 "$out" >>"$LOG"; echo >>"$LOG"; fi
  log "   exit $rc after $((SECONDS - t0))s"
  return $rc
}

why() { # a phrase for a step's exit status
  case "$1" in
    124 | 137) echo "hit its time limit" ;;
    125) echo "not run: time budget spent" ;;
    *) echo "exit status $1" ;;
  esac
}

# ---------------------------------------------------------------- the machine
note "rlmon GPU check, $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n) ($(uname -srm))"
note "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (the tree's .git), $(nproc) cores"
GPU=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >"$WORK/gpus" 2>>"$LOG" && grep -q '^GPU ' "$WORK/gpus"; then
  GPU=1
  note "GPU: $(head -1 "$WORK/gpus"), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
  log "== nvidia-smi"
  timeout 20 nvidia-smi >>"$LOG" 2>&1
else
  note "GPU: none (nvidia-smi $(command -v nvidia-smi >/dev/null 2>&1 && echo 'lists no GPU' || echo 'not installed')): the GPU steps are skipped"
fi
LIVE_S="${GPU_CHECK_LIVE_S:-$([ $GPU = 1 ] && echo 20 || echo 5)}"

# ---------------------------------------------------------------- binaries
if [ -n "${RLMON_BIN_DIR:-}" ]; then
  BIN="$RLMON_BIN_DIR"
elif [ -x "$root/.gpu/rlmon" ]; then
  BIN="$root/.gpu"
else
  BIN="${CARGO_TARGET_DIR:-$root/target}/release"
fi
BIN="$(cd "$BIN" 2>/dev/null && pwd || echo "$BIN")"
# gpu-pack.sh records the commit the binaries were built from (a copied tree's .git
# may be stale).
[ -s "$BIN/COMMIT" ] && note "binaries built from $(cat "$BIN/COMMIT")"
# test_binary GLOB TEST: the newest file matching GLOB whose test list names TEST
# (cargo's deps/ also holds the rlmon-train executable under a hashed name).
test_binary() {
  local f
  for f in $(ls -t $1 2>/dev/null | grep -v '\.d$'); do
    if timeout 20 "$f" --list 2>/dev/null | grep "$2: test" >/dev/null; then echo "$f"; return; fi
  done
}
CUDA_TEST="$BIN/deps/cuda"
[ -x "$CUDA_TEST" ] || CUDA_TEST="$(test_binary "$BIN/deps/cuda-*" a_watched_lm_run_trains_on_cuda_when_available)"
WORKER_TESTS="$BIN/deps/rlmon_train"
note "binaries: $BIN ($(ls -l "$BIN/rlmon" "$BIN/rlmon-train" 2>/dev/null | awk '{printf "%s %.1f MiB; ", $9, $5 / 1048576}'))"
if [ ! -x "$BIN/rlmon" ] || [ ! -x "$BIN/rlmon-train" ]; then
  verdict binaries FAIL "rlmon or rlmon-train missing under $BIN (build, then scripts/gpu-pack.sh)"
  note "gpu-check: stopped: nothing to check"
  exit 1
fi
RLMON="$BIN/rlmon"
export RLMON_TRAIN_BIN="$BIN/rlmon-train"
"$RLMON" --version >>"$TXT" 2>&1

# ---------------------------------------------------------------- torch's libraries
# The binaries' runpath names the build machine's libtorch; point them at the torch
# of this machine's python instead (LD_LIBRARY_PATH is searched before a runpath).
TORCH_DIR="" PY_TORCH=""
for py in ${PYTHON:-} python3 "$root/.venv/bin/python"; do
  command -v "$py" >/dev/null 2>&1 || [ -x "$py" ] || continue
  if step torch-python "$(limit 30)" "$WORK/torchdir" "$py" -c 'import torch, os; print(os.path.dirname(torch.__file__)); print(torch.__version__)'; then
    TORCH_DIR="$(head -1 "$WORK/torchdir")"
    PY_TORCH="$py"
    break
  fi
done
if [ -n "$TORCH_DIR" ] && [ -f "$TORCH_DIR/lib/libtorch_cpu.so" ]; then
  export LIBTORCH="$TORCH_DIR"
  export LD_LIBRARY_PATH="$TORCH_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  verdict torch PASS "torch $(sed -n 2p "$WORK/torchdir") of $PY_TORCH; LD_LIBRARY_PATH and LIBTORCH -> $TORCH_DIR/lib"
else
  verdict torch FAIL "no python with torch found (tried ${PYTHON:-} python3 .venv/bin/python): the worker falls back to its runpath"
fi

# ---------------------------------------------------------------- 1. shared libraries
step ldd "$(limit 10)" "$WORK/ldd" sh -c "ldd '$BIN/rlmon-train'; echo '-- rlmon:'; ldd '$RLMON'"
if grep -q 'not found' "$WORK/ldd"; then
  verdict libraries FAIL "unresolved: $(grep 'not found' "$WORK/ldd" | awk '{print $1}' | sort -u | tr '\n' ' ')"
elif sed -n '/^-- rlmon:/,$p' "$WORK/ldd" | grep libtorch >/dev/null; then
  verdict libraries FAIL "rlmon itself links libtorch (only rlmon-train should)"
else
  verdict libraries PASS "rlmon-train: $(grep -m1 'libtorch_cpu.so' "$WORK/ldd" | awk '{print $3}'), $(grep -m1 'libtorch_cuda.so' "$WORK/ldd" | awk '{print $1}' || true); rlmon links no libtorch"
fi

# ---------------------------------------------------------------- 2. doctor
step doctor "$(limit 20)" "$WORK/doctor.txt" "$RLMON" doctor
step doctor-json "$(limit 20)" "$WORK/doctor.json" "$RLMON" doctor --json
rc=$?
cp "$WORK/doctor.json" "$REPORT/doctor.json"
if [ $rc -ne 0 ]; then verdict doctor FAIL "rlmon doctor --json: $(why $rc)"; else judge doctor doctor "$WORK/doctor.json" $GPU; fi

# ---------------------------------------------------------------- 3. the worker's probe
step probe "$(limit 20)" "$WORK/probe.json" "$BIN/rlmon-train" probe
rc=$?
if [ $rc -ne 0 ]; then verdict probe FAIL "rlmon-train probe: $(why $rc)"; else judge probe probe "$WORK/probe.json" $GPU; fi

# ---------------------------------------------------------------- 4. the CUDA tests
# tests/cuda.rs through its built binary: it finds rlmon and rlmon-train by
# CARGO_BIN_EXE_* (set here) or beside its deps/ folder.
if { [ -z "$CUDA_TEST" ] || [ ! -x "$CUDA_TEST" ]; } && [ $GPU = 0 ]; then
  verdict cuda-tests SKIP "no GPU, and no tests/cuda.rs test binary under $BIN/deps (cargo test --release --test cuda --no-run builds it)"
elif [ -z "$CUDA_TEST" ] || [ ! -x "$CUDA_TEST" ]; then
  verdict cuda-tests FAIL "no tests/cuda.rs test binary under $BIN/deps (cargo test --release --test cuda --no-run, then gpu-pack.sh)"
else
  step cuda-tests "$(limit 70)" "$WORK/cuda-tests" env "CARGO_BIN_EXE_rlmon=$RLMON" "CARGO_BIN_EXE_rlmon-train=$BIN/rlmon-train" "$CUDA_TEST" --test-threads=1 --nocapture
  rc=$?
  result="$(grep -E '^test result:' "$WORK/cuda-tests" | tail -1)"
  if [ $rc -ne 0 ]; then
    verdict cuda-tests FAIL "$(why $rc): ${result:-no result line} (log.txt has the failure)"
  elif [ $GPU = 0 ] && grep -q 'skipped:' "$WORK/cuda-tests.err"; then
    verdict cuda-tests SKIP "no GPU: the test binary ran and its tests skipped ($result)"
  elif [ $GPU = 1 ] && grep -q 'skipped:' "$WORK/cuda-tests.err"; then
    verdict cuda-tests FAIL "a GPU is here but the tests skipped ($result)"
  else
    verdict cuda-tests PASS "$result"
  fi
fi
[ -x "$WORKER_TESTS" ] || WORKER_TESTS="$(test_binary "$BIN/deps/rlmon_train-*" lm_trains_on_cuda_when_available)"
if [ -z "$WORKER_TESTS" ] || [ ! -x "$WORKER_TESTS" ]; then
  verdict worker-tests SKIP "the worker's unit test binary was not packed (too large, or not built)"
else
  # build.rs links libtorch_cuda.so into the worker executable explicitly; a test
  # binary linked --as-needed may have dropped it, and then CUDA is never found.
  preload=()
  if [ -n "$TORCH_DIR" ] && ! ldd "$WORKER_TESTS" 2>/dev/null | grep libtorch_cuda.so >/dev/null; then
    preload=(env "LD_PRELOAD=$TORCH_DIR/lib/libtorch_cuda.so")
    log "the worker's test binary does not link libtorch_cuda.so: preloading it"
  fi
  step worker-tests "$(limit 35)" "$WORK/worker-tests" "${preload[@]}" "$WORKER_TESTS" cuda --test-threads=1 --nocapture
  rc=$?
  result="$(grep -E '^test result:' "$WORK/worker-tests" | tail -1)"
  how="${preload:+ (libtorch_cuda.so preloaded)}"
  if [ $rc -ne 0 ]; then
    verdict worker-tests FAIL "$(why $rc): ${result:-no result line}$how"
  elif [ $GPU = 0 ]; then
    verdict worker-tests SKIP "no GPU: lm_trains_on_cuda_when_available ran and returned early ($result)"
  elif grep -q 'skipped:' "$WORK/worker-tests.err"; then
    verdict worker-tests FAIL "a GPU is here but lm_trains_on_cuda_when_available skipped$how"
  else
    verdict worker-tests PASS "lm_trains_on_cuda_when_available: $result$how"
  fi
fi

# ---------------------------------------------------------------- 5. workloads on cuda:0
# The shipped configs say device = "auto"; copies say cuda:0, so a run that cannot
# have the GPU fails instead of training on the CPU.
on_device() { # WORKLOAD DEVICE [STEPS]: a copy of workloads/WORKLOAD.toml
  local out="$WORK/$1-$2.toml"
  sed -e "s/^device = .*/device = \"$2\"/" ${3:+-e "s/^steps = .*/steps = $3/"} "workloads/$1.toml" >"$out"
  echo "$out"
}
SUMMARIES=()
workload() { # WORKLOAD MAX_STEPS LIMIT [STEP_NAME]
  local name="${4:-$1}" steps="$2" lim="$3"
  if [ $GPU = 0 ]; then
    verdict "$name" SKIP "no GPU: $1 on cuda:0 needs one"
    return
  fi
  step "$name" "$(limit "$lim")" "$WORK/$name.json" "$RLMON" watch --config "$(on_device "$1" cuda:0)" --headless --json --max-steps "$steps" --session-dir "$WORK/sessions"
  local rc=$?
  SUMMARIES+=("$name=$WORK/$name.json")
  if [ $rc -ne 0 ] && [ ! -s "$WORK/$name.json" ]; then verdict "$name" FAIL "rlmon watch: $(why $rc)"; return; fi
  judge "$name" summary "$WORK/$name.json" 1
  # A run that failed its verdict comes back as JSONL (a few MB), so that an alert
  # raised on the GPU can be studied where it is built. Only then: the device
  # tool brings back at most 8 files.
  if [ "${first%% *}" = FAIL ]; then
    local snap
    snap="$(ls -t "$WORK"/sessions/*.rlmon.parquet 2>/dev/null | head -1)"
    [ -n "$snap" ] && "$RLMON" export --format jsonl -o "$REPORT/$name.jsonl" "$snap" >>"$LOG" 2>&1
  fi
}
# tiny runs about 45 s on an H100 (4 ms a step): long enough for the throughput
# detector, which judges fast steps half a second at a time, to have judged it.
workload tiny 10000 90
workload moe 200 45
workload rlhf 20 55
# moe and rlhf at their full length (1,500 and 300 steps; 35 s and 15 s on an
# H200): a clean run must stay clean to its end, not only over the steps the
# eager comparison takes (moe's GPU run once raised a false alarm at step 954).
workload moe 1500 80 moe-full
workload rlhf 300 60 rlhf-full
# The same model and step in PyTorch eager (benches/torch_eager_tiny.py) on the same
# GPU, for tokens/s side by side with the tch loop's.
eager() { # NAME STEPS LIMIT
  local name="$1"
  if [ $GPU = 0 ] || [ -z "$PY_TORCH" ]; then
    verdict "eager-$name" SKIP "no GPU: the eager comparison needs one"
    return
  fi
  # rlmon's worker takes all cores but one by default; eager gets as many.
  local threads=$(($(nproc) > 1 ? $(nproc) - 1 : 1))
  step "eager-$name" "$(limit "$3")" "$WORK/eager-$name.json" "$PY_TORCH" benches/torch_eager_tiny.py --config "workloads/$name.toml" --steps "$2" --threads "$threads" --device cuda:0
  local rc=$?
  if [ $rc -ne 0 ]; then
    verdict "eager-$name" FAIL "benches/torch_eager_tiny.py: $(why $rc)"
    return
  fi
  judge "eager-$name" eager "$WORK/$name.json" "$WORK/eager-$name.json" "$name"
}
eager tiny 3000 60
eager moe 200 45
if [ $GPU = 0 ]; then
  # What can run here: the same summary fields from a short run on the CPU.
  step summary-cpu "$(limit 60)" "$WORK/cpu.json" "$RLMON" watch --config "$(on_device tiny cpu)" --headless --json --max-steps 20 --session-dir "$WORK/sessions"
  rc=$?
  SUMMARIES+=("tiny-cpu=$WORK/cpu.json")
  if [ $rc -ne 0 ]; then verdict summary-cpu FAIL "rlmon watch: $(why $rc)"; else judge summary-cpu summary "$WORK/cpu.json" 0; fi
fi

# ---------------------------------------------------------------- 6. the live display
TMUX_CMD=()
if command -v tmux >/dev/null 2>&1; then
  TMUX_CMD=(tmux)
elif [ -x "$root/.gpu/tmux/tmux" ]; then
  TMUX_CMD=(env "LD_LIBRARY_PATH=$root/.gpu/tmux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$root/.gpu/tmux/tmux")
fi
if [ ${#TMUX_CMD[@]} -gt 0 ] && ! "${TMUX_CMD[@]}" -V >>"$LOG" 2>&1; then
  log "tmux does not start here: falling back to script(1)"
  TMUX_CMD=()
fi
live_device=$([ $GPU = 1 ] && echo cuda:0 || echo cpu)
live_cfg="$(on_device tiny "$live_device" 100000)"
live_cmd="TERM=xterm-256color exec '$RLMON' watch --config '$live_cfg' --session-dir '$WORK/live-sessions'"
lim="$(limit $((LIVE_S + 25)))"
if [ "$lim" -le $((LIVE_S + 5)) ]; then
  verdict live SKIP "the script's time budget is spent"
elif [ ${#TMUX_CMD[@]} -gt 0 ]; then
  TM_SOCKET="rlmon-gpu-check-$$"
  TM=("${TMUX_CMD[@]}" -u -L "$TM_SOCKET" -f /dev/null)
  log ""
  log "== live: tmux 160x48, $live_device, ${LIVE_S}s: $live_cmd"
  "${TM[@]}" new-session -d -s live -x 160 -y 48 "$live_cmd" >>"$LOG" 2>&1
  sleep "$LIVE_S"
  "${TM[@]}" capture-pane -p -t live >"$REPORT/live-screen.txt" 2>>"$LOG"
  "${TM[@]}" capture-pane -p -e -t live >"$REPORT/live-screen-ansi.txt" 2>>"$LOG"
  "${TM[@]}" send-keys -t live q >>"$LOG" 2>&1
  sleep 1
  "${TM[@]}" send-keys -t live q >>"$LOG" 2>&1
  for _ in 1 2 3 4 5 6 7 8 9 10; do "${TM[@]}" has-session -t live 2>/dev/null || break; sleep 0.5; done
  if "${TM[@]}" has-session -t live 2>/dev/null; then
    log "   the display did not quit on q, q: killed"
    quit_note="; it did not quit on q, q (killed)"
  else
    quit_note="; quit on q, q"
  fi
  "${TM[@]}" kill-server >/dev/null 2>&1
  TM_SOCKET=""
  judge live live "$REPORT/live-screen.txt" $GPU
  [ -n "$quit_note" ] && sed -i "\$s/\$/$quit_note/" "$TXT"
elif command -v script >/dev/null 2>&1; then
  log ""
  log "== live: no tmux; script(1) at 160x48, $live_device, ${LIVE_S}s"
  timeout -s INT -k 5 "$LIVE_S" script -qfec "stty rows 48 cols 160; $live_cmd" "$REPORT/live-screen-ansi.txt" </dev/null >/dev/null 2>>"$LOG"
  # No screen to capture without a terminal emulator: the text the display wrote.
  sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1b[()][A-Z0-9]//g' "$REPORT/live-screen-ansi.txt" | tr -s ' ' >"$REPORT/live-screen.txt"
  judge live live "$REPORT/live-screen.txt" $GPU
  sed -i '$s/$/ (no tmux: the raw output through script(1), not a screen capture)/' "$TXT"
else
  verdict live SKIP "neither tmux nor script(1) here: no terminal to run the display in"
fi

# ---------------------------------------------------------------- 7. attach + NVML vs nvidia-smi
# A job rlmon did not start: a torch script holding GPU memory, followed with
# --attach/--attach-pid and served on --serve; while it runs, rlmon's /metrics and
# nvidia-smi are read at the same moment.
lim="$(limit 60)"
NVML_OUT="$REPORT/nvml-vs-smi.txt"
if [ "$lim" -lt 20 ]; then
  verdict attach SKIP "the script's time budget is spent"
  verdict nvml-vs-smi SKIP "the script's time budget is spent"
else
  deadline=$((SECONDS + lim))
  load_py=$([ $GPU = 1 ] && [ -n "$PY_TORCH" ] && echo "$PY_TORCH" || echo python3)
  load_s=$([ $GPU = 1 ] && echo 14 || echo 4)
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  log ""
  log "== attach: $load_py scripts/gpu-check-load.py (${load_s}s), rlmon watch --attach --attach-pid --serve 127.0.0.1:$port"
  timeout -k 3 $((lim - 5)) "$load_py" "$root/scripts/gpu-check-load.py" --out "$WORK/attach.jsonl" --ready "$WORK/ready.json" --mib 2048 --seconds "$load_s" >>"$LOG" 2>&1 &
  load_pid=$!
  BG_PIDS="$load_pid"
  while [ ! -s "$WORK/ready.json" ] && kill -0 "$load_pid" 2>/dev/null && [ $SECONDS -lt $((deadline - 10)) ]; do sleep 0.2; done
  if [ ! -s "$WORK/ready.json" ]; then
    verdict attach FAIL "the external process did not start (log.txt says why)"
    verdict nvml-vs-smi SKIP "no external process to measure"
  else
    "$RLMON" watch --attach "$WORK/attach.jsonl" --attach-pid "$load_pid" --headless --json --serve "127.0.0.1:$port" --session-dir "$WORK/attach-sessions" >"$WORK/attach.json" 2>>"$LOG" &
    rl_pid=$!
    BG_PIDS="$load_pid $rl_pid"
    sleep 4
    # The same moment: rlmon's /metrics (NVML, sampled twice a second), then nvidia-smi.
    python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "http://127.0.0.1:$port/metrics" >"$WORK/metrics.txt" 2>>"$LOG"
    if [ $GPU = 1 ]; then
      timeout 15 nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm --format=csv >"$WORK/smi.csv" 2>>"$LOG"
      timeout 15 nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv >"$WORK/apps.csv" 2>>"$LOG"
      timeout 15 nvidia-smi -q -d MEMORY >>"$LOG" 2>&1
    fi
    while kill -0 "$rl_pid" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do sleep 0.5; done
    if kill -0 "$rl_pid" 2>/dev/null; then
      kill "$rl_pid" "$load_pid" 2>/dev/null
      log "   the attached session did not end by itself within ${lim}s: stopped"
    fi
    wait "$rl_pid" 2>/dev/null
    wait "$load_pid" 2>/dev/null
    BG_PIDS=""
    head -c 20000 "$WORK/attach.json" >>"$LOG"
    SUMMARIES+=("attach=$WORK/attach.json")
    judge attach attach "$WORK/attach.json" "$WORK/ready.json" "$WORK/apps.csv" $GPU
    {
      echo "# rlmon's /metrics (NVML, sampled every 0.5 s) and nvidia-smi, read one after the other while the attached job held its memory"
      echo "## rlmon /metrics, GPU and job lines"
      grep -E '^rlmon_(gpu|host|mem|step)' "$WORK/metrics.txt" 2>/dev/null
      echo "## nvidia-smi --query-gpu"
      cat "$WORK/smi.csv" 2>/dev/null
      echo "## nvidia-smi --query-compute-apps"
      cat "$WORK/apps.csv" 2>/dev/null
      echo "## the attached process"
      cat "$WORK/ready.json"
      echo
    } >"$NVML_OUT"
    if [ ! -s "$WORK/metrics.txt" ]; then
      verdict nvml-vs-smi FAIL "rlmon's /metrics did not answer on 127.0.0.1:$port"
    else
      judge nvml-vs-smi nvml "$WORK/metrics.txt" "$WORK/smi.csv" $GPU
      echo "## compared" >>"$NVML_OUT"
      cat "$WORK/judged" >>"$NVML_OUT"
    fi
  fi
fi

# ---------------------------------------------------------------- summaries, totals
python3 - "$REPORT/summaries.json" "${SUMMARIES[@]}" <<'EOF' 2>>"$LOG"
import json, sys
out = {}
for pair in sys.argv[2:]:
    name, _, path = pair.partition("=")
    try:
        with open(path) as f:
            out[name] = json.load(f)
    except (OSError, ValueError) as e:
        out[name] = {"error": str(e)}
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
EOF
total=$((SECONDS - START))
note "gpu-check: $N_PASS PASS, $N_FAIL FAIL, $N_SKIP SKIP in ${total}s ($([ $GPU = 1 ] && echo 'on a GPU' || echo 'no GPU here')); report in $REPORT"
[ "$N_FAIL" -eq 0 ]
