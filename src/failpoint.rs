//! Fault injection for rlmon's own reliability tests: `RLMON_FAILPOINT=name[,name]`
//! makes the named place fail on purpose (a panic on the display thread, in the
//! telemetry thread, ...), so tests can prove the terminal comes back and the rest of
//! the session survives. Unset (always, outside those tests) it costs one load.
use std::sync::OnceLock;

pub const ENV: &str = "RLMON_FAILPOINT";

/// Panics in the display loop after its first frame.
pub const DISPLAY_PANIC: &str = "display-panic";
/// Panics in the telemetry sampler thread after its first sample.
pub const TELEMETRY_PANIC: &str = "telemetry-panic";

fn armed_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| std::env::var(ENV).map(|v| v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()).unwrap_or_default())
}

/// Whether `name` was armed in the environment.
pub fn armed(name: &str) -> bool {
    armed_names().iter().any(|n| n == name)
}

/// Panics here when `name` is armed.
pub fn hit(name: &str) {
    if armed(name) {
        panic!("failpoint {name} ({ENV})");
    }
}
