//! The health detectors' evaluation harness (benches/health_eval: corpus generator
//! and scorer) lives with the benchmark that uses it; its tests run here, since
//! `cargo test` does not run benchmarks.
#[path = "../benches/health_eval/mod.rs"]
mod health_eval;

use health_eval::score::{run_rlmon, score};
use health_eval::synth::{collapsed_loads, generate, Family, COLLAPSE_BALANCE, STEPS};
use rlmon::health::detect::moe::balance;
use rlmon::health::AlertKind;

#[test]
fn same_seed_same_series_and_faults_sit_after_warmup() {
    let a = generate(Some(AlertKind::LossSpike), Family::Pretrain, 1, 7);
    let b = generate(Some(AlertKind::LossSpike), Family::Pretrain, 1, 7);
    assert_eq!(a.steps, b.steps);
    let onset = a.fault.as_ref().unwrap().onset;
    assert!((250..=400).contains(&onset));
    let c = generate(None, Family::Moe, 0, 7);
    assert!(c.fault.is_none() && c.benign.iter().any(|b| b.what == "one_step_bump"));
    assert!(c.steps[0].iter().any(|(n, _)| n == "moe/L2/load/E7"));
}

#[test]
fn collapsed_loads_hit_their_balance() {
    for target in COLLAPSE_BALANCE {
        let b = balance(&collapsed_loads(target)).unwrap().balance;
        assert!((b - target).abs() < 1e-6, "{b} vs {target}");
    }
}

#[test]
fn scorer_counts_hits_latency_and_false_alarms() {
    let cases = vec![generate(Some(AlertKind::Nonfinite), Family::Pretrain, 2, 3), generate(None, Family::Pretrain, 0, 3)];
    let s = score(&cases, run_rlmon);
    let nf = &s.kinds[&AlertKind::Nonfinite];
    assert_eq!((nf.cases, nf.detected), (1, 1));
    assert_eq!(nf.latencies, vec![0], "NaN is caught at its step");
    assert!(s.clean_steps > STEPS);
}

#[test]
fn independent_corpus_is_seeded_and_spans_short_to_long_runs() {
    use health_eval::indep;
    let a = indep::generate(Some(AlertKind::LossSpike), Family::Pretrain, 1, 5000);
    let b = indep::generate(Some(AlertKind::LossSpike), Family::Pretrain, 1, 5000);
    assert_eq!(a.case.steps, b.case.steps);
    let onset = a.case.fault.as_ref().unwrap().onset as usize;
    assert!(onset >= 60 && onset + 20 <= a.case.steps.len(), "{onset} of {}", a.case.steps.len());
    // Every kind has a case per magnitude, clean runs come in every family, and
    // lengths reach 200,000 steps somewhere in the list.
    let specs: Vec<_> = indep::corpus(5000..5001).collect();
    // (rank_straggler needs several runs, stalled a clock: not in a single-run corpus; user_alert is no detector.)
    assert_eq!(specs.iter().filter(|s| s.0.is_some()).count(), 3 * (AlertKind::ALL.len() - 3));
    assert!([Family::Pretrain, Family::Rl, Family::Moe].iter().all(|f| specs.iter().any(|s| s.0.is_none() && s.1 == *f)));
}

#[test]
fn hold_out_corpus_is_seeded_with_its_own_step_schedule() {
    use health_eval::indep2;
    let a = indep2::generate(Some(AlertKind::GradExplosion), Family::Pretrain, 2, 7000);
    let b = indep2::generate(Some(AlertKind::GradExplosion), Family::Pretrain, 2, 7000);
    assert_eq!(a.case.steps, b.case.steps);
    assert_eq!(a.logged, b.logged);
    let onset = a.case.fault.as_ref().unwrap().onset as usize;
    assert!(onset >= 80 && onset + 25 <= a.case.steps.len(), "{onset} of {}", a.case.steps.len());
    // One (step, time) per point, steps strictly increasing (gaps allowed).
    assert_eq!(a.logged.len(), a.case.steps.len());
    assert!(a.logged.windows(2).all(|w| w[1].0 > w[0].0 && w[1].1 > w[0].1));
    let specs: Vec<_> = indep2::corpus(7000..7001).collect();
    assert_eq!(specs.iter().filter(|s| s.0.is_some()).count(), 3 * (AlertKind::ALL.len() - 3));
    assert_eq!(specs.iter().filter(|s| s.0.is_none()).count(), 6);
}

#[test]
fn real_logs_nan_at_its_step_and_no_critical_on_a_healthy_run() {
    use health_eval::real;
    for log in real::LOGS {
        let report = real::check(log).unwrap_or_else(|e| panic!("{}: {e}", log.file));
        assert!(report.points > 0, "{}: nothing read", log.file);
        let s = real::score(log, &report);
        if log.gap.is_some() {
            // A known gap, said in the report (docs/benchmarks.md): read, not yet right.
            continue;
        }
        assert_eq!(s.criticals_on_clean, 0, "{}: {:?}", log.file, s.alerts);
        if let Some((_, kinds)) = log.incident {
            // Short excerpts too: judged by the short-run rules before warm-up.
            assert!(s.latency.is_some(), "{}: incident missed: {:?}", log.file, s.alerts);
            if kinds.contains(&AlertKind::Nonfinite) {
                assert_eq!(s.latency, Some(0), "{}: {:?}", log.file, s.alerts);
            }
        }
    }
}

#[test]
fn conformance_twins_share_their_run_up_to_the_event_and_events_start_after_the_warmup() {
    use health_eval::conform::{generate, warmup_points, Level, Onset};
    for kind in [AlertKind::KlSpike, AlertKind::MemoryLeak, AlertKind::ExpertCollapse] {
        let faulty = generate(kind, Some(Level::PastWarn), Onset::Early, 10, 17000);
        let twin = generate(kind, None, Onset::Early, 10, 17000);
        let onset = faulty.case.fault.as_ref().unwrap().onset as usize;
        assert!(twin.case.fault.is_none() && onset >= warmup_points(kind, 10), "{kind}: onset {onset}");
        assert_eq!(faulty.case.steps[..onset], twin.case.steps[..onset], "{kind}");
        // Under its definition an event is a labelled benign one, not a fault.
        let under = generate(kind, Some(Level::UnderWarn), Onset::Late, 1, 17000);
        assert!(under.case.fault.is_none() && under.case.benign.iter().any(|b| b.what == "under_warn"));
    }
}
