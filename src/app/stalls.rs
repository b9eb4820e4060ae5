//! The live side of the `stalled` kind: each running run's steps timed as they
//! arrive, and every second what its job is doing (its process from `/proc`, its
//! GPUs from telemetry, an attached file's size), handed to the pure
//! [`StallWatch`]. What it raises goes into the session as events, so that the
//! journal and a replay have it.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use crate::config::{AttachSource, RunConfig, WorkloadConfig};
use crate::health::detect::stalled::{Activity, StallEvent, StallWatch};
use crate::health::{Alert, AlertKind, HealthConfig};
use crate::metrics::catalog;
use crate::session::{RunId, RunState, SessionState};
use crate::telemetry::procs::JobPids;

/// A GPU below this utilisation (percent) is idle.
pub const IDLE_UTIL_PCT: f64 = 5.0;

/// What the stall monitor tells the session.
#[derive(Debug, Clone, PartialEq)]
pub enum StallOut {
    /// A new stall, or (`escalated`) one that became critical.
    Alert { run: RunId, alert: Alert, escalated: bool },
    /// A stall that ended.
    Cleared { run: RunId, step: u64, message: String },
}

/// One run's watch and what was last seen of its job.
struct Watched {
    watch: StallWatch,
    /// CPU time (clock ticks) of the process at the last look, and when.
    cpu: Option<(u64, Instant)>,
    /// An attached file without a process: its size, and when it last changed.
    file: Option<(PathBuf, u64, f64)>,
}

pub struct StallMonitor {
    started: Instant,
    runs: BTreeMap<RunId, Watched>,
    /// Attached files followed without a process, by run.
    files: BTreeMap<RunId, PathBuf>,
}

impl StallMonitor {
    /// Watches for the runs whose `stalled` kind is enabled.
    pub fn new(configs: &[RunConfig]) -> Self {
        let mut files = BTreeMap::new();
        for (i, r) in configs.iter().enumerate() {
            if let WorkloadConfig::Attach(a) = &r.workload {
                if a.pid.is_none() && !matches!(a.source, AttachSource::Remote(_)) {
                    files.insert(i, a.source.path().to_path_buf());
                }
            }
        }
        StallMonitor { started: Instant::now(), runs: BTreeMap::new(), files }
    }

    fn now_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn watched(&mut self, run: RunId, settings: &[HealthConfig]) -> Option<&mut Watched> {
        let s = settings.get(run).map(|c| c.get(AlertKind::Stalled))?;
        if !s.enabled {
            return None;
        }
        let file = self.files.get(&run).map(|p| (p.clone(), 0, 0.0));
        Some(self.runs.entry(run).or_insert_with(|| Watched { watch: StallWatch::new(s), cpu: None, file }))
    }

    /// Notes the runs' newest steps (call after applying events); returns the
    /// stalls that ended.
    pub fn steps(&mut self, state: &SessionState, settings: &[HealthConfig]) -> Vec<StallOut> {
        let now = self.now_s();
        let mut out = Vec::new();
        for (i, r) in state.runs.iter().enumerate() {
            if r.rank_of.is_some() || r.state != RunState::Running || r.series.is_empty() {
                continue;
            }
            let Some(w) = self.watched(i, settings) else { continue };
            if let Some(StallEvent::Cleared { step, message, .. }) = w.watch.step(r.step, now) {
                out.push(StallOut::Cleared { run: i, step, message });
            }
        }
        out
    }

    /// Looks at every running run's job (call about once a second).
    pub fn check(&mut self, state: &SessionState, settings: &[HealthConfig], jobs: &JobPids) -> Vec<StallOut> {
        let now = self.now_s();
        let pids = jobs.get();
        let mut out = Vec::new();
        for (i, r) in state.runs.iter().enumerate() {
            if r.rank_of.is_some() || r.state != RunState::Running {
                continue;
            }
            let pid = pids.iter().find(|(run, _)| *run == i).map(|(_, p)| *p);
            let gpus = gpus_of(state, i);
            let ranks = ranks_line(state, i);
            let Some(w) = self.watched(i, settings) else { continue };
            let mut activity = Activity::default();
            let mut doing = Vec::new();
            if let Some(pid) = pid {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
                let alive = stat.as_deref().is_some_and(crate::workload::attach::stat_alive);
                activity.alive = Some(alive);
                doing.push(match stat.as_deref().and_then(parse_stat) {
                    Some((state_char, ticks)) if alive => {
                        let at = Instant::now();
                        let cpu = w.cpu.replace((ticks, at)).and_then(|(t0, at0)| {
                            let secs = at.duration_since(at0).as_secs_f64();
                            (secs > 0.0).then(|| 100.0 * ticks.saturating_sub(t0) as f64 / clock_ticks() / secs)
                        });
                        let cpu = cpu.map_or(String::new(), |c| format!(", {c:.0}% CPU"));
                        format!("process {pid} alive ({}{cpu})", state_name(state_char))
                    }
                    _ => format!("process {pid} gone"),
                });
            }
            if let Some((path, len, grew_s)) = &mut w.file {
                let size = std::fs::metadata(&*path).map_or(*len, |m| m.len());
                if size != *len {
                    (*len, *grew_s) = (size, now);
                }
                activity.grew_s = Some(*grew_s);
                doing.push(format!("{} not grown for {}", path.display(), crate::health::detect::stalled::duration(now - *grew_s)));
            }
            let (idle, gpu_words) = gpu_activity(state, &gpus);
            activity.gpus_idle = idle;
            doing.push(gpu_words);
            if let Some(ranks) = ranks {
                doing.push(ranks);
            }
            activity.doing = doing.join("; ");
            let (severity, step, silent_s, message, escalated) = match w.watch.check(now, &activity) {
                Some(StallEvent::Raised { severity, step, silent_s, message }) => (severity, step, silent_s, message, false),
                Some(StallEvent::Escalated { step, silent_s, message }) => (crate::health::Severity::Critical, step, silent_s, message, true),
                _ => continue,
            };
            let alert = Alert {
                kind: AlertKind::Stalled,
                severity,
                run: r.name.clone(),
                metric: "step".into(),
                step,
                time_s: r.time_s,
                value: silent_s,
                message,
                peak: None,
                escalated_at: escalated.then_some(step),
            };
            out.push(StallOut::Alert { run: i, alert, escalated });
        }
        out
    }
}

/// The GPUs holding memory of run `run`'s job, from telemetry.
fn gpus_of(state: &SessionState, run: RunId) -> Vec<usize> {
    let mut gpus: Vec<usize> = state
        .telemetry
        .iter()
        .filter_map(|(name, s)| catalog::Gpu::parse_run_mem(name).filter(|(_, r)| *r == run).filter(|_| s.last().is_some_and(|b| b > 0.0)).map(|(g, _)| g))
        .collect();
    gpus.dedup();
    gpus
}

/// Whether the GPUs are idle, and a few words on them.
fn gpu_activity(state: &SessionState, gpus: &[usize]) -> (Option<bool>, String) {
    if let crate::session::GpuStatus::Unavailable { .. } = state.gpu {
        return (None, "no GPU telemetry (NVML)".into());
    }
    if gpus.is_empty() {
        return (None, "no GPU memory of the job's".into());
    }
    let utils: Vec<(usize, Option<f64>)> = gpus.iter().map(|g| (*g, state.telemetry.get(&catalog::gpu(*g).util_pct()).and_then(|s| s.last()))).collect();
    if utils.iter().any(|(_, u)| u.is_none()) {
        return (None, "GPU utilisation unknown".into());
    }
    let idle = utils.iter().all(|(_, u)| u.is_some_and(|u| u < IDLE_UTIL_PCT));
    let list: Vec<String> = utils.iter().map(|(g, u)| format!("GPU {g} {:.0}%", u.unwrap_or(0.0))).collect();
    (Some(idle), format!("{} {}", if idle { "idle:" } else { "busy:" }, list.join(", ")))
}

/// For a job of several ranks: which rank is behind, or that all wait at one step.
fn ranks_line(state: &SessionState, job: RunId) -> Option<String> {
    let ranks = state.ranks_of(job);
    if ranks.len() < 2 {
        return None;
    }
    let steps: Vec<(u32, u64)> = ranks.iter().filter_map(|(_, r)| Some((r.rank_of?.1, r.step))).collect();
    let min = steps.iter().map(|s| s.1).min()?;
    let max = steps.iter().map(|s| s.1).max()?;
    if min == max {
        return Some(format!("all {} ranks at step {min}", steps.len()));
    }
    let behind: Vec<String> = steps.iter().filter(|s| s.1 == min).map(|s| s.0.to_string()).collect();
    Some(format!("rank {} silent at step {min} while the others reached step {max}", behind.join(", ")))
}

/// A `/proc/PID/stat` line's state letter and CPU time (user + system, in ticks).
fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let mut f = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = f.next()?.chars().next()?;
    let mut f = f.skip(10);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((state, utime + stime))
}

fn state_name(c: char) -> &'static str {
    match c {
        'R' => "running",
        'S' => "sleeping",
        'D' => "in uninterruptible wait (I/O)",
        'T' | 't' => "stopped",
        'Z' => "zombie",
        'I' => "idle",
        _ => "in an unknown state",
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_state_and_cpu_time() {
        let line = "4242 (python3 (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0";
        assert_eq!(parse_stat(line), Some(('S', 300)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(state_name('D'), "in uninterruptible wait (I/O)");
    }
}
