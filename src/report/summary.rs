//! The end-of-session summary: a JSON object for scripts (stdout with --json) and a
//! short text for people (stderr). Field names are part of rlmon's interface.
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::format::{duration, si, value};
use super::progress::RATE_WINDOW;
use crate::metrics::{catalog, flops};
use crate::health::judged::{not_judged, NotJudged};
use crate::health::{Alert, HealthConfig};
use crate::session::{GpuStatus, RunRecord, SessionState};

#[derive(Debug, Serialize)]
pub struct SessionSummary {
    pub session: String,
    /// Path of the session snapshot (`null` when it could not be written).
    pub snapshot: Option<String>,
    pub elapsed_s: f64,
    pub gpu: GpuStatus,
    pub runs: Vec<RunSummary>,
}

#[derive(Debug, Serialize)]
pub struct RunSummary {
    pub name: String,
    pub workload: String,
    pub device: String,
    /// "finished" | "failed" | "cancelled" (or "running"/"pending" if cut short).
    pub state: String,
    /// Last step reached.
    pub steps: u64,
    pub total_steps: u64,
    /// Intra-op threads the training loop used.
    pub intra_op_threads: Option<usize>,
    /// Whole-run rates over step time, after warm-up.
    pub tokens_per_s: Option<f64>,
    pub samples_per_s: Option<f64>,
    /// Largest mem/gpu_bytes or mem/rss_bytes the run reported.
    pub peak_memory_bytes: Option<f64>,
    /// Largest GPU memory NVML attributed to the run's process tree (its training
    /// worker, program or attached job), per GPU, summed over its GPUs.
    pub peak_gpu_memory_bytes: Option<f64>,
    /// Whole-run rate of the model FLOPs the run reports (`model_flops` per step).
    pub model_flops_per_s: Option<f64>,
    /// The float32 peak of the run's GPU (`metrics::flops::peak_fp32_flops`).
    pub peak_flops_per_s: Option<f64>,
    /// Model FLOPs utilization: `model_flops_per_s` over `peak_flops_per_s`.
    pub mfu: Option<f64>,
    /// With `price_per_hour` in the config: cost of 1,000 samples at the run's
    /// rate, and of the run's wall time so far.
    pub cost_per_1k_samples: Option<f64>,
    pub cost_so_far: Option<f64>,
    pub final_loss: Option<f64>,
    /// Last value of every scalar metric, by canonical name (non-finite as null).
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Every alert of the run, oldest first (design.md, "Alerts").
    pub alerts: Vec<Alert>,
    /// Detectors that could not judge the run, and why (not enough points, or
    /// the metric missing), as `rlmon check` reports them.
    pub not_judged: Vec<NotJudged>,
    pub error: Option<String>,
    /// For a job of several ranks: how far apart they ended (over the last
    /// [`RATE_WINDOW`] steps), as the throughput pane shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RanksSummary>,
}

/// A job's ranks at the end: the slowest against the fastest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RanksSummary {
    pub count: usize,
    /// What the ranks were compared by: tokens/s, else step time (their metric names).
    pub by: String,
    pub slowest_rank: u32,
    pub fastest_rank: u32,
    /// How much slower the slowest rank is, as a fraction of the fastest's speed.
    pub spread: f64,
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

impl RunSummary {
    /// Steps, device and figures on one line: `250/600 steps on cpu, 27.1k tok/s,
    /// final loss 0.5617, 1 alert(s)` (the summary's line of the run, after its
    /// name and state).
    pub fn line(&self) -> String {
        let mut out = String::new();
        let steps = if self.total_steps > 0 { format!("{}/{}", self.steps, self.total_steps) } else { self.steps.to_string() };
        let _ = write!(out, "{steps} steps on {}", self.device);
        if let Some(t) = self.tokens_per_s {
            let _ = write!(out, ", {} tok/s", si(t));
        }
        if let Some(m) = self.mfu {
            let _ = write!(out, ", MFU {:.2}%", 100.0 * m);
        }
        if let Some(b) = self.peak_gpu_memory_bytes {
            let _ = write!(out, ", GPU memory peak {:.2} GiB", b / (1u64 << 30) as f64);
        }
        if let Some(l) = self.final_loss {
            let _ = write!(out, ", final loss {}", value(l));
        }
        if let Some(c) = self.cost_per_1k_samples {
            let _ = write!(out, ", ${c:.4}/1k samples");
        }
        if let Some(c) = self.cost_so_far {
            let _ = write!(out, ", ${c:.2} so far");
        }
        let alarms = self.alerts.iter().filter(|a| a.severity >= crate::health::Severity::Warn).count();
        if alarms > 0 {
            let _ = write!(out, ", {alarms} alert(s)");
        }
        out
    }

    /// The summary of `r`; `alerts` are the session's alerts, which `r` indexes.
    /// What was not judged is told against the default detector settings.
    pub fn of(r: &RunRecord, alerts: &[Alert]) -> Self {
        Self::judged_by(r, alerts, &HealthConfig::default())
    }

    /// The summary of `r`, whose detectors ran with `settings`.
    pub fn judged_by(r: &RunRecord, alerts: &[Alert], settings: &HealthConfig) -> Self {
        let cost = r.cost();
        RunSummary {
            name: r.name.clone(),
            workload: r.workload.clone(),
            device: r.device.clone(),
            state: r.state.as_str().to_owned(),
            steps: r.step,
            total_steps: r.total_steps,
            intra_op_threads: r.threads,
            tokens_per_s: r.rate(catalog::TOKENS, None),
            samples_per_s: r.rate(catalog::SAMPLES, None),
            peak_memory_bytes: r.peak_memory_bytes(),
            peak_gpu_memory_bytes: None,
            model_flops_per_s: r.rate(catalog::MODEL_FLOPS, None),
            peak_flops_per_s: None,
            mfu: None,
            cost_per_1k_samples: cost.and_then(|c| c.0),
            cost_so_far: cost.map(|c| c.1),
            final_loss: r.last(catalog::LOSS).and_then(finite),
            metrics: r.series.iter().filter_map(|(k, s)| Some((k.clone(), finite(s.last()?)))).collect(),
            alerts: r.alerts.iter().filter_map(|i| alerts.get(*i).cloned()).collect(),
            not_judged: not_judged(settings, r.series.keys().map(String::as_str), |m| r.series(m).map(crate::health::judged::Logged::of)),
            error: r.error.clone(),
            ranks: None,
        }
    }
}

/// The session's figures of run `run` on its GPU: the peak of the GPU memory NVML
/// attributed to its job (`gpu{g}/run{i}_mem_bytes`, each GPU's peak, summed), and
/// the float32 peak rate of the GPU its device names, with the MFU against it.
fn with_gpu_figures(state: &SessionState, run: usize, mut s: RunSummary) -> RunSummary {
    s.peak_gpu_memory_bytes = state
        .telemetry
        .iter()
        .filter(|(name, _)| catalog::Gpu::parse_run_mem(name).is_some_and(|(_, r)| r == run))
        .filter_map(|(_, series)| series.extent().map(|e| e.max.value))
        .reduce(|a, b| a + b);
    let index = s.device.strip_prefix("cuda:").and_then(|i| i.parse::<u32>().ok());
    if let (Some(index), GpuStatus::Available { gpus, .. }) = (index, &state.gpu) {
        s.peak_flops_per_s = gpus.iter().find(|g| g.index == index).and_then(|g| flops::peak_fp32_flops(&g.name));
    }
    s.mfu = s.model_flops_per_s.zip(s.peak_flops_per_s).and_then(|(f, peak)| flops::mfu(f, peak));
    s
}

/// The spread of run `job`'s ranks, when it is a job of two or more.
fn ranks_summary(state: &SessionState, job: usize) -> Option<RanksSummary> {
    let spread = state.rank_spread(job, RATE_WINDOW)?;
    let (by, s) = match (spread.tokens_per_s, spread.step_time) {
        (Some(s), _) => (catalog::TOKENS_PER_S, s),
        (None, Some(s)) => (catalog::STEP_TIME_S, s),
        (None, None) => return None,
    };
    Some(RanksSummary { count: spread.ranks, by: by.into(), slowest_rank: s.slow.0, fastest_rank: s.fast.0, spread: s.fraction })
}

impl SessionSummary {
    pub fn of(state: &SessionState, elapsed_s: f64) -> Self {
        Self::judged_by(state, elapsed_s, &[])
    }

    /// The summary of a session whose runs' detectors ran with `settings` (in run
    /// order; a run without one was judged with the defaults).
    pub fn judged_by(state: &SessionState, elapsed_s: f64, settings: &[HealthConfig]) -> Self {
        let default = HealthConfig::default();
        SessionSummary {
            session: state.name.clone(),
            snapshot: None,
            elapsed_s,
            gpu: state.gpu.clone(),
            runs: state
                .runs
                .iter()
                .enumerate()
                .map(|(i, r)| RunSummary { ranks: ranks_summary(state, i), ..RunSummary::judged_by(r, &state.alerts, settings.get(i).unwrap_or(&default)) })
                .enumerate()
                .map(|(i, r)| with_gpu_figures(state, i, r))
                .collect(),
        }
    }

    /// A few lines for people, one per run.
    pub fn to_text(&self) -> String {
        let mut out = format!("session {} — {}\n", self.session, duration(self.elapsed_s));
        for r in &self.runs {
            let _ = write!(out, "  {:<16} {:<9} {}", r.name, r.state, r.line());
            let alarms: Vec<&Alert> = r.alerts.iter().filter(|a| a.severity >= crate::health::Severity::Warn).collect();
            if !alarms.is_empty() {
                for a in alarms.iter().take(5) {
                    let _ = write!(out, "\n      {} {} at step {}: {}", a.severity.as_str(), a.kind, a.step, a.message);
                }
            }
            if !r.not_judged.is_empty() {
                let what: Vec<String> = r.not_judged.iter().map(|n| format!("{} ({})", n.kind, n.reason)).collect();
                let _ = write!(out, "\n      not judged: {}", what.join("; "));
            }
            if let Some(k) = &r.ranks {
                let by = if k.by == catalog::TOKENS_PER_S { "tokens/s" } else { "step time" };
                let _ = write!(out, "\n      {} ranks: rank {} slowest, {:.1}% behind rank {} ({by})", k.count, k.slowest_rank, 100.0 * k.spread, k.fastest_rank);
            }
            if let Some(e) = &r.error {
                let _ = write!(out, "\n      reason: {e}");
            }
            out.push('\n');
        }
        if let GpuStatus::Unavailable { reason } = &self.gpu {
            let _ = writeln!(out, "  gpu: {reason}");
        }
        if let Some(path) = &self.snapshot {
            let _ = writeln!(out, "  snapshot: {path}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Series;

    #[test]
    fn a_jobs_summary_says_how_far_apart_its_ranks_ended() {
        use crate::session::{Event, Hub, RunOutcome};
        let job = vec![RunRecord::new("job".into(), "command".into(), "external".into(), 0)];
        let mut hub = Hub::new(SessionState::new("ranks".into(), job));
        hub.apply(Event::RunStarted { run: 0, device: "external".into(), threads: 0 }, 0.0);
        for step in 1..=30u64 {
            for rank in [0u32, 1, 2] {
                // Rank 2's steps take 25% longer than rank 0's, rank 1's 5%.
                let step_time = [0.1, 0.105, 0.125][rank as usize];
                let values = vec![("tokens".into(), 1000.0), ("step_time_s".into(), step_time), ("loss".into(), 1.0)];
                hub.apply(Event::RankMetrics { job: 0, rank, step, time_s: step as f64 * 0.1, values }, step as f64 * 0.1);
            }
        }
        hub.apply(Event::RunEnded { run: 0, outcome: RunOutcome::Finished }, 4.0);
        let summary = SessionSummary::of(&hub.state, 4.0);
        let k = summary.runs[0].ranks.as_ref().expect("the job's ranks");
        assert_eq!((k.count, k.by.as_str(), k.slowest_rank, k.fastest_rank), (3, catalog::TOKENS_PER_S, 2, 0));
        assert!((k.spread - 0.2).abs() < 1e-9, "{k:?}");
        assert!(summary.runs.iter().skip(1).all(|r| r.ranks.is_none()), "only the job carries it");
        assert!(summary.to_text().contains("3 ranks: rank 2 slowest, 20.0% behind rank 0 (tokens/s)"), "{}", summary.to_text());
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["runs"][0]["ranks"]["slowest_rank"], 2);
        assert!(json["runs"][1].get("ranks").is_none());
    }

    #[test]
    fn a_gpu_runs_summary_has_its_mfu_and_its_jobs_gpu_memory_peak() {
        use crate::session::GpuInfo;
        let series = |values: &[f64]| {
            let mut s = Series::default();
            for (i, v) in values.iter().enumerate() {
                s.push(i as u64 + 1, i as f64, *v);
            }
            s
        };
        // 20 steps of 0.5 s, each 6.69e12 model FLOPs: 13.38 TFLOP/s, 20% of 66.9.
        let mut gpu_run = RunRecord::new("lm".into(), "lm".into(), "cuda:0".into(), 20);
        gpu_run.series.insert(catalog::MODEL_FLOPS.to_owned(), series(&[6.69e12; 20]));
        gpu_run.series.insert(catalog::STEP_TIME_S.to_owned(), series(&[0.5; 20]));
        let mut cpu_run = RunRecord::new("cpu".into(), "lm".into(), "cpu".into(), 20);
        cpu_run.series.insert(catalog::MODEL_FLOPS.to_owned(), series(&[1e9; 20]));
        cpu_run.series.insert(catalog::STEP_TIME_S.to_owned(), series(&[0.5; 20]));
        let mut state = SessionState::new("s".into(), vec![gpu_run, cpu_run]);
        state.gpu = GpuStatus::Available { driver: "580.1".into(), gpus: vec![GpuInfo { index: 0, name: "NVIDIA H100 80GB HBM3".into(), mem_total_bytes: 80 << 30 }] };
        let gib = (1u64 << 30) as f64;
        state.telemetry.insert(catalog::gpu(0).run_mem_bytes(0), series(&[1.0 * gib, 3.0 * gib, 2.0 * gib]));
        state.telemetry.insert(catalog::gpu(0).mem_used_bytes(), series(&[9.0 * gib]));
        let summary = SessionSummary::of(&state, 10.0);
        let (gpu, cpu) = (&summary.runs[0], &summary.runs[1]);
        assert!((gpu.model_flops_per_s.unwrap() - 13.38e12).abs() < 1e3, "{gpu:?}");
        assert_eq!(gpu.peak_flops_per_s, Some(66.9e12));
        assert!((gpu.mfu.unwrap() - 0.2).abs() < 1e-12, "{gpu:?}");
        assert_eq!(gpu.peak_gpu_memory_bytes, Some(3.0 * gib), "the job's peak, not the whole GPU's use");
        assert!(summary.to_text().contains("MFU 20.00%, GPU memory peak 3.00 GiB"), "{}", summary.to_text());
        assert_eq!((cpu.model_flops_per_s, cpu.peak_flops_per_s, cpu.mfu, cpu.peak_gpu_memory_bytes), (Some(2e9), None, None, None));
    }

    #[test]
    fn the_summary_lists_what_was_not_judged() {
        let mut run = RunRecord::new("short".into(), "lm".into(), "cpu".into(), 10);
        let mut loss = Series::default();
        for step in 0..10 {
            loss.push(step, step as f64, 2.0);
        }
        run.series.insert(catalog::LOSS.to_owned(), loss);
        let state = SessionState::new("s".into(), vec![run]);
        let summary = SessionSummary::judged_by(&state, 1.0, &[HealthConfig::default()]);
        let nj = &summary.runs[0].not_judged;
        assert!(nj.iter().any(|n| n.kind == crate::health::AlertKind::LossSpike && n.reason.starts_with("not enough points: 10 of loss")), "{nj:?}");
        assert!(nj.iter().any(|n| n.reason == "metric missing: grad_norm"), "{nj:?}");
        let text = summary.to_text();
        assert!(text.contains("not judged: loss_spike (not enough points: 10 of loss, it needs 22)"), "{text}");
        let json = serde_json::to_value(&summary.runs[0]).unwrap();
        assert_eq!(json["not_judged"][0]["reason"].as_str().map(|r| r.is_empty()), Some(false), "{json}");
    }
}
