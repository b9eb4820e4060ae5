//! A study corpus for `slow_drift` (`-- drift`, its own seeds): losses and rewards
//! shaped the way real runs behave, written from how training runs are scheduled,
//! logged and fail, not from the other generators or the detector's defaults.
//!
//! Faulty runs: a pretraining or fine-tuning loss that stops improving and climbs
//! back, or an RL reward that slides back, starting at 20-80% of the run; the
//! climb linear, accelerating or in stairs, by 10-60% of the level the run would
//! have had (a loss still falling at the onset nets less over its best level),
//! the slide 25-90% of the reward's gain. Clean runs of each family: schedules
//! ending, late plateaus, a small late rise of 1-6% (what healthy seeds of one
//! model do), a one-off data switch that raises the loss and falls back, a reward
//! that plateaus noisily or dips and recovers.
//!
//! Runs of 500 to 200,000 points logged every 1-50 training steps, with
//! schedules (warm-up + cosine, step-down, warm-up/stable/decay, constant) and
//! noise (gaussian, Student-t tails, AR(1) with memory, regime changes of 1.5-3x).
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const DRIFT_STUDY_VERSION: u32 = 1;

/// A case with the (training step, wall time) its points were logged at.
pub struct DriftCase {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Pretrain,
    FineTune,
    Reward,
}

const SHAPES: [Shape; 3] = [Shape::Pretrain, Shape::FineTune, Shape::Reward];

/// Per seed: each shape at magnitudes 0-2 (faulty) and three clean runs.
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (Shape, Option<usize>, u64)> {
    seeds.flat_map(|seed| SHAPES.into_iter().flat_map(move |s| (0..6u64).map(move |i| (s, (i < 3).then_some(i as usize), seed * 16 + i))))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Schedule {
    WarmupCosine,
    StepDown,
    Wsd,
    Constant,
}

/// The learning rate's share of its peak at fraction `x` of the run.
fn lr(s: Schedule, x: f64, warmup: f64) -> f64 {
    if x < warmup {
        return x / warmup;
    }
    match s {
        Schedule::WarmupCosine => 0.1 + 0.9 * 0.5 * (1.0 + (std::f64::consts::PI * (x - warmup) / (1.0 - warmup)).cos()),
        Schedule::StepDown => {
            if x >= 0.85 {
                0.01
            } else if x >= 0.6 {
                0.1
            } else {
                1.0
            }
        }
        Schedule::Wsd => {
            if x < 0.85 {
                1.0
            } else {
                1.0 - 0.95 * (x - 0.85) / 0.15
            }
        }
        Schedule::Constant => 1.0,
    }
}

/// Noise of a logged point: gaussian or Student-t innovations through AR(1),
/// times a regime multiplier.
struct Noise {
    df: Option<u32>,
    phi: f64,
    scale: f64,
    state: f64,
}

impl Noise {
    fn new(rng: &mut Xo, lo: f64, hi: f64) -> Self {
        let df = rng.pick(&[None, Some(3u32), Some(5)]);
        Noise { df, phi: rng.pick(&[0.0, 0.5, 0.9, 0.98]), scale: rng.range(lo, hi), state: 0.0 }
    }

    fn next(&mut self, rng: &mut Xo, regime: f64) -> f64 {
        let z = match self.df {
            Some(df) => rng.student_t(df),
            None => rng.normal(),
        };
        self.state = self.phi * self.state + (1.0 - self.phi * self.phi).sqrt() * z * regime;
        self.scale * self.state
    }
}

/// How a drift unfolds over `x` in 0..1 of what is left of the run.
fn climb(kind: u8, stairs: f64, x: f64) -> f64 {
    match kind {
        0 => x,
        1 => x * x,
        _ => (x * stairs).floor() / stairs,
    }
}

pub fn generate(shape: Shape, m: Option<usize>, seed: u64) -> DriftCase {
    let mut rng = Xo::new(seed.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ ((shape as u64) << 40) ^ (m.map_or(7, |m| m as u64) << 50));
    let n = rng.pick(&[500usize, 500, 1_500, 1_500, 4_000, 4_000, 12_000, 40_000, 200_000]);
    let every = rng.pick(&[1u64, 5, 10, 25, 50]);
    let schedule = rng.pick(&[Schedule::WarmupCosine, Schedule::StepDown, Schedule::Wsd, Schedule::Constant]);
    let warmup = rng.range(0.005, 0.05);
    // Per-point noise: 0.4-3% of a loss (its log), 3-15% of a reward's gain; a
    // regime of 1.5-3x that for 2-10% of the run.
    let (lo, hi) = if shape == Shape::Reward { (0.03, 0.15) } else { (0.004, 0.03) };
    let mut noise = Noise::new(&mut rng, lo, hi);
    let (regime_at, regime_len, regime) = (rng.range(0.1, 0.9), rng.range(0.02, 0.1), rng.range(1.5, 3.0));
    let onset_x = rng.range(0.2, 0.8);
    let onset = (onset_x * n as f64) as usize;
    let how = rng.pick(&[0u8, 1, 2]);
    let stairs = rng.pick(&[3.0, 4.0, 6.0]);
    // Faulty: the nominal climb (a loss) or the share of the gain given back (a reward).
    let size = match (shape, m) {
        (Shape::Reward, Some(m)) => [rng.range(0.25, 0.4), rng.range(0.4, 0.6), rng.range(0.6, 0.9)][m],
        (_, Some(m)) => [rng.range(0.1, 0.18), rng.range(0.18, 0.35), rng.range(0.35, 0.6)][m],
        (_, None) => 0.0,
    };
    // Clean runs: one benign event each (plus the schedule's own).
    let clean_event = if m.is_none() { rng.pick(&[0u8, 1, 2, 3]) } else { 0 };
    let small_rise = rng.range(0.01, 0.06);
    // A data switch: +10-30% falling back over 1-5% of the run; a reward dip:
    // 5-15% of its gain for 2-6% of the run.
    let (switch_at, switch_up, switch_back) = (rng.range(0.3, 0.7), rng.range(0.1, 0.3), rng.range(0.01, 0.05));
    let (dip, dip_len) = (rng.range(0.05, 0.15), rng.range(0.02, 0.06));
    // Loss curves: a power law to a floor, the LR's annealing lowering it further.
    let floor = match shape {
        Shape::FineTune => rng.range(0.4, 1.5),
        _ => rng.range(1.8, 3.3),
    };
    let height = match shape {
        Shape::FineTune => rng.range(0.3, 1.5),
        _ => rng.range(2.0, 8.0),
    };
    let power = rng.range(0.3, 1.0);
    let t0 = rng.range(0.002, 0.05) * n as f64 + 3.0;
    let anneal = rng.range(0.02, 0.08);
    let (r0, r1, r_tau) = (rng.range(-1.0, 0.3), rng.range(0.6, 2.5), rng.range(0.05, 0.3) * n as f64);
    let mut benign = vec![Benign { what: "warmup_end", step: (warmup * n as f64) as u64 }, Benign { what: "regime_change", step: (regime_at * n as f64) as u64 }];
    if m.is_none() && clean_event == 2 && shape != Shape::Reward {
        benign.push(Benign { what: "data_switch", step: (switch_at * n as f64) as u64 });
    }
    let mut steps = Vec::with_capacity(n);
    let mut logged = Vec::with_capacity(n);
    // The rise over the best level (a loss) or the share of the gain given back
    // (a reward) the noiseless run reaches after the onset: what a drift shows.
    let (mut best_clean, mut first_clean, mut net) = (None::<f64>, None::<f64>, 0.0f64);
    for i in 0..n {
        let x = i as f64 / n as f64;
        let t = i as f64;
        let lr_now = lr(schedule, x, warmup);
        let reg = if (regime_at..regime_at + regime_len).contains(&x) { regime } else { 1.0 };
        let after = if i >= onset { (i - onset) as f64 / (n - onset) as f64 } else { -1.0 };
        let value = if shape == Shape::Reward {
            // A reward rising to a plateau; an LR drop lets it climb a little more.
            let gain = (r1 - r0) * (t / r_tau).tanh() * (1.0 + 0.08 * (1.0 - lr_now.min(1.0)));
            let mut r = r0 + gain;
            if m.is_some() && after >= 0.0 {
                r -= size * gain * climb(how, stairs, after);
            }
            if m.is_none() && clean_event == 1 {
                // A dip that recovers.
                let d = (x - switch_at) / dip_len;
                if (0.0..1.0).contains(&d) {
                    r -= dip * gain * (std::f64::consts::PI * d).sin();
                }
            }
            // How much of its gain so far the reward has given back (noiseless).
            let (best, first) = (best_clean.get_or_insert(r), *first_clean.get_or_insert(r));
            *best = best.max(r);
            if i >= onset {
                net = net.max((*best - r) / (*best - first).max(1e-9));
            }
            r + noise.next(&mut rng, reg) * (r1 - r0)
        } else {
            let mut level = floor + height * (1.0 + t / t0).powf(-power);
            level *= 1.0 - anneal * (1.0 - lr_now.min(1.0));
            if x < warmup {
                // The warm-up: the loss barely moves, with a bump as the LR rises.
                level *= 1.0 + 0.1 * (std::f64::consts::PI * x / warmup).sin();
            }
            if m.is_some() && after >= 0.0 {
                level *= 1.0 + size * climb(how, stairs, after);
            }
            match (m, clean_event) {
                (None, 1) if x > 0.7 => level *= 1.0 + small_rise * (x - 0.7) / 0.3,
                (None, 2) => {
                    // A data switch: the loss jumps, then falls back.
                    let d = (x - switch_at) / switch_back;
                    if d >= 0.0 {
                        level *= 1.0 + switch_up * (-3.0 * d).exp();
                    }
                }
                (None, 3) if i % 97 == 41 => level *= rng.range(1.5, 4.0),
                _ => {}
            }
            // How far the loss is above its best so far (noiseless; a data switch
            // and one-step bumps left out).
            let best = best_clean.get_or_insert(level);
            *best = best.min(level);
            if i >= onset && (m.is_some() || clean_event < 2) {
                net = net.max(level / *best - 1.0);
            }
            level * noise.next(&mut rng, reg).exp()
        };
        let metric = if shape == Shape::Reward { catalog::REWARD } else { catalog::LOSS };
        steps.push(vec![(MetricName::Borrowed(metric), value)]);
        let step = (i as u64 + 1) * every;
        logged.push((step, step as f64 * 0.3));
    }
    let fault = m.map(|m| Fault { kind: AlertKind::SlowDrift, onset: onset as u64, magnitude: m });
    let clean = ["plain", "small-rise", "data-switch", "bumps"][clean_event as usize];
    let name = format!(
        "drift-{:?}-{}-net{:.0}%-s{seed}-n{n}-every{every}-{schedule:?}-phi{}-{}",
        shape,
        m.map_or(format!("clean-{clean}"), |m| format!("m{m}-{}{:.0}%-from{:.0}%", ["linear", "accel", "stairs"][how as usize], 100.0 * size, 100.0 * onset_x)),
        100.0 * net,
        noise.phi,
        noise.df.map_or("gauss".to_owned(), |d| format!("t{d}"))
    );
    let family = if shape == Shape::Reward { Family::Rl } else { Family::Pretrain };
    DriftCase { case: Case { name, family, fault, benign, steps, partner: None }, logged }
}
