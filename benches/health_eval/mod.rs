// The benchmark and the harness's tests each use part of this module.
#![allow(dead_code)]
//! The evaluation harness of the health detectors: a seeded corpus of metric
//! series with labelled faults and benign events (`synth`), and a scorer that
//! runs the detectors over it as the hub does (`score`). Used by
//! benches/health_accuracy.rs; its tests run from tests/health_eval.rs.
pub mod drift_study;
pub mod indep;
pub mod indep2;
pub mod indep3;
pub mod indep4;
pub mod indep5;
pub mod indep6;
pub mod real;
pub mod score;
pub mod synth;
pub mod drift_study2;
pub mod conform;
pub mod unseen;
pub mod heldout_study;
pub mod reward_parts;
