#!/usr/bin/env bash
# Coverage-guided fuzzing of every input parser (the targets of rlmon::fuzzing::TARGETS)
# with libFuzzer on the stable toolchain: no sanitizer, coverage by LLVM's sancov pass
# (the flags cargo-fuzz sets). Each target starts from its seeds in fuzz/corpus/NAME
# and runs for the budget; new inputs go to fuzz/work/NAME (not committed), crashes to
# fuzz/artifacts/NAME. A crash found is fixed, and its input copied into
# fuzz/corpus/NAME so that `cargo test` (tests/fuzz_corpus.rs) replays it for good.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
# Prints one line per target (executions, corpus size, crashes) for docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
budget="${1:-60}"
shift || true
all=(jsonl csv tsv trainer_state json_doc hf_log megatron nanogpt deepspeed text tensorboard detected pattern config theme snapshot journal worker output mlflow wandb)
targets=("${@:-${all[@]}}")
export LIBTORCH="${LIBTORCH:-$PWD/.venv/libtorch}"
triple="$(rustc -vV | sed -n 's/^host: //p')"
# --target keeps build scripts and proc macros uninstrumented, as cargo-fuzz does.
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
  cargo build --release --manifest-path fuzz/Cargo.toml --target "$triple" --bin rlmon-fuzz
bin="fuzz/target/$triple/release/rlmon-fuzz"
export LD_LIBRARY_PATH="$LIBTORCH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
for t in "${targets[@]}"; do
  mkdir -p "fuzz/work/$t" "fuzz/artifacts/$t"
  log="fuzz/artifacts/$t/last-run.log"
  # -rss_limit_mb: one input must not cost more than this (a bound, not a leak check).
  if RLMON_FUZZ_TARGET="$t" "$bin" "fuzz/work/$t" "fuzz/corpus/$t" -max_total_time="$budget" \
      -rss_limit_mb=3072 -max_len=65536 -timeout=10 -artifact_prefix="fuzz/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
    outcome="no crash"
  else
    outcome="CRASH: see $log and fuzz/artifacts/$t/"
    status=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(ls "fuzz/work/$t" | wc -l)
  printf '%-14s %5ss  %10s execs  corpus %5s  %s\n' "$t" "$budget" "${execs:-?}" "$corpus" "$outcome"
done
exit $status
