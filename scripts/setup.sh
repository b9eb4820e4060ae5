#!/usr/bin/env bash
# Installs what rlmon needs to build and run, skipping whatever is already there:
#   - a project-local virtualenv (.venv) with torch==2.11.0, whose bundled libtorch
#     tch 0.24 links against;
#   - tensorboard==2.21.0 there too, for torch.utils.tensorboard (examples/train_tensorboard.py);
#   - wandb==0.31.0 and trackio==0.43.0 there too: tests/trackers.rs writes offline W&B runs
#     and trackio projects with them (rlmon itself needs neither);
#   - transformers==5.23.0 and accelerate==1.15.0 (about 160 MB), for the Hugging Face
#     Trainer example of the Python client (examples/client_hf_trainer.py);
#   - pyarrow==26.0.1 there too: scripts/rewrite-row-groups.py rewrites a snapshot with
#     another Parquet writer for the long-session benchmark;
#   - the link .venv/libtorch -> that libtorch, which .cargo/config.toml and build.rs use.
# Safe to run any number of times.
set -euo pipefail

TORCH_VERSION="2.11.0"
TENSORBOARD_VERSION="2.21.0"
WANDB_VERSION="0.31.0"
TRACKIO_VERSION="0.43.0"
TRANSFORMERS_VERSION="5.23.0"
ACCELERATE_VERSION="1.15.0"
PYARROW_VERSION="26.0.1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
say() { printf 'setup: %s\n' "$*" >&2; }

command -v cargo >/dev/null || { say "cargo not found: install Rust (https://rustup.rs) first"; exit 1; }
py="${PYTHON:-python3}"
command -v "$py" >/dev/null || { say "python3 not found: install Python 3.10 or newer"; exit 1; }

torch_version() {
  "$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true
}

if [ ! -x "$venv/bin/python" ]; then
  say "creating virtualenv $venv"
  "$py" -m venv "$venv"
fi

if [ "$(torch_version)" != "$TORCH_VERSION" ]; then
  say "installing torch==$TORCH_VERSION into $venv (about 4.7 GB, a few minutes)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "torch==$TORCH_VERSION"
fi
[ "$(torch_version)" = "$TORCH_VERSION" ] || { say "torch $TORCH_VERSION did not import from $venv"; exit 1; }

# torch.utils.tensorboard's SummaryWriter needs the tensorboard package (small).
if [ "$("$venv/bin/python" -c 'import tensorboard; print(tensorboard.__version__)' 2>/dev/null || true)" != "$TENSORBOARD_VERSION" ]; then
  say "installing tensorboard==$TENSORBOARD_VERSION into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "tensorboard==$TENSORBOARD_VERSION"
fi

# The trackers whose local files rlmon reads: tests write real runs with them.
for pkg in "wandb==$WANDB_VERSION" "trackio==$TRACKIO_VERSION"; do
  name="${pkg%%==*}" version="${pkg##*==}"
  if [ "$("$venv/bin/python" -c "import $name; print($name.__version__)" 2>/dev/null || true)" != "$version" ]; then
    say "installing $pkg into $venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$pkg"
  fi
done
# The Trainer example's test: transformers' Trainer needs accelerate with torch.
if [ "$("$venv/bin/python" -c 'import transformers, accelerate; print(transformers.__version__, accelerate.__version__)' 2>/dev/null || true)" != "$TRANSFORMERS_VERSION $ACCELERATE_VERSION" ]; then
  say "installing transformers==$TRANSFORMERS_VERSION accelerate==$ACCELERATE_VERSION into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "transformers==$TRANSFORMERS_VERSION" "accelerate==$ACCELERATE_VERSION"
fi

# Another Parquet writer, for the long-session benchmark's large row groups.
if [ "$("$venv/bin/python" -c 'import pyarrow; print(pyarrow.__version__)' 2>/dev/null || true)" != "$PYARROW_VERSION" ]; then
  say "installing pyarrow==$PYARROW_VERSION into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pyarrow==$PYARROW_VERSION"
fi

torch_dir="$("$venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)"
if [ "$(readlink "$venv/libtorch" 2>/dev/null || true)" != "$torch_dir" ]; then
  ln -sfn "$torch_dir" "$venv/libtorch"
fi
[ -f "$venv/libtorch/lib/libtorch_cpu.so" ] || { say "libtorch_cpu.so missing under $torch_dir/lib"; exit 1; }
say "ready: torch $TORCH_VERSION at $torch_dir"
