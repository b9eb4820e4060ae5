//! A recorded session held against this one: each run is matched to a baseline run
//! (by name, or the only run of each), and as steps arrive its values are held
//! against the baseline's at the same step. Raises the first divergence of each
//! metric (the health module's tolerance band) and a throughput regression when
//! tokens/s over recent steps falls below the baseline's over the same steps by more
//! than the tolerance. The hub owns it, so a live session, a replay, `compare` and
//! `check` all judge a baseline with this code. Pure logic: alerts go to the hub.
use std::collections::BTreeMap;

pub use super::state::match_run;
use super::state::{RunRecord, SessionState};
use crate::health::divergence::{DivergenceTracker, Tolerance};
use crate::health::{Alert, AlertKind, Severity};
use crate::metrics::catalog::{self, is_timing_or_resource};
use crate::metrics::series::PointReader;
use crate::metrics::throughput;
use crate::report::format::{si, value as value_text};

/// Relative tokens/s shortfall against the baseline that is a regression, unless
/// the user sets another (`compare --tolerance`).
pub const DEFAULT_TOLERANCE: f64 = 0.05;

/// Which metric names a divergence when several part at the same step: the
/// objective first (loss, reward, KL), then the rest in name order.
pub fn headline_rank(metric: &str) -> u8 {
    match metric {
        catalog::LOSS => 0,
        catalog::REWARD => 1,
        catalog::KL => 2,
        catalog::GRAD_NORM => 3,
        _ => 4,
    }
}

/// Steps over which tokens/s is compared, on both sides.
pub const RATE_WINDOW: usize = 20;

struct RunBaseline {
    /// Index of the baseline run in `Baseline::state`.
    base: usize,
    trackers: BTreeMap<String, Tracked>,
    throughput_reported: bool,
    /// The baseline's tokens and step time, read step after step.
    rates: [BaseCursor; 2],
}

/// A place in one baseline series read step after step: the index just after
/// the last point found (steps ascend, so the next step is usually there: found
/// without a search), and the block being read.
#[derive(Default)]
struct BaseCursor {
    next: usize,
    reader: PointReader,
}

impl BaseCursor {
    /// The index and value of `s`'s point at `step`, if it has one.
    fn at(&mut self, s: &crate::metrics::Series, step: u64) -> Option<(usize, f64)> {
        let (i, v) = match s.point_through(self.next, &mut self.reader).filter(|(at, _)| *at == step) {
            Some((_, v)) => (self.next, v),
            None => {
                let i = s.index_of(step)?;
                (i, s.point_through(i, &mut self.reader)?.1)
            }
        };
        self.next = i + 1;
        Some((i, v))
    }

    /// The values of the `n` points ending at `step` (`n` at most [`RATE_WINDOW`],
    /// fewer when the series has fewer), or `None` when it has no point at `step`.
    fn window_ending_at(&mut self, s: &crate::metrics::Series, step: u64) -> Option<(usize, [f64; RATE_WINDOW])> {
        let (end, _) = self.at(s, step)?;
        let n = RATE_WINDOW.min(end + 1);
        let mut values = [0.0; RATE_WINDOW];
        for (k, i) in (end + 1 - n..=end).enumerate() {
            values[k] = s.point_through(i, &mut self.reader)?.1;
        }
        Some((n, values))
    }
}

/// One metric compared with the baseline: its tracker, and its place in the
/// baseline's series. A timing or resource metric is kept as not compared, so the
/// catalog is asked once.
struct Tracked {
    tracker: DivergenceTracker,
    compared: bool,
    base: BaseCursor,
}

pub struct Baseline {
    /// The baseline session, replayed to its end (charts draw its curves).
    pub state: std::sync::Arc<SessionState>,
    runs: Vec<Option<RunBaseline>>,
    divergence: Tolerance,
    tolerance: f64,
}

impl Baseline {
    /// Matches `live` runs to the baseline's. `tolerance`: relative slow-down that
    /// counts as a regression.
    pub fn new(baseline: std::sync::Arc<SessionState>, live: &[RunRecord], tolerance: f64) -> Self {
        let runs = (0..live.len())
            .map(|i| Some(RunBaseline { base: match_run(&baseline.runs, live, i)?, trackers: BTreeMap::new(), throughput_reported: false, rates: Default::default() }))
            .collect();
        Baseline { state: baseline, runs, divergence: Tolerance::default(), tolerance }
    }

    /// Live runs the baseline has no run for (not drawn against, not checked).
    pub fn unmatched(&self) -> impl Iterator<Item = usize> + '_ {
        self.runs.iter().enumerate().filter(|(_, b)| b.is_none()).map(|(i, _)| i)
    }

    /// Checks live run `run` at `step` (just applied); returns the alerts it raises.
    /// The run's first diverging metric is a `run_divergence` warning (a marker on
    /// the charts); metrics that part later are info alerts. A throughput shortfall
    /// beyond the tolerance is a `throughput_regression` warning, critical when it
    /// is more than twice the tolerance; each is raised once per run.
    pub fn observe(&mut self, live: &RunRecord, run: usize, step: u64) -> Vec<Alert> {
        let Some(Some(rb)) = self.runs.get_mut(run) else { return Vec::new() };
        let base = &self.state.runs[rb.base];
        let mut out = Vec::new();
        let before = rb.trackers.values().any(|t| t.tracker.diverged_at().is_some());
        let mut parted = Vec::new();
        // The live series, their trackers and the baseline's series are all kept in
        // name order: one walk along the three finds each metric's, where a lookup
        // by name per point would compare names over and over. Metrics met for the
        // first time get their tracker after the walk.
        let divergence = self.divergence;
        let mut trackers = rb.trackers.iter_mut().peekable();
        let mut base_series = base.series.iter().peekable();
        let mut new: Vec<(&String, Tracked)> = Vec::new();
        for (name, series) in &live.series {
            if series.last_step() != Some(step) {
                continue;
            }
            let tracked = seek(&mut trackers, name);
            // Whether a metric is compared at all is asked of the catalog once.
            match &tracked {
                Some(t) if !t.compared => continue,
                None if is_timing_or_resource(name) => {
                    new.push((name, Tracked { tracker: DivergenceTracker::new(divergence), compared: false, base: BaseCursor::default() }));
                    continue;
                }
                _ => {}
            }
            let (Some(value), Some(bs)) = (series.last(), seek(&mut base_series, name)) else { continue };
            let mut tracked = tracked;
            let mut fresh = BaseCursor::default();
            let Some((_, b)) = tracked.as_mut().map_or(&mut fresh, |t| &mut t.base).at(bs, step) else { continue };
            let tracked = match tracked {
                Some(t) => t,
                None => {
                    new.push((name, Tracked { tracker: DivergenceTracker::new(divergence), compared: true, base: fresh }));
                    &mut new.last_mut().expect("just pushed").1
                }
            };
            if let Some(at) = tracked.tracker.observe(step, value, b) {
                // The alert speaks of the first diverging step, its values included.
                let (at_time, at_value) = series.index_of(at).and_then(|i| series.time_at(i).zip(series.value_at(i))).unwrap_or((live.time_s, value));
                let at_base = bs.index_of(at).and_then(|i| bs.value_at(i)).unwrap_or(b);
                parted.push((name, at, at_time, at_value, at_base));
            }
        }
        drop(trackers);
        // A name is allocated once per metric, not per step.
        rb.trackers.extend(new.into_iter().map(|(name, t)| (name.clone(), t)));
        // The run's first divergence is the warning; when several metrics part at
        // once, the objective names it.
        parted.sort_by_key(|(name, at, ..)| (*at, headline_rank(name)));
        for (k, (name, at, time_s, value, b)) in parted.into_iter().enumerate() {
            out.push(Alert {
                kind: AlertKind::RunDivergence,
                severity: if k == 0 && !before { Severity::Warn } else { Severity::Info },
                run: live.name.clone(),
                metric: name.clone(),
                step: at,
                time_s,
                value,
                message: format!("{name} diverges from the baseline at step {at} ({} vs {})", value_text(value), value_text(b)),
                peak: None,
                escalated_at: None,
            });
        }
        if !rb.throughput_reported {
            if let Some((live_rate, base_rate)) = rates_at(live, base, step, &mut rb.rates) {
                let slower = 1.0 - live_rate / base_rate;
                if base_rate > 0.0 && slower > self.tolerance {
                    rb.throughput_reported = true;
                    out.push(Alert {
                        kind: AlertKind::ThroughputRegression,
                        severity: if slower > 2.0 * self.tolerance { Severity::Critical } else { Severity::Warn },
                        run: live.name.clone(),
                        metric: catalog::TOKENS_PER_S.into(),
                        step,
                        time_s: live.time_s,
                        value: live_rate,
                        message: format!(
                            "{} tokens/s over the {RATE_WINDOW} steps to {step}, baseline {} ({:.0}% slower, tolerance {:.0}%)",
                            si(live_rate),
                            si(base_rate),
                            100.0 * slower,
                            100.0 * self.tolerance
                        ),
                        peak: None,
                        escalated_at: None,
                    });
                }
            }
        }
        out
    }

    /// The relative tokens/s shortfall that is a regression.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// The first divergence step found so far for run `run` and `metric`.
    pub fn diverged_at(&self, run: usize, metric: &str) -> Option<u64> {
        self.runs.get(run)?.as_ref()?.trackers.get(metric)?.tracker.diverged_at()
    }
}

/// The value of `name` in a walk along a map in name order: the walk moves past
/// the names before it and stops there, so later (larger) names are found next.
fn seek<'a, V: 'a, I: Iterator<Item = (&'a String, V)>>(walk: &mut std::iter::Peekable<I>, name: &str) -> Option<V> {
    while let Some((key, _)) = walk.peek() {
        match key.as_str().cmp(name) {
            std::cmp::Ordering::Less => {
                walk.next();
            }
            std::cmp::Ordering::Equal => return walk.next().map(|(_, v)| v),
            std::cmp::Ordering::Greater => return None,
        }
    }
    None
}

/// tokens/s of both runs over the same `RATE_WINDOW` steps ending at `step`, once
/// the live run is past warm-up.
fn rates_at(live: &RunRecord, base: &RunRecord, step: u64, base_windows: &mut [BaseCursor; 2]) -> Option<(f64, f64)> {
    let live_rate = || -> Option<f64> {
        let (tokens, secs) = (live.series(catalog::TOKENS)?, live.series(catalog::STEP_TIME_S)?);
        // The live run's step was just applied: usually its newest point.
        let index = |s: &crate::metrics::Series| if s.last_step() == Some(step) { Some(s.len() - 1) } else { s.index_of(step) };
        let (end, end_s) = (index(tokens)?, index(secs)?);
        let n = RATE_WINDOW.min(end + 1).min(end_s + 1);
        throughput::rate(&tokens.values(end + 1 - n..end + 1), &secs.values(end_s + 1 - n..end_s + 1))
    };
    let past_warmup = live.series(catalog::TOKENS)?.len() > throughput::warmup_steps(live.total_steps as usize).max(RATE_WINDOW);
    past_warmup.then_some(())?;
    let live_rate = live_rate()?;
    let [tokens_window, secs_window] = base_windows;
    let (n_t, tokens) = tokens_window.window_ending_at(base.series(catalog::TOKENS)?, step)?;
    let (n_s, secs) = secs_window.window_ending_at(base.series(catalog::STEP_TIME_S)?, step)?;
    let n = n_t.min(n_s);
    Some((live_rate, throughput::rate(&tokens[n_t - n..n_t], &secs[n_s - n..n_s])?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Event, Hub};

    fn session(n: u64, loss: impl Fn(u64) -> f64, step_s: f64) -> SessionState {
        let mut hub = Hub::new(SessionState::new("s".into(), vec![RunRecord::new("r".into(), "lm".into(), "cpu".into(), n)]));
        for step in 1..=n {
            let values = vec![("loss".into(), loss(step)), ("tokens".into(), 1000.0), ("step_time_s".into(), step_s)];
            hub.apply(Event::Metrics { run: 0, step, time_s: 0.0, values }, 0.0);
        }
        hub.state
    }

    /// Feeds `live` step by step and collects the alerts.
    fn watch(base: SessionState, live: &SessionState) -> (Vec<Alert>, Baseline) {
        let mut b = Baseline::new(std::sync::Arc::new(base), &live.runs, 0.05);
        let mut hub = Hub::new(SessionState::new("l".into(), vec![RunRecord::new("r".into(), "lm".into(), "cpu".into(), 100)]));
        let mut out = Vec::new();
        let r = &live.runs[0];
        for (i, step) in r.series["loss"].steps(0..usize::MAX).iter().enumerate() {
            let values = ["loss", "tokens", "step_time_s"].iter().map(|m| ((*m).into(), r.series[*m].value_at(i).unwrap())).collect();
            hub.apply(Event::Metrics { run: 0, step: *step, time_s: 0.0, values }, 0.0);
            out.extend(b.observe(&hub.state.runs[0], 0, *step));
        }
        (out, b)
    }

    #[test]
    fn divergence_and_regression_are_reported_once_as_they_happen() {
        let base = session(100, |s| 5.0 / s as f64, 0.1);
        let (quiet, _) = watch(base.clone(), &base);
        assert!(quiet.is_empty(), "{quiet:?}");
        let live = session(100, |s| if s >= 60 { 2.0 } else { 5.0 / s as f64 }, 0.2);
        let (alerts, b) = watch(base, &live);
        assert_eq!(b.diverged_at(0, "loss"), Some(60));
        let divergence: Vec<_> = alerts.iter().filter(|a| a.kind == AlertKind::RunDivergence).collect();
        assert_eq!(divergence.len(), 1, "{alerts:?}");
        let d = divergence[0];
        assert_eq!((d.step, d.metric.as_str(), d.severity, d.run.as_str()), (60, "loss", Severity::Warn, "r"));
        assert!(d.message.contains("loss diverges from the baseline at step 60"), "{}", d.message);
        // Half the baseline's tokens/s: beyond twice the 5% tolerance, so critical.
        let slow: Vec<_> = alerts.iter().filter(|a| a.kind == AlertKind::ThroughputRegression).collect();
        assert_eq!(slow.len(), 1, "{alerts:?}");
        assert_eq!(slow[0].severity, Severity::Critical);
        assert!(slow[0].message.contains("(50% slower, tolerance 5%)"), "{}", slow[0].message);
    }
}
