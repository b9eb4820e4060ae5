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
