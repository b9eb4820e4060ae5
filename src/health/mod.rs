//! Run health: streaming detectors that turn metric points into alerts, and the
//! comparisons between runs (replicas, baselines) that find where they part.
//! Everything here is pure: no I/O, no UI, no clocks. Detectors see only the past.
pub mod alert;
pub mod config;
pub mod context;
pub mod detect;
pub mod divergence;
pub mod judged;
pub mod monitor;
pub mod stats;

pub use alert::{Alert, AlertKind, Peak, Severity};
pub use judged::NotJudged;
pub use config::{HealthConfig, KindOverride, KindSettings};
pub use monitor::{RunMonitor, SessionHealth};
