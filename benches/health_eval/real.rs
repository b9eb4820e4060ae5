//! Real training logs (tests/fixtures/real/, sources in its README), each
//! labelled clean or with its incident's step and the alert kinds that name it,
//! read and judged as `rlmon check` does. Scored apart from both generated corpora.
use std::path::{Path, PathBuf};

use rlmon::app::check::{analyse, CheckReport};
use rlmon::health::{AlertKind, Severity};
use rlmon::ingest::{self, Format};

/// One labelled excerpt.
pub struct RealLog {
    pub file: &'static str,
    /// A regex for logs no built-in format reads (`rlmon check --pattern`).
    pub pattern: Option<&'static str>,
    /// `None`: a healthy run. Else the first step of the incident, in the log's own
    /// step numbers, and the kinds that count as catching it.
    pub incident: Option<(u64, &'static [AlertKind])>,
    /// Points logged before the incident (all of them on a healthy run).
    pub clean_before: Option<u64>,
    pub what: &'static str,
    /// What rlmon gets wrong on this log today (the incident missed, or a critical
    /// alert on a healthy run), said in the report; `None` when it meets the goals.
    /// The goal test holds such a log to what it can read, not to the catch.
    pub gap: Option<&'static str>,
}

pub const LOGS: &[RealLog] = &[
    // Its lines carry a timestamp before `iter`; the nanogpt preset reads it.
    RealLog { file: "nanogpt-215-nan.log", pattern: None, incident: Some((3010, &[AlertKind::Nonfinite])), clean_before: Some(9), what: "GPT-2 on a V100 in float16: loss NaN from iter 3010", gap: None },
    RealLog {
        file: "mlx-620-lora-blowup.log",
        // Read as `rlmon check` reads it: the generic text format (its first line,
        // `Iter 1: Val loss 2.086`, is a point too).
        pattern: None,
        incident: Some((75, &[AlertKind::LossSpike, AlertKind::LossDivergence])),
        clean_before: Some(3),
        what: "LoRA fine-tune with MLX: loss 1.4 -> 6.4 between iters 50 and 100, never back",
        gap: None,
    },
    RealLog { file: "unsloth-5207-grad-spikes.log", pattern: None, incident: Some((4, &[AlertKind::GradExplosion])), clean_before: Some(3), what: "Gemma LoRA: pre-clip grad norm 92 at step 4 and 11,140 at step 9", gap: None },
    RealLog { file: "nanogpt-178-healthy.log", pattern: None, incident: None, clean_before: None, what: "nanoGPT Shakespeare-char, iters 0-240: healthy", gap: None },
    RealLog { file: "peft-2926-lora-ga-healthy.log", pattern: None, incident: None, clean_before: None, what: "LoRA-GA fine-tune, early steps: loss 7.6 -> 4.9, grad norm 17-157", gap: None },
    RealLog { file: "whisper-ja-trainer_state.json", pattern: None, incident: None, clean_before: None, what: "Whisper large-v2 Japanese fine-tune, 5,000 steps: train loss 0.30 -> 0.0001 (4 decimals)", gap: None },
    RealLog {
        file: "gradnorm-tf-17-nan.log",
        // `epoch: N loss: X`: the epoch, its only counter, numbers the steps.
        pattern: None,
        incident: Some((3451, &[AlertKind::Nonfinite])),
        clean_before: Some(9),
        what: "GradNorm (TensorFlow): loss 0.21 then NaN from epoch 3451 on",
        gap: None,
    },
    RealLog { file: "xtuner-187-grad-nan.log", pattern: None, incident: Some((240, &[AlertKind::Nonfinite])), clean_before: Some(4), what: "xtuner (mmengine) fine-tune: grad_norm NaN from iter 240 while the loss looks normal", gap: None },
    RealLog {
        file: "ipex-llm-1486-loss-inf.log",
        // BigDL's DistriOptimizer lines (`[Iteration N] ... Loss is X.`, read by the
        // text format); the last one is cut where the thread's copy ends.
        pattern: None,
        incident: Some((45459, &[AlertKind::Nonfinite])),
        clean_before: Some(2),
        what: "BigDL ImageNet training: loss Infinity at iteration 45459 (one point), back to 1.25 after",
        gap: None,
    },
    RealLog { file: "tinyllama-sft-trainer_state.json", pattern: None, incident: None, clean_before: None, what: "TinyLlama SFT, 2 epochs, 2,800 steps: loss 2.08 -> 1.02, grad norm 0.93-2.73", gap: None },
    // Keras numbers its bar by samples within an epoch; rlmon's steps count on over
    // the epochs (61,878 a pass), so epoch 10's line is step 11 x 61,878.
    RealLog {
        file: "keras-21-divergence.log",
        pattern: None,
        incident: Some((680658, &[AlertKind::LossDivergence, AlertKind::LossSpike])),
        clean_before: Some(10),
        what: "Keras Sequential model: loss 1.18 -> 0.74 over 10 epochs, then 13.4 and 26.6 from epoch 10 on",
        gap: None,
    },
    RealLog { file: "prednet-20-keras-healthy.log", pattern: None, incident: None, clean_before: None, what: "PredNet (Keras), epochs 109-122: loss 0.136-0.140, val loss 0.195-0.198", gap: None },
    RealLog {
        file: "baselines-975-ppo-kl.log",
        pattern: None,
        incident: Some((1, &[AlertKind::KlSpike, AlertKind::KlRunaway])),
        clean_before: Some(1),
        what: "OpenAI Baselines PPO, one iteration's optimisation epochs: KL 0.017 -> 1.76 -> 3.79 -> 4.34",
        gap: None,
    },
    RealLog { file: "trl-570-dpo-healthy.log", pattern: None, incident: None, clean_before: None, what: "TRL DPO: loss 0.91 -> 0.82, signed rewards and margins, an eval line", gap: None },
    RealLog { file: "trl-ppo-37684-healthy.log", pattern: None, incident: None, clean_before: None, what: "TRL PPO: KL 10.9-11.1, negative policy loss, two entropies", gap: None },
    RealLog {
        file: "grpo-redteam-trainer_state.json",
        pattern: None,
        incident: None,
        clean_before: None,
        what: "TRL GRPO, 100 steps: grad norm 0.0005-0.003, and 0.03-0.15 on the 13 steps with a rewarded completion; signed loss near 0",
        gap: None,
    },
    RealLog { file: "grpo-chaos-economy-trainer_state.json", pattern: None, incident: None, clean_before: None, what: "TRL GRPO, 200 steps every 5: signed noisy reward and loss, grad norm 0.18-0.44 with three dips to 0.0005", gap: None },
    RealLog {
        file: "litgpt-628-loss-spike.log",
        pattern: None,
        incident: Some((1152, &[AlertKind::LossSpike, AlertKind::LossDivergence])),
        clean_before: Some(1),
        what: "LitGPT full fine-tune of CodeLlama-7B: loss 1.70 at iter 1151, then 10.0-12.2 from iter 1152 on",
        gap: None,
    },
    RealLog { file: "megatron-ds-396-grad-nan.log", pattern: None, incident: Some((5426, &[AlertKind::Nonfinite])), clean_before: Some(0), what: "Megatron-DeepSpeed pretraining printing no loss: grad norm NaN on every iteration", gap: None },
    RealLog { file: "megatron-llm-11-healthy.log", pattern: None, incident: None, clean_before: None, what: "Megatron-LLM, iterations 122-125: lm loss 2.48-2.56, 86-89 s an iteration", gap: None },
    RealLog { file: "llamafactory-3529-pretrain-healthy.log", pattern: None, incident: None, clean_before: None, what: "LlamaFactory continued pre-training: loss 1.71-1.82 with one-point bumps", gap: None },
    RealLog { file: "qwen-verifier-sft-trainer_state.json", pattern: None, incident: None, clean_before: None, what: "Qwen2.5-0.5B full fine-tune, 120 steps: loss 1.28 -> 0.02 with one-point bumps, grad norm 33 -> 2-7", gap: None },
    RealLog { file: "pytorch-wlm-lstm-healthy.log", pattern: None, incident: None, clean_before: None, what: "PyTorch word-language-model LSTM, 10 epochs: valid loss 5.53 -> 4.84, the same bumps in every epoch", gap: None },
    // Epoch E's batch n is step E x 2,983 + n (the epoch's offset, counted from 0).
    RealLog { file: "pytorch-wlm-rnn-relu-nan.log", pattern: None, incident: Some((200, &[AlertKind::Nonfinite])), clean_before: Some(0), what: "PyTorch word-language-model RNN (ReLU) at lr 20: loss NaN from the first logged batch", gap: None },
];

pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real")
}

/// The report `rlmon check` gives on one excerpt.
pub fn check(log: &RealLog) -> Result<CheckReport, String> {
    let path = dir().join(log.file);
    let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let format = match log.pattern {
        Some(p) => Format::Pattern(ingest::text::Pattern::new(p)?),
        None => ingest::detect(&path, &String::from_utf8_lossy(&text[..text.len().min(64 * 1024)])),
    };
    analyse(&text, format, "run", None)
}

/// What one excerpt scored.
#[derive(Debug, Clone)]
pub struct RealScore {
    pub points: u64,
    /// Raised step minus the incident's step, when a right kind caught it (at or after it).
    pub latency: Option<u64>,
    /// A right kind caught it at critical (at or after its step): a blow-up's goal.
    pub critical_on_incident: bool,
    /// Warn/critical alarms on a healthy run, or before the incident.
    pub false_alarms: usize,
    pub criticals_on_clean: usize,
    /// Points of the log that were clean (all of a healthy run, those before the incident).
    pub clean_points: u64,
    pub not_judged: Vec<String>,
    pub alerts: Vec<String>,
}

pub fn score(log: &RealLog, r: &CheckReport) -> RealScore {
    let alarms: Vec<_> = r.alerts.iter().filter(|a| a.severity >= Severity::Warn).collect();
    let onset = log.incident.map_or(u64::MAX, |i| i.0);
    let early: Vec<_> = alarms.iter().filter(|a| a.step < onset).collect();
    let latency = log.incident.and_then(|(at, kinds)| alarms.iter().filter(|a| kinds.contains(&a.kind) && a.step >= at).map(|a| a.step - at).min());
    let critical_on_incident = log.incident.is_some_and(|(at, kinds)| alarms.iter().any(|a| kinds.contains(&a.kind) && a.step >= at && a.severity == Severity::Critical));
    let points = r.points;
    let clean_points = log.clean_before.unwrap_or(points).min(points);
    RealScore {
        points,
        latency,
        critical_on_incident,
        false_alarms: early.len(),
        criticals_on_clean: early.iter().filter(|a| a.severity == Severity::Critical).count(),
        clean_points,
        not_judged: r.runs.iter().flat_map(|run| run.not_judged.iter().map(|n| format!("{}: {}", n.kind, n.reason))).collect(),
        alerts: r.alerts.iter().map(|a| format!("{} {} at step {}: {}", a.severity.as_str(), a.kind, a.step, a.message)).collect(),
    }
}
