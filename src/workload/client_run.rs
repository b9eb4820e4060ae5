//! Runs written by rlmon's Python client (`rlmon.init` ... `rlmon.finish`; the
//! records are read by ingest::client): finding them on disk, and following one
//! run's alerts and finish record while its metrics file is followed like any
//! other (by the attached run that follows it).
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::ingest::client::{self, ClientAlert, Finish, Start};

/// A run counts as recent for a plain `rlmon watch` when it was written to within
/// this long, or its process is still running on this machine.
pub const RECENT: Duration = Duration::from_secs(10 * 60);

/// Whether `dir` is a client run folder.
pub fn is_run(dir: &Path) -> bool {
    dir.join(client::RUN_FILE).is_file()
}

/// The run's start record, when it can be read.
pub fn start(dir: &Path) -> Option<Start> {
    std::fs::read_to_string(dir.join(client::RUN_FILE)).ok().and_then(|t| client::start(&t).ok())
}

/// The run's finish record, once the script has written it.
pub fn finish(dir: &Path) -> Option<Finish> {
    std::fs::read_to_string(dir.join(client::FINISH_FILE)).ok().and_then(|t| client::finish(&t).ok())
}

/// The client runs at `dir`: the folder itself when it is one, else the run
/// folders in it (a `rlmon-runs` folder), oldest first.
pub fn runs_under(dir: &Path) -> Vec<PathBuf> {
    if is_run(dir) {
        return vec![dir.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut runs: Vec<(f64, PathBuf)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_run(p))
        .map(|p| (start(&p).and_then(|s| s.started_unix).unwrap_or(0.0), p))
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    runs.into_iter().map(|(_, p)| p).collect()
}

/// Where the client writes its runs: `RLMON_DIR`, else `./rlmon-runs`.
pub fn default_root() -> PathBuf {
    std::env::var_os(client::DIR_ENV).map_or_else(|| PathBuf::from(client::DEFAULT_DIR), PathBuf::from)
}

/// The runs under `root` that a plain `rlmon watch` follows: written to within
/// [`RECENT`] of `now`, or not finished with their process alive here (`alive`
/// tells whether a pid is a running process).
pub fn recent(root: &Path, now: SystemTime, alive: impl Fn(u32) -> bool) -> Vec<PathBuf> {
    runs_under(root)
        .into_iter()
        .filter(|dir| {
            let written = [client::METRICS_FILE, client::RUN_FILE, client::FINISH_FILE, client::ALERTS_FILE]
                .iter()
                .filter_map(|f| std::fs::metadata(dir.join(f)).and_then(|m| m.modified()).ok())
                .max();
            let fresh = written.is_some_and(|w| now.duration_since(w).map_or(true, |age| age <= RECENT));
            fresh || (finish(dir).is_none() && live_pid(dir, &alive).is_some())
        })
        .collect()
}

/// The run's process, when it was started on this machine and is still running.
pub fn live_pid(dir: &Path, alive: impl Fn(u32) -> bool) -> Option<u32> {
    let s = start(dir)?;
    let here = hostname();
    if s.host.is_some_and(|h| here.as_deref().is_some_and(|here| here != h)) {
        return None;
    }
    s.pid.filter(|&pid| pid != 0 && alive(pid))
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_owned())
}

/// Reads what was appended to a file since `offset`: the complete lines, and the
/// offset after the last of them (a line still being written waits).
pub fn new_lines(path: &Path, offset: &mut u64) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else { return Vec::new() };
    let Ok(len) = file.metadata().map(|m| m.len()) else { return Vec::new() };
    if len < *offset {
        // Rewritten from the start.
        *offset = 0;
    }
    if len == *offset || file.seek(SeekFrom::Start(*offset)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if file.take(len - *offset).read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let (lines, used) = complete_lines(&buf);
    *offset += used as u64;
    lines
}

/// The complete lines of `buf` and how many bytes they take.
pub fn complete_lines(buf: &[u8]) -> (Vec<String>, usize) {
    let used = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let lines = String::from_utf8_lossy(&buf[..used]).lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
    (lines, used)
}

/// The alerts of new alert lines; the lines that are not alerts, as messages.
pub fn alerts_of(lines: &[String]) -> (Vec<ClientAlert>, Vec<String>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for line in lines {
        match client::alert_line(line) {
            Ok(a) => good.push(a),
            Err(e) => bad.push(format!("{}: {e}", client::ALERTS_FILE)),
        }
    }
    (good, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_run(root: &Path, folder: &str, name: &str, started: f64) -> PathBuf {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(client::RUN_FILE), format!(r#"{{"rlmon_client": 1, "name": "{name}", "started_unix": {started}, "pid": 0}}"#)).unwrap();
        dir
    }

    #[test]
    fn runs_are_found_in_their_folder_or_its_parent_oldest_first() {
        let root = tempfile::tempdir().unwrap();
        let b = write_run(root.path(), "b-20261127T100000Z", "b", 200.0);
        let a = write_run(root.path(), "a-20261127T090000Z", "a", 100.0);
        std::fs::create_dir(root.path().join("not-a-run")).unwrap();
        assert_eq!(runs_under(root.path()), vec![a.clone(), b.clone()]);
        assert_eq!(runs_under(&b), vec![b.clone()]);
        assert_eq!(start(&a).unwrap().name, "a");
        // Just written: recent. Looked at from an hour later, with no process: not.
        assert_eq!(recent(root.path(), SystemTime::now(), |_| false), vec![a.clone(), b.clone()]);
        assert!(recent(root.path(), SystemTime::now() + Duration::from_secs(3600), |_| true).is_empty(), "pid 0 is no process");
        assert!(finish(&a).is_none());
        std::fs::write(a.join(client::FINISH_FILE), r#"{"state": "finished", "exit_code": 0}"#).unwrap();
        assert_eq!(finish(&a).unwrap().state, "finished");
    }

    #[test]
    fn only_complete_lines_are_read_and_the_rest_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(client::ALERTS_FILE);
        let mut offset = 0;
        assert!(new_lines(&path, &mut offset).is_empty(), "no file yet");
        std::fs::write(&path, "{\"title\": \"a\"}\n{\"title\": \"b").unwrap();
        assert_eq!(new_lines(&path, &mut offset), vec!["{\"title\": \"a\"}"]);
        std::fs::write(&path, "{\"title\": \"a\"}\n{\"title\": \"b\"}\nnot json\n").unwrap();
        let lines = new_lines(&path, &mut offset);
        assert_eq!(lines.len(), 2);
        let (good, bad) = alerts_of(&lines);
        assert_eq!((good.len(), good[0].title.as_str(), bad.len()), (1, "b", 1));
        assert!(new_lines(&path, &mut offset).is_empty());
    }
}
