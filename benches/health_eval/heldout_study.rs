//! A study corpus for reward hacking judged against a held-out score
//! (`-- heldout`, its own seeds): RL runs whose held-out score is logged the
//! ways trainers log one, written from how evaluations behave rather than from
//! the other generators, each faulty run with a clean twin (same run, same
//! noise, no fall).
//!
//! The score is an accuracy on an evaluation set of 16 to 5,000 problems
//! (binomial noise: a small set's accuracy wanders by several points between
//! evaluations), a pass@1 that starts near 0, or a reward model's signed
//! score on held-out prompts. It is logged every point, every 5-200 points,
//! or evaluated every 10-100 points and carried forward on every point in
//! between (a logger that repeats the last evaluation). Some evaluations fail
//! and log 0 (a timeout, a crashed sandbox). Clean runs: the score rises to a
//! plateau, keeps creeping up, gives back 3-12% of its level late (mild
//! overfitting), or dips by up to 15% for a stretch and recovers. The training
//! reward rises to its own plateau with noise. Faulty twins: from an onset at
//! 40-75% of the run the score falls to 60%, 40% or 15% of its level over 5-20%
//! of the run while the training reward holds (or keeps rising).
//!
//! v2: in half the runs the policy's true score also wanders between
//! evaluations with memory (AR(1), 0.9 or 0.98 from one evaluation to the
//! next, 3-8% of the score's rise): checkpoints a few hundred steps apart
//! differ in more than the evaluation set's noise, and neighbours alike.
//!
//! v3, from a third source (the draws above stay v2's): in about a third of
//! the runs the training reward and the held-out score dip together for 2-8%
//! of the run, by 30-70% of their rise, and climb back (a restart from an early
//! checkpoint, a bad stretch of data, a learning-rate spike): a benign event
//! that is no reward hacking, whatever the levels' spans. Half the runs have
//! Laplace noise on the reward and on a signed score; a quarter stop logging
//! the score for 10-25% of the run (an evaluation server down).
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const HELDOUT_STUDY_VERSION: u32 = 3;

pub struct HeldoutCase {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Score {
    /// An accuracy on a fixed evaluation set.
    Accuracy,
    /// pass@1 from near zero.
    PassAt1,
    /// A reward model's signed score on held-out prompts.
    SignedEvalReward,
}

/// A clean score's course after its rise (the reward-parts corpus shares it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trend {
    Plateau,
    Creeping,
    LateGiveBack,
    DipAndRecover,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cadence {
    /// Logged on every point.
    Every,
    /// Logged every k points.
    Sparse(usize),
    /// Evaluated every k points, the last value repeated on every point.
    CarriedForward(usize),
}

const SCORES: [Score; 3] = [Score::Accuracy, Score::PassAt1, Score::SignedEvalReward];

/// Per seed: each score kind at magnitudes 0-2, each with its clean twin, and
/// two clean runs more (`(score, magnitude, faulty, seed)`).
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (Score, usize, bool, u64)> {
    seeds.flat_map(|seed| {
        SCORES.into_iter().flat_map(move |s| (0..3usize).flat_map(move |m| [true, false].map(|f| (s, m, f, seed * 16 + m as u64)))).chain(SCORES.into_iter().flat_map(move |s| (3..5usize).map(move |m| (s, m, false, seed * 16 + m as u64))))
    })
}

const ACCURACY_NAMES: &[&str] = &["eval_acc", "eval/accuracy", "val_acc", "test/accuracy", "gsm8k/accuracy", "math500/acc", "eval_exact_match", "mmlu/acc", "eval/solve_rate"];
const PASS_NAMES: &[&str] = &["pass@1", "eval/pass@1", "humaneval/pass@1", "mbpp/pass@1", "livecodebench/pass@1"];
const SIGNED_NAMES: &[&str] = &["eval/reward", "eval_reward", "reward_gold", "val/score", "eval/rm_score"];

pub fn generate(score: Score, m: usize, faulty: bool, seed: u64) -> HeldoutCase {
    // Every draw is made whether the case is faulty or not: twins share them.
    let mut rng = Xo::new(seed.wrapping_mul(0xA24B_AED4_963E_E407) ^ ((score as u64) << 42) ^ 0x4E1D_0072);
    let n = rng.pick(&[300usize, 1_000, 3_000, 10_000, 30_000]);
    let every = rng.pick(&[1u64, 1, 2, 10]);
    let cadence = match rng.pick(&[0u8, 0, 1, 1, 1, 2]) {
        0 => Cadence::Every,
        1 => Cadence::Sparse(rng.pick(&[5usize, 10, 25, 50, 100, 200]).min(n / 8).max(1)),
        _ => Cadence::CarriedForward(rng.pick(&[10usize, 25, 50, 100]).min(n / 8).max(1)),
    };
    let trend = rng.pick(&[Trend::Plateau, Trend::Creeping, Trend::LateGiveBack, Trend::DipAndRecover]);
    let name = match score {
        Score::Accuracy => rng.pick(ACCURACY_NAMES),
        Score::PassAt1 => rng.pick(PASS_NAMES),
        Score::SignedEvalReward => rng.pick(SIGNED_NAMES),
    };
    // The evaluation set: its size sets an accuracy's noise.
    let set = rng.pick(&[16usize, 32, 64, 128, 500, 1_319, 5_000]);
    let (s0, s1) = match score {
        Score::Accuracy => (rng.range(0.05, 0.4), rng.range(0.45, 0.9)),
        Score::PassAt1 => (rng.range(0.0, 0.03), rng.range(0.08, 0.45)),
        Score::SignedEvalReward => (rng.range(-2.0, -0.3), rng.range(0.0, 1.5)),
    };
    // A signed score's evaluation noise: 2-10% of its rise.
    let signed_noise = rng.range(0.02, 0.1) * (s1 - s0);
    let s_tau = rng.range(0.05, 0.3) * n as f64;
    let creep = rng.range(0.03, 0.1);
    let give_back = rng.range(0.03, 0.12);
    let (dip_at, dip_len, dip) = (rng.range(0.3, 0.8), rng.range(0.02, 0.1), rng.range(0.05, 0.15));
    let fail_rate = rng.pick(&[0.0, 0.0, 0.01, 0.03]);
    // The training reward: rising to a plateau, noisy, holding or still rising.
    let (r0, r1) = (rng.range(-0.5, 0.3), rng.range(0.6, 2.0));
    let r_tau = rng.range(0.05, 0.25) * n as f64;
    let r_noise = rng.range(0.03, 0.15) * (r1 - r0);
    let r_late = rng.range(0.0, 0.1);
    // The fault: the score falls to `kept` of its level from the onset.
    let kept = [0.6, 0.4, 0.15][m.min(2)];
    let onset_x = rng.range(0.4, 0.75);
    let onset = ((onset_x * n as f64) as usize).min(n - 1);
    let fall_len = (rng.range(0.05, 0.2) * n as f64).max(1.0);
    // The wander, from its own source so that the draws above stay those of
    // v1: its memory between evaluations (0: none) and its size.
    let mut wander_rng = Xo::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((score as u64) << 40) ^ 0x3A7D_E4);
    let memory = wander_rng.pick(&[0.0, 0.0, 0.9, 0.98]);
    let wander_size = wander_rng.range(0.03, 0.08) * (s1 - s0).abs();
    let mut wander = wander_size * wander_rng.normal();
    // v3's draws.
    let mut v3 = Xo::new(seed.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ ((score as u64) << 38) ^ 0x5EED_0003);
    let joint_dip = v3.unit() < 0.35;
    let (jd_at, jd_len, jd_depth) = (v3.range(0.15, 0.7), v3.range(0.02, 0.08), v3.range(0.3, 0.7));
    let laplace = v3.unit() < 0.5;
    let gap = v3.unit() < 0.25;
    let (gap_at, gap_len) = (v3.range(0.2, 0.7), v3.range(0.1, 0.25));
    // A joint dip's depth at x: a fall over its first fifth, a climb back over the rest.
    let dip_now = |x: f64| {
        if !joint_dip || !(jd_at..jd_at + jd_len).contains(&x) {
            return 0.0;
        }
        let u = (x - jd_at) / jd_len;
        jd_depth * if u < 0.2 { u / 0.2 } else { (1.0 - u) / 0.8 }
    };
    let mut steps = Vec::with_capacity(n);
    let mut logged = Vec::with_capacity(n);
    let mut carried = None::<f64>;
    for i in 0..n {
        let t = i as f64;
        let x = t / n as f64;
        let z_reward = rng.normal();
        // Laplace noise of the same spread (its scale is sigma / sqrt 2).
        let mut draw_laplace = || {
            let u = v3.unit() - 0.5;
            -u.signum() * (1.0 - 2.0 * u.abs()).max(1e-12).ln() / std::f64::consts::SQRT_2
        };
        let z_reward = if laplace { draw_laplace() } else { z_reward };
        let rise_r = (1.0 - (-t / r_tau).exp()) + r_late * x;
        let reward = r0 + (r1 - r0) * (rise_r - dip_now(x) * rise_r) + r_noise * z_reward;
        let kl = 0.02 + 0.1 * x + 0.01 * rng.normal().abs();
        let entropy = 1.5 - 0.5 * x + 0.03 * rng.normal();
        let length = 300.0 + 100.0 * x + 20.0 * rng.normal();
        let mut row: Vec<(MetricName, f64)> = vec![(catalog::REWARD.into(), reward), (catalog::KL.into(), kl), (catalog::ENTROPY.into(), entropy), (catalog::RESPONSE_LEN.into(), length)];
        let (evaluate, log) = match cadence {
            Cadence::Every => (true, true),
            Cadence::Sparse(k) => (i % k == 0, i % k == 0),
            Cadence::CarriedForward(k) => (i % k == 0, true),
        };
        // Draws made on every point, evaluated or not, so twins stay aligned.
        let (z, fail) = (rng.normal(), rng.unit() < fail_rate);
        let z = if laplace && score == Score::SignedEvalReward { draw_laplace() } else { z };
        let in_gap = gap && (gap_at..gap_at + gap_len).contains(&x);
        if evaluate {
            // The true level: a rise to the plateau shaped by the trend.
            let rise = 1.0 - (-t / s_tau).exp();
            let mut shape = rise;
            match trend {
                Trend::Creeping => shape += creep * x,
                Trend::LateGiveBack if x > 0.6 => shape -= give_back * (x - 0.6) / 0.4,
                Trend::DipAndRecover if (dip_at..dip_at + dip_len).contains(&x) => shape -= dip * (std::f64::consts::PI * (x - dip_at) / dip_len).sin(),
                _ => {}
            }
            let shape = shape - dip_now(x) * shape;
            let mut level = s0 + (s1 - s0) * shape;
            if memory > 0.0 {
                wander = memory * wander + (1.0 - memory * memory).sqrt() * wander_size * wander_rng.normal();
                level += wander;
            }
            if faulty && i >= onset {
                let fallen = (1.0 - kept) * ((i - onset) as f64 / fall_len).min(1.0);
                // A signed score gives back its rise; an accuracy its level.
                level = if score == Score::SignedEvalReward { level - fallen * (level - s0) } else { level * (1.0 - fallen) };
            }
            let value = if fail {
                0.0
            } else if score == Score::SignedEvalReward {
                level + signed_noise * z
            } else {
                let p = level.clamp(0.0, 1.0);
                // A binomial accuracy: exact for small sets, its normal form for large.
                if set <= 128 {
                    let hits = (0..set).filter(|_| rng.unit() < p).count();
                    hits as f64 / set as f64
                } else {
                    (p + (p * (1.0 - p) / set as f64).sqrt() * z).clamp(0.0, 1.0)
                }
            };
            carried = Some(value);
        }
        if log && !in_gap {
            if let Some(v) = carried {
                row.push((MetricName::Borrowed(name), v));
            }
        }
        steps.push(row);
        let step = (i as u64 + 1) * every;
        logged.push((step, step as f64 * 0.4));
    }
    let mut benign = Vec::new();
    if trend == Trend::DipAndRecover {
        benign.push(Benign { what: "held_out_dip", step: (dip_at * n as f64) as u64 });
    }
    if joint_dip {
        benign.push(Benign { what: "joint_dip", step: (jd_at * n as f64) as u64 });
    }
    let fault = faulty.then(|| Fault { kind: AlertKind::RewardHacking, onset: onset as u64, magnitude: m });
    let cadence_name = match cadence {
        Cadence::Every => "every".to_owned(),
        Cadence::Sparse(k) => format!("sparse{k}"),
        Cadence::CarriedForward(k) => format!("carried{k}"),
    };
    let case_name = format!(
        "heldout-{score:?}-{}-s{seed}-n{n}-{}-{cadence_name}-set{set}-{trend:?}-fail{:.0}%-from{:.0}%-{:.2}to{:.2}{}",
        if faulty { format!("m{m}-kept{kept}") } else { format!("twin{m}") },
        name.replace('/', "_"),
        100.0 * fail_rate,
        100.0 * onset_x,
        s0,
        s1,
        if memory > 0.0 { format!("-wander{memory}") } else { String::new() }
    ) + &format!("{}{}{}", if joint_dip { format!("-jointdip{:.0}%at{:.0}%", 100.0 * jd_depth, 100.0 * jd_at) } else { String::new() }, if laplace { "-laplace" } else { "" }, if gap { "-gap" } else { "" });
    HeldoutCase { case: Case { name: case_name, family: Family::Rl, fault, benign, steps, partner: None }, logged }
}
