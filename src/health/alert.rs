//! The alert a detector raises (design.md, "Alerts"): its JSON form is part of
//! rlmon's interface and is written exactly as specified there.
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How bad an alert is; ordered so that `max()` gives the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Critical => "critical",
        }
    }
}

/// Every alert kind of design.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    LossSpike,
    LossDivergence,
    Nonfinite,
    GradExplosion,
    GradVanishing,
    KlSpike,
    KlRunaway,
    RewardHacking,
    RewardSaturation,
    EntropyCollapse,
    MemoryLeak,
    ExpertCollapse,
    ThroughputRegression,
    Nondeterminism,
    RunDivergence,
    SlowDrift,
    RankStraggler,
    /// Raised by the training script itself through its tracker (`wandb.alert`,
    /// `trackio.alert`) and passed on as read.
    UserAlert,
    Stalled,
}

impl AlertKind {
    pub const ALL: [AlertKind; 19] = [
        AlertKind::LossSpike,
        AlertKind::LossDivergence,
        AlertKind::Nonfinite,
        AlertKind::GradExplosion,
        AlertKind::GradVanishing,
        AlertKind::KlSpike,
        AlertKind::KlRunaway,
        AlertKind::RewardHacking,
        AlertKind::RewardSaturation,
        AlertKind::EntropyCollapse,
        AlertKind::MemoryLeak,
        AlertKind::ExpertCollapse,
        AlertKind::ThroughputRegression,
        AlertKind::Nondeterminism,
        AlertKind::RunDivergence,
        AlertKind::SlowDrift,
        AlertKind::RankStraggler,
        AlertKind::UserAlert,
        AlertKind::Stalled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::LossSpike => "loss_spike",
            AlertKind::LossDivergence => "loss_divergence",
            AlertKind::Nonfinite => "nonfinite",
            AlertKind::GradExplosion => "grad_explosion",
            AlertKind::GradVanishing => "grad_vanishing",
            AlertKind::KlSpike => "kl_spike",
            AlertKind::KlRunaway => "kl_runaway",
            AlertKind::RewardHacking => "reward_hacking",
            AlertKind::RewardSaturation => "reward_saturation",
            AlertKind::EntropyCollapse => "entropy_collapse",
            AlertKind::MemoryLeak => "memory_leak",
            AlertKind::ExpertCollapse => "expert_collapse",
            AlertKind::ThroughputRegression => "throughput_regression",
            AlertKind::Nondeterminism => "nondeterminism",
            AlertKind::RunDivergence => "run_divergence",
            AlertKind::SlowDrift => "slow_drift",
            AlertKind::RankStraggler => "rank_straggler",
            AlertKind::UserAlert => "user_alert",
            AlertKind::Stalled => "stalled",
        }
    }

    pub fn parse(s: &str) -> Option<AlertKind> {
        AlertKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What usually causes each kind, and what to check first: one line each, shown
/// with an alert's detail.
pub const ADVICE: &[(AlertKind, &str)] = &[
    (AlertKind::LossSpike, "usually a learning-rate jump, a bad batch or an exploding gradient; check lr and grad_norm at the step, and the data there"),
    (AlertKind::LossDivergence, "usually a learning rate too high for the schedule, or lost numerical precision; check lr, grad_norm and the warm-up"),
    (AlertKind::Nonfinite, "usually overflow (fp16 without loss scaling), a division by zero or a bad input; check grad_norm and lr just before, and the batch"),
    (AlertKind::GradExplosion, "usually a learning-rate jump, missing or too loose clipping, or an outlier batch; check lr, the clip threshold and the loss"),
    (AlertKind::GradVanishing, "usually a learning rate decayed to nothing, saturated activations or a frozen graph; check lr and the loss's movement"),
    (AlertKind::KlSpike, "usually a too-large policy update (lr, epochs per batch) or a reward outlier; check lr, clip_frac and the reward"),
    (AlertKind::KlRunaway, "usually a KL penalty that is off or too weak for the reward; check kl_coef, the reward's rise and entropy"),
    (AlertKind::RewardHacking, "usually the policy exploiting the reward model (longer answers, repeated tokens); check response_len, KL and sample outputs"),
    (AlertKind::RewardSaturation, "usually prompts too easy for the policy: groups all score the same and give no signal; check reward_std and the prompt mix"),
    (AlertKind::EntropyCollapse, "usually a KL penalty too weak or a learning rate too high: the policy turns deterministic; check kl_coef, lr and KL"),
    (AlertKind::MemoryLeak, "usually tensors kept alive across steps (logged losses, a growing cache) or fragmentation; check what the loop keeps"),
    (AlertKind::ExpertCollapse, "usually a router that lost its balancing (aux loss off or too weak, router lr too high); check the experts' loads and aux loss"),
    (AlertKind::ThroughputRegression, "usually contention (another job, thermal throttling), a data-loader stall or a longer sequence mix; check step time and the hardware pane"),
    (AlertKind::Nondeterminism, "usually non-deterministic kernels, unseeded data order or threads; check the seeds, deterministic flags and the thread count"),
    (AlertKind::RunDivergence, "usually a changed setting or code path between the runs; check their configs and the first differing metric"),
    (AlertKind::SlowDrift, "usually a learning rate too high for this stage, data that changed (a new shard, a filter gone), or a reward the policy has stopped improving on; check lr, the data mix at the turn and the loss on a fixed batch"),
    (AlertKind::UserAlert, "the training script raised this itself (wandb.alert, trackio.alert): its message says why; rlmon only passes it on"),
    (AlertKind::RankStraggler, "usually one slow node or GPU (thermal throttling, a noisy neighbour, a slower link) or an uneven data shard; check that rank's host figures, its data loader and its step time before the collective"),
    (AlertKind::Stalled, "usually a hung collective (NCCL waiting on a rank that died or diverged), a dead data-loader worker, a deadlock, or a filesystem or network mount that stopped answering; check the process with py-spy dump or gdb, the ranks' logs, and dmesg"),
];

impl AlertKind {
    /// What usually causes this kind and what to check (from [`ADVICE`]).
    pub fn advice(self) -> &'static str {
        ADVICE.iter().find(|(k, _)| *k == self).map_or("", |(_, a)| a)
    }
}

impl std::fmt::Display for AlertKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One alert. `step` is where the problem starts as far as the detector can tell
/// (the first step of a spike, the first differing step of two replicas); the
/// alert is raised once that is certain, usually a step or a few later. `value`
/// is the metric's value at `step`, and the message quotes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub kind: AlertKind,
    pub severity: Severity,
    pub run: String,
    pub metric: String,
    pub step: u64,
    pub time_s: f64,
    /// The value that tripped the detector; non-finite values are written as null
    /// (JSON has no NaN).
    #[serde(serialize_with = "finite_or_null", deserialize_with = "null_as_nan")]
    pub value: f64,
    pub message: String,
    /// The worst point of the event so far (the highest loss of a spike, the
    /// lowest throughput of a regression); absent when the detector has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<Peak>,
    /// The step at which the event went from warn to critical: the alert was
    /// raised as a warning and its severity raised then (it keeps its `step`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalated_at: Option<u64>,
}

impl Alert {
    /// An alert the training script raised itself through its tracker (`via`:
    /// `wandb.alert`, `trackio.alert`), after step `step`; run and time are the caller's.
    pub fn from_script(via: &str, step: u64, severity: Severity, title: &str, text: &str) -> Alert {
        let message = if text.is_empty() { title.to_owned() } else { format!("{title}: {text}") };
        Alert { kind: AlertKind::UserAlert, severity, run: String::new(), metric: via.into(), step, time_s: 0.0, value: f64::NAN, message, peak: None, escalated_at: None }
    }
}

/// One point of a metric: where an event was at its worst.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    pub step: u64,
    #[serde(serialize_with = "finite_or_null", deserialize_with = "null_as_nan")]
    pub value: f64,
}

fn finite_or_null<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_none()
    }
}

/// Reads what `finite_or_null` wrote: null is a non-finite value (NaN).
fn null_as_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_the_design_says() {
        let a = Alert {
            kind: AlertKind::KlSpike,
            severity: Severity::Warn,
            run: "ppo".into(),
            metric: "kl".into(),
            step: 12,
            time_s: 3.5,
            value: f64::NAN,
            message: "kl jumped".into(),
            peak: None,
            escalated_at: None,
        };
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"kl_spike","severity":"warn","run":"ppo","metric":"kl","step":12,"time_s":3.5,"value":null,"message":"kl jumped"}"#
        );
        assert!(Severity::Critical > Severity::Warn && Severity::Warn > Severity::Info);
        let back: Alert = serde_json::from_str(&json).unwrap();
        assert!(back.value.is_nan() && back.kind == AlertKind::KlSpike && back.message == "kl jumped");
        assert!(AlertKind::ALL.iter().all(|k| AlertKind::parse(k.as_str()) == Some(*k)));
        assert_eq!(AlertKind::parse("user_alert"), Some(AlertKind::UserAlert), "a script's alerts read back from a recording");
        assert!(AlertKind::ALL.iter().all(|k| !k.advice().is_empty()), "every kind has its advice line");
        let with_peak = Alert { value: 0.5, peak: Some(Peak { step: 14, value: 2.5 }), escalated_at: Some(15), ..a };
        let json = serde_json::to_string(&with_peak).unwrap();
        assert!(json.ends_with(r#""value":0.5,"message":"kl jumped","peak":{"step":14,"value":2.5},"escalated_at":15}"#), "{json}");
        assert_eq!(serde_json::from_str::<Alert>(&json).unwrap(), with_peak);
    }
}
