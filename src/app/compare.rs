//! `rlmon compare A B`: replays both sessions (as `rlmon replay --speed max` would)
//! and reports where B departs from A. Exit 0 when it does not, 1 on a divergence
//! or a regression, 2 on bad input. On a terminal (no `--json`, no `--headless`) it
//! first shows B in the live display with A's curves dimmed under every chart and
//! the divergences marked; the text report follows on the normal screen. Both
//! sessions stream from their files (`record::stream`).
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

use super::signals::Signals;
use crate::cli::CompareArgs;
use crate::error::{Result, RlmonError, EXIT_FAILURE};
use crate::record::compare::{compare_against, played_baseline, Comparison, Options, Ratio};
use crate::record::Playback;
use crate::report::format::{si, value};
use crate::session::SessionState;
use crate::ui::theme::Theme;
use crate::ui::Source;

pub async fn compare(args: CompareArgs) -> Result<u8> {
    if !(args.tolerance.is_finite() && args.tolerance >= 0.0) {
        return Err(RlmonError::Usage(format!("--tolerance must be a fraction >= 0, not {}", args.tolerance)));
    }
    // A is opened (and checked) first; B is opened and checked on a second core
    // while A plays. Each streams from its file.
    let a = Playback::open(&args.a)?;
    let (played_a, b) = std::thread::scope(|scope| {
        let b = scope.spawn(|| Playback::open(&args.b));
        let played_a = played_baseline(a);
        (played_a, b.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    let b = b?;
    let opts = Options { tolerance: args.tolerance };
    let display = !args.json && !args.headless && std::io::stdout().is_terminal();
    // B's own alerts are shown in the display only: without it they are not judged.
    let (c, b_against_a) = compare_against(played_a, b, opts, display);
    if display {
        let theme = Theme::resolve(&args.theme)?;
        let mut view = CompareView::new(overlay(b_against_a.state, &args), &c);
        crate::ui::run(&mut view, theme, COMPARE_FPS, Signals::new().next()).await.map_err(|e| RlmonError::Other(e.into()))?;
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &c).map_err(anyhow::Error::from)?;
        writeln!(out).ok();
    } else {
        crate::out!("{}", to_text(&c, args.tolerance));
    }
    Ok(if c.failed() { EXIT_FAILURE } else { 0 })
}

/// The compare view redraws only on keys; a low cap is plenty.
const COMPARE_FPS: u32 = 10;

/// B's session as the display shows it: A's runs as the dimmed baseline under every
/// chart (the replay against A set it), and the divergences and regressions the
/// baseline check raised as alerts (markers) on B.
pub fn overlay(b_against_a: SessionState, args: &CompareArgs) -> SessionState {
    let stem = |p: &std::path::Path| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().trim_end_matches(".rlmon.parquet").to_owned());
    let mut state = b_against_a;
    state.name = format!("B {} vs A {}", stem(&args.b), stem(&args.a));
    state.baseline_label = "A".into();
    state
}

/// A finished comparison as a display source: nothing arrives, nothing runs.
pub struct CompareView {
    state: SessionState,
    badge: String,
}

impl CompareView {
    pub fn new(state: SessionState, c: &Comparison) -> Self {
        let verdict = match &c.first_divergence {
            Some(d) => format!("B departs from A: {} {} @{}", d.run, d.metric, d.step),
            None => "B agrees with A".into(),
        };
        let slower = if c.throughput.regression { " · SLOWER" } else { "" };
        CompareView { state, badge: format!("COMPARE (A dimmed) · {verdict}{slower}") }
    }
}

impl Source for CompareView {
    async fn next(&mut self) -> bool {
        false
    }
    fn state(&self) -> &SessionState {
        &self.state
    }
    fn elapsed_s(&self) -> f64 {
        self.state.time_s
    }
    fn badge(&self) -> Option<String> {
        Some(self.badge.clone())
    }
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
