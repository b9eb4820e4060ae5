//! One headless progress line per run: step/total, throughput, loss, ETA.
use super::format::{duration, si, value};
use crate::metrics::catalog;
use crate::session::RunRecord;

/// Steps over which the progress line's tokens/s is averaged.
pub const RATE_WINDOW: usize = 20;

pub fn progress_line(r: &RunRecord) -> String {
    let pct = if r.total_steps > 0 { 100.0 * r.step as f64 / r.total_steps as f64 } else { 0.0 };
    // A command run may not know its total (0): then only the step.
    let mut line = match r.total_steps {
        0 => format!("[{}] step {}", r.name, r.step),
        total => format!("[{}] step {}/{total} ({pct:.0}%)", r.name, r.step),
    };
    if let Some(rate) = r.rate(catalog::TOKENS, Some(RATE_WINDOW)) {
        line.push_str(&format!("  {} tok/s", si(rate)));
    }
    if let Some(loss) = r.last(catalog::LOSS) {
        line.push_str(&format!("  loss {}", value(loss)));
    }
    if let Some(eta) = r.eta_s() {
        line.push_str(&format!("  ETA {}", duration(eta)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shows_progress_rate_loss_and_eta() {
        let mut r = RunRecord::new("tiny".into(), "lm".into(), "cpu".into(), 100);
        for step in 1..=20 {
            r.series.entry("tokens".into()).or_default().push(step, step as f64, 1000.0);
            r.series.entry("step_time_s".into()).or_default().push(step, step as f64, 0.5);
            r.series.entry("loss".into()).or_default().push(step, step as f64, 2.5);
        }
        r.step = 20;
        assert_eq!(progress_line(&r), "[tiny] step 20/100 (20%)  2000 tok/s  loss 2.500  ETA 0:40");
    }
}
