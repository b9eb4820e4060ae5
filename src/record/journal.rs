//! The session journal: every event that reaches the hub, appended as checksummed
//! frames by a writer thread fed through a channel (the hub never waits on disk),
//! flushed and synced at least once a second. A killed rlmon loses at most the last
//! second. The journal is a folder `<stem>.rlmon.journal/`:
//!
//! ```text
//! owner                         pid of the rlmon writing it
//! segment-000001.log            "RLMJ" + format version, then frames: a header
//! segment-000002.log            (session metadata) first, then events
//! checkpoint-000001.rlmon.parquet   the session up to the end of segment 1
//! ```
//!
//! Growth is bounded: when a segment passes [`SEGMENT_LIMIT`] the writer turns the
//! points recorded since the previous checkpoint into a compact Parquet checkpoint
//! (with the whole metadata so far) and deletes the segment. Each compaction writes
//! only new points, so a long run costs linear time on disk, not quadratic.
//! Recovery reads every checkpoint in order (points) and the newest one's metadata,
//! then the segments after it, up to the first torn or corrupted frame. On a clean
//! finish the journal becomes the snapshot and is removed.
//!
//! The writer holds in memory only the points since the last checkpoint: its
//! memory is bounded however long the session. The snapshot is assembled from
//! the checkpoints, read back one at a time, and those points.
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::frame::{self, Tail};
use super::model::{Meta, Recording, FORMAT_VERSION};
use super::{naming, snapshot, BadFile};
use crate::session::Event;

/// Segment size at which the writer compacts into a checkpoint.
pub const SEGMENT_LIMIT: u64 = 32 << 20;
/// Longest time an event waits in memory before it is written and synced.
pub const FLUSH_PERIOD: Duration = Duration::from_secs(1);
const MAGIC: &[u8; 4] = b"RLMJ";
const OWNER: &str = "owner";

/// One journal record. The header is JSON (the metadata holds free-form JSON), and
/// so are the GPU status (an internally tagged enum, which postcard cannot read) and
/// alerts (their value is written as null when not finite);
/// other events are postcard, compact and exact for every f64, NaN included.
#[derive(Debug)]
pub enum Record {
    Header(Box<Meta>),
    Event { t: f64, event: Event },
}

const HEADER_TAG: u8 = b'H';
const EVENT_TAG: u8 = b'E';
const JSON_EVENT_TAG: u8 = b'J';

impl Record {
    fn encode(&self) -> io::Result<Vec<u8>> {
        match self {
            Record::Header(meta) => {
                let mut out = vec![HEADER_TAG];
                serde_json::to_writer(&mut out, meta)?;
                Ok(out)
            }
            Record::Event { t, event: event @ (Event::GpuStatus(_) | Event::Alert { .. }) } => {
                let mut out = vec![JSON_EVENT_TAG];
                serde_json::to_writer(&mut out, &(t, event))?;
                Ok(out)
            }
            Record::Event { t, event } => {
                let out = vec![EVENT_TAG];
                postcard::to_extend(&(t, event), out).map_err(io::Error::other)
            }
        }
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        match bytes.split_first() {
            Some((&HEADER_TAG, rest)) => serde_json::from_slice(rest).map(|m| Record::Header(Box::new(m))).map_err(|e| e.to_string()),
            Some((&EVENT_TAG, rest)) => {
                let (t, event): (f64, Event) = postcard::from_bytes(rest).map_err(|e| e.to_string())?;
                Ok(Record::Event { t, event })
            }
            Some((&JSON_EVENT_TAG, rest)) => {
                let (t, event): (f64, Event) = serde_json::from_slice(rest).map_err(|e| e.to_string())?;
                Ok(Record::Event { t, event })
            }
            _ => Err("unknown record type".into()),
        }
    }
}

/// What the end of a session adds to the recording: facts the hub's state knows
/// (summaries, alerts) but events do not carry.
#[derive(Debug, Clone, Default)]
pub struct Finale {
    pub elapsed_s: f64,
    pub summaries: Vec<serde_json::Value>,
    pub alerts: Vec<serde_json::Value>,
    pub markers: Vec<serde_json::Value>,
    pub hardware: super::model::Hardware,
    pub baseline_alerts: Vec<super::model::RaisedAlert>,
}

impl Finale {
    /// The ending of a session in `state`: every run's summary, the alerts and
    /// their chart markers.
    pub fn of(state: &crate::session::SessionState, elapsed_s: f64, hardware: super::model::Hardware) -> Self {
        let (alerts, markers) = super::alerts_and_markers(state);
        let summaries = state
            .runs
            .iter()
            .map(|r| serde_json::to_value(crate::report::summary::RunSummary::of(r, &state.alerts)).unwrap_or_default())
            .collect();
        Finale { elapsed_s, summaries, alerts, markers, hardware, baseline_alerts: state.baseline_alerts.clone() }
    }

    fn apply(self, rec: &mut Recording) {
        rec.meta.elapsed_s = rec.meta.elapsed_s.max(self.elapsed_s);
        for (r, s) in rec.meta.runs.iter_mut().zip(self.summaries) {
            r.summary = s;
        }
        rec.meta.alerts = self.alerts;
        rec.meta.markers = self.markers;
        rec.meta.hardware = self.hardware;
        rec.meta.baseline_alerts = self.baseline_alerts;
    }
}

enum Command {
    Event(f64, Event),
    /// Write the snapshot now and keep journalling.
    Snapshot(Finale, mpsc::Sender<io::Result<PathBuf>>),
    /// Write the snapshot, remove the journal, stop.
    Finish(Finale, mpsc::Sender<io::Result<PathBuf>>),
}

/// The hub's side of the recorder: sending never blocks.
pub struct Recorder {
    tx: mpsc::Sender<Command>,
    /// Why journalling stopped, once it has: the session is told, and the final
    /// message says the journal is incomplete.
    failure: Arc<Mutex<Option<String>>>,
    thread: Option<JoinHandle<()>>,
    pub journal: PathBuf,
    pub snapshot: PathBuf,
}

impl Recorder {
    /// Creates the journal folder for `stem` in `dir` and starts the writer thread.
    pub fn start(dir: &Path, stem: &str, meta: Meta) -> io::Result<Self> {
        let journal = naming::journal_path(dir, stem);
        let snapshot = naming::snapshot_path(dir, stem);
        fs::create_dir_all(&journal)?;
        fs::write(journal.join(OWNER), std::process::id().to_string())?;
        let failure = Arc::new(Mutex::new(None));
        let mut writer = Writer::open(journal.clone(), snapshot.clone(), Recording::new(meta), failure.clone())?;
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new().name("rlmon-journal".into()).spawn(move || writer.run(rx))?;
        Ok(Recorder { tx, failure, thread: Some(thread), journal, snapshot })
    }

    /// Why the journal stopped being written, if it has.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn record(&self, now_s: f64, event: &Event) {
        // A writer that died has logged why; the session goes on without it.
        let _ = self.tx.send(Command::Event(now_s, event.clone()));
    }

    /// Asks for a snapshot now; the answer arrives on the returned channel.
    pub fn snapshot_now(&self, finale: Finale) -> mpsc::Receiver<io::Result<PathBuf>> {
        let (reply, rx) = mpsc::channel();
        let _ = self.tx.send(Command::Snapshot(finale, reply));
        rx
    }

    /// Writes the final snapshot and removes the journal. Blocks until written.
    pub fn finish(mut self, finale: Finale) -> io::Result<PathBuf> {
        let (reply, rx) = mpsc::channel();
        let _ = self.tx.send(Command::Finish(finale, reply));
        let result = rx.recv().unwrap_or_else(|_| Err(io::Error::other("the journal writer stopped")));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        result
    }
}

struct Writer {
    dir: PathBuf,
    snapshot: PathBuf,
    /// The session's metadata, and its points since the last checkpoint (the
    /// earlier ones are on disk; the name table stays whole, so ids hold).
    rec: Recording,
    segment_no: u32,
    out: Option<BufWriter<File>>,
    segment_bytes: u64,
    /// Segment size that starts a checkpoint ([`SEGMENT_LIMIT`]; smaller in tests).
    segment_limit: u64,
    /// Per run, the last step in a checkpoint: a resume before it rewrites them.
    checkpointed_last: std::collections::HashMap<u32, u64>,
    /// Resumes (run, step) whose discarded points are still in checkpoints (the
    /// journal stopped before they could be rewritten).
    pending_drops: Vec<(u32, u64)>,
    failed: bool,
    failure: Arc<Mutex<Option<String>>>,
}

fn segment_name(n: u32) -> String {
    format!("segment-{n:06}.log")
}

fn checkpoint_name(n: u32) -> String {
    format!("checkpoint-{n:06}{}", naming::SNAPSHOT_SUFFIX)
}

impl Writer {
    fn open(dir: PathBuf, snapshot: PathBuf, rec: Recording, failure: Arc<Mutex<Option<String>>>) -> io::Result<Self> {
        let mut w = Writer { dir, snapshot, rec, segment_no: 0, out: None, segment_bytes: 0, segment_limit: SEGMENT_LIMIT, checkpointed_last: Default::default(), pending_drops: Vec::new(), failed: false, failure };
        w.next_segment()?;
        let header = Record::Header(Box::new(w.rec.meta.clone()));
        w.append(&header)?;
        w.sync()?;
        Ok(w)
    }

    fn next_segment(&mut self) -> io::Result<()> {
        self.segment_no += 1;
        let mut f = OpenOptions::new().create_new(true).write(true).open(self.dir.join(segment_name(self.segment_no)))?;
        f.write_all(MAGIC)?;
        f.write_all(&FORMAT_VERSION.to_le_bytes())?;
        self.segment_bytes = 8;
        self.out = Some(BufWriter::with_capacity(1 << 16, f));
        Ok(())
    }

    fn append(&mut self, record: &Record) -> io::Result<()> {
        let payload = record.encode()?;
        let out = self.out.as_mut().ok_or_else(|| io::Error::other("no open segment"))?;
        self.segment_bytes += frame::write_frame(out, &payload)? as u64;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        if let Some(out) = self.out.as_mut() {
            out.flush()?;
            out.get_ref().sync_data()?;
        }
        Ok(())
    }

    /// Replaces the segments written since the last checkpoint by a Parquet
    /// checkpoint of their points (and the metadata so far); those points then
    /// leave memory.
    fn compact(&mut self) -> io::Result<()> {
        let covered = self.write_checkpoint()?;
        self.next_segment()?;
        for n in 1..=covered {
            let _ = fs::remove_file(self.dir.join(segment_name(n)));
        }
        Ok(())
    }

    /// Writes the points in memory as the checkpoint of the segments so far (its
    /// number returned) and lets them go.
    fn write_checkpoint(&mut self) -> io::Result<u32> {
        self.sync()?;
        let covered = self.segment_no;
        snapshot::write_with(&self.dir.join(checkpoint_name(covered)), &self.rec, snapshot::CHECKPOINT)?;
        let p = &self.rec.points;
        for (run, step) in p.run.iter().zip(&p.step) {
            let last = self.checkpointed_last.entry(*run).or_insert(*step);
            *last = (*last).max(*step);
        }
        self.rec.points.clear_points();
        Ok(covered)
    }

    fn on_event(&mut self, t: f64, event: Event) -> io::Result<()> {
        // A resume that drops points already in a checkpoint: the checkpoints on disk
        // still hold them, so they are all replaced by one (resumes are rare).
        let rewrite = match &event {
            Event::Resumed { run, at_step, .. } => {
                Some((*run as u32, *at_step)).filter(|(run, at_step)| self.checkpointed_last.get(run).is_some_and(|last| last >= at_step))
            }
            Event::RankResumed { job, rank, at_step, .. } => self
                .rec
                .meta
                .rank_run_index(*job, *rank)
                .map(|run| (run as u32, *at_step))
                .filter(|(run, at_step)| self.checkpointed_last.get(run).is_some_and(|last| last >= at_step)),
            _ => None,
        };
        self.rec.record(t, &event);
        if self.failed {
            // The snapshot drops them from the checkpoints it reads back instead.
            self.pending_drops.extend(rewrite);
            return Ok(());
        }
        self.append(&Record::Event { t, event })?;
        if let Some((run, at_step)) = rewrite {
            self.rewrite_checkpoints(run, at_step)?;
        } else if self.segment_bytes >= self.segment_limit {
            self.compact()?;
        }
        Ok(())
    }

    /// One checkpoint of every point so far, without `run`'s from `at_step` on,
    /// replaces the older ones. Written before they are removed: a crash in between
    /// leaves points twice, never none. Should it fail, the snapshot drops the
    /// points from the checkpoints it reads back.
    fn rewrite_checkpoints(&mut self, run: u32, at_step: u64) -> io::Result<()> {
        let all = self.all_points();
        let (older, mut all) = match all {
            Ok(found) => found,
            Err(e) => {
                self.pending_drops.push((run, at_step));
                return Err(e);
            }
        };
        all.drop_run_from(run, at_step);
        let tail = std::mem::replace(&mut self.rec.points, all);
        let last_before = std::mem::take(&mut self.checkpointed_last);
        let covered = match self.write_checkpoint() {
            Ok(covered) => covered,
            Err(e) => {
                // The older checkpoints stay as they were, and so does what they hold.
                self.rec.points = tail;
                self.checkpointed_last = last_before;
                self.pending_drops.push((run, at_step));
                return Err(e);
            }
        };
        // The new checkpoint holds everything: the older ones and the segments go.
        for (n, path) in older {
            if n < covered {
                fs::remove_file(path)?;
            }
        }
        self.next_segment()?;
        for n in 1..=covered {
            let _ = fs::remove_file(self.dir.join(segment_name(n)));
        }
        Ok(())
    }

    /// Every point recorded so far: the checkpoints read back, then the points in
    /// memory, with the writer's metric ids; and the checkpoints read.
    fn all_points(&self) -> io::Result<(Vec<(u32, PathBuf)>, super::model::Points)> {
        let older = numbered(&self.dir, "checkpoint-", naming::SNAPSHOT_SUFFIX).map_err(|e| io::Error::other(e.to_string()))?;
        let mut all = self.rec.points.since(self.rec.points.len());
        for (_, path) in &older {
            let part = snapshot::read(path).map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
            all.append(&part.points);
        }
        all.append(&self.rec.points);
        Ok((older, all))
    }

    fn run(&mut self, rx: mpsc::Receiver<Command>) {
        let mut next_sync = Instant::now() + FLUSH_PERIOD;
        loop {
            let wait = next_sync.saturating_duration_since(Instant::now());
            let result = match rx.recv_timeout(wait) {
                Ok(Command::Event(t, e)) => self.on_event(t, e),
                Ok(Command::Snapshot(finale, reply)) => {
                    finale.apply(&mut self.rec);
                    let _ = reply.send(self.write_snapshot().map(|_| self.snapshot.clone()));
                    Ok(())
                }
                Ok(Command::Finish(finale, reply)) => {
                    // Events still queued were sent before the finish: record them.
                    while let Ok(Command::Event(t, e)) = rx.try_recv() {
                        let _ = self.on_event(t, e);
                    }
                    let _ = reply.send(self.finish(finale));
                    return;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => Ok(()),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = self.sync();
                    return;
                }
            };
            if Instant::now() >= next_sync {
                next_sync = Instant::now() + FLUSH_PERIOD;
                let synced = if self.failed { Ok(()) } else { self.sync() };
                self.fail_on(synced);
            }
            self.fail_on(result);
        }
    }

    /// Writes the final snapshot; the journal goes once the snapshot holds everything.
    fn finish(&mut self, finale: Finale) -> io::Result<PathBuf> {
        finale.apply(&mut self.rec);
        let written = self.write_snapshot();
        if let Ok(true) = written {
            self.out = None;
            let _ = fs::remove_dir_all(&self.dir);
        } else {
            let _ = self.sync();
        }
        written.map(|_| self.snapshot.clone())
    }

    /// Writes the snapshot from the checkpoints (read back one at a time) and the
    /// points since. A checkpoint that cannot be read is left out and said: the
    /// snapshot keeps what can be read, and `Ok(false)` tells the caller to keep
    /// the journal, which still holds it.
    fn write_snapshot(&mut self) -> io::Result<bool> {
        let mut lost = Vec::new();
        let checkpoints = numbered(&self.dir, "checkpoint-", naming::SNAPSHOT_SUFFIX).unwrap_or_else(|e| {
            lost.push(e.0);
            Vec::new()
        });
        let names = self.rec.points.since(self.rec.points.len());
        let read_back = checkpoints.iter().filter_map(|(_, path)| match snapshot::read(path) {
            Ok(part) => {
                // The writer's name table: ids, and the order of a step's points, as one recording.
                let mut points = names.clone();
                points.append(&part.points);
                for (run, step) in &self.pending_drops {
                    points.drop_run_from(*run, *step);
                }
                Some(std::borrow::Cow::Owned(points))
            }
            Err(e) => {
                lost.push(format!("{}: {e}", path.display()));
                None
            }
        });
        let parts = read_back.chain([std::borrow::Cow::Borrowed(&self.rec.points)]);
        snapshot::write_parts(&self.snapshot, &self.rec.meta, parts, snapshot::SNAPSHOT)?;
        if !lost.is_empty() {
            let what = lost.join("; ");
            tracing::error!(journal = %self.dir.display(), "the snapshot lacks points that the journal could not read back: {what}");
            crate::say!("rlmon: the snapshot {} lacks points the journal could not read back ({what}); the journal {} is kept", self.snapshot.display(), self.dir.display());
        }
        Ok(lost.is_empty())
    }

    /// After a write error the journal stops (the recording in memory goes on, so
    /// the final snapshot can still be written); the error is logged once.
    fn fail_on(&mut self, result: io::Result<()>) {
        if let Err(e) = result {
            if !self.failed {
                tracing::error!(journal = %self.dir.display(), "journal write failed, journalling stops: {e}");
                self.failed = true;
                *self.failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
            }
        }
    }
}

/// What recovery found besides the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    pub recording: Recording,
    /// Events read from segments (after the checkpoint, if any).
    pub events: usize,
    /// Set when the last segment ended in a torn or corrupted frame: what was lost.
    pub damage: Option<String>,
}

fn numbered(dir: &Path, prefix: &str, suffix: &str) -> Result<Vec<(u32, PathBuf)>, BadFile> {
    let entries = fs::read_dir(dir).map_err(|e| BadFile(format!("cannot list the journal: {e}")))?;
    let mut out: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n = name.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Reads one segment's records, stopping at the first bad frame.
fn read_segment(path: &Path) -> Result<(Vec<Record>, Tail), BadFile> {
    let len = fs::metadata(path).map_err(|e| BadFile(format!("{}: {e}", path.display())))?.len();
    if len > SEGMENT_LIMIT + frame::MAX_FRAME as u64 + 8 {
        return Err(BadFile(format!("{}: {len} bytes, larger than any segment rlmon writes", path.display())));
    }
    let bytes = fs::read(path).map_err(|e| BadFile(format!("{}: {e}", path.display())))?;
    parse_segment(&bytes).map_err(|BadFile(e)| BadFile(format!("{}: {e}", path.display())))
}

/// One segment's records from its bytes, stopping at the first bad frame.
fn parse_segment(bytes: &[u8]) -> Result<(Vec<Record>, Tail), BadFile> {
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        // A crash right after creating a segment leaves it empty or with a partial header.
        if bytes.len() < 8 && MAGIC.starts_with(&bytes[..bytes.len().min(4)]) {
            return Ok((Vec::new(), Tail::Torn { offset: 0 }));
        }
        return Err(BadFile("not an rlmon journal segment".into()));
    }
    let version = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if version > FORMAT_VERSION {
        return Err(BadFile(format!("journal format version {version} is newer than this rlmon reads ({FORMAT_VERSION}); upgrade rlmon")));
    }
    let (frames, tail) = frame::read_frames(&bytes[8..]);
    let mut records = Vec::with_capacity(frames.len());
    for (i, f) in frames.into_iter().enumerate() {
        // A frame whose checksum matches but whose content does not parse was not
        // written by this format: refuse rather than guess.
        let r = Record::decode(f).map_err(|e| BadFile(format!("record {} is not a journal record: {e}", i + 1)))?;
        records.push(r);
    }
    Ok((records, tail))
}

/// Rebuilds the session a journal folder holds.
pub fn recover(dir: &Path) -> Result<Recovered, BadFile> {
    if !dir.is_dir() {
        return Err(BadFile("not a journal folder".into()));
    }
    // Checkpoints hold consecutive stretches of points; the newest has the metadata.
    let mut recording: Option<Recording> = None;
    let mut covered = 0;
    for (n, path) in numbered(dir, "checkpoint-", naming::SNAPSHOT_SUFFIX)? {
        let part = snapshot::read(&path).map_err(|e| BadFile(format!("{}: {e}", path.display())))?;
        let points = match recording.take() {
            Some(mut so_far) => {
                so_far.points.append(&part.points);
                so_far.points
            }
            None => part.points,
        };
        recording = Some(Recording::from_parts(part.meta, points));
        covered = n;
    }
    let segments: Vec<(u32, PathBuf)> = numbered(dir, "segment-", ".log")?.into_iter().filter(|(n, _)| *n > covered).collect();
    let mut events = 0;
    let mut damage = None;
    for (i, (n, path)) in segments.iter().enumerate() {
        let (records, tail) = read_segment(path)?;
        for r in records {
            match (r, recording.as_mut()) {
                (Record::Header(meta), None) => {
                    if meta.format_version > FORMAT_VERSION {
                        return Err(BadFile(format!("journal format version {} is newer than this rlmon reads", meta.format_version)));
                    }
                    recording = Some(Recording::new(*meta));
                }
                (Record::Event { t, event }, Some(rec)) => {
                    rec.record(t, &event);
                    events += 1;
                }
                (Record::Header(_), Some(_)) => return Err(BadFile(format!("{}: a second session header", path.display()))),
                (Record::Event { .. }, None) => return Err(BadFile(format!("{}: events before the session header", path.display()))),
            }
        }
        let what = match tail {
            Tail::Clean => None,
            Tail::Torn { offset } => Some(format!("segment {n} ends in a record cut short at byte {}", offset + 8)),
            Tail::Corrupt { offset, reason } => Some(format!("segment {n} is damaged at byte {} ({reason}); the rest of it is lost", offset + 8)),
        };
        if let Some(what) = what {
            if i + 1 < segments.len() {
                // Later segments continue after a gap: keep them, but say so.
                tracing::warn!(journal = %dir.display(), "{what}");
            }
            damage = Some(what);
        }
    }
    let mut recording = recording.ok_or_else(|| BadFile("the journal holds no session header (empty or foreign folder)".into()))?;
    if !owner_alive(dir) {
        close_interrupted(&mut recording);
    }
    Ok(Recovered { recording, events, damage })
}

/// Reason given to runs that were going when their session stopped without ending.
pub const INTERRUPTED: &str = "interrupted: rlmon stopped before the run ended (recovered from the journal)";

/// A session whose writer is gone never wrote its ending: runs still going are
/// marked failed as interrupted, and the alerts, markers and run summaries the
/// snapshot would have carried are rebuilt by replaying what was recorded.
fn close_interrupted(rec: &mut Recording) {
    for r in rec.meta.runs.iter_mut().filter(|r| !r.state.is_over()) {
        r.state = crate::session::RunState::Failed;
        r.error = Some(INTERRUPTED.into());
    }
    Finale::of(&super::replayed_state(rec), rec.meta.elapsed_s, rec.meta.hardware.clone()).apply(rec);
}

/// Whether the process that wrote a journal is still running (this one included).
fn owner_alive(dir: &Path) -> bool {
    let owner = fs::read_to_string(dir.join(OWNER)).ok().and_then(|s| s.trim().parse::<u32>().ok());
    owner.is_some_and(|pid| pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists())
}

/// Journals in `dir` whose writer is gone (the process that owned them is not
/// running): sessions that ended without writing their snapshot.
pub fn interrupted(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir() && naming::journal_stem(p).is_some() && !owner_alive(p))
        .collect();
    found.sort();
    found
}

/// Turns an interrupted journal into the snapshot beside it and removes the journal
/// (only once the snapshot is safely on disk).
pub fn convert(journal: &Path) -> Result<(PathBuf, Recovered), BadFile> {
    let recovered = recover(journal)?;
    let stem = naming::journal_stem(journal).ok_or_else(|| BadFile("not named *.rlmon.journal".into()))?;
    let dir = journal.parent().unwrap_or(Path::new("."));
    let path = snapshot::write_in(dir, &stem, &recovered.recording).map_err(|e| BadFile(format!("cannot write the snapshot: {e}")))?;
    let _ = fs::remove_dir_all(journal);
    Ok((path, recovered))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::model::tests::{canonical, live_and_recorded, live_events, runs};

    fn meta() -> Meta {
        Meta::new("demo", "20260101T000000Z".into(), "# config".into(), &runs())
    }

    /// Writes the test session's events through a recorder that is then dropped
    /// without finishing, as a killed rlmon would leave it (minus the last flush).
    fn journal_of(dir: &Path) -> PathBuf {
        let rec = Recorder::start(dir, "demo-1", meta()).unwrap();
        for (t, e) in live_events() {
            rec.record(t, &e);
        }
        let journal = rec.journal.clone();
        drop(rec); // the writer syncs what it has and stops; no snapshot
        std::thread::sleep(Duration::from_millis(200));
        journal
    }

    #[test]
    fn a_crashed_journal_recovers_at_every_cut() {
        let dir = tempfile::tempdir().unwrap();
        let journal = journal_of(dir.path());
        let (_, whole) = live_and_recorded();
        let recovered = recover(&journal).unwrap();
        assert_eq!(recovered.damage, None);
        assert_eq!(canonical(&recovered.recording), canonical(&whole));
        assert_eq!(recovered.events, live_events().len());

        let seg = journal.join(segment_name(1));
        let bytes = fs::read(&seg).unwrap();
        let (frames, _) = frame::read_frames(&bytes[8..]);
        let mut boundaries = vec![8];
        for f in &frames {
            boundaries.push(boundaries.last().unwrap() + frame::HEADER_LEN + f.len());
        }
        for cut in 0..=bytes.len() {
            fs::write(&seg, &bytes[..cut]).unwrap();
            let result = recover(&journal);
            // Whole records before the cut: the header is record 0.
            let whole_records = boundaries.iter().filter(|b| **b <= cut).count().saturating_sub(1);
            if whole_records == 0 {
                assert!(result.is_err(), "cut {cut}: no header, no session");
                continue;
            }
            let r = result.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert_eq!(r.events, whole_records - 1, "cut {cut}");
            assert_eq!(r.damage.is_none(), boundaries.contains(&cut), "cut {cut}: {:?}", r.damage);
            // The recovered recording is exactly the events before the cut.
            let mut expect = Recording::new(meta());
            for (t, e) in live_events().into_iter().take(r.events) {
                expect.record(t, &e);
            }
            assert_eq!(r.recording.meta, expect.meta, "cut {cut}");
            assert_eq!(canonical(&r.recording), canonical(&expect), "cut {cut}");
        }
    }

    #[test]
    fn finish_writes_the_snapshot_and_removes_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::start(dir.path(), "demo-2", meta()).unwrap();
        for (t, e) in live_events() {
            rec.record(t, &e);
        }
        let journal = rec.journal.clone();
        let finale = Finale { elapsed_s: 3.0, summaries: vec![serde_json::json!({"name": "a"}), serde_json::json!({"name": "b"})], ..Finale::default() };
        let path = rec.finish(finale).unwrap();
        assert!(!journal.exists());
        let back = snapshot::read(&path).unwrap();
        assert_eq!(back.meta.runs[0].summary["name"], "a");
        assert_eq!(back.meta.elapsed_s, 3.0);
        assert_eq!(back.points.len(), live_and_recorded().1.points.len());
    }

    #[test]
    fn compaction_writes_only_new_points_and_recovers_everything() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("c.rlmon.journal");
        fs::create_dir_all(&journal).unwrap();
        let mut w = Writer::open(journal.clone(), dir.path().join("c.rlmon.parquet"), Recording::new(meta()), Default::default()).unwrap();
        let events = live_events();
        let (third, two_thirds) = (events.len() / 3, 2 * events.len() / 3);
        let mut part_points = Vec::new();
        for (t, e) in events[..third].iter().cloned() {
            w.on_event(t, e).unwrap();
        }
        part_points.push(w.rec.points.len());
        w.compact().unwrap();
        assert!(w.rec.points.is_empty(), "checkpointed points leave memory");
        for (t, e) in events[third..two_thirds].iter().cloned() {
            w.on_event(t, e).unwrap();
        }
        part_points.push(w.rec.points.len());
        w.compact().unwrap();
        for (t, e) in events[two_thirds..].iter().cloned() {
            w.on_event(t, e).unwrap();
        }
        w.sync().unwrap();
        assert!(!journal.join(segment_name(1)).exists() && !journal.join(segment_name(2)).exists(), "compacted segments are removed");
        // Each checkpoint holds only the points of its own segment.
        for (n, expect) in [(1, part_points[0]), (2, part_points[1])] {
            assert_eq!(snapshot::read(&journal.join(checkpoint_name(n))).unwrap().points.len(), expect, "checkpoint {n}");
        }
        let r = recover(&journal).unwrap();
        assert_eq!(r.events, events.len() - two_thirds);
        let (live, whole) = live_and_recorded();
        assert_eq!(canonical(&r.recording), canonical(&whole));
        assert_eq!(r.recording.final_state().runs[0].series, live.runs[0].series);
    }

    #[test]
    fn a_resume_reaching_into_checkpoints_is_recovered_without_the_discarded_points() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("r.rlmon.journal");
        fs::create_dir_all(&journal).unwrap();
        let mut w = Writer::open(journal.clone(), dir.path().join("r.rlmon.parquet"), Recording::new(meta()), Default::default()).unwrap();
        let point = |step: u64, loss: f64| Event::Metrics { run: 0, step, time_s: step as f64, values: vec![("loss".into(), loss)] };
        w.on_event(0.0, Event::RunStarted { run: 0, device: "attached".into(), threads: 0 }).unwrap();
        for s in 1..=5 {
            w.on_event(s as f64, point(s, 5.0)).unwrap();
        }
        w.compact().unwrap();
        w.on_event(6.0, point(6, 5.0)).unwrap();
        w.on_event(7.0, Event::Resumed { run: 0, at_step: 3, discarded: 4 }).unwrap();
        for s in 3..=4 {
            w.on_event(7.0 + s as f64, point(s, 1.0)).unwrap();
        }
        w.sync().unwrap();
        let expect: Vec<(u64, f64)> = vec![(1, 5.0), (2, 5.0), (3, 1.0), (4, 1.0)];
        let got = |p: &super::super::model::Points| p.step.iter().copied().zip(p.value.iter().copied()).collect::<Vec<_>>();
        assert_eq!(got(&w.all_points().unwrap().1), expect);
        let r = recover(&journal).unwrap();
        assert_eq!(got(&r.recording.points), expect, "the checkpointed steps 3..5 stay discarded");
        assert_eq!(r.recording.meta.resumes.len(), 1);
        let state = r.recording.final_state();
        assert_eq!(*state.runs[0].series["loss"].steps(0..usize::MAX), [1, 2, 3, 4]);
        assert!(state.log.iter().any(|l| l.message == "resumed at step 3 (4 steps discarded)"), "{:?}", state.log);
    }

    /// A session long enough to checkpoint many times: the writer holds only the
    /// points since the last checkpoint, and the snapshot assembled from the
    /// checkpoints has every point, and streams to the live state.
    #[test]
    fn a_checkpointed_session_writes_every_point_to_its_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("long.rlmon.journal");
        fs::create_dir_all(&journal).unwrap();
        let snapshot_path = dir.path().join("long.rlmon.parquet");
        let mut w = Writer::open(journal.clone(), snapshot_path.clone(), Recording::new(meta()), Default::default()).unwrap();
        w.segment_limit = 1024;
        let mut most_held = 0;
        for (t, e) in live_events() {
            w.on_event(t, e).unwrap();
            most_held = most_held.max(w.rec.points.len());
        }
        let (live, whole) = live_and_recorded();
        let checkpoints = numbered(&journal, "checkpoint-", naming::SNAPSHOT_SUFFIX).unwrap().len();
        assert!(checkpoints >= 4, "{checkpoints} checkpoints");
        assert!(most_held < whole.points.len() / 3, "held {most_held} of {}", whole.points.len());
        let path = w.finish(Finale { elapsed_s: 3.0, ..Finale::default() }).unwrap();
        assert!(!journal.exists(), "the snapshot holds everything");
        let back = snapshot::read(&path).unwrap();
        assert_eq!(canonical(&back), canonical(&whole), "the same points as a snapshot of the whole recording");
        assert_eq!(back.meta.runs, whole.meta.runs);
        let mut played = crate::record::Playback::open(&path).unwrap();
        assert!(matches!(played, crate::record::Playback::Streamed(_)), "a step never spans two checkpoints here");
        crate::record::model::tests::same_series(&live, &played.final_state());
    }

    /// A checkpoint that cannot be read back: the snapshot keeps every other point,
    /// and the journal, which still holds it, stays.
    #[test]
    fn an_unreadable_checkpoint_keeps_the_journal_and_the_rest_of_the_points() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("bad.rlmon.journal");
        fs::create_dir_all(&journal).unwrap();
        let mut w = Writer::open(journal.clone(), dir.path().join("bad.rlmon.parquet"), Recording::new(meta()), Default::default()).unwrap();
        let events = live_events();
        let half = events.len() / 2;
        for (t, e) in events[..half].iter().cloned() {
            w.on_event(t, e).unwrap();
        }
        w.compact().unwrap();
        for (t, e) in events[half..].iter().cloned() {
            w.on_event(t, e).unwrap();
        }
        let tail = w.rec.points.len();
        fs::write(journal.join(checkpoint_name(1)), b"PAR1 damaged").unwrap();
        let path = w.finish(Finale::default()).unwrap();
        assert!(journal.join(checkpoint_name(1)).exists(), "the journal is kept");
        assert_eq!(snapshot::read(&path).unwrap().points.len(), tail, "the points since the checkpoint");
    }

    /// After the journal stopped (a full disk), a resume into checkpointed steps
    /// cannot rewrite them: the snapshot leaves the discarded points out as it
    /// reads the checkpoints back.
    #[test]
    fn a_resume_after_the_journal_stopped_is_applied_to_the_checkpoints_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("s.rlmon.journal");
        fs::create_dir_all(&journal).unwrap();
        let mut w = Writer::open(journal.clone(), dir.path().join("s.rlmon.parquet"), Recording::new(meta()), Default::default()).unwrap();
        let point = |step: u64, loss: f64| Event::Metrics { run: 0, step, time_s: step as f64, values: vec![("loss".into(), loss)] };
        w.on_event(0.0, Event::RunStarted { run: 0, device: "attached".into(), threads: 0 }).unwrap();
        for s in 1..=5 {
            w.on_event(s as f64, point(s, 5.0)).unwrap();
        }
        w.compact().unwrap();
        w.failed = true;
        w.on_event(6.0, Event::Resumed { run: 0, at_step: 3, discarded: 3 }).unwrap();
        for s in 3..=4 {
            w.on_event(6.0 + s as f64, point(s, 1.0)).unwrap();
        }
        let path = w.finish(Finale::default()).unwrap();
        let back = snapshot::read(&path).unwrap();
        let mut got: Vec<(u64, f64)> = back.points.step.iter().copied().zip(back.points.value.iter().copied()).collect();
        got.sort_by_key(|p| p.0);
        assert_eq!(got, vec![(1, 5.0), (2, 5.0), (3, 1.0), (4, 1.0)]);
    }

    #[test]
    fn a_recovered_session_ends_its_runs_as_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::start(dir.path(), "demo-3", meta()).unwrap();
        // Run a finishes; run b is still going when rlmon dies.
        let events: Vec<_> = live_events().into_iter().filter(|(_, e)| !matches!(e, Event::RunEnded { run: 1, .. })).collect();
        for (t, e) in &events {
            rec.record(*t, e);
        }
        let journal = rec.journal.clone();
        drop(rec);
        std::thread::sleep(Duration::from_millis(200));
        fs::write(journal.join(OWNER), "999999999").unwrap();
        let r = recover(&journal).unwrap().recording;
        assert_eq!(r.meta.runs[0].state, crate::session::RunState::Finished);
        assert_eq!(r.meta.runs[1].state, crate::session::RunState::Failed);
        assert_eq!(r.meta.runs[1].error.as_deref(), Some(INTERRUPTED));
        // The ending the snapshot would have had: summaries and the NaN alert.
        assert_eq!(r.meta.runs[1].summary["state"], "failed");
        assert!(r.meta.alerts.iter().any(|a| a["kind"] == "nonfinite" && a["run"] == "b"), "{:?}", r.meta.alerts);
        let state = r.final_state();
        assert!(state.log.iter().any(|l| l.message.contains("failed at step 5: interrupted")), "{:?}", state.log);
    }

    #[test]
    fn interrupted_journals_are_found_and_converted() {
        let dir = tempfile::tempdir().unwrap();
        let journal = journal_of(dir.path());
        assert!(interrupted(dir.path()).is_empty(), "a journal this process owns is live");
        fs::write(journal.join(OWNER), "999999999").unwrap();
        assert_eq!(interrupted(dir.path()), vec![journal.clone()]);
        let (path, r) = convert(&journal).unwrap();
        assert_eq!(path, dir.path().join("demo-1.rlmon.parquet"));
        assert!(!journal.exists());
        assert_eq!(canonical(&snapshot::read(&path).unwrap()), canonical(&r.recording));
    }

    #[test]
    fn foreign_and_newer_journals_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("x.rlmon.journal");
        fs::create_dir_all(&j).unwrap();
        assert!(recover(&j).unwrap_err().0.contains("no session header"));
        fs::write(j.join(segment_name(1)), b"hello, this is text").unwrap();
        assert!(recover(&j).unwrap_err().0.contains("not an rlmon journal segment"));
        let mut newer = MAGIC.to_vec();
        newer.extend((FORMAT_VERSION + 1).to_le_bytes());
        fs::write(j.join(segment_name(1)), newer).unwrap();
        assert!(recover(&j).unwrap_err().0.contains("newer than this rlmon"));
        let mut bogus = MAGIC.to_vec();
        bogus.extend(FORMAT_VERSION.to_le_bytes());
        frame::write_frame(&mut bogus, b"{\"not\": \"a record\"}").unwrap();
        // (no known record tag)
        fs::write(j.join(segment_name(1)), bogus).unwrap();
        assert!(recover(&j).unwrap_err().0.contains("not a journal record"));
    }
}
