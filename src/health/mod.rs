//! Run health: streaming detectors that turn metric points into alerts, and the
//! comparisons between runs (replicas, baselines) that find where they part.
//! Everything here is pure: no I/O, no UI, no clocks.
pub mod divergence;
