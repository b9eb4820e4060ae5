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

/// `a == b` for names, compared inline (no call): a name of 4 to 16 bytes as two
/// overlapping words (most are: `loss`, `grad_norm`, `reward_mean`), a shorter
/// one byte by byte, a longer one as slices are. The detectors look names up at
/// every point and the JSONL reader matches keys at every line.
#[inline(always)]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word8 = |s: &[u8], at: usize| s[at..at + 8].try_into().map_or(0, u64::from_ne_bytes);
    let word4 = |s: &[u8], at: usize| s[at..at + 4].try_into().map_or(0, u32::from_ne_bytes);
    match n {
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=7 => word4(a, 0) == word4(b, 0) && word4(a, n - 4) == word4(b, n - 4),
        8..=16 => word8(a, 0) == word8(b, 0) && word8(a, n - 8) == word8(b, n - 8),
        _ => a == b,
    }
}
