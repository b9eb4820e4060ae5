//! The conformance corpus: events written from the README's alert table alone
//! (each kind's "warn when" and "critical when"), not from the detectors' code,
//! placed just past each definition and just under it, across metric levels over
//! four orders of magnitude, logging strides 1-100, run lengths 100-200,000,
//! onsets right after the kind's warm-up and late, and noise from quiet to heavy
//! (Gaussian, Student-t 3, AR(1) 0.9), each faulty run with a clean twin.
//!
//! Every event's size is a log distance from the metric's level: the README's
//! threshold (a ratio or a share) as a log distance, raised to the series' own
//! noise floor where the README has one (the z >= 4 of loss_spike; the tail rule
//! of a rise: twice the median's distance to the 95% quantile; the grad norm's
//! 1.5x its 99% rise once 1,000 points are judged). Four levels per cell:
//! - `under_warn`: 0.5-0.8x the warn distance (must stay quiet);
//! - `past_warn`: 1.1-2x the warn distance, kept under the critical one (must warn);
//! - `under_crit`: 0.5-0.8x the critical distance, at least 1.1x the warn one
//!   (must warn; critical only by another clause of the row);
//! - `past_crit`: 1.1-2x the critical distance (must reach critical).
//!
//! `slow_drift` has its own studies; `reward_hacking`, `nondeterminism`,
//! `run_divergence` and `rank_straggler` (several metrics, pairs, or ranks of a
//! job) are not generated here.
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const CONFORM_VERSION: u32 = 1;

pub const KINDS: [AlertKind; 12] = [
    AlertKind::LossSpike,
    AlertKind::LossDivergence,
    AlertKind::Nonfinite,
    AlertKind::GradExplosion,
    AlertKind::GradVanishing,
    AlertKind::KlSpike,
    AlertKind::KlRunaway,
    AlertKind::RewardSaturation,
    AlertKind::EntropyCollapse,
    AlertKind::MemoryLeak,
    AlertKind::ExpertCollapse,
    AlertKind::ThroughputRegression,
];

/// Where an event sits against the README's definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    UnderWarn,
    PastWarn,
    UnderCrit,
    PastCrit,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::UnderWarn, Level::PastWarn, Level::UnderCrit, Level::PastCrit];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::UnderWarn => "under_warn",
            Level::PastWarn => "past_warn",
            Level::UnderCrit => "under_crit",
            Level::PastCrit => "past_crit",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Onset {
    Early,
    Late,
}

pub const STRIDES: [u64; 3] = [1, 10, 100];

/// One generated run and where it sits in the study's cells.
pub struct ConformCase {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
    pub mem_total: Option<f64>,
    pub kind: AlertKind,
    /// `None`: the clean twin of a faulty run.
    pub level: Option<Level>,
    /// The metric's level as a quarter of its four decades (0-3).
    pub scale_bin: usize,
    pub stride: u64,
    pub onset: Onset,
}

/// Per seed and kind: each level x onset x stride, then a clean twin per onset x
/// stride (the same draws, no event). (kind, level or None, onset, stride, case seed).
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (AlertKind, Option<Level>, Onset, u64, u64)> {
    seeds.flat_map(|seed| {
        KINDS.into_iter().flat_map(move |k| {
            let levels = Level::ALL.into_iter().map(Some).chain(std::iter::once(None));
            levels.flat_map(move |level| {
                [Onset::Early, Onset::Late].into_iter().flat_map(move |onset| STRIDES.into_iter().map(move |stride| (k, level, onset, stride, seed)))
            })
        })
    })
}

/// Noise on the log scale with a robust sigma (MAD-based) of `sigma`.
#[derive(Debug, Clone, Copy)]
enum NoiseKind {
    Quiet,
    Gaussian,
    StudentT3,
    Ar09,
}

struct Noise {
    kind: NoiseKind,
    sigma: f64,
    state: f64,
}

/// A unit-variance Student-t 3 draw has a MAD-based sigma of 0.655.
const T3_ROBUST_SIGMA: f64 = 0.655;

impl Noise {
    fn new(rng: &mut Xo, lo: f64, hi: f64) -> Self {
        let kind = rng.pick(&[NoiseKind::Quiet, NoiseKind::Gaussian, NoiseKind::StudentT3, NoiseKind::Ar09]);
        let sigma = match kind {
            NoiseKind::Quiet => rng.range(lo * 0.1, lo * 0.4),
            _ => rng.range(lo, hi),
        };
        Noise { kind, sigma, state: 0.0 }
    }

    fn next(&mut self, rng: &mut Xo) -> f64 {
        match self.kind {
            NoiseKind::Quiet | NoiseKind::Gaussian => self.sigma * rng.normal(),
            NoiseKind::StudentT3 => self.sigma * rng.student_t(3) / T3_ROBUST_SIGMA,
            NoiseKind::Ar09 => {
                self.state = 0.9 * self.state + (1.0f64 - 0.81).sqrt() * rng.normal();
                self.sigma * self.state
            }
        }
    }

    /// The `q` quantile of the noise in sigmas (0.95 or 0.99).
    fn quantile(&self, q: f64) -> f64 {
        let normal = if q >= 0.99 { 2.326 } else { 1.645 };
        match self.kind {
            // t3's 95% and 99% quantiles (2.353, 4.541) at unit variance, in robust sigmas.
            NoiseKind::StudentT3 => (if q >= 0.99 { 4.541 } else { 2.353 }) * (1.0f64 / 3.0).sqrt() / T3_ROBUST_SIGMA,
            _ => normal,
        }
    }

    /// The README's tail rule for a rise: twice the distance from the median to the 95% quantile.
    fn tail(&self) -> f64 {
        2.0 * self.quantile(0.95) * self.sigma
    }

    fn label(&self) -> String {
        format!("{:?}{:.3}", self.kind, self.sigma)
    }
}

/// The run's shape: length, stride, onset (a point index) and the level's scale.
struct Shape {
    n: usize,
    stride: u64,
    onset: usize,
}

/// Points a kind waits before it may alert (its warm-up as the README states it).
pub fn warmup_points(kind: AlertKind, stride: u64) -> usize {
    match kind {
        AlertKind::LossDivergence => 50,
        AlertKind::KlRunaway => 80,
        AlertKind::RewardSaturation => 40,
        AlertKind::EntropyCollapse => 30,
        AlertKind::MemoryLeak => 240,
        AlertKind::ExpertCollapse => 20usize.max((100 / stride) as usize),
        AlertKind::Nonfinite => 0,
        _ => 20,
    }
}

fn shape(rng: &mut Xo, kind: AlertKind, onset: Onset, stride: u64, long: bool, event_len: usize) -> Shape {
    let n = if long { 200_000 } else { rng.pick(&[100usize, 150, 300, 1_000, 3_000, 10_000, 30_000]) };
    let warm = warmup_points(kind, stride) + 3;
    let room = event_len + 10;
    let n = n.max(warm + room + 20);
    let onset = match onset {
        Onset::Early => warm + (rng.unit() * 8.0) as usize,
        Onset::Late => n - room - (rng.unit() * (0.03 * n as f64)) as usize,
    };
    Shape { n, stride, onset: onset.max(warm) }
}

/// A log distance `f` times the threshold distance for the level.
fn distance(rng: &mut Xo, level: Level, warn: f64, crit: f64) -> f64 {
    match level {
        Level::UnderWarn => rng.range(0.5, 0.8) * warn,
        Level::PastWarn => rng.range(1.1, 2.0f64.min(0.9 * crit / warn).max(1.15)) * warn,
        Level::UnderCrit => (rng.range(0.5, 0.8) * crit).max(1.1 * warn),
        Level::PastCrit => rng.range(1.1, 2.0) * crit,
    }
}

/// A level over four decades from `lo`: (level, its quarter 0-3).
fn scaled(rng: &mut Xo, lo: f64) -> (f64, usize) {
    let u = rng.unit();
    (lo * 10f64.powf(4.0 * u), ((u * 4.0) as usize).min(3))
}

type Rows = Vec<Vec<(MetricName, f64)>>;

/// What one kind's generator returns besides its rows: a name, the family, the benign events, the memory total.
struct Made {
    name: String,
    family: Family,
    benign: Vec<Benign>,
    mem_total: Option<f64>,
    scale_bin: usize,
}

pub fn generate(kind: AlertKind, level: Option<Level>, onset: Onset, stride: u64, seed: u64) -> ConformCase {
    // A faulty run and its clean twin share every draw: the twin's seed ignores the level.
    let cell = (onset == Onset::Late) as u64 * 8 + stride;
    let mut rng = Xo::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((kind as u64) << 40) ^ (cell << 20) ^ (level.map_or(9, |l| l as u64) << 8) ^ 0xC0F0_0009);
    // The clean twin of a level: the twin uses the past_warn draws.
    let twin_level = level.unwrap_or(Level::PastWarn);
    if level.is_none() {
        rng = Xo::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((kind as u64) << 40) ^ (cell << 20) ^ ((Level::PastWarn as u64) << 8) ^ 0xC0F0_0009);
    }
    // One run per kind and seed is 200,000 points long: past_warn, late, stride 1 (and its twin).
    let long = twin_level == Level::PastWarn && onset == Onset::Late && stride == 1;
    let made = match kind {
        AlertKind::LossSpike => loss_spike(&mut rng, twin_level, level.is_some(), onset, stride, long),
        AlertKind::LossDivergence => loss_divergence(&mut rng, twin_level, level.is_some(), onset, stride, long),
        AlertKind::Nonfinite => nonfinite(&mut rng, twin_level, level.is_some(), onset, stride, long),
        AlertKind::GradExplosion | AlertKind::KlSpike => ratio_spike(&mut rng, kind, twin_level, level.is_some(), onset, stride, long),
        AlertKind::GradVanishing => grad_vanishing(&mut rng, twin_level, level.is_some(), onset, stride, long),
        AlertKind::KlRunaway => kl_runaway(&mut rng, twin_level, level.is_some(), onset, stride, long),
        AlertKind::RewardSaturation => reward_saturation(&mut rng, twin_level, level.is_some(), onset, stride, long),
        AlertKind::EntropyCollapse => entropy_collapse(&mut rng, twin_level, level.is_some(), onset, stride, long),
        AlertKind::MemoryLeak => memory_leak(&mut rng, twin_level, level.is_some(), onset, stride, long),
        AlertKind::ExpertCollapse => expert_collapse(&mut rng, twin_level, level.is_some(), onset, stride, long),
        _ => throughput(&mut rng, twin_level, level.is_some(), onset, stride, long),
    };
    let ((rows, at), m) = made;
    let n = rows.len();
    let logged: Vec<(u64, f64)> = (0..n).map(|i| (i as u64 * stride, i as f64 * stride as f64 * 0.5)).collect();
    // Only past-the-definition events are faults; an under_warn event is a labelled benign one.
    let fault = match level {
        Some(Level::UnderWarn) | None => None,
        Some(l) => Some(Fault { kind, onset: at as u64, magnitude: l as usize - 1 }),
    };
    let mut benign = m.benign;
    if level == Some(Level::UnderWarn) {
        benign.push(Benign { what: "under_warn", step: at as u64 });
    }
    let tag = level.map_or("clean", |l| l.as_str());
    let name = format!("conform-{kind}-{tag}-{}-every{stride}-s{seed}-n{n}-at{at}-{}", if onset == Onset::Early { "early" } else { "late" }, m.name);
    ConformCase { case: Case { name, family: m.family, fault, benign, steps: rows, partner: None }, logged, mem_total: m.mem_total, kind, level, scale_bin: m.scale_bin, stride, onset }
}

/// Rows and the event's onset (a point index), with the rest of the run's description.
type Generated = ((Rows, usize), Made);

fn made(name: String, family: Family, benign: Vec<Benign>, mem_total: Option<f64>, scale_bin: usize) -> Made {
    Made { name, family, benign, mem_total, scale_bin }
}

/// A pretraining loss: falling from `init` times its level to the level, with noise.
fn loss_curve(t: f64, level: f64, init: f64, tau: f64) -> f64 {
    level * (1.0 + (init - 1.0) * (-t / tau).exp())
}

/// loss_spike: loss at 1.4x its trailing median and z >= 4 (log scale) for 2+ points; critical 3x.
fn loss_spike(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let len = rng.pick(&[2usize, 3, 4]);
    let s = shape(rng, AlertKind::LossSpike, onset, stride, long, len);
    let (lvl, bin) = scaled(rng, 0.02);
    // Far enough from its start that 50% of the way back is above 3x.
    let init = rng.range(8.0, 12.0);
    let tau = rng.range(0.01, 0.05) * s.n as f64 + 3.0;
    let mut noise = Noise::new(rng, 0.01, 0.08);
    let floor = (4.0 * noise.sigma).max(noise.tail());
    let d = distance(rng, level, 1.4f64.ln().max(floor), 3.0f64.ln().max(floor));
    // What the README measures a spike from: the trailing median of the last 100
    // points, or while the loss still falls, the newest quarter's once 40 are held.
    let reference = |at: usize| {
        let from = at.saturating_sub(100);
        let mut w: Vec<f64> = (from..at).map(|i| loss_curve(i as f64, lvl, init, tau)).collect();
        if w.len() >= 40 {
            w = w.split_off(w.len() - w.len() / 4);
        }
        w.sort_by(f64::total_cmp);
        w[w.len() / 2].max(loss_curve(at as f64, lvl, init, tau))
    };
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let mut v = loss_curve(i as f64, lvl, init, tau) * noise.next(rng).exp();
        if faulty && i >= s.onset && i < s.onset + len {
            v = reference(s.onset) * (d + 0.2 * noise.next(rng)).exp();
        }
        rows.push(vec![(catalog::LOSS.into(), v)]);
    }
    ((rows, s.onset), made(format!("level{lvl:.3}-{}-x{:.2}-len{len}", noise.label(), d.exp()), Family::Pretrain, vec![], None, bin))
}

/// loss_divergence: smoothed loss 1.5x its best smoothed level and rising, for 5
/// points; critical 3x (or half way back to its start: the start is far above).
fn loss_divergence(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let ramp = rng.pick(&[10usize, 20, 40]);
    let s = shape(rng, AlertKind::LossDivergence, onset, stride, long, 2 * ramp + 10);
    let (lvl, bin) = scaled(rng, 0.02);
    let init = rng.range(8.0, 12.0);
    let tau = rng.range(0.005, 0.02) * s.n as f64 + 3.0;
    let mut noise = Noise::new(rng, 0.01, 0.08);
    let d = distance(rng, level, 1.5f64.ln(), 3.0f64.ln());
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let base = loss_curve(i as f64, lvl, init, tau);
        // The smoothed best: the curve where the event starts.
        let up = if faulty && i >= s.onset {
            let x = (i - s.onset) as f64 / ramp as f64;
            // Ramps to the distance, then goes on rising (a twentieth more), then holds.
            d * x.min(1.0) + 0.05 * d * (x - 1.0).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let v = if up > 0.0 { loss_curve(s.onset as f64, lvl, init, tau) * up.exp() } else { base };
        rows.push(vec![(catalog::LOSS.into(), v * noise.next(rng).exp())]);
    }
    ((rows, s.onset), made(format!("level{lvl:.3}-{}-x{:.2}-ramp{ramp}", noise.label(), d.exp()), Family::Pretrain, vec![], None, bin))
}

/// nonfinite: a NaN or Inf is critical at its step; a huge finite value is not nonfinite.
fn nonfinite(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let s = shape(rng, AlertKind::Nonfinite, onset, stride, long, 1);
    let (lvl, bin) = scaled(rng, 0.02);
    let mut noise = Noise::new(rng, 0.01, 0.08);
    let which = rng.pick(&[catalog::LOSS, catalog::GRAD_NORM]);
    let bad = match level {
        Level::UnderWarn => 1e6,
        _ => rng.pick(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY]),
    };
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let loss = loss_curve(i as f64, lvl, 5.0, 50.0) * noise.next(rng).exp();
        let grad = lvl * 0.5 * noise.next(rng).exp();
        let mut row: Vec<(MetricName, f64)> = vec![(catalog::LOSS.into(), loss), (catalog::GRAD_NORM.into(), grad)];
        if faulty && i == s.onset {
            row.iter_mut().filter(|(n, _)| n == which).for_each(|(_, v)| *v *= bad);
        }
        rows.push(row);
    }
    ((rows, s.onset), made(format!("{which}-x{bad}"), Family::Pretrain, vec![], None, bin))
}

/// grad_explosion (2.5x its trailing median for 2 points, but under 4.5x only
/// once it has lasted 6; critical 10x) and kl_spike (3x; critical 10x): a rise
/// of a few points on a flat level.
fn ratio_spike(rng: &mut Xo, kind: AlertKind, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let grad = kind == AlertKind::GradExplosion;
    let len = if grad { rng.pick(&[2usize, 3, 5, 8]) } else { rng.pick(&[2usize, 3, 5]) };
    let s = shape(rng, kind, onset, stride, long, len);
    let (lvl, bin) = scaled(rng, if grad { 0.01 } else { 0.001 });
    let mut noise = Noise::new(rng, 0.03, 0.15);
    // The grad norm's own 99% rise, once 1,000 points are judged; a KL's too when
    // it is judged at its own scale (a quarter of its level under the 0.01 floor).
    let own_scale = grad || 0.25 * lvl < KL_READ_FLOOR;
    let own = if own_scale && s.onset > 1_200 { 1.5 * noise.quantile(0.99) * noise.sigma } else { 0.0 };
    let floor = noise.tail().max(own);
    let (warn, crit) = match (grad, len) {
        (true, 6..) => (2.5f64, 10.0f64),
        (true, _) => (4.5, 10.0),
        (false, _) => (3.0, 10.0),
    };
    let d = distance(rng, level, warn.ln().max(floor), crit.ln().max(floor));
    // The README reads a KL with a floor added: 0.01, or a quarter of its level when less.
    let d = if grad { d } else { raw_rise(d, lvl, KL_READ_FLOOR.min(0.25 * lvl)) };
    let ramp = 0.02 * s.onset as f64 + 3.0;
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let t = i as f64;
        // A grad norm falls early in training; a KL ramps up from near zero.
        let base = if grad { lvl * (1.0 + 2.0 * (-t / ramp).exp()) } else { lvl * (1.0 - (-t / ramp).exp()).max(0.05) };
        let mut v = base * noise.next(rng).exp();
        if faulty && i >= s.onset && i < s.onset + len {
            v = base * (d + 0.2 * noise.next(rng)).exp();
        }
        let row: Vec<(MetricName, f64)> = if grad {
            vec![(catalog::LOSS.into(), 2.0 + 0.01 * rng.normal()), (catalog::GRAD_NORM.into(), v)]
        } else {
            vec![(catalog::KL.into(), v), (catalog::REWARD.into(), 0.1 * rng.normal())]
        };
        rows.push(row);
    }
    let family = if grad { Family::Pretrain } else { Family::Rl };
    let benign = if grad { vec![] } else { vec![Benign { what: "kl_ramp", step: 0 }] };
    ((rows, s.onset), made(format!("level{lvl:.4}-{}-x{:.2}-len{len}", noise.label(), d.exp()), family, benign, None, bin))
}

/// The floor the README adds to a KL before its ratios are read.
const KL_READ_FLOOR: f64 = 0.01;

/// The rise (a log distance) of a raw value at `lvl` whose ratio, read with `floor`
/// added to the value and to its level, is e^d.
fn raw_rise(d: f64, lvl: f64, floor: f64) -> f64 {
    ((d.exp() * (lvl + floor) - floor) / lvl).ln()
}

/// grad_vanishing: grad norm below 1% of its trailing median for 5 points; critical 0.01%.
fn grad_vanishing(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let len = rng.pick(&[5usize, 7, 12]);
    let s = shape(rng, AlertKind::GradVanishing, onset, stride, long, len);
    let (lvl, bin) = scaled(rng, 0.01);
    let mut noise = Noise::new(rng, 0.03, 0.15);
    let d = distance(rng, level, 100f64.ln(), 1e4f64.ln());
    let zero = level == Level::PastCrit && rng.unit() < 0.25;
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let mut v = lvl * noise.next(rng).exp();
        if faulty && i >= s.onset && i < s.onset + len {
            v = if zero { 0.0 } else { lvl * (-d + 0.2 * noise.next(rng)).exp() };
        }
        rows.push(vec![(catalog::LOSS.into(), 2.0 + 0.01 * rng.normal()), (catalog::GRAD_NORM.into(), v)]);
    }
    ((rows, s.onset), made(format!("level{lvl:.4}-{}-share{:.2e}-len{len}", noise.label(), if zero { 0.0 } else { (-d).exp() }), Family::Pretrain, vec![], None, bin))
}

/// kl_runaway: recent KL 2x its median over 200 points, climbing, above 3 robust
/// sigmas of its log noise, for 5 points; critical 5x. A climb over 20-80 points
/// that goes on rising.
fn kl_runaway(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let ramp = rng.pick(&[20usize, 40, 80]);
    let s = shape(rng, AlertKind::KlRunaway, onset, stride, long, ramp + 20);
    let (lvl, bin) = scaled(rng, 0.001);
    let mut noise = Noise::new(rng, 0.03, 0.15);
    let floor = 3.0 * noise.sigma;
    let d = distance(rng, level, 2f64.ln().max(floor), 5f64.ln().max(floor));
    // The README reads the KL with 0.01 added: the raw rise that makes growth e^d so read.
    let d_raw = raw_rise(d, lvl, KL_READ_FLOOR);
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let t = i as f64;
        let base = lvl * (1.0 - (-t / 10.0).exp()).max(0.05);
        let up = if faulty && i >= s.onset { d_raw * ((i - s.onset) as f64 / ramp as f64).min(1.0) } else { 0.0 };
        let kl = base * (up + noise.next(rng)).exp();
        rows.push(vec![(catalog::KL.into(), kl), (catalog::REWARD.into(), 0.1 * rng.normal())]);
    }
    ((rows, s.onset), made(format!("level{lvl:.4}-{}-x{:.2}-raw{:.2}-ramp{ramp}", noise.label(), d.exp(), d_raw.exp()), Family::Rl, vec![Benign { what: "kl_ramp", step: 0 }], None, bin))
}

/// reward_saturation: reward at its ceiling with its spread (median of 10 points)
/// at 15% of its past level; critical 3%. Signed rewards, with or without reward_std.
fn reward_saturation(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let s = shape(rng, AlertKind::RewardSaturation, onset, stride, long, 25);
    let (width, bin) = scaled(rng, 0.01);
    let bound = rng.pick(&[0.0, -0.5, 1.0, -10.0, 5.0]) * width.max(1.0);
    let start = bound - width;
    let with_std = rng.unit() < 0.7;
    let std0 = rng.range(0.1, 0.3) * width;
    let mut noise = Noise::new(rng, 0.03, 0.15);
    let d = distance(rng, level, (1.0f64 / 0.15).ln(), (1.0f64 / 0.03).ln());
    let tau = 0.3 * s.onset as f64 + 5.0;
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let t = i as f64;
        // Climbs towards 70% of the way to its bound; the spread stays.
        let mut mean = start + 0.7 * width * (t / tau).tanh();
        let mut std = std0 * noise.next(rng).exp();
        if faulty && i >= s.onset {
            let x = ((i - s.onset + 1) as f64 / 3.0).min(1.0);
            mean += x * (bound - mean);
            std *= (-d * x).exp();
        }
        // A batch mean of clipped rewards sits under its bound by about its spread.
        let r = mean + 0.5 * std * rng.normal();
        let reward = if r > bound { 2.0 * bound - r } else { r };
        let mut row: Vec<(MetricName, f64)> = vec![(catalog::REWARD.into(), reward)];
        if with_std {
            row.push((catalog::REWARD_STD.into(), std));
        }
        rows.push(row);
    }
    let name = format!("width{width:.3}-bound{bound:.2}{}-{}-share{:.3}", if with_std { "-std" } else { "" }, noise.label(), (-d).exp());
    ((rows, s.onset), made(name, Family::Rl, vec![Benign { what: "reward_climb", step: 0 }], None, bin))
}

/// entropy_collapse: entropy at 30% of its earlier level for 3 points; critical
/// 10% (or not recovered for 50 points: warn rows recover within 30).
fn entropy_collapse(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let over = rng.pick(&[1usize, 3, 8]);
    let lasts = if level == Level::PastCrit { rng.pick(&[10usize, 30, 100]) } else { rng.pick(&[8usize, 15, 30]) };
    let s = shape(rng, AlertKind::EntropyCollapse, onset, stride, long, over + lasts);
    let (lvl, bin) = scaled(rng, 0.01);
    let mut noise = Noise::new(rng, 0.02, 0.1);
    let d = distance(rng, level, (1.0f64 / 0.3).ln(), 10f64.ln());
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let mut e = lvl * noise.next(rng).exp();
        if faulty && i >= s.onset && i < s.onset + over + lasts {
            let x = ((i - s.onset + 1) as f64 / over as f64).min(1.0);
            e = lvl * (-d * x + 0.2 * noise.next(rng)).exp();
        }
        rows.push(vec![(catalog::ENTROPY.into(), e), (catalog::REWARD.into(), 0.1 * rng.normal())]);
    }
    ((rows, s.onset), made(format!("level{lvl:.3}-{}-share{:.3}-over{over}-lasts{lasts}", noise.label(), (-d).exp()), Family::Rl, vec![], None, bin))
}

/// memory_leak: without a total, growth adding 15% of current use over the next
/// 1,000 samples (over as many as have been seen, when fewer), or 5% once it has
/// kept its rate over 1,000 samples past the run's start; with a total, full
/// within 5,000 samples (warn) or 500 (critical), judged once 240 are held.
fn memory_leak(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let s = shape(rng, AlertKind::MemoryLeak, onset, stride, long, 150);
    let (m0, bin) = scaled(rng, 1e7);
    let jitter = rng.pick(&[0.0, 1e-4, 1e-3]);
    let stairs = rng.pick(&[1usize, 1, 10]);
    let f = match level {
        Level::UnderWarn => rng.range(0.5, 0.8),
        _ => rng.range(1.1, 2.0),
    };
    let (rate, total) = match level {
        // Relative to the use at the onset, over the samples seen then (at most 1,000).
        // (Under the slower rate a long record warns at.)
        Level::UnderWarn => (f * 0.05 / 1_000.0, None),
        Level::PastWarn => (f * 0.15 / (s.onset.min(1_000) as f64) / (1.0 - f * 0.15), None),
        Level::UnderCrit => {
            // Growth within 60 samples of at least 1% of the total (the README's trend, not jitter).
            let total = m0 * rng.range(8.0, 12.0);
            ((total - m0) / (m0 * 5_000.0 / f), Some(total))
        }
        Level::PastCrit => {
            let total = m0 * rng.range(8.0, 12.0);
            ((total - m0) / (m0 * 500.0 / f), Some(total))
        }
    };
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        // A startup climb that levels off (allocator warm-up).
        let warm = 1.0 - 0.3 * (-(i as f64) / 10.0).exp();
        let grown = if faulty && i >= s.onset { rate * ((i - s.onset) / stairs * stairs) as f64 } else { 0.0 };
        let mut m = m0 * warm * (1.0 + grown) * (1.0 + jitter * rng.normal());
        if let Some(t) = total {
            m = m.min(0.999 * t);
        }
        rows.push(vec![(catalog::LOSS.into(), 2.0 + 0.01 * rng.normal()), (catalog::MEM_GPU_BYTES.into(), m)]);
    }
    let name = format!("m0{m0:.3e}-rate{rate:.2e}-jitter{jitter}-stairs{stairs}{}", total.map_or(String::new(), |t| format!("-total{:.2}x", t / m0)));
    ((rows, s.onset), made(name, Family::Pretrain, vec![], total, bin))
}

/// Balance exp(H)/N of weights.
fn balance_of(w: &[f64]) -> f64 {
    let total: f64 = w.iter().sum();
    let h: f64 = w.iter().filter(|v| **v > 0.0).map(|v| v / total).map(|p| -p * p.ln()).sum();
    h.exp() / w.len() as f64
}

/// The sharpening along `z` of logits `base` whose weights have balance `target` (bisection).
fn beta_for(base: &[f64], z: &[f64], target: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 80.0f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        let w: Vec<f64> = base.iter().zip(z).map(|(b, v)| (b + mid * v).exp()).collect();
        if balance_of(&w) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// expert_collapse: a layer's effective experts below 50% for 5 points, once the
/// layer has 20 points and 100 training steps; critical 25% (or not recovered
/// for 50 points: warn rows recover within 30).
fn expert_collapse(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let lasts = if level == Level::PastCrit { rng.pick(&[10usize, 30, 100]) } else { rng.pick(&[8usize, 15, 30]) };
    // Loads of every expert make long runs large: at most 30,000 points.
    let _ = long;
    let s = shape(rng, AlertKind::ExpertCollapse, onset, stride, false, lasts);
    let s = Shape { n: s.n.min(30_000), onset: s.onset.min(30_000 - lasts - 10), ..s };
    let experts = rng.pick(&[8usize, 16, 64]);
    let layers = rng.pick(&[1usize, 2]);
    let (tokens, bin) = scaled(rng, 1_000.0);
    let counts = rng.unit() < 0.5;
    let spread = rng.range(0.1, 0.3);
    let mut z: Vec<Vec<f64>> = (0..layers).map(|_| (0..experts).map(|_| spread * rng.normal()).collect()).collect();
    // The collapsed balance as a share: its log distance from 1.
    let d = distance(rng, level, 2f64.ln(), 4f64.ln());
    let target = (-d).exp();
    let favour: Vec<f64> = (0..experts).map(|_| rng.normal()).collect();
    // Set at the onset, on the layer's logits then: the balance the README reads is the target's.
    let mut beta = 0.0;
    let bad = rng.pick(&(0..layers).collect::<Vec<_>>());
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let mut row: Vec<(MetricName, f64)> = vec![(catalog::LOSS.into(), 2.5 + 0.02 * rng.normal())];
        for (l, zl) in z.iter_mut().enumerate() {
            for v in zl.iter_mut() {
                *v = 0.99 * *v + (1.0f64 - 0.98).sqrt() * spread * rng.normal();
            }
            let mut w: Vec<f64> = zl.iter().map(|v| v.exp()).collect();
            if faulty && l == bad && i == s.onset {
                beta = beta_for(zl, &favour, target);
            }
            if faulty && l == bad && i >= s.onset && i < s.onset + lasts {
                w.iter_mut().zip(&favour).for_each(|(a, f)| *a *= (beta * f).exp());
            }
            let total: f64 = w.iter().sum();
            for (e, v) in w.iter().enumerate() {
                let share = v / total;
                let load = if counts { (tokens * share).round() } else { share };
                row.push((catalog::moe(l).load(e).into(), load));
            }
        }
        rows.push(row);
    }
    let name = format!("L{layers}-E{experts}-{}{tokens:.0}-balance{target:.3}-lasts{lasts}", if counts { "counts" } else { "fractions-of" });
    ((rows, s.onset), made(name, Family::Moe, vec![], None, bin))
}

/// throughput_regression: recent tokens/s (median of 5 points) at 70% of its
/// trailing median, and the newest point too, for 2 points, or 80% on 14 of 20
/// points; critical 40%.
fn throughput(rng: &mut Xo, level: Level, faulty: bool, onset: Onset, stride: u64, long: bool) -> Generated {
    let lasts = rng.pick(&[8usize, 20, 60]);
    let s = shape(rng, AlertKind::ThroughputRegression, onset, stride, long, lasts);
    let (speed, bin) = scaled(rng, 300.0);
    let which = rng.pick(&[catalog::TOKENS_PER_S, catalog::SAMPLES_PER_S]);
    let mut noise = Noise::new(rng, 0.01, 0.06);
    // README: 70% of the trailing median warns for 2 steps; 80% warns when it
    // holds on 14 of 20 points, which an event of 20 points or more does.
    let warn_share = if lasts >= 20 { 0.8 } else { 0.7 };
    let d = distance(rng, level, (1.0f64 / warn_share).ln(), (1.0f64 / 0.4).ln());
    let mut rows = Vec::with_capacity(s.n);
    for i in 0..s.n {
        let mut v = speed * noise.next(rng).exp();
        if faulty && i >= s.onset && i < s.onset + lasts {
            v = speed * (-d + 0.3 * noise.next(rng)).exp();
        }
        rows.push(vec![(catalog::LOSS.into(), 2.5 + 0.02 * rng.normal()), (which.into(), v)]);
    }
    ((rows, s.onset), made(format!("{which}{speed:.0}-{}-share{:.3}-lasts{lasts}", noise.label(), (-d).exp()), Family::Pretrain, vec![], None, bin))
}
