//! trackio projects on disk: a SQLite database per project, `<project>.db` in
//! trackio's folder (`TRACKIO_DIR`, else `HF_HOME/trackio`, else
//! `~/.cache/huggingface/trackio`). Opened read-only while trackio writes it (in
//! WAL mode: a reader sees each committed row, never a half-written one); its
//! rows are read by id, so each poll reads only what is new. What a row holds is
//! read by `ingest::trackio`.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::ingest::{trackio, Line};

/// trackio's folder of projects.
pub fn default_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = env("TRACKIO_DIR") {
        return Some(d);
    }
    if let Some(hf) = env("HF_HOME") {
        return Some(hf.join("trackio"));
    }
    let cache = env("XDG_CACHE_HOME").or_else(|| env("HOME").map(|h| h.join(".cache")))?;
    Some(cache.join("huggingface").join("trackio"))
}

/// Whether a file is a SQLite database (by its first bytes).
pub fn is_sqlite(path: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok() && &head == b"SQLite format 3\0"
}

/// A project's database from what a user wrote: a path to a `.db` file (as is, or
/// under `base`), or a project's name in trackio's folder. It need not exist yet
/// (a command's project is made when it starts).
pub fn project_db(project: &str, base: &Path) -> Result<PathBuf, String> {
    let as_path = base.join(project);
    if project.ends_with(".db") || as_path.is_file() {
        return Ok(as_path);
    }
    let dir = default_dir().ok_or("no trackio folder: set TRACKIO_DIR, or give the project's .db file")?;
    Ok(dir.join(format!("{project}.db")))
}

/// `PROJECT#RUN` or `PATH.db#RUN`: the project and one run by name.
pub fn split_run(arg: &str) -> (&str, Option<&str>) {
    match arg.rsplit_once('#') {
        Some((project, run)) if !run.is_empty() => (project, Some(run)),
        _ => (arg, None),
    }
}

/// The trackio project databases in a folder, sorted.
pub fn projects_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut dbs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "db") && is_sqlite(p)).collect();
    dbs.sort();
    dbs
}

/// What a project's tables gave since the last poll.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    /// A `metrics` row, as a record of its run (or skipped).
    Metrics(Line),
    /// An alert the script raised (`trackio.alert`), at its step.
    Alert { run: String, step: Option<u64>, title: String, text: String, severity: crate::health::Severity },
}

/// An open project database, read a few rows at a time.
pub struct Project {
    path: PathBuf,
    conn: Connection,
    /// The last row id read of `metrics` and of `alerts`.
    last_metric: i64,
    last_alert: i64,
    /// Rows read per poll at most: a long run's history comes over a few polls.
    batch: i64,
}

fn sql_err(path: &Path, e: rusqlite::Error) -> String {
    format!("{}: {e}", path.display())
}

impl Project {
    /// Opens `path` read-only. An error when it is not a trackio project.
    pub fn open(path: &Path) -> Result<Self, String> {
        if !path.is_file() {
            return Err(format!("{}: no such file", path.display()));
        }
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(|e| sql_err(path, e))?;
        // A writer holding its lock a moment: wait rather than fail.
        conn.busy_timeout(std::time::Duration::from_secs(2)).map_err(|e| sql_err(path, e))?;
        let has_metrics: bool = conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'metrics'", [], |r| r.get::<_, i64>(0))
            .map(|n| n > 0)
            .map_err(|e| format!("{}: not a SQLite database ({e})", path.display()))?;
        if !has_metrics {
            return Err(format!("{}: a SQLite database without trackio's `metrics` table", path.display()));
        }
        Ok(Project { path: path.to_path_buf(), conn, last_metric: 0, last_alert: 0, batch: 10_000 })
    }

    /// The project's name (its file's stem).
    pub fn name(&self) -> String {
        self.path.file_stem().map_or_else(|| "trackio".into(), |s| s.to_string_lossy().into_owned())
    }

    /// The runs logged so far, in the order they began.
    pub fn runs(&self) -> Result<Vec<String>, String> {
        let mut names: Vec<String> = Vec::new();
        let mut stmt = self.conn.prepare("SELECT run_name FROM metrics GROUP BY run_name ORDER BY min(id)").map_err(|e| sql_err(&self.path, e))?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(|e| sql_err(&self.path, e))?;
        for r in rows {
            names.push(r.map_err(|e| sql_err(&self.path, e))?);
        }
        // A run with a config and no metrics yet is a run too.
        if let Ok(mut stmt) = self.conn.prepare("SELECT run_name FROM configs ORDER BY id") {
            if let Ok(rows) = stmt.query_map([], |r| r.get::<_, String>(0)) {
                for r in rows.flatten() {
                    if !names.contains(&r) {
                        names.push(r);
                    }
                }
            }
        }
        Ok(names)
    }

    /// Each run's config, flattened.
    pub fn configs(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        let Ok(mut stmt) = self.conn.prepare("SELECT run_name, config FROM configs ORDER BY id") else { return out };
        let Ok(rows) = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, blob_or_text(r, 1)?))) else { return out };
        for (run, config) in rows.flatten() {
            out.insert(run, trackio::config(&config));
        }
        out
    }

    /// Rows written since the last poll (of run `run` only, when given), in order:
    /// metrics first, then alerts.
    pub fn poll(&mut self, run: Option<&str>) -> Result<Vec<Row>, String> {
        let mut out = Vec::new();
        loop {
            let mut fetched = 0;
            let mut stmt = self.conn.prepare_cached("SELECT id, run_name, step, timestamp, metrics FROM metrics WHERE id > ?1 ORDER BY id LIMIT ?2").map_err(|e| sql_err(&self.path, e))?;
            let rows = stmt
                .query_map(rusqlite::params![self.last_metric, self.batch], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?, r.get::<_, String>(3)?, blob_or_text(r, 4)?)))
                .map_err(|e| sql_err(&self.path, e))?;
            for row in rows {
                let (id, name, step, timestamp, metrics) = row.map_err(|e| sql_err(&self.path, e))?;
                self.last_metric = id;
                fetched += 1;
                if run.is_none_or(|r| r == name) {
                    out.push(Row::Metrics(trackio::metrics_row(&name, step, &timestamp, &metrics)));
                }
            }
            drop(stmt);
            // Every row read, or enough for one poll.
            if fetched < self.batch || out.len() >= self.batch as usize {
                break;
            }
        }
        // Older projects have no alerts table.
        if let Ok(mut stmt) = self.conn.prepare_cached("SELECT id, run_name, title, coalesce(text, ''), level, step FROM alerts WHERE id > ?1 ORDER BY id") {
            let rows = stmt.query_map([self.last_alert], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?, r.get::<_, String>(4)?, r.get::<_, Option<i64>>(5)?)));
            if let Ok(rows) = rows {
                for row in rows {
                    let (id, name, title, text, level, step) = row.map_err(|e| sql_err(&self.path, e))?;
                    self.last_alert = id;
                    if run.is_none_or(|r| r == name) {
                        out.push(Row::Alert { run: name, step: step.and_then(|s| u64::try_from(s).ok()), title, text, severity: trackio::severity(&level) });
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A column trackio writes as a BLOB of JSON text (or TEXT, in other versions).
fn blob_or_text(r: &rusqlite::Row, i: usize) -> rusqlite::Result<Vec<u8>> {
    use rusqlite::types::ValueRef;
    Ok(match r.get_ref(i)? {
        ValueRef::Blob(b) | ValueRef::Text(b) => b.to_vec(),
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project database as trackio makes it (the tables rlmon reads).
    pub fn make_project(path: &Path) -> Connection {
        let c = Connection::open(path).unwrap();
        c.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, timestamp TEXT NOT NULL, run_name TEXT NOT NULL, step INTEGER NOT NULL, metrics TEXT NOT NULL, log_id TEXT, space_id TEXT);
             CREATE TABLE configs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, run_name TEXT NOT NULL, config TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE(run_id));
             CREATE TABLE alerts (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, timestamp TEXT NOT NULL, run_name TEXT NOT NULL, title TEXT NOT NULL, text TEXT, level TEXT NOT NULL DEFAULT 'warn', step INTEGER, alert_id TEXT);",
        )
        .unwrap();
        c
    }

    fn log(c: &Connection, run: &str, step: i64, json: &str) {
        c.execute("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES ('id', '2026-11-27T16:00:29+00:00', ?1, ?2, CAST(?3 AS BLOB))", rusqlite::params![run, step, json]).unwrap();
    }

    #[test]
    fn rows_are_read_while_the_project_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo.db");
        let writer = make_project(&path);
        writer.execute("INSERT INTO configs (run_id, run_name, config, created_at) VALUES ('id', 'run-a', CAST('{\"lr\": 0.1, \"_Created\": \"x\"}' AS BLOB), 'now')", []).unwrap();
        log(&writer, "run-a", 0, r#"{"loss": 2.0}"#);
        log(&writer, "run-b", 0, r#"{"loss": 3.0}"#);
        let mut project = Project::open(&path).unwrap();
        assert_eq!(project.runs().unwrap(), ["run-a", "run-b"]);
        assert_eq!(project.configs()["run-a"].get("lr").map(String::as_str), Some("0.1"));
        let steps = |rows: Vec<Row>| rows.into_iter().filter_map(|r| if let Row::Metrics(Line::Metrics(rec)) = r { rec.step } else { None }).collect::<Vec<_>>();
        assert_eq!(steps(project.poll(Some("run-a")).unwrap()), [0]);
        log(&writer, "run-a", 1, r#"{"loss": "NaN"}"#);
        writer.execute("INSERT INTO alerts (run_id, timestamp, run_name, title, text, level, step) VALUES ('id', 'now', 'run-a', 'diverged', 'loss is NaN', 'error', 1)", []).unwrap();
        let rows = project.poll(Some("run-a")).unwrap();
        assert!(matches!(&rows[1], Row::Alert { title, step: Some(1), severity: crate::health::Severity::Critical, .. } if title == "diverged"), "{rows:?}");
        assert_eq!(steps(rows), [1], "only what is new");
        assert!(project.poll(None).unwrap().is_empty());
        assert_eq!(project.name(), "demo");
        // Not a project.
        std::fs::write(dir.path().join("x.db"), b"hello").unwrap();
        assert!(Project::open(&dir.path().join("x.db")).is_err());
        assert!(Project::open(&dir.path().join("none.db")).err().is_some_and(|e| e.contains("no such file")));
        assert_eq!(projects_in(dir.path()), [path.clone()]);
        assert_eq!(split_run("demo#run-a"), ("demo", Some("run-a")));
        assert_eq!(split_run("demo"), ("demo", None));
    }
}
