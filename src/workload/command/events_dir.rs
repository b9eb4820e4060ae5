//! Following a TensorBoard log folder while it is written: every event file under
//! it (sub-folders too, as TensorBoard's run folders), each tailed as it grows, new
//! files picked up as they appear. A record cut short at the end of a file is the
//! writer's next record half written: its bytes wait for the rest.
//!
//! Files in one folder are one history (a restarted writer starts a new file next
//! to the old one), so they share a stream key: the folder's path relative to the
//! root. Records of a sub-folder get that path as a prefix to their tags, as
//! TensorBoard names them `run/tag`.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::tail::Tail;
use crate::ingest::tensorboard::{self, Framed};
use crate::ingest::{Line, SkipKind};

/// Folders deeper than this under the root are not searched.
const MAX_DEPTH: usize = 6;
/// At most this many event files are followed (a wrong root such as `/` stays cheap).
const MAX_FILES: usize = 256;

pub struct EventDir {
    root: PathBuf,
    /// By path: sorted, so a folder's files are read in name (time-stamp) order.
    files: BTreeMap<PathBuf, Followed>,
}

struct Followed {
    tail: Tail,
    /// Bytes read but not yet a whole record.
    pending: Vec<u8>,
}

/// One record read, with the stream it belongs to.
#[derive(Debug, PartialEq)]
pub struct DirRecord {
    /// The folder relative to the root (`""` for the root itself).
    pub stream: String,
    pub line: Line,
}

impl EventDir {
    pub fn new(root: PathBuf) -> Self {
        EventDir { root, files: BTreeMap::new() }
    }

    /// How many event files are followed.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Reads what is new in every event file, finding new files first. A root that
    /// does not exist yet is not an error: the job may create it later.
    pub fn poll(&mut self) -> std::io::Result<Vec<DirRecord>> {
        for path in event_files(&self.root) {
            if self.files.len() >= MAX_FILES {
                break;
            }
            self.files.entry(path.clone()).or_insert_with(|| Followed { tail: Tail::new(path), pending: Vec::new() });
        }
        let mut out = Vec::new();
        for (path, f) in &mut self.files {
            let read = f.tail.poll()?;
            f.pending.extend_from_slice(&read.bytes);
            if let Some(restart) = read.restarted {
                // A rewritten file starts over: its old half record has no end.
                f.pending = restart.after;
            }
            let stream = stream_key(&self.root, path);
            out.extend(records(&mut f.pending).into_iter().map(|line| DirRecord { stream: stream.clone(), line }));
        }
        Ok(out)
    }
}

/// The whole records at the start of `pending`, which keeps what is left.
pub fn records(pending: &mut Vec<u8>) -> Vec<Line> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < pending.len() {
        match tensorboard::next_record(&pending[at..]) {
            Framed::Record(data, used) => {
                out.push(tensorboard::parse_event(data));
                at += used;
            }
            Framed::Damaged(why, used) => {
                out.push(Line::Skip(SkipKind::Malformed, why));
                at += used;
            }
            Framed::Incomplete => break,
        }
    }
    pending.drain(..at);
    out
}

/// The stream a file belongs to: its folder relative to the root.
fn stream_key(root: &Path, file: &Path) -> String {
    let dir = file.parent().unwrap_or(root);
    dir.strip_prefix(root).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Prefixes a record's tags with its stream's folder (`eval/loss`), as TensorBoard shows them.
pub fn prefixed(stream: &str, line: Line) -> Line {
    match line {
        Line::Metrics(mut rec) if !stream.is_empty() => {
            for (name, _) in &mut rec.fields {
                *name = format!("{stream}/{name}").into();
            }
            Line::Metrics(rec)
        }
        other => other,
    }
}

/// Event files under `root`, sorted; unreadable folders are passed over.
pub fn event_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() && depth < MAX_DEPTH {
                dirs.push((path, depth + 1));
            } else if kind.is_file() && tensorboard::is_event_file(&entry.file_name().to_string_lossy()) {
                found.push(path);
            }
        }
    }
    found.sort();
    found.truncate(MAX_FILES);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn fixture() -> Vec<u8> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tensorboard");
        let file = event_files(&dir).into_iter().next().expect("a committed event file");
        std::fs::read(file).unwrap()
    }

    #[test]
    fn a_growing_file_is_read_record_by_record_and_a_half_record_waits() {
        let bytes = fixture();
        let dir = tempfile::tempdir().unwrap();
        let mut events = EventDir::new(dir.path().to_path_buf());
        assert!(events.poll().unwrap().is_empty(), "nothing there yet");
        let path = dir.path().join("events.out.tfevents.1.host");
        let mut file = std::fs::File::create(&path).unwrap();
        let mut whole = Vec::new();
        tensorboard::read_all(&bytes, |_, l| whole.push(l));
        // Byte by uneven byte: each record comes out once, whole, in order.
        let mut got = Vec::new();
        for chunk in bytes.chunks(7) {
            file.write_all(chunk).unwrap();
            got.extend(events.poll().unwrap().into_iter().map(|r| r.line));
        }
        assert_eq!(got, whole);
        assert_eq!(events.files(), 1);
    }

    #[test]
    fn files_in_sub_folders_are_found_later_and_named_by_their_folder() {
        let bytes = fixture();
        let dir = tempfile::tempdir().unwrap();
        let mut events = EventDir::new(dir.path().join("run"));
        assert!(events.poll().unwrap().is_empty(), "the root does not exist yet");
        std::fs::create_dir_all(dir.path().join("run/eval")).unwrap();
        std::fs::write(dir.path().join("run/eval/events.out.tfevents.2.host"), &bytes).unwrap();
        std::fs::write(dir.path().join("run/notes.txt"), "not an event file").unwrap();
        let got = events.poll().unwrap();
        assert!(!got.is_empty());
        assert!(got.iter().all(|r| r.stream == "eval"));
        let named = got.into_iter().map(|r| prefixed(&r.stream, r.line)).find_map(|l| if let Line::Metrics(r) = l { Some(r) } else { None }).unwrap();
        assert!(named.fields.iter().all(|(n, _)| n.starts_with("eval/")), "{:?}", named.fields);
    }
}
