//! Same seed, same numbers. libtorch's default random generator is process-wide, so
//! runs that initialise their weights at the same time would interleave draws from
//! it; model construction therefore happens under one lock, right after seeding.
//! Sampling during training uses each run's own `SplitMix64`, never the global one.
use std::sync::{Mutex, MutexGuard};

static INIT: Mutex<()> = Mutex::new(());

/// Seeds libtorch's generators and holds the lock until the guard drops: build the
/// model's parameters while holding it.
pub fn seeded_init(seed: u64) -> MutexGuard<'static, ()> {
    // A poisoned lock only means another run panicked while building: the guard
    // protects no data, so go on.
    let guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
    tch::manual_seed(seed as i64);
    guard
}

/// `deterministic = true`: settings libtorch needs for bitwise-repeatable runs.
/// On CPU, a fixed intra-op thread count and seeded init suffice (the driver sets
/// both). On CUDA, cuDNN autotuning is off and cuBLAS gets a fixed workspace (the
/// variable is read when cuBLAS starts, so set it before the first CUDA call); the
/// models also avoid kernels with atomic accumulation (see `attention` in
/// `common::model` and the MoE combine).
pub fn apply(deterministic: bool) {
    if !deterministic {
        return;
    }
    if std::env::var_os("CUBLAS_WORKSPACE_CONFIG").is_none() {
        // Set before this run's first CUDA call; cuBLAS reads it when it starts.
        std::env::set_var("CUBLAS_WORKSPACE_CONFIG", ":4096:8");
    }
    if tch::Cuda::is_available() {
        tch::Cuda::cudnn_set_benchmark(false);
    }
}
