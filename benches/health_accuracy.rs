//! Accuracy of the health detectors on the generated corpus (`health_eval::synth`),
//! scored by `health_eval::score`, next to a trivial fixed z-score baseline.
//! Defaults were tuned on the tune split (seeds 0..10); the test split (seeds
//! 1000..1010) is the one reported.
//!
//! The independent corpus (`health_eval::indep`, seeds 5000..5006) is scored
//! apart: nothing was tuned on it. The hold-out corpus (`health_eval::indep2`,
//! seeds 7000..7006) is scored by totals only: no change is chosen by its cases.
//!
//! The slow-drift study corpus (`health_eval::drift_study`, seeds 11000..11010) is
//! studied case by case.
//! The fourth (`health_eval::indep4`, seeds 11000..11004) is for study case by
//! case: long clean runs of the kinds that raise false alarms.
//!
//! The second slow-drift study corpus (`health_eval::drift_study2`, seeds
//! 13000..13008) is studied case by case: each faulty run next to its clean twin.
//!
//! The conformance corpus (`health_eval::conform`, seeds 17000..17003): events
//! just past and just under each kind's README definitions.
//!
//! The unseen-classes study corpus (`health_eval::unseen`, seeds 28000..28010):
//! slow grad-norm explosions, GRPO runs with zero-inflated losses, KLs from
//! exactly zero, held-out scores that fall while the training reward holds.
//!
//! The sixth study corpus (`health_eval::indep6`, seeds 37000..37012): kl_spike,
//! slow_drift and expert_collapse on heavy-tailed regime-switching noise, other
//! scales, strides and schedules, each faulty run beside its clean twin.
//!
//! cargo bench --bench health_accuracy [-- tune|test|both|indep|indep2|indep3|indep4|indep5|indep6|drift|drift2|real|cost|conform|unseen|heldout|parts]
mod health_eval;

use health_eval::synth::Case;
use health_eval::{indep, indep2};
use health_eval::score::{alarms, run_baseline, run_rlmon, run_rlmon_logged, run_rlmon_pair_logged, score, table, Scores};
use health_eval::synth::{corpus, GENERATOR_VERSION};

/// The independent corpus, scored case by case (its long runs are large), with
/// the cases each kind missed and the false alarms listed.
fn independent(seeds: std::ops::Range<u64>) {
    println!("\n## independent corpus v{}: seeds {seeds:?}", indep::INDEP_VERSION);
    let cases = indep::corpus(seeds).map(|(kind, family, m, seed)| {
        let c = indep::generate(kind, family, m, seed);
        (c.case, c.mem_total, None)
    });
    scored_one_by_one(cases, true);
}

/// The hold-out corpus (`indep2`): totals per kind only. Its missed cases and
/// false alarms are not listed, so that no change is chosen by looking at them.
/// The third corpus (`indep3`), for study case by case: pairs logged at their
/// own steps, sparse logging, slow climbs, step-time-only throughput.
fn study3(seeds: std::ops::Range<u64>) {
    use health_eval::indep3;
    println!("\n## study corpus indep3 v{}: seeds {seeds:?}", indep3::INDEP3_VERSION);
    let mut s = Scores::default();
    let (mut missed, mut false_alarms) = (Vec::new(), Vec::new());
    for (kind, m, seed) in indep3::corpus(seeds) {
        let c = indep3::generate(kind, m, seed);
        let raised = match &c.partner_logged {
            Some(pl) => run_rlmon_pair_logged(&c.case, &c.logged, pl),
            None => run_rlmon_logged(&c.case, None, Some(&c.logged)),
        };
        s.add(&c.case, &raised);
        drift_trace(&c.case, &raised);
        if let (Ok(want), Some(pl), Some(p)) = (std::env::var("INDEP3_DUMP"), &c.partner_logged, &c.case.partner) {
            if c.case.name.contains(&want) {
                let get = |row: &Vec<(rlmon::metrics::MetricName, f64)>| row.iter().find(|(n, _)| n == rlmon::metrics::catalog::LOSS).map(|(_, v)| *v);
                for (i, (st, t)) in c.logged.iter().enumerate() {
                    println!("A {st} {t} {:?}", get(&c.case.steps[i]));
                }
                for (i, (st, t)) in pl.iter().enumerate() {
                    println!("B {st} {t} {:?}", get(&p[i]));
                }
            }
        }
        let onset = c.case.fault.as_ref().map_or(u64::MAX, |f| f.onset);
        for (at, a) in alarms(&raised).into_iter().filter(|(at, _)| *at < onset) {
            false_alarms.push(format!("{} at {at}: {} {}: {}", c.case.name, a.severity.as_str(), a.kind, a.message));
        }
        if let Some(f) = &c.case.fault {
            if !raised.iter().any(|(at, a)| a.kind == f.kind && a.severity >= rlmon::health::Severity::Warn && *at >= f.onset) {
                missed.push(format!("{} (onset {}, {} points)", c.case.name, f.onset, c.case.steps.len()));
            }
        }
    }
    println!("\n{}", table("### rlmon detectors", &s));
    println!("missed:{}", if missed.is_empty() { " none".into() } else { missed.iter().map(|f| format!("\n- {f}")).collect::<String>() });
    println!("false alarms:{}", if false_alarms.is_empty() { " none".into() } else { false_alarms.iter().map(|f| format!("\n- {f}")).collect::<String>() });
}

/// What a slow-drift study keeps while its cases run: the scores, the missed
/// cases, the false alarms, the recall per magnitude and the detectors' time.
#[derive(Default)]
struct DriftTally {
    s: Scores,
    missed: Vec<String>,
    false_alarms: Vec<String>,
    by_magnitude: [(usize, usize); 3],
    /// Cases whose levels rise 10% over their best two blocks or more before
    /// the run ends (and, where the name says it, whose noiseless rise does):
    /// (cases, caught).
    by_definition: (usize, usize),
    points: usize,
    elapsed: f64,
}

impl DriftTally {
    /// Runs one case through the detectors and counts it; whether a faulty
    /// case's drift was caught (`None` for a clean case).
    fn run(&mut self, case: &Case, logged: &[(u64, f64)]) -> Option<bool> {
        let started = std::time::Instant::now();
        let raised = run_rlmon_logged(case, None, Some(logged));
        self.elapsed += started.elapsed().as_secs_f64();
        self.points += case.steps.len();
        self.s.add(case, &raised);
        drift_trace(case, &raised);
        let onset = case.fault.as_ref().map_or(u64::MAX, |f| f.onset);
        for (at, a) in alarms(&raised).into_iter().filter(|(at, _)| *at < onset) {
            self.false_alarms.push(format!("{} at {at}: {} {}: {}", case.name, a.severity.as_str(), a.kind, a.message));
        }
        let f = case.fault.as_ref()?;
        let caught = raised.iter().find(|(at, a)| a.kind == f.kind && a.severity >= rlmon::health::Severity::Warn && *at >= f.onset);
        self.by_magnitude[f.magnitude].0 += 1;
        self.by_magnitude[f.magnitude].1 += caught.is_some() as usize;
        if meets_definition(case) {
            self.by_definition.0 += 1;
            self.by_definition.1 += caught.is_some() as usize;
        }
        match caught {
            Some((at, _)) if std::env::var("DRIFT_LIST_CAUGHT").is_ok() => println!("caught {} at {at} (+{}){}", case.name, at - f.onset, reach_words(case)),
            Some(_) => {}
            None => {
                // What else was raised on it (a fast climb is a loss_divergence).
                let mut others: Vec<String> = raised.iter().filter(|(at, a)| *at >= f.onset && a.severity >= rlmon::health::Severity::Warn).map(|(at, a)| format!("{} {} at {at}", a.severity.as_str(), a.kind)).collect();
                others.dedup();
                let others = if others.is_empty() { String::new() } else { format!("; raised instead: {}", others.join(", ")) };
                self.missed.push(format!("{} (onset {}, {} points{}{others})", case.name, f.onset, case.steps.len(), reach_words(case)));
            }
        }
        Some(caught.is_some())
    }

    fn print_scores(&self) {
        println!("\n{}", table("### rlmon detectors", &self.s));
        let mags: Vec<String> = self.by_magnitude.iter().enumerate().map(|(m, (n, k))| format!("m{m} {k} of {n}")).collect();
        println!("slow_drift caught by magnitude: {}", mags.join(", "));
        println!("drifts by the README's definition (levels 10% over their best two blocks or more before the end, and a noiseless rise of 10% where the name gives it): {} caught of {}", self.by_definition.1, self.by_definition.0);
    }

    fn print_cases(&self) {
        let listed = |v: &[String]| if v.is_empty() { " none".into() } else { v.iter().map(|f| format!("\n- {f}")).collect::<String>() };
        println!("missed:{}", listed(&self.missed));
        println!("false alarms:{}", listed(&self.false_alarms));
        println!("rlmon detectors: {} points in {:.2} s ({:.1} µs per point)", self.points, self.elapsed, self.elapsed * 1e6 / self.points.max(1) as f64);
    }
}

/// The slow-drift study corpus (`drift_study`), case by case, with each missed
/// case, each false alarm and the recall per magnitude.
fn drift_study(seeds: std::ops::Range<u64>) {
    use health_eval::drift_study;
    println!("\n## slow_drift study corpus v{}: seeds {seeds:?}", drift_study::DRIFT_STUDY_VERSION);
    let mut t = DriftTally::default();
    for (shape, m, seed) in drift_study::corpus(seeds) {
        let c = drift_study::generate(shape, m, seed);
        t.run(&c.case, &c.logged);
    }
    t.print_scores();
    t.print_cases();
}

/// The fourth corpus (`indep4`), for study case by case: long clean runs of
/// grad_explosion, memory_leak, kl_runaway and kl_spike, and a few faulty ones.
fn study4(seeds: std::ops::Range<u64>) {
    use health_eval::indep4;
    println!("\n## study corpus indep4 v{}: seeds {seeds:?}", indep4::INDEP4_VERSION);
    let cases = indep4::corpus(seeds).map(|(kind, m, seed)| {
        let c = indep4::generate(kind, m, seed);
        (c.case, c.mem_total, Some(c.logged))
    });
    scored_one_by_one(cases, true);
}

/// DRIFT_TRACE=<part of a case's name>: the case's series in 60 chunk medians,
/// and every alert raised on it.
fn drift_trace(case: &Case, raised: &[(u64, rlmon::health::Alert)]) {
    if !std::env::var("DRIFT_TRACE").is_ok_and(|want| case.name.contains(&want)) {
        return;
    }
    // DRIFT_TRACE_METRIC=<name>: that metric's series (the first one otherwise).
    let metric = std::env::var("DRIFT_TRACE_METRIC").ok();
    let values: Vec<f64> = case.steps.iter().filter_map(|row| row.iter().find(|(m, _)| metric.as_deref().is_none_or(|want| m.as_ref() == want)).map(|(_, v)| *v)).collect();
    let chunk = (values.len() / 60).max(1);
    println!("trace {}", case.name);
    for (i, part) in values.chunks(chunk).enumerate() {
        println!("  {:>7} {:.4}", i * chunk, rlmon::health::stats::median(part).unwrap_or(f64::NAN));
    }
    raised.iter().for_each(|(at, a)| println!("  alert at {at}: {} {}: {}", a.severity.as_str(), a.kind, a.message));
}

fn hold_out(seeds: std::ops::Range<u64>) {
    println!("\n## hold-out corpus indep2 v{}: seeds {seeds:?}", indep2::INDEP2_VERSION);
    let cases = indep2::corpus(seeds).map(|(kind, family, m, seed)| {
        let c = indep2::generate(kind, family, m, seed);
        (c.case, c.mem_total, Some(c.logged))
    });
    scored_one_by_one(cases, false);
}

/// FAULT_TRACE=<part of a case's name>, FAULT_TRACE_METRIC=<name>: the metric's
/// points from 60 before the fault's onset to 60 after, and every alert raised.
fn fault_trace(case: &Case, raised: &[(u64, rlmon::health::Alert)]) {
    if !std::env::var("FAULT_TRACE").is_ok_and(|want| case.name.contains(&want)) {
        return;
    }
    let metric = std::env::var("FAULT_TRACE_METRIC").unwrap_or_else(|_| "grad_norm".into());
    let onset = case.fault.as_ref().map_or(case.steps.len() as u64 / 2, |f| f.onset) as usize;
    println!("trace {} (onset {onset})", case.name);
    let row = |i: usize| case.steps[i].iter().find(|(m, _)| m.as_ref() == metric).map(|(_, v)| *v);
    let line: Vec<String> = (onset.saturating_sub(60)..(onset + 60).min(case.steps.len())).filter_map(|i| row(i).map(|v| format!("{i}:{v:.3}"))).collect();
    println!("  {}", line.join(" "));
    raised.iter().for_each(|(at, a)| println!("  alert at {at}: {} {}: {}", a.severity.as_str(), a.kind, a.message));
}

/// Scores cases made one at a time; `list` prints each miss and false alarm.
fn scored_one_by_one(cases: impl Iterator<Item = (Case, Option<f64>, Option<Vec<(u64, f64)>>)>, list: bool) {
    let mut s = Scores::default();
    let (mut points, mut series, mut elapsed) = (0usize, 0usize, 0.0f64);
    let mut missed: Vec<String> = Vec::new();
    let mut false_alarms: Vec<String> = Vec::new();
    for (case, mem_total, logged) in cases {
        let started = std::time::Instant::now();
        let raised = run_rlmon_logged(&case, mem_total, logged.as_deref());
        elapsed += started.elapsed().as_secs_f64();
        points += case.steps.len() * if case.partner.is_some() { 2 } else { 1 };
        series += 1;
        s.add(&case, &raised);
        fault_trace(&case, &raised);
        let onset = case.fault.as_ref().map_or(u64::MAX, |f| f.onset);
        for (at, a) in alarms(&raised).into_iter().filter(|(at, _)| *at < onset) {
            false_alarms.push(format!("{} at {at}: {} {}: {}", case.name, a.severity.as_str(), a.kind, a.message));
        }
        if let Some(f) = &case.fault {
            if !raised.iter().any(|(at, a)| a.kind == f.kind && a.severity >= rlmon::health::Severity::Warn && *at >= f.onset) {
                missed.push(format!("{} (onset {})", case.name, f.onset));
            }
        }
    }
    println!("\n{}", table(&format!("### rlmon detectors, {series} series"), &s));
    if list {
        println!("missed: {}", if missed.is_empty() { "none".into() } else { missed.join(", ") });
        println!("false alarms:{}", if false_alarms.is_empty() { " none".into() } else { false_alarms.iter().map(|f| format!("\n- {f}")).collect::<String>() });
    } else {
        println!("missed {} cases, {} false alarms (not listed: hold-out)", missed.len(), false_alarms.len());
    }
    println!("rlmon detectors: {points} points in {elapsed:.2} s ({:.1} µs per point)", elapsed * 1e6 / points as f64);
}

/// The real logs of tests/fixtures/real/, each scored against its label.
fn real_logs() {
    use health_eval::real;
    println!("\n## real logs (tests/fixtures/real/)\n");
    println!("| log | points | incident | caught (latency, steps) | false alarms | critical on clean | not judged |\n|---|---:|---|---|---:|---:|---|");
    let (mut clean, mut false_alarms, mut incidents, mut caught) = (0u64, 0usize, 0usize, 0usize);
    let (mut critical_caught, mut criticals_on_clean) = (0usize, 0usize);
    let mut details = Vec::new();
    for log in real::LOGS {
        let report = match real::check(log) {
            Ok(r) => r,
            Err(e) => {
                println!("| {} | - | - | unreadable: {e} | - | - | - |", log.file);
                continue;
            }
        };
        let s = real::score(log, &report);
        clean += s.clean_points;
        false_alarms += s.false_alarms;
        let incident = log.incident.map_or("clean".to_owned(), |(at, kinds)| format!("step {at} ({})", kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>().join("/")));
        let got = match (log.incident, s.latency) {
            (None, _) => "-".to_owned(),
            (Some(_), Some(l)) => format!("yes ({l})"),
            (Some(_), None) => "no".to_owned(),
        };
        if log.incident.is_some() {
            incidents += 1;
            caught += s.latency.is_some() as usize;
            critical_caught += s.critical_on_incident as usize;
        }
        criticals_on_clean += s.criticals_on_clean;
        println!("| {} | {} | {incident} | {got} | {} | {} | {} |", log.file, s.points, s.false_alarms, s.criticals_on_clean, s.not_judged.len());
        let gap = log.gap.map_or(String::new(), |g| format!("\n  known gap: {g}"));
        details.push(format!("{} ({}):\n  alerts: {}\n  not judged: {}{gap}", log.file, log.what, if s.alerts.is_empty() { "none".into() } else { s.alerts.join("; ") }, s.not_judged.join("; ")));
    }
    println!("\nincidents caught {caught} of {incidents}; false warn/critical alarms {false_alarms} in {clean} clean points = {:.1} per 1,000", 1000.0 * false_alarms as f64 / clean.max(1) as f64);
    println!("incidents caught at critical {critical_caught} of {incidents}; critical alerts on clean points {criticals_on_clean}");
    for d in details {
        println!("\n{d}");
    }
}

/// The slow-drift detector's own cost per point, on a 200,000-step loss and reward.
fn drift_cost() {
    use rlmon::health::detect::{drift::SlowDrift, Detector, Point};
    use rlmon::metrics::{catalog, MetricName};
    let n = 200_000usize;
    let rows: Vec<Vec<(MetricName, f64)>> = (0..n)
        .map(|i| {
            let t = i as f64;
            vec![(catalog::LOSS.into(), 2.0 + 5.0 / (1.0 + t / 500.0) + 0.01 * (t * 1.7).sin()), (catalog::REWARD.into(), (t / 3e4).tanh() + 0.02 * (t * 0.9).cos())]
        })
        .collect();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let mut d = SlowDrift::new(rlmon::health::config::defaults(rlmon::health::AlertKind::SlowDrift));
        let started = std::time::Instant::now();
        let mut raised = 0usize;
        for (i, values) in rows.iter().enumerate() {
            raised += d.observe(&Point { step: i as u64, time_s: i as f64, values }).len();
        }
        best = best.min(started.elapsed().as_secs_f64());
        assert_eq!(raised, 0);
    }
    println!("\nslow_drift detector alone: {:.3} µs per point (best of 5, {n} points of loss and reward)", best * 1e6 / n as f64);
}

fn main() {
    run_mode();
    let resumes = health_eval::score::RESUMES.load(std::sync::atomic::Ordering::Relaxed);
    println!("resumes (a step that went back, judged as `rlmon check` reads it: the run resumed there): {resumes}");
}

fn run_mode() {
    let which = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_else(|| "test".into());
    match which.as_str() {
        "indep" => return independent(5000..5006),
        "indep2" => return hold_out(7000..7006),
        "indep3" => return study3(9000..9006),
        "indep4" => return study4(11000..11004),
        "indep5" => return study5(13000..13004),
        "drift" => return drift_study(11000..11010),
        "drift2" => return drift_study2(13000..13008),
        "real" => return real_logs(),
        "cost" => return drift_cost(),
        "conform" => return conformance(17000..17003),
        "unseen" => return unseen(28000..28010),
        "heldout" => return heldout_study(31000..31008),
        "parts" => return reward_parts(41000..41012),
        "indep6" => {
            // INDEP6_SEEDS=a..b: another range of seeds (the default's six are the ones reported).
            let seeds = std::env::var("INDEP6_SEEDS").ok().and_then(|r| r.split_once("..").and_then(|(a, b)| Some(a.parse().ok()?..b.parse().ok()?)));
            return study6(seeds.unwrap_or(37000..37012));
        }
        _ => {}
    }
    let splits: &[(&str, std::ops::Range<u64>)] = match which.as_str() {
        "tune" => &[("tune", 0..10)],
        "both" => &[("tune", 0..10), ("test", 1000..1010)],
        _ => &[("test", 1000..1010)],
    };
    println!("health accuracy, generator v{GENERATOR_VERSION}");
    for (name, seeds) in splits {
        let cases = corpus(seeds.clone());
        let started = std::time::Instant::now();
        let ours = score(&cases, run_rlmon);
        let elapsed = started.elapsed();
        let base = score(&cases, run_baseline);
        println!("\n## {name} split: seeds {seeds:?}, {} series", cases.len());
        println!("\n{}", table("### rlmon detectors", &ours));
        let missed: Vec<String> = cases
            .iter()
            .filter(|c| c.fault.as_ref().is_some_and(|f| !run_rlmon(c).iter().any(|(at, a)| a.kind == f.kind && a.severity >= rlmon::health::Severity::Warn && *at >= f.onset)))
            .map(|c| c.name.clone())
            .collect();
        println!("missed: {}\n", if missed.is_empty() { "none".into() } else { missed.join(", ") });
        // How far each missed slow drift's loss rose over its best level at all:
        // below the README's 10% it is no drift by the definition.
        for c in cases.iter().filter(|c| missed.contains(&c.name) && c.fault.as_ref().is_some_and(|f| f.kind == rlmon::health::AlertKind::SlowDrift)) {
            println!("{}{}", c.name, reach_words(c));
        }
        let by_definition: Vec<&Case> = cases.iter().filter(|c| c.fault.as_ref().is_some_and(|f| f.kind == rlmon::health::AlertKind::SlowDrift) && meets_definition(c)).collect();
        println!("slow_drift by the README's definition (levels 10% over their best two blocks or more before the end): {} caught of {}\n", by_definition.iter().filter(|c| !missed.contains(&c.name)).count(), by_definition.len());
        println!("{}", table("### baseline: fixed z-score 4 over the last 50 points", &base));
        let points: usize = cases.iter().map(|c| c.steps.len() * if c.partner.is_some() { 2 } else { 1 }).sum();
        println!("rlmon detectors: {points} points in {:.2} s ({:.1} µs per point)", elapsed.as_secs_f64(), elapsed.as_secs_f64() * 1e6 / points as f64);
    }
}

/// How far a missed drift's series rose over its best level at all, read as
/// the detector reads it (medians of blocks of max(10, n/64) points; a loss's
/// rise relative to its best level, a reward's as the share of its gain from
/// its first level that it lost): the most at a level ending after `onset`,
/// and where its first level 10% or more over the best ended (the README's
/// warn threshold, which must then hold for two blocks).
fn drift_reach(values: &[f64], onset: usize, higher_is_better: bool) -> Option<(f64, Option<usize>, usize)> {
    // The detector's blocks: 10 points, doubled while 64 of them would not span the run.
    let mut block = 10;
    while values.len() >= 64 * block {
        block *= 2;
    }
    let levels: Vec<(usize, f64)> = values.chunks(block).enumerate().filter_map(|(i, c)| rlmon::health::stats::median(c).map(|m| (i * block + c.len(), m))).collect();
    let first = levels.first()?.1;
    let mut best = f64::NAN;
    let (mut most, mut crossed): (Option<f64>, Option<usize>) = (None, None);
    for (end, level) in levels {
        best = if higher_is_better { level.max(best) } else { level.min(best) };
        if end <= onset {
            continue;
        }
        let rise = if higher_is_better { (best - level) / (best - first).max(f64::MIN_POSITIVE) } else { level / best - 1.0 };
        most = Some(most.map_or(rise, |r: f64| r.max(rise)));
        if rise >= 0.1 && crossed.is_none() {
            crossed = Some(end);
        }
    }
    most.map(|m| (m, crossed, block))
}

/// The faulty series' main metric (the reward where it logs one), its values and
/// [`drift_reach`].
fn reach_of(c: &Case) -> Option<(f64, Option<usize>, usize, usize)> {
    let f = c.fault.as_ref()?;
    let metric = if c.steps.iter().any(|row| row.iter().any(|(m, _)| m == rlmon::metrics::catalog::REWARD)) { rlmon::metrics::catalog::REWARD } else { rlmon::metrics::catalog::LOSS };
    let values: Vec<f64> = c.steps.iter().filter_map(|row| row.iter().find(|(m, _)| m == metric).map(|(_, v)| *v)).collect();
    drift_reach(&values, f.onset as usize, metric == rlmon::metrics::catalog::REWARD).map(|(most, crossed, block)| (most, crossed, block, values.len()))
}

/// Whether a drift case is one by the README's definition: its levels reach 10%
/// over their best two blocks or more before the run ends, and its noiseless
/// rise (a study corpus's `-netN%`) is 10% or more where its name gives one.
fn meets_definition(c: &Case) -> bool {
    let net = c.name.split("-net").nth(1).and_then(|r| r.split('%').next()).and_then(|r| r.parse::<f64>().ok());
    let reached = reach_of(c).is_some_and(|(_, crossed, block, n)| crossed.is_some_and(|at| n >= at + 2 * block));
    reached && net.is_none_or(|net| net >= 10.0)
}

/// [`drift_reach`] said in words, for a missed case's line.
fn reach_words(c: &Case) -> String {
    match reach_of(c) {
        None => String::new(),
        Some((most, crossed, block, n)) => format!(
            "; its levels rose at most {:.1}% over their best{}",
            100.0 * most,
            crossed.map_or(" (never 10%)".to_owned(), |at| format!(", 10% first at point {at}, {:.1} blocks of {block} before the end", (n - at) as f64 / block as f64))
        ),
    }
}

/// The fifth corpus (`indep5`), for study case by case: the kinds just under the
/// recall goal, early and late onsets, sparse logs, noisy levels, clean twins.
/// INDEP5_TRACE=<part of a case's name>: the kind's points around the onset and
/// every alert of the matching cases.
fn study5(seeds: std::ops::Range<u64>) {
    use health_eval::indep5;
    println!("\n## study corpus indep5 v{}: seeds {seeds:?}", indep5::INDEP5_VERSION);
    let want = std::env::var("INDEP5_TRACE").ok();
    let cases = indep5::corpus(seeds).map(move |(kind, fault, seed)| {
        let c = indep5::generate(kind, fault, seed);
        if want.as_deref().is_some_and(|w| c.case.name.contains(w)) {
            let raised = run_rlmon_logged(&c.case, None, Some(&c.logged));
            let o = c.case.fault.as_ref().map_or(c.case.steps.len() / 2, |f| f.onset as usize);
            println!("trace {} ({} points)", c.case.name, c.case.steps.len());
            for i in o.saturating_sub(25)..(o + 30).min(c.case.steps.len()) {
                let row: Vec<String> = c.case.steps[i].iter().filter(|(n, _)| !n.starts_with("moe/") || n.ends_with("/E0")).map(|(n, v)| format!("{n}={v:.4}")).collect();
                let bal = rlmon::health::detect::moe::balance(&c.case.steps[i].iter().filter(|(n, _)| n.starts_with("moe/L0/")).map(|(_, v)| *v).collect::<Vec<_>>());
                println!("  {i:>6} step {:>8} {}{}", c.logged[i].0, row.join(" "), bal.map_or(String::new(), |b| format!(" L0 balance {:.3} dead {}", b.balance, b.dead)));
            }
            raised.iter().for_each(|(at, a)| println!("  alert at {at}: {} {} step {}: {}", a.severity.as_str(), a.kind, a.step, a.message));
        }
        (c.case, None, Some(c.logged))
    });
    scored_one_by_one(cases, true);
}

/// The second slow-drift study corpus (`drift_study2`), case by case: each miss,
/// each false alarm, recall per magnitude and per base curve, and recall among
/// the drifts that reach 10% of the run's level by 90% of the run.
/// `DRIFT_TRACE=<part of a name>` prints a case's chunk medians and its alerts.
fn drift_study2(seeds: std::ops::Range<u64>) {
    use health_eval::drift_study2;
    println!("\n## slow_drift study corpus 2 v{}: seeds {seeds:?}", drift_study2::DRIFT_STUDY2_VERSION);
    let mut t = DriftTally::default();
    let mut by_base: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    let mut in_time = (0usize, 0usize);
    for (base, m, faulty, seed) in drift_study2::corpus(seeds) {
        let c = drift_study2::generate(base, m, faulty, seed);
        let Some(caught) = t.run(&c.case, &c.logged) else { continue };
        let b = by_base.entry(format!("{base:?}")).or_default();
        b.0 += 1;
        b.1 += caught as usize;
        // The drift reaches 10% of the level by 90% of the run (its name's `reach`).
        let reach = c.case.name.split("-reach").nth(1).and_then(|r| r.split('%').next()).and_then(|r| r.parse::<f64>().ok());
        if reach.is_some_and(|r| r <= 90.0) {
            in_time.0 += 1;
            in_time.1 += caught as usize;
        }
    }
    t.print_scores();
    println!("by base: {}", by_base.iter().map(|(b, (n, k))| format!("{b} {k} of {n}")).collect::<Vec<_>>().join(", "));
    println!("reaching 10% by 90% of the run: {} of {}", in_time.1, in_time.0);
    t.print_cases();
}

/// The conformance corpus (`conform`): events just past and just under each
/// kind's README definitions, scored per kind and level, and recall per (scale,
/// stride, onset) cell so that misses show where they sit. CONFORM_LIST=1 lists
/// every miss and false alarm; CONFORM_TRACE=<part of a name> prints a case's
/// points around its event and its alerts.
fn conformance(seeds: std::ops::Range<u64>) {
    use health_eval::conform::{self, Level, Onset};
    use rlmon::health::Severity;
    use std::collections::BTreeMap;
    println!("\n## conformance corpus v{}: seeds {seeds:?}", conform::CONFORM_VERSION);
    let list = std::env::var("CONFORM_LIST").is_ok();
    let trace = std::env::var("CONFORM_TRACE").ok();
    let mut s = Scores::default();
    // Per kind: per level (cases, caught at warn or above, reached critical), quiet under_warn, false alarms on clean twins.
    #[derive(Default)]
    struct Tally {
        levels: BTreeMap<Level, (usize, usize, usize)>,
        twins: (usize, usize),
        nan_late: usize,
    }
    let mut by_kind: BTreeMap<rlmon::health::AlertKind, Tally> = BTreeMap::new();
    // (scale quarter, stride, onset) -> (cases, caught), over the past-definition levels.
    let mut cells: BTreeMap<(usize, u64, Onset), (usize, usize)> = BTreeMap::new();
    let mut notes: Vec<String> = Vec::new();
    let (mut points, mut elapsed) = (0usize, 0.0f64);
    for (kind, level, onset, stride, seed) in conform::corpus(seeds) {
        let c = conform::generate(kind, level, onset, stride, seed);
        let started = std::time::Instant::now();
        let raised = run_rlmon_logged(&c.case, c.mem_total, Some(&c.logged));
        elapsed += started.elapsed().as_secs_f64();
        points += c.case.steps.len();
        s.add(&c.case, &raised);
        let at = c.case.fault.as_ref().map(|f| f.onset).or_else(|| c.case.benign.iter().find(|b| b.what == "under_warn").map(|b| b.step));
        let t = by_kind.entry(kind).or_default();
        let of_kind = |min: Severity| raised.iter().filter(move |(i, a)| a.kind == kind && a.severity >= min && at.is_some_and(|o| *i >= o));
        let early: Vec<String> = alarms(&raised).into_iter().filter(|(i, a)| a.kind == kind && at.is_none_or(|o| *i < o)).map(|(i, a)| format!("{} {i}: {}", a.severity.as_str(), a.message)).collect();
        match level {
            None => {
                t.twins.0 += 1;
                t.twins.1 += early.len();
                if list && !early.is_empty() {
                    notes.push(format!("false alarm on twin {}: {}", c.case.name, early.join("; ")));
                }
            }
            Some(l) => {
                let e = t.levels.entry(l).or_default();
                e.0 += 1;
                let warned = of_kind(Severity::Warn).next().is_some();
                let critical = of_kind(Severity::Critical).next().is_some();
                e.1 += warned as usize;
                e.2 += critical as usize;
                if l == Level::UnderWarn {
                    if list && warned {
                        notes.push(format!("raised under its definition {}: {}", c.case.name, of_kind(Severity::Warn).map(|(i, a)| format!("{} {i}: {}", a.severity.as_str(), a.message)).collect::<Vec<_>>().join("; ")));
                    }
                } else {
                    let cell = cells.entry((c.scale_bin, stride, onset)).or_default();
                    cell.0 += 1;
                    cell.1 += warned as usize;
                    if kind == rlmon::health::AlertKind::Nonfinite && !of_kind(Severity::Critical).any(|(i, _)| Some(*i) == at) {
                        t.nan_late += 1;
                    }
                    if list && !warned {
                        notes.push(format!("missed {}", c.case.name));
                    }
                    if list && warned && l == Level::PastCrit && !critical {
                        notes.push(format!("past critical, warn only {}", c.case.name));
                    }
                }
                if list && !early.is_empty() {
                    notes.push(format!("alarm before the event {}: {}", c.case.name, early.join("; ")));
                }
            }
        }
        if trace.as_deref().is_some_and(|w| c.case.name.contains(w)) {
            let o = at.map_or(c.case.steps.len() / 2, |o| o as usize);
            println!("trace {}", c.case.name);
            for i in o.saturating_sub(12)..(o + 20).min(c.case.steps.len()) {
                let row: Vec<String> = c.case.steps[i].iter().filter(|(n, _)| !n.starts_with("moe/")).map(|(n, v)| format!("{n}={v:.5}")).collect();
                println!("  {i:>6} step {:>8} {}", c.logged[i].0, row.join(" "));
            }
            raised.iter().filter(|(_, a)| a.kind == kind).for_each(|(i, a)| println!("  alert at {i}: {} step {}: {}", a.severity.as_str(), a.step, a.message));
        }
    }
    println!("\n{}", table("### rlmon detectors (past_warn, under_crit, past_crit are faults; under_warn and twins clean)", &s));
    println!("### per kind and level: caught at warn or above (critical reached)\n| kind | under_warn raised (must be 0) | past_warn | under_crit | past_crit | past_crit critical | clean twins with an alarm |\n|---|---:|---:|---:|---:|---:|---:|");
    for (kind, t) in &by_kind {
        let get = |l: Level| t.levels.get(&l).copied().unwrap_or_default();
        let frac = |k: usize, n: usize| if n == 0 { "-".to_owned() } else { format!("{k}/{n}") };
        let (uw, pw, uc, pc) = (get(Level::UnderWarn), get(Level::PastWarn), get(Level::UnderCrit), get(Level::PastCrit));
        let nan = if *kind == rlmon::health::AlertKind::Nonfinite { format!(" ({} not at its step)", t.nan_late) } else { String::new() };
        println!("| {kind} | {} | {} | {} | {}{nan} | {} | {} |", frac(uw.1, uw.0), frac(pw.1, pw.0), frac(uc.1, uc.0), frac(pc.1, pc.0), frac(pc.2, pc.0), frac(t.twins.1.min(t.twins.0), t.twins.0));
    }
    println!("\n### recall per cell (all kinds, past-definition events): scale quarter x stride x onset");
    let mut line = String::from("| scale | ");
    for stride in conform::STRIDES {
        for o in ["early", "late"] {
            line.push_str(&format!("every {stride} {o} | "));
        }
    }
    println!("{}\n|---|{}", line.trim_end(), "---:|".repeat(2 * conform::STRIDES.len()));
    for bin in 0..4 {
        let mut row = format!("| q{bin} |");
        for stride in conform::STRIDES {
            for o in [Onset::Early, Onset::Late] {
                let (n, k) = cells.get(&(bin, stride, o)).copied().unwrap_or_default();
                row.push_str(&format!(" {} |", if n == 0 { "-".into() } else { format!("{:.2} ({k}/{n})", k as f64 / n as f64) }));
            }
        }
        println!("{row}");
    }
    if list {
        println!("\n{}", notes.iter().map(|n| format!("- {n}")).collect::<Vec<_>>().join("\n"));
    }
    println!("\nrlmon detectors: {points} points in {elapsed:.2} s ({:.1} µs per point)", elapsed * 1e6 / points.max(1) as f64);
}

/// Prints a case's alerts when `trace` (part of a name, from a corpus's
/// `*_TRACE` variable) is in its name.
fn trace_case(case: &Case, logged: &[(u64, f64)], trace: Option<&str>) {
    if trace.is_some_and(|w| case.name.contains(w)) {
        let raised = run_rlmon_logged(case, None, Some(logged));
        println!("trace {}", case.name);
        raised.iter().for_each(|(at, a)| println!("  alert at {at}: {} {} step {}: {}", a.severity.as_str(), a.kind, a.step, a.message));
    }
}

/// The unseen-classes study corpus (`unseen`), case by case.
fn unseen(seeds: std::ops::Range<u64>) {
    use health_eval::unseen;
    println!("\n## unseen-classes study corpus v{}: seeds {seeds:?}", unseen::UNSEEN_VERSION);
    let trace = std::env::var("UNSEEN_TRACE").ok();
    let cases = unseen::corpus(seeds).map(move |(class, m, seed)| {
        let c = unseen::generate(class, m, seed);
        trace_case(&c.case, &c.logged, trace.as_deref());
        (c.case, None, Some(c.logged))
    });
    scored_one_by_one(cases, true);
}

/// The held-out-score study corpus (`heldout_study`): reward hacking judged
/// against a held-out score logged every point, sparsely or carried forward.
/// Lists each miss and false alarm, and tallies them per cadence and per score
/// kind. `HELDOUT_TRACE=<part of a name>` prints a case's alerts.
fn heldout_study(seeds: std::ops::Range<u64>) {
    use health_eval::heldout_study;
    use std::collections::BTreeMap;
    println!("\n## held-out score study corpus v{}: seeds {seeds:?}", heldout_study::HELDOUT_STUDY_VERSION);
    let trace = std::env::var("HELDOUT_TRACE").ok();
    // Per cadence and per score kind: (faulty, caught, clean runs, clean runs with a false alarm).
    let mut tally: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    let mut cases = Vec::new();
    for (score, m, faulty, seed) in heldout_study::corpus(seeds) {
        let c = heldout_study::generate(score, m, faulty, seed);
        let raised = run_rlmon_logged(&c.case, None, Some(&c.logged));
        if trace.as_deref().is_some_and(|w| c.case.name.contains(w)) {
            println!("trace {}", c.case.name);
            raised.iter().for_each(|(at, a)| println!("  alert at {at}: {} {} step {}: {}", a.severity.as_str(), a.kind, a.step, a.message));
        }
        let onset = c.case.fault.as_ref().map_or(u64::MAX, |f| f.onset);
        let caught = raised.iter().any(|(at, a)| a.kind == rlmon::health::AlertKind::RewardHacking && a.severity >= rlmon::health::Severity::Warn && *at >= onset);
        let false_alarm = alarms(&raised).iter().any(|(at, _)| *at < onset);
        let cadence = c.case.name.split('-').find(|w| *w == "every" || w.starts_with("sparse") || w.starts_with("carried")).map_or("every".to_owned(), |w| w.trim_end_matches(char::is_numeric).to_owned());
        let wander = if c.case.name.contains("-wander") { "with memory" } else { "none" };
        let v3 = ["jointdip", "laplace", "gap"].iter().filter(|w| c.case.name.contains(*w)).copied().collect::<Vec<_>>().join("+");
        let v3 = if v3.is_empty() { "none".to_owned() } else { v3 };
        for key in [format!("cadence {cadence}"), format!("score {score:?}"), format!("wander {wander}"), format!("v3 {v3}")] {
            let t = tally.entry(key).or_default();
            if faulty {
                t[0] += 1;
                t[1] += caught as usize;
            } else {
                t[2] += 1;
            }
            t[3] += false_alarm as usize;
        }
        cases.push((c.case, None, Some(c.logged)));
    }
    println!("| part | faulty runs | caught | runs with a false alarm (of all) |\n|---|---:|---:|---:|");
    for (k, t) in &tally {
        println!("| {k} | {} | {} | {} of {} |", t[0], t[1], t[3], t[0] + t[2]);
    }
    scored_one_by_one(cases.into_iter(), true);
}

/// The composite-reward study corpus (`reward_parts`): reward hacking judged
/// against the reward's own correctness part. Lists each miss and false alarm.
/// `PARTS_TRACE=<part of a name>` prints a case's alerts.
fn reward_parts(seeds: std::ops::Range<u64>) {
    use health_eval::reward_parts;
    println!("\n## reward-parts study corpus v{}: seeds {seeds:?}", reward_parts::REWARD_PARTS_VERSION);
    let trace = std::env::var("PARTS_TRACE").ok();
    let cases = reward_parts::corpus(seeds).map(move |(m, faulty, seed)| {
        let c = reward_parts::generate(m, faulty, seed);
        trace_case(&c.case, &c.logged, trace.as_deref());
        (c.case, None, Some(c.logged))
    });
    scored_one_by_one(cases, true);
}

/// The sixth corpus (`indep6`), for study case by case: kl_spike, slow_drift
/// and expert_collapse with clean twins. `INDEP6_TRACE=<part of a name>` prints
/// a case's alerts.
fn study6(seeds: std::ops::Range<u64>) {
    use health_eval::indep6;
    println!("\n## study corpus indep6 v{}: seeds {seeds:?}", indep6::INDEP6_VERSION);
    let trace = std::env::var("INDEP6_TRACE").ok();
    let cases = indep6::corpus(seeds).map(move |(kind, m, faulty, seed)| {
        let c = indep6::generate(kind, m, faulty, seed);
        if trace.as_deref().is_some_and(|w| c.case.name.contains(w)) {
            let raised = run_rlmon_logged(&c.case, None, Some(&c.logged));
            println!("trace {} ({} points)", c.case.name, c.case.steps.len());
            // The points around the onset (the middle of a clean run), MoE loads left out.
            let o = c.case.fault.as_ref().map_or(c.case.steps.len() / 2, |f| f.onset as usize);
            for i in o.saturating_sub(8)..(o + 12).min(c.case.steps.len()) {
                let row: Vec<String> = c.case.steps[i].iter().filter(|(n, _)| !n.starts_with("moe/")).map(|(n, v)| format!("{n}={v:.5}")).collect();
                println!("  {i:>6} step {:>8} {}", c.logged[i].0, row.join(" "));
            }
            raised.iter().for_each(|(at, a)| println!("  alert at {at}: {} {} step {}: {}", a.severity.as_str(), a.kind, a.step, a.message));
        }
        (c.case, None, Some(c.logged))
    });
    // A missed slow drift's reach, as the README's definition reads it (INDEP6_REACH=1).
    let cases: Vec<_> = cases.collect();
    if std::env::var("INDEP6_REACH").is_ok() {
        for (c, _, logged) in &cases {
            let Some(f) = c.fault.as_ref().filter(|f| f.kind == rlmon::health::AlertKind::SlowDrift) else { continue };
            let raised = run_rlmon_logged(c, None, logged.as_deref());
            let caught = raised.iter().any(|(at, a)| a.kind == f.kind && a.severity >= rlmon::health::Severity::Warn && *at >= f.onset);
            println!("{} {}{}{}", if caught { "caught" } else { "MISSED" }, if meets_definition(c) { "def " } else { "under " }, c.name, reach_words(c));
        }
    }
    scored_one_by_one(cases.into_iter(), true);
}
