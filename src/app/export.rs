//! `rlmon export`: a recorded session's points as CSV (long format, like the
//! snapshot) or JSONL in rlmon's input format (one object per run and step), which
//! `rlmon check` and other tools read back. A snapshot streams from its file
//! (its row groups decoded as the runs' steps reach them), so memory does not grow
//! with the session; a journal, or a file whose layout does not stream, is read
//! whole. Both give the same bytes.
use std::fs::File;
use std::io::{self, BufWriter, Write};

use crate::cli::{ExportArgs, ExportFormat};
use crate::error::{Result, RlmonError};
use crate::metrics::MetricName;
use crate::record::model::{strip_derived, Meta, TELEMETRY};
use crate::record::stream::Streamed;
use crate::record::{self, Recording};

pub fn export(args: ExportArgs) -> Result<u8> {
    if let Some(runs) = tracker_runs(&args.snapshot)? {
        let io_err = |source| RlmonError::Io { path: args.output.clone().unwrap_or_else(|| "<stdout>".into()), source };
        let mut out: Box<dyn Write> = match &args.output {
            Some(path) => Box::new(BufWriter::new(File::create(path).map_err(io_err)?)),
            None => Box::new(BufWriter::new(io::stdout().lock())),
        };
        write_tracked(&runs, args.format, &mut out).and_then(|()| out.flush()).map_err(io_err)?;
        return Ok(0);
    }
    let streamed = Streamed::open_path(&args.snapshot)?;
    let rec = match streamed {
        Some(_) => None,
        None => Some(record::load(&args.snapshot)?),
    };
    let io_err = |source| RlmonError::Io { path: args.output.clone().unwrap_or_else(|| "<stdout>".into()), source };
    let mut out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(BufWriter::new(File::create(path).map_err(io_err)?)),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    };
    let written = match (streamed, rec) {
        (Some(mut s), _) => {
            let bad = |problem: String| RlmonError::BadInput { path: args.snapshot.clone(), problem };
            match args.format {
                ExportFormat::Csv => stream_csv(&mut s, &mut out),
                ExportFormat::Jsonl => stream_jsonl(&mut s, &mut out),
            }
            .map_err(|e| bad(e.0))?
        }
        (None, Some(rec)) => match args.format {
            ExportFormat::Csv => write_csv(&rec, &mut out),
            ExportFormat::Jsonl => write_jsonl(&rec, &mut out),
        },
        (None, None) => Ok(()),
    };
    written.and_then(|()| out.flush()).map_err(io_err)?;
    Ok(0)
}

/// [`write_csv`] of a streamed snapshot: the same bytes.
pub fn stream_csv(s: &mut Streamed, out: &mut impl Write) -> std::result::Result<io::Result<()>, record::BadFile> {
    let meta = s.meta().clone();
    if let Err(e) = csv_header(out) {
        return Ok(Err(e));
    }
    s.for_each_step(|run, step, points| {
        let run = csv_field(meta.run_name(run));
        for (metric, time_s, value) in points {
            csv_row(out, &run, step, *time_s, metric, *value)?;
        }
        Ok(())
    })
}

/// [`write_jsonl`] of a streamed snapshot: the same bytes.
pub fn stream_jsonl(s: &mut Streamed, out: &mut impl Write) -> std::result::Result<io::Result<()>, record::BadFile> {
    let meta = s.meta().clone();
    s.for_each_step(|run, step, points| {
        let Some((_, time_s, _)) = points.first() else { return Ok(()) };
        let values = points.iter().map(|(name, _, value)| (name.clone(), *value)).collect();
        jsonl_line(out, &meta, run, step, *time_s, values)
    })
}

fn csv_header(out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "run,step,time_s,metric,value")
}

fn csv_row(out: &mut impl Write, run: &str, step: u64, time_s: f64, metric: &str, value: f64) -> io::Result<()> {
    writeln!(out, "{run},{step},{time_s},{},{value}", csv_field(metric))
}

/// One run's step as a JSONL object (nothing for telemetry).
fn jsonl_line(out: &mut impl Write, meta: &Meta, run: u32, step: u64, time_s: f64, mut values: Vec<(MetricName, f64)>) -> io::Result<()> {
    if run == TELEMETRY {
        return Ok(());
    }
    strip_derived(&mut values);
    let mut obj = serde_json::Map::new();
    obj.insert("run".into(), meta.run_name(run).into());
    obj.insert("step".into(), step.into());
    obj.insert("time".into(), time_s.into());
    for (name, value) in values {
        obj.insert(name.into_owned(), serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, Into::into));
    }
    serde_json::to_writer(&mut *out, &obj)?;
    out.write_all(b"\n")
}

/// A tracker's runs as `(run, records)`: W&B run files (a `.wandb` file, a run
/// folder, every run of a `wandb` folder) or a trackio project (`PATH.db`,
/// `trackio:PROJECT`, `#RUN` for one run); `None` when `path` is neither.
fn tracker_runs(path: &std::path::Path) -> Result<Option<Vec<(String, Vec<crate::ingest::Record>)>>> {
    use crate::ingest::{wandb, Line};
    use crate::workload::command::{trackio_db, wandb_dir};
    let usage = |e: String| RlmonError::Usage(format!("{}: {e}", path.display()));
    let wandb_file = path.is_file() && path.file_name().is_some_and(|n| wandb::is_run_file(&n.to_string_lossy()));
    if wandb_file || (path.is_dir() && (wandb_dir::is_run_dir(path) || wandb_dir::is_wandb_dir(path))) {
        let mut runs = Vec::new();
        for run in wandb_dir::runs_at(path, true) {
            let Some(file) = (if run.is_file() { Some(run.clone()) } else { wandb_dir::run_file(&run) }) else { continue };
            let bytes = std::fs::read(&file).map_err(|e| usage(e.to_string()))?;
            let (outs, _) = wandb::read_all(&bytes).map_err(usage)?;
            let records = outs.into_iter().filter_map(|o| if let wandb::Out::Line(Line::Metrics(r)) = o { Some(r) } else { None }).collect();
            runs.push((wandb_dir::run_name(&run), records));
        }
        return Ok(Some(runs));
    }
    let arg = path.to_string_lossy();
    let (target, run) = trackio_db::split_run(&arg);
    let db = match target.strip_prefix("trackio:") {
        Some(project) => trackio_db::project_db(project, std::path::Path::new(".")).map_err(usage)?,
        None if std::path::Path::new(target).is_file() && trackio_db::is_sqlite(std::path::Path::new(target)) => target.into(),
        None => return Ok(None),
    };
    let mut project = trackio_db::Project::open(&db).map_err(usage)?;
    let mut runs: Vec<(String, Vec<crate::ingest::Record>)> = Vec::new();
    loop {
        let rows = project.poll(run).map_err(usage)?;
        if rows.is_empty() {
            break;
        }
        for row in rows {
            if let trackio_db::Row::Metrics(Line::Metrics(r)) = row {
                let name = r.run.clone().unwrap_or_default();
                match runs.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, records)) => records.push(r),
                    None => runs.push((name, vec![r])),
                }
            }
        }
    }
    Ok(Some(runs))
}

/// A tracker's runs' points, each run's records made canonical as `rlmon check`
/// reads them, in the rows of [`write_csv`] or the lines of [`write_jsonl`].
fn write_tracked(runs: &[(String, Vec<crate::ingest::Record>)], format: ExportFormat, out: &mut impl Write) -> io::Result<()> {
    use crate::ingest::normalize::{Emit, Normalizer};
    if format == ExportFormat::Csv {
        csv_header(out)?;
    }
    for (name, records) in runs {
        let mut normalizer = Normalizer::default();
        let mut emits = Vec::new();
        for r in records {
            let mut r = r.clone();
            r.run = None;
            emits.extend(normalizer.push(r));
        }
        emits.extend(normalizer.finish());
        for e in emits {
            let Emit::Point(p) = e else { continue };
            match format {
                ExportFormat::Csv => {
                    for (metric, value) in &p.values {
                        csv_row(out, &csv_field(name), p.step, p.time_s, metric, *value)?;
                    }
                }
                ExportFormat::Jsonl => {
                    let mut obj = serde_json::Map::new();
                    obj.insert("run".into(), name.as_str().into());
                    obj.insert("step".into(), p.step.into());
                    obj.insert("time".into(), p.time_s.into());
                    for (metric, value) in p.values {
                        obj.insert(metric.into_owned(), serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, Into::into));
                    }
                    serde_json::to_writer(&mut *out, &obj)?;
                    out.write_all(b"\n")?;
                }
            }
        }
    }
    Ok(())
}

/// Quotes a CSV field when it needs it (RFC 4180).
fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

/// `run,step,time_s,metric,value`, ordered by run and step; telemetry under the
/// reserved run name. Non-finite values are written as `NaN`, `inf`, `-inf`.
pub fn write_csv(rec: &Recording, out: &mut impl Write) -> io::Result<()> {
    let p = &rec.points;
    csv_header(out)?;
    for i in p.by_run_step() {
        let run = csv_field(rec.meta.run_name(p.run[i]));
        csv_row(out, &run, p.step[i], p.time_s[i], &p.metric_names[p.metric[i] as usize], p.value[i])?;
    }
    Ok(())
}

/// One object per run and step: `{"run", "step", "time", <metric>: value, ...}`.
/// Rates the reader derives again (tokens/s from tokens and step time) are left
/// out; telemetry is not part of the input format and is left out too. JSON has
/// no NaN: non-finite values are written as null.
pub fn write_jsonl(rec: &Recording, out: &mut impl Write) -> io::Result<()> {
    let p = &rec.points;
    let order = p.by_run_step();
    let names: Vec<MetricName> = p.metric_names.iter().map(|n| MetricName::Borrowed(crate::metrics::catalog::intern(n))).collect();
    for group in order.chunk_by(|&a, &b| p.run[a] == p.run[b] && p.step[a] == p.step[b]) {
        let first = group[0];
        if p.run[first] == TELEMETRY {
            continue;
        }
        let values: Vec<(MetricName, f64)> = group.iter().map(|&i| (names[p.metric[i] as usize].clone(), p.value[i])).collect();
        jsonl_line(out, &rec.meta, p.run[first], p.step[first], p.time_s[first], values)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::model::tests::live_and_recorded;

    #[test]
    fn csv_has_one_row_per_point() {
        let (_, rec) = live_and_recorded();
        let mut out = Vec::new();
        write_csv(&rec, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), rec.points.len() + 1);
        assert!(text.starts_with("run,step,time_s,metric,value\na,1,0.05,"), "{}", &text[..80]);
        assert!(text.contains("b,5,0.25,loss,NaN"));
        assert!(text.contains("_telemetry,0,0.8,host/cpu_pct,10"));
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
    }

    /// A snapshot streamed gives the bytes of the recording read whole, in every
    /// row-group size (one group, many, a step per group).
    #[test]
    fn a_streamed_export_gives_the_bytes_of_the_whole_file() {
        use crate::record::snapshot::{self, write_groups, RowOrder, Settings};
        let (_, rec) = live_and_recorded();
        let dir = tempfile::tempdir().unwrap();
        for rows in [3, 50, 1000, 1 << 20] {
            let path = dir.path().join(format!("s{rows}.rlmon.parquet"));
            write_groups(&path, &rec, Settings { order: RowOrder::StepBlocks, zstd_level: 1 }, rows).unwrap();
            let whole = snapshot::read(&path).unwrap();
            let mut s = Streamed::open_path(&path).unwrap().expect("streams");
            let (mut want, mut got) = (Vec::new(), Vec::new());
            write_csv(&whole, &mut want).unwrap();
            stream_csv(&mut s, &mut got).unwrap().unwrap();
            assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "csv, {rows} rows a group");
            let (mut want, mut got) = (Vec::new(), Vec::new());
            write_jsonl(&whole, &mut want).unwrap();
            stream_jsonl(&mut s, &mut got).unwrap().unwrap();
            assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "jsonl, {rows} rows a group");
        }
    }

    #[test]
    fn jsonl_has_one_object_per_run_and_step() {
        let (_, rec) = live_and_recorded();
        let mut out = Vec::new();
        write_jsonl(&rec, &mut out).unwrap();
        let lines: Vec<serde_json::Value> = String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 55, "50 steps of a, 5 of b");
        assert_eq!(lines[0]["run"], "a");
        assert_eq!(lines[0]["step"], 1);
        assert_eq!(lines[0]["loss"], 5.0);
        assert_eq!(lines[0]["tokens"], 1024.0);
        assert!(lines[0].get("tokens_per_s").is_none());
        assert!(lines[54]["loss"].is_null(), "NaN as null");
    }
}
