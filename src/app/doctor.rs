//! `rlmon doctor`: what rlmon can use on this machine, and why not where it cannot.
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::DoctorArgs;
use crate::error::Result;
use crate::session::GpuStatus;
use crate::telemetry::gpu::GpuSampler;
use crate::workload::builtin::locate_worker;
use crate::workload::protocol::Probe;
use crate::workload::threads;

#[derive(Debug, Serialize)]
pub struct DoctorReport {
    pub rlmon_version: String,
    pub libtorch: LibtorchInfo,
    pub cuda: CudaInfo,
    pub nvml: GpuStatus,
    pub threads: ThreadInfo,
    pub terminal: TerminalInfo,
}

/// libtorch as the training worker loads it (rlmon itself does not).
#[derive(Debug, Serialize)]
pub struct LibtorchInfo {
    /// Version of the libtorch the worker loads (from its torch/version.py).
    pub version: Option<String>,
    /// The version rlmon was built against.
    pub built_for: &'static str,
    /// Folder of the loaded libtorch_cpu.so.
    pub path: Option<PathBuf>,
    /// Whether libtorch_cuda.so is loaded into the worker.
    pub cuda_library_loaded: bool,
    /// The training worker, `rlmon-train`.
    pub worker: Option<PathBuf>,
    /// Why the worker could not be asked (missing, or it failed to start).
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CudaInfo {
    pub available: bool,
    pub device_count: i64,
    pub cudnn: bool,
}

#[derive(Debug, Serialize)]
pub struct ThreadInfo {
    pub cores: usize,
    /// libtorch's default intra-op threads in the worker.
    pub libtorch_default: Option<i32>,
    /// What `intra_op_threads = "auto"` gives a session with one run.
    pub auto_one_run: usize,
    pub omp_num_threads: Option<String>,
    pub omp_wait_policy: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TerminalInfo {
    pub stdout_is_terminal: bool,
    pub size: Option<(u16, u16)>,
    /// "none" (NO_COLOR or not a terminal), "16", "256" or "truecolor".
    pub colour: &'static str,
    pub term: Option<String>,
}

/// The libtorch build rlmon links against (tch 0.24).
pub const LIBTORCH_BUILT_FOR: &str = "2.11.0";

pub fn doctor(args: DoctorArgs) -> Result<u8> {
    let report = DoctorReport::collect();
    if args.json {
        crate::out!("{}\n", serde_json::to_string_pretty(&report).map_err(anyhow::Error::from)?);
    } else {
        crate::out!("{}", report.to_text());
    }
    Ok(0)
}

impl DoctorReport {
    pub fn collect() -> Self {
        let worker = locate_worker();
        let probe = worker.clone().and_then(|exe| probe_worker(&exe).map_err(|e| format!("{}: {e}", exe.display())));
        let worker = worker.ok();
        let p = probe.as_ref().ok();
        let nvml = match GpuSampler::open() {
            Ok(s) => s.status(),
            Err(reason) => GpuStatus::Unavailable { reason },
        };
        let cores = threads::available_cores();
        let stdout_is_terminal = std::io::stdout().is_terminal();
        DoctorReport {
            rlmon_version: env!("CARGO_PKG_VERSION").into(),
            libtorch: LibtorchInfo {
                version: p.and_then(|p| p.version.clone()),
                built_for: LIBTORCH_BUILT_FOR,
                path: p.and_then(|p| p.path.clone()),
                cuda_library_loaded: p.is_some_and(|p| p.cuda_library_loaded),
                worker,
                error: probe.as_ref().err().cloned(),
            },
            cuda: CudaInfo {
                available: p.is_some_and(|p| p.cuda_available),
                device_count: p.map_or(0, |p| p.cuda_devices),
                cudnn: p.is_some_and(|p| p.cudnn),
            },
            nvml,
            threads: ThreadInfo {
                cores,
                libtorch_default: p.map(|p| p.default_threads),
                auto_one_run: threads::auto_intra_op_threads(cores, 1),
                omp_num_threads: std::env::var("OMP_NUM_THREADS").ok(),
                omp_wait_policy: std::env::var("OMP_WAIT_POLICY").ok(),
            },
            terminal: TerminalInfo {
                stdout_is_terminal,
                size: ratatui::crossterm::terminal::size().ok(),
                colour: colour_support(stdout_is_terminal, |k| std::env::var(k).ok()),
                term: std::env::var("TERM").ok(),
            },
        }
    }

    pub fn to_text(&self) -> String {
        let yes = |b: bool| if b { "yes" } else { "no" };
        let l = &self.libtorch;
        let mut lines = vec![format!("rlmon        {}", self.rlmon_version)];
        match &l.error {
            None => lines.extend([
                format!(
                    "libtorch     {} (built for {}) at {}",
                    l.version.as_deref().unwrap_or("unknown version"),
                    l.built_for,
                    l.path.as_deref().map_or("unknown path".into(), |p| p.display().to_string())
                ),
                format!("             libtorch_cuda.so loaded: {}", yes(l.cuda_library_loaded)),
                format!("             worker: {}", l.worker.as_deref().map_or("unknown".into(), |p| p.display().to_string())),
                format!("cuda         available: {}, devices: {}, cudnn: {}", yes(self.cuda.available), self.cuda.device_count, yes(self.cuda.cudnn)),
            ]),
            Some(e) => lines.extend([
                format!("libtorch     not checked: {e}"),
                "             built-in workloads (lm, rlhf) cannot train; command and attached runs, check, replay and compare work".into(),
                "cuda         not checked (libtorch is loaded by the worker)".into(),
            ]),
        }
        match &self.nvml {
            GpuStatus::Available { driver, gpus } => {
                lines.push(format!("nvml         ok, driver {driver}"));
                for g in gpus {
                    lines.push(format!("  gpu{}       {} ({:.1} GiB)", g.index, g.name, g.mem_total_bytes as f64 / (1u64 << 30) as f64));
                }
            }
            GpuStatus::Unavailable { reason } => lines.push(format!("nvml         {reason}")),
            GpuStatus::Unknown => lines.push("nvml         not probed".into()),
        }
        let t = &self.threads;
        lines.push(format!(
            "threads      {} cores; intra-op auto = {} for one run (libtorch default {}); OMP_NUM_THREADS={}, OMP_WAIT_POLICY={}",
            t.cores,
            t.auto_one_run,
            t.libtorch_default.map_or("unknown".into(), |n| n.to_string()),
            t.omp_num_threads.as_deref().unwrap_or("unset"),
            t.omp_wait_policy.as_deref().unwrap_or("unset")
        ));
        let term = &self.terminal;
        lines.push(format!(
            "terminal     stdout is a terminal: {}, size: {}, colour: {}, TERM={}",
            yes(term.stdout_is_terminal),
            term.size.map_or("unknown".into(), |(w, h)| format!("{w}x{h}")),
            term.colour,
            term.term.as_deref().unwrap_or("unset")
        ));
        lines.join("\n") + "\n"
    }
}

/// Asks the worker which libtorch it loads and what CUDA it sees (this loads
/// libtorch and initialises CUDA in that process, not in rlmon).
fn probe_worker(exe: &Path) -> std::result::Result<Probe, String> {
    let out = std::process::Command::new(exe).arg("probe").stdin(std::process::Stdio::null()).output().map_err(|e| format!("cannot start it: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Err(format!("it failed ({}): {last}", out.status));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("its answer is unreadable: {e}"))
}

/// Colour support from the environment: NO_COLOR wins, then COLORTERM, then TERM.
pub fn colour_support(is_terminal: bool, env: impl Fn(&str) -> Option<String>) -> &'static str {
    if env("NO_COLOR").is_some_and(|v| !v.is_empty()) || !is_terminal {
        return "none";
    }
    if env("COLORTERM").is_some_and(|v| v == "truecolor" || v == "24bit") {
        return "truecolor";
    }
    match env("TERM").as_deref() {
        Some("dumb") | None => "none",
        Some(t) if t.contains("256color") => "256",
        Some(_) => "16",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_follows_no_color_colorterm_and_term() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(colour_support(true, env(&[("NO_COLOR", "1"), ("COLORTERM", "truecolor")])), "none");
        assert_eq!(colour_support(true, env(&[("COLORTERM", "truecolor")])), "truecolor");
        assert_eq!(colour_support(true, env(&[("TERM", "xterm-256color")])), "256");
        assert_eq!(colour_support(true, env(&[("TERM", "screen")])), "16");
        assert_eq!(colour_support(false, env(&[("TERM", "xterm-256color")])), "none");
    }
}
