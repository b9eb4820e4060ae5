//! Metric vocabulary and the pure math over metric series: canonical names and their
//! aliases, throughput rates, ETA and smoothing. No I/O here.
pub mod cost;
pub mod dimensionality;
pub mod flops;
pub mod moe;
pub mod catalog;
pub mod series;
pub mod throughput;

pub use series::{Clock, Series};

/// Metric names are mostly static (`loss`, `tokens`), sometimes built at run time
/// (`gpu0/util_pct`, or names read from a user's log).
pub type MetricName = std::borrow::Cow<'static, str>;
