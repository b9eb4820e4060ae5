//! A study corpus for reward hacking inside a composite reward (`-- parts`, its
//! own seeds): GRPO-style runs whose reward is the sum of a verifier's
//! correctness part and parts a policy can please without solving the task (a
//! format reward, a length reward), each part logged on every step as the mean
//! over the step's completions, as TRL logs `rewards/<function>/mean`. No
//! held-out score is logged: the correctness part is the only witness.
//!
//! Clean runs: the correctness rate rises to a plateau, keeps creeping up, gives
//! back 3-12% of its level late, or dips by up to 15% and recovers; the format
//! part saturates early. Faulty twins (same draws, same noise): from an onset at
//! 40-75% of the run the correctness rate falls to 60%, 40% or 15% of its level
//! over 5-20% of the run while the format part (weighted 1-2x) climbs to its
//! ceiling, so the total reward holds or rises. Half the runs' true rate wanders
//! with memory (AR(1) 0.9, 3-8% of its rise); the step's completions number
//! 16-512, so the logged means carry binomial noise.
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::heldout_study::Trend;
use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const REWARD_PARTS_VERSION: u32 = 1;

pub struct PartsCase {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
}

/// Per seed: magnitudes 0-2, each with its clean twin, and two clean runs more
/// (`(magnitude, faulty, seed)`).
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (usize, bool, u64)> {
    seeds.flat_map(|seed| (0..3usize).flat_map(move |m| [true, false].map(|f| (m, f, seed * 8 + m as u64))).chain((3..5usize).map(move |m| (m, false, seed * 8 + m as u64))))
}

/// How trainers name the parts: TRL's `rewards/<function>/mean` (and its older
/// `rewards/<function>`), reward functions as users write them.
const CORRECT_NAMES: &[&str] = &["rewards/accuracy_reward/mean", "rewards/accuracy_reward", "rewards/correctness_reward_func/mean", "rewards/correctness_reward_func", "rewards/exact_match_reward/mean"];
const FORMAT_NAMES: &[&str] = &["rewards/format_reward/mean", "rewards/format_reward", "rewards/strict_format_reward_func/mean", "rewards/xmlcount_reward_func"];

fn binomial_mean(rng: &mut Xo, p: f64, n: usize) -> f64 {
    let p = p.clamp(0.0, 1.0);
    if n <= 64 {
        (0..n).filter(|_| rng.unit() < p).count() as f64 / n as f64
    } else {
        (p + (p * (1.0 - p) / n as f64).sqrt() * rng.normal()).clamp(0.0, 1.0)
    }
}

pub fn generate(m: usize, faulty: bool, seed: u64) -> PartsCase {
    // Every draw is made whether the case is faulty or not: twins share them.
    let mut rng = Xo::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x9A27_5EED);
    let n = rng.pick(&[300usize, 600, 1_000, 3_000, 10_000]);
    let completions = rng.pick(&[16usize, 32, 64, 128, 512]);
    let trend = rng.pick(&[Trend::Plateau, Trend::Creeping, Trend::LateGiveBack, Trend::DipAndRecover]);
    let (correct_name, format_name) = (rng.pick(CORRECT_NAMES), rng.pick(FORMAT_NAMES));
    let (c0, c1) = (rng.range(0.02, 0.3), rng.range(0.35, 0.9));
    let c_tau = rng.range(0.05, 0.3) * n as f64;
    let (f0, f1) = (rng.range(0.0, 0.3), rng.range(0.6, 0.95));
    let f_tau = rng.range(0.02, 0.1) * n as f64;
    let format_weight = rng.pick(&[1.0, 1.0, 1.5, 2.0]);
    let creep = rng.range(0.03, 0.1);
    let give_back = rng.range(0.03, 0.12);
    let (dip_at, dip_len, dip) = (rng.range(0.3, 0.8), rng.range(0.02, 0.1), rng.range(0.05, 0.15));
    let kept = [0.6, 0.4, 0.15][m.min(2)];
    let onset_x = rng.range(0.4, 0.75);
    let onset = ((onset_x * n as f64) as usize).min(n - 1);
    let fall_len = (rng.range(0.05, 0.2) * n as f64).max(1.0);
    let memory: f64 = rng.pick(&[0.0, 0.9]);
    let wander_size = rng.range(0.03, 0.08) * (c1 - c0);
    let mut wander = 0.0;
    let mut steps = Vec::with_capacity(n);
    let mut logged = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        let x = t / n as f64;
        let mut shape = 1.0 - (-t / c_tau).exp();
        match trend {
            Trend::Creeping => shape += creep * x,
            Trend::LateGiveBack if x > 0.6 => shape -= give_back * (x - 0.6) / 0.4,
            Trend::DipAndRecover if (dip_at..dip_at + dip_len).contains(&x) => shape -= dip * (std::f64::consts::PI * (x - dip_at) / dip_len).sin(),
            _ => {}
        }
        wander = memory * wander + (1.0 - memory * memory).sqrt() * wander_size * rng.normal();
        let mut p_correct = c0 + (c1 - c0) * shape + if memory > 0.0 { wander } else { 0.0 };
        let mut p_format = f0 + (f1 - f0) * (1.0 - (-t / f_tau).exp());
        if faulty && i >= onset {
            let k = ((i - onset) as f64 / fall_len).min(1.0);
            p_correct *= 1.0 - (1.0 - kept) * k;
            p_format += (0.99 - p_format) * k;
        }
        let correct = binomial_mean(&mut rng, p_correct, completions);
        let format = binomial_mean(&mut rng, p_format, completions);
        let reward = correct + format_weight * format;
        let kl = 0.001 + 0.02 * x + 0.002 * rng.normal().abs();
        let entropy = 0.6 - 0.2 * x + 0.02 * rng.normal();
        let length = 250.0 + 50.0 * x + 15.0 * rng.normal();
        steps.push(vec![
            (catalog::REWARD.into(), reward),
            (MetricName::Borrowed(correct_name), correct),
            (MetricName::Borrowed(format_name), format),
            (catalog::KL.into(), kl),
            (catalog::ENTROPY.into(), entropy),
            (catalog::RESPONSE_LEN.into(), length),
        ]);
        let step = i as u64 + 1;
        logged.push((step, step as f64 * 2.0));
    }
    let mut benign = Vec::new();
    if trend == Trend::DipAndRecover {
        benign.push(Benign { what: "correctness_dip", step: (dip_at * n as f64) as u64 });
    }
    let fault = faulty.then(|| Fault { kind: AlertKind::RewardHacking, onset: onset as u64, magnitude: m });
    let name = format!(
        "parts-{}-s{seed}-n{n}-{}-c{completions}-{trend:?}-w{format_weight}-from{:.0}%-{:.2}to{:.2}{}",
        if faulty { format!("m{m}-kept{kept}") } else { format!("twin{m}") },
        correct_name.replace('/', "_"),
        100.0 * onset_x,
        c0,
        c1,
        if memory > 0.0 { "-wander" } else { "" }
    );
    PartsCase { case: Case { name, family: Family::Rl, fault, benign, steps, partner: None }, logged }
}
