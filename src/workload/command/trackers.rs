//! Runs that trackers record: a W&B run's record file and a trackio run's rows,
//! followed as they are written. Metrics go through the run's metric stream like
//! every other format's; the alerts the script raised become alerts; W&B's system
//! metrics become telemetry of the job's machine; a W&B exit record ends the run.
use std::path::{Path, PathBuf};

use super::stream::{MetricStream, StreamOut};
use super::trackio_db::{Project, Row};
use super::wandb_dir::{self, RunFile};
use super::Followed;
use crate::health::{Alert, Severity};
use crate::ingest::wandb::Out;
use crate::ingest::{Format, Line};
use crate::metrics::catalog;
use crate::session::RunOutcome;

/// An alert the script raised, as rlmon's (the sink names its run and time).
fn raised(via: &str, step: u64, severity: Severity, title: &str, text: &str) -> Alert {
    Alert::from_script(via, step, severity, title, text)
}

/// This machine's name.
fn local_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_owned()).unwrap_or_default()
}

/// A W&B run: its record file followed. A command's run is not known when it
/// starts: it is the first run that appears in the folder the program logs to.
pub(super) struct WandbRun {
    run: Option<RunFile>,
    /// The `wandb` folder searched for a new run, and the runs it held before.
    dir: Option<(PathBuf, Vec<PathBuf>)>,
    stream: MetricStream,
    /// The name the job's machine goes by in telemetry, once the run record says
    /// (`None` inside: its figures are left out, NVML shows them already).
    host: Option<Option<String>>,
    outcome: Option<RunOutcome>,
}

impl WandbRun {
    pub(super) fn of_run(run: &Path) -> Self {
        WandbRun { run: Some(RunFile::new(run.to_path_buf())), dir: None, stream: MetricStream::new(run, Some(Format::Wandb), false), host: None, outcome: None }
    }

    /// The first run created under `dir` from now on.
    pub(super) fn first_new_in(dir: &Path) -> Self {
        let before = wandb_dir::runs_in(dir);
        WandbRun { run: None, dir: Some((dir.to_path_buf(), before)), stream: MetricStream::new(dir, Some(Format::Wandb), false), host: None, outcome: None }
    }

    fn find_run(&mut self, notes: &mut Vec<String>) {
        let Some((dir, before)) = self.dir.as_ref().filter(|_| self.run.is_none()) else { return };
        let new: Vec<_> = wandb_dir::runs_in(dir).into_iter().filter(|r| !before.contains(r)).collect();
        let Some(run) = new.first() else { return };
        notes.push(format!("following W&B run {}", run.display()));
        if new.len() > 1 {
            notes.push(format!("{} other new runs under {} are not followed (one command is one run)", new.len() - 1, dir.display()));
        }
        self.run = Some(RunFile::new(run.clone()));
    }

    /// Where the job's telemetry goes: the run's machine, unless it is this one
    /// and NVML sees its GPUs here (the hardware pane shows them already).
    fn host(&mut self) -> Option<&str> {
        if self.host.is_none() {
            let info = self.run.as_ref().and_then(|r| r.run().info.clone())?;
            let name: String = info.host.chars().map(|c| if c == '/' || c.is_whitespace() { '_' } else { c }).collect();
            let name = if name.is_empty() { "wandb".to_owned() } else { name };
            let seen_here = name == local_host() && crate::telemetry::gpu::GpuSampler::open().is_ok();
            self.host = Some((!seen_here).then_some(name));
        }
        self.host.as_ref().and_then(|h| h.as_deref())
    }

    fn take(&mut self, outs: Vec<Out>, now_s: f64) -> Vec<StreamOut> {
        let mut out = Vec::new();
        for o in outs {
            match o {
                Out::Line(line) => out.extend(self.stream.record(line, now_s)),
                Out::Telemetry { values, .. } => {
                    if let Some(host) = self.host() {
                        out.push(StreamOut::Telemetry(values.iter().map(|(name, v)| (catalog::remote(host, name).into(), *v)).collect()));
                    }
                }
                Out::Alert { step, alert } => {
                    out.extend(self.stream.flush());
                    out.push(StreamOut::Alert(raised("wandb.alert", step, alert.severity, &alert.title, &alert.text)));
                }
                Out::Exit(exit) => {
                    out.extend(self.stream.flush());
                    let name = self.run.as_ref().and_then(|r| r.run().info.as_ref().map(|i| i.name.clone())).unwrap_or_default();
                    out.push(StreamOut::Text(format!("W&B run {name} {}", exit.describe())));
                    self.outcome = Some(if exit.failed() { RunOutcome::Failed(format!("the script exited with code {} (W&B exit record)", exit.code)) } else { RunOutcome::Finished });
                }
            }
        }
        out.extend(self.stream.flush());
        out
    }
}

impl Followed for WandbRun {
    fn poll(&mut self, now_s: f64, notes: &mut Vec<String>) -> std::io::Result<Vec<StreamOut>> {
        self.find_run(notes);
        let Some(run) = self.run.as_mut() else { return Ok(Vec::new()) };
        let outs = run.poll(notes)?;
        Ok(self.take(outs, now_s))
    }

    fn finish(&mut self, now_s: f64, notes: &mut Vec<String>) -> Vec<StreamOut> {
        self.find_run(notes);
        let mut out = Vec::new();
        match self.run.as_mut() {
            Some(run) => {
                let outs = run.finish(notes);
                if run.path().is_none() {
                    notes.push("no W&B run file (.wandb) appeared in the run's folder: no metrics were read".into());
                }
                out = self.take(outs, now_s);
            }
            None => {
                let dir = self.dir.as_ref().map(|d| d.0.display().to_string()).unwrap_or_default();
                notes.push(format!("no new W&B run appeared under {dir}: no metrics were read (does the program log there? WANDB_DIR, wandb.init(dir=...))"));
            }
        }
        out.extend(self.stream.finish(now_s));
        out
    }

    fn what(&self) -> String {
        match (&self.run, &self.dir) {
            (Some(r), _) => format!("the W&B run file {}", r.path().map_or_else(|| "(not written yet)".into(), |p| p.display().to_string())),
            (None, Some((dir, _))) => format!("the W&B folder {}", dir.display()),
            (None, None) => "a W&B run".into(),
        }
    }

    fn skipped_unit(&self) -> &'static str {
        "records of the W&B run file"
    }

    fn outcome(&self) -> Option<RunOutcome> {
        self.outcome.clone()
    }
}

/// A trackio run: its rows of its project's database. Without a name it is the
/// first run that appears in the project from now on (a command's run).
pub(super) struct TrackioRun {
    db: PathBuf,
    run: Option<String>,
    /// The runs the project held before, while the run is not known yet.
    before: Vec<String>,
    project: Option<Project>,
    stream: MetricStream,
}

impl TrackioRun {
    pub(super) fn new(db: &Path, run: Option<String>) -> Self {
        let before = if run.is_none() { Project::open(db).and_then(|p| p.runs()).unwrap_or_default() } else { Vec::new() };
        TrackioRun { db: db.to_path_buf(), run, before, project: None, stream: MetricStream::new(db, Some(Format::Trackio), false) }
    }
}

impl Followed for TrackioRun {
    fn poll(&mut self, now_s: f64, notes: &mut Vec<String>) -> std::io::Result<Vec<StreamOut>> {
        let err = |e: String| std::io::Error::other(e);
        if self.project.is_none() {
            if !self.db.is_file() {
                // The project is made when the script starts logging.
                return Ok(Vec::new());
            }
            self.project = Some(Project::open(&self.db).map_err(err)?);
        }
        let Some(project) = self.project.as_mut() else { return Ok(Vec::new()) };
        if self.run.is_none() {
            let Some(new) = project.runs().map_err(err)?.into_iter().find(|r| !self.before.contains(r)) else { return Ok(Vec::new()) };
            notes.push(format!("following trackio run {new} of project {}", project.name()));
            self.run = Some(new);
        }
        let rows = project.poll(self.run.as_deref()).map_err(err)?;
        let mut out = Vec::new();
        for row in rows {
            match row {
                Row::Metrics(Line::Metrics(mut rec)) => {
                    rec.run = None;
                    out.extend(self.stream.record(Line::Metrics(rec), now_s));
                }
                Row::Metrics(line) => out.extend(self.stream.record(line, now_s)),
                Row::Alert { step, title, text, severity, .. } => {
                    out.extend(self.stream.flush());
                    out.push(StreamOut::Alert(raised("trackio.alert", step.unwrap_or(0), severity, &title, &text)));
                }
            }
        }
        out.extend(self.stream.flush());
        Ok(out)
    }

    fn finish(&mut self, now_s: f64, notes: &mut Vec<String>) -> Vec<StreamOut> {
        let mut out = self.poll(now_s, notes).unwrap_or_default();
        if self.run.is_none() {
            notes.push(format!("no new trackio run appeared in {}: no metrics were read (does the program log to this project? TRACKIO_DIR)", self.db.display()));
        }
        out.extend(self.stream.finish(now_s));
        out
    }

    fn what(&self) -> String {
        format!("the trackio project {}", self.db.display())
    }

    fn skipped_unit(&self) -> &'static str {
        "rows of the trackio project"
    }
}
