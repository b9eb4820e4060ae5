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
}

pub const LOGS: &[RealLog] = &[
    // Its lines carry a timestamp before `iter`; the nanogpt preset reads it.
    RealLog { file: "nanogpt-215-nan.log", pattern: None, incident: Some((3010, &[AlertKind::Nonfinite])), clean_before: Some(9), what: "GPT-2 on a V100 in float16: loss NaN from iter 3010" },
    RealLog {
        file: "mlx-620-lora-blowup.log",
        // Read as `rlmon check` reads it: the generic text format (its first line,
        // `Iter 1: Val loss 2.086`, is a point too).
        pattern: None,
        incident: Some((75, &[AlertKind::LossSpike, AlertKind::LossDivergence])),
        clean_before: Some(3),
        what: "LoRA fine-tune with MLX: loss 1.4 -> 6.4 between iters 50 and 100, never back",
    },
    RealLog { file: "unsloth-5207-grad-spikes.log", pattern: None, incident: Some((4, &[AlertKind::GradExplosion])), clean_before: Some(3), what: "Gemma LoRA: pre-clip grad norm 92 at step 4 and 11,140 at step 9" },
    RealLog { file: "nanogpt-178-healthy.log", pattern: None, incident: None, clean_before: None, what: "nanoGPT Shakespeare-char, iters 0-240: healthy" },
    RealLog { file: "peft-2926-lora-ga-healthy.log", pattern: None, incident: None, clean_before: None, what: "LoRA-GA fine-tune, early steps: loss 7.6 -> 4.9, grad norm 17-157" },
    RealLog { file: "whisper-ja-trainer_state.json", pattern: None, incident: None, clean_before: None, what: "Whisper large-v2 Japanese fine-tune, 5,000 steps: train loss 0.30 -> 0.0001 (4 decimals)" },
    RealLog {
        file: "gradnorm-tf-17-nan.log",
        // `epoch: N loss: X`: the generic text format reads `epoch` as a metric and
        // numbers the lines, so a pattern keeps the log's own epoch numbers.
        pattern: Some(r"epoch: (?P<step>\d+) loss: (?P<loss>\S+)"),
        incident: Some((3451, &[AlertKind::Nonfinite])),
        clean_before: Some(9),
        what: "GradNorm (TensorFlow): loss 0.21 then NaN from epoch 3451 on",
    },
    RealLog { file: "xtuner-187-grad-nan.log", pattern: None, incident: Some((240, &[AlertKind::Nonfinite])), clean_before: Some(4), what: "xtuner (mmengine) fine-tune: grad_norm NaN from iter 240 while the loss looks normal" },
    RealLog {
        file: "ipex-llm-1486-loss-inf.log",
        // BigDL's DistriOptimizer lines; the last one is cut where the thread's copy ends.
        pattern: Some(r"\[Iteration (?P<step>\d+)\].* Loss is (?P<loss>\S+?)\. Current"),
        incident: Some((45459, &[AlertKind::Nonfinite])),
        clean_before: Some(2),
        what: "BigDL ImageNet training: loss Infinity at iteration 45459 (one point), back to 1.25 after",
    },
    RealLog { file: "tinyllama-sft-trainer_state.json", pattern: None, incident: None, clean_before: None, what: "TinyLlama SFT, 2 epochs, 2,800 steps: loss 2.08 -> 1.02, grad norm 0.93-2.73" },
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
    let points = r.points;
    let clean_points = log.clean_before.unwrap_or(points).min(points);
    RealScore {
        points,
        latency,
        false_alarms: early.len(),
        criticals_on_clean: early.iter().filter(|a| a.severity == Severity::Critical).count(),
        clean_points,
        not_judged: r.runs.iter().flat_map(|run| run.not_judged.iter().map(|n| format!("{}: {}", n.kind, n.reason))).collect(),
        alerts: r.alerts.iter().map(|a| format!("{} {} at step {}: {}", a.severity.as_str(), a.kind, a.step, a.message)).collect(),
    }
}
