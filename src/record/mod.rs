//! Recording sessions: the event journal that survives a crash, Parquet snapshots,
//! and the in-memory recording both are built from (design.md, "Snapshot").
//!
//! - `model`: the recording (points and metadata), built from hub events and turned
//!   back into them for replay;
//! - `frame`: checksummed framing of journal records;
//! - `journal`: the append-only journal and its writer thread, and recovery;
//! - `snapshot`: Parquet files (write atomically, read with checks);
//! - `stream`: a recorded session played event by event, a snapshot streamed from
//!   its file instead of held;
//! - `compare`: two recorded sessions side by side (pure);
//! - `hardware`: what the session ran on, for the metadata;
//! - `naming`: file names and UTC timestamps.
pub mod frame;
pub mod compare;
pub mod hardware;
pub mod journal;
pub mod model;
pub mod naming;
pub mod snapshot;
pub mod stream;

pub use model::{Meta, Recording, FORMAT_VERSION, TELEMETRY_RUN};
pub use stream::Playback;

/// Why a recorded file cannot be used. Always names the problem; the caller adds
/// the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFile(pub String);

impl std::fmt::Display for BadFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reads a recorded session: a snapshot file, or a journal folder (recovered up to
/// its last whole record). Bad input is an error naming the file and the problem.
pub fn load(path: &std::path::Path) -> crate::Result<Recording> {
    let bad = |problem: String| crate::RlmonError::BadInput { path: path.to_path_buf(), problem };
    if path.is_dir() {
        let recovered = journal::recover(path).map_err(|e| bad(e.0))?;
        if let Some(damage) = &recovered.damage {
            crate::say!("rlmon: {}: {damage}", path.display());
        }
        return Ok(recovered.recording);
    }
    if !path.exists() {
        return Err(bad("no such file".into()));
    }
    if !snapshot::looks_like_parquet(path) {
        return Err(bad("neither an rlmon snapshot (a Parquet file) nor a journal (a *.rlmon.journal folder)".into()));
    }
    snapshot::read(path).map_err(|e| bad(e.0))
}

/// Alerts and markers of the session for the metadata: every alert in the design's
/// alert format, and one chart marker (run, step, severity, kind) per warn or
/// critical alert, as the live charts draw them.
pub fn alerts_and_markers(state: &crate::session::SessionState) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    use crate::health::Severity;
    let alerts = state.alerts.iter().filter_map(|a| serde_json::to_value(a).ok()).collect();
    let markers = state
        .alerts
        .iter()
        .filter(|a| a.severity >= Severity::Warn)
        .map(|a| serde_json::json!({"run": a.run, "step": a.step, "severity": a.severity, "kind": a.kind}))
        .collect();
    (alerts, markers)
}

/// The session a recording was held against, read again from its file, and the
/// tolerance it was judged with.
pub type RecordedBaseline = (std::sync::Arc<crate::session::SessionState>, f64);

/// The baseline the session of `meta` was held against, when it had one and its
/// file can still be read: a replay then judges it again with the hub's code, as
/// live. `None` otherwise; the replay then raises the alerts recorded against it.
pub fn recorded_baseline(meta: &Meta) -> Option<RecordedBaseline> {
    let path = std::path::Path::new(meta.baseline.as_deref()?);
    let mut base = if path.is_dir() {
        Playback::held(journal::recover(path).ok()?.recording)
    } else if snapshot::looks_like_parquet(path) {
        Playback::open(path).ok()?
    } else {
        return None;
    };
    // The baseline's own baseline is not read again: only its curves matter here.
    let tolerance = meta.baseline_tolerance.unwrap_or(crate::session::baseline::DEFAULT_TOLERANCE);
    Some((std::sync::Arc::new(base.final_state()), tolerance))
}

/// A hub as at the start of `rec`, holding its runs against `baseline`, and the
/// events that rebuild the session in it (without the recorded baseline alerts when
/// the hub judges the baseline itself).
pub fn replay_start(rec: &Recording, baseline: Option<&RecordedBaseline>) -> (crate::session::Hub, model::Timeline) {
    let mut hub = rec.meta.fresh_hub();
    let mut timeline = rec.timeline();
    if let Some((base, tolerance)) = baseline {
        hub.set_baseline(base.clone(), *tolerance);
        timeline.drop_alerts();
    }
    (hub, timeline)
}

/// The final state of `rec` replayed as `rlmon replay` would: with its baseline
/// read again when it can be.
pub fn replayed_state(rec: &Recording) -> crate::session::SessionState {
    let (mut hub, timeline) = replay_start(rec, recorded_baseline(&rec.meta).as_ref());
    for (t, e) in timeline.events(rec) {
        hub.apply(e, t);
    }
    hub.state
}
