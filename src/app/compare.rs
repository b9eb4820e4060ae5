//! `rlmon compare A B`: replays both sessions (as `rlmon replay --speed max` would)
//! and reports where B departs from A. Exit 0 when it does not, 1 on a divergence
//! or a regression, 2 on bad input.
use std::fmt::Write as _;
use std::io::Write;

use crate::cli::CompareArgs;
use crate::error::{Result, RlmonError, EXIT_FAILURE};
use crate::health::divergence::Tolerance;
use crate::record::compare::{compare as compare_states, Comparison, Options, Ratio};
use crate::record::{self};
use crate::report::format::{si, value};

pub fn compare(args: CompareArgs) -> Result<u8> {
    if !(args.tolerance.is_finite() && args.tolerance >= 0.0) {
        return Err(RlmonError::Usage(format!("--tolerance must be a fraction >= 0, not {}", args.tolerance)));
    }
    let a = record::load(&args.a)?;
    let b = record::load(&args.b)?;
    let opts = Options { tolerance: args.tolerance, divergence: Tolerance::default() };
    let c = compare_states(&a.final_state(), &b.final_state(), &a.meta.alerts, &b.meta.alerts, opts);
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &c).map_err(anyhow::Error::from)?;
        writeln!(out).ok();
    } else {
        print!("{}", to_text(&c, args.tolerance));
    }
    Ok(if c.failed() { EXIT_FAILURE } else { 0 })
}

fn ratio_text(r: &Ratio, fmt: fn(f64) -> String) -> String {
    let v = |x: Option<f64>| x.map_or("-".into(), fmt);
    let ratio = r.ratio.map_or(String::new(), |x| format!(" ({x:.3}x)"));
    let verdict = if r.regression { "  REGRESSION" } else { "" };
    format!("{} -> {}{ratio}{verdict}", v(r.a), v(r.b))
}

pub fn to_text(c: &Comparison, tolerance: f64) -> String {
    let mut out = String::new();
    let v = |x: Option<f64>| x.map_or("-".into(), value);
    for r in &c.runs {
        let name = if r.a == r.b { r.a.clone() } else { format!("{} vs {}", r.a, r.b) };
        let _ = writeln!(out, "run {name}: {} {} steps vs {} {} steps", r.state_a, r.steps_a, r.state_b, r.steps_b);
        let _ = writeln!(out, "  {:<24} {:>12} {:>12} {:>12} {:>12}  first divergence", "metric", "final A", "final B", "best A", "best B");
        for m in &r.metrics {
            let div = m.first_divergence.map_or("-".into(), |s| format!("step {s}"));
            let _ = writeln!(out, "  {:<24} {:>12} {:>12} {:>12} {:>12}  {div}", m.metric, v(m.final_a), v(m.final_b), v(m.best_a), v(m.best_b));
        }
        let _ = writeln!(out, "  tokens/s  {}", ratio_text(&r.tokens_per_s, si));
        let _ = writeln!(out, "  samples/s {}", ratio_text(&r.samples_per_s, si));
    }
    for name in &c.unmatched_a {
        let _ = writeln!(out, "run {name}: only in A");
    }
    for name in &c.unmatched_b {
        let _ = writeln!(out, "run {name}: only in B");
    }
    if let Some(m) = &c.memory.metric {
        let _ = writeln!(out, "peak memory ({m}) {}", ratio_text(&c.memory.peak, si));
    }
    if !c.alerts.only_a.is_empty() || !c.alerts.only_b.is_empty() {
        let _ = writeln!(out, "alerts only in A: {}, only in B: {}", c.alerts.only_a.len(), c.alerts.only_b.len());
    }
    let verdict = match &c.first_divergence {
        Some(d) => format!("B diverges from A: run {} {} at step {}", d.run, d.metric, d.step),
        None => "no divergence".into(),
    };
    let regression = if c.throughput.regression || c.memory.peak.regression { format!("a regression beyond {:.0}%", tolerance * 100.0) } else { "no regression".into() };
    let _ = writeln!(out, "{verdict}; {regression}");
    out
}
