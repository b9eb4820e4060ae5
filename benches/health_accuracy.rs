//! Accuracy of the health detectors on the generated corpus (`health_eval::synth`),
//! scored by `health_eval::score`, next to a trivial fixed z-score baseline.
//! Defaults were tuned on the tune split (seeds 0..10); the test split (seeds
//! 1000..1010) is the one reported.
//!
//! cargo bench --bench health_accuracy [-- tune|test|both]
mod health_eval;

use health_eval::score::{run_baseline, run_rlmon, score, table};
use health_eval::synth::{corpus, GENERATOR_VERSION};

fn main() {
    let which = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_else(|| "test".into());
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
        println!("{}", table("### baseline: fixed z-score 4 over the last 50 points", &base));
        let points: usize = cases.iter().map(|c| c.steps.len() * if c.partner.is_some() { 2 } else { 1 }).sum();
        println!("rlmon detectors: {points} points in {:.2} s ({:.1} µs per point)", elapsed.as_secs_f64(), elapsed.as_secs_f64() * 1e6 / points as f64);
    }
}
