//! Building blocks the built-in workloads share: the byte-level transformer and its
//! mixture-of-experts layer, the byte corpus, the learning-rate schedule and the
//! optimizer setup. lm trains the model directly; rlhf fine-tunes it as a policy.
pub mod data;
pub mod model;
pub mod moe;
pub mod optim;
pub mod schedule;
