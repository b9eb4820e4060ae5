//! `rlmon export`: a recorded session's points as CSV (long format, like the
//! snapshot) or JSONL in rlmon's input format (one object per run and step), which
//! `rlmon check` and other tools read back.
use std::fs::File;
use std::io::{self, BufWriter, Write};

use crate::cli::{ExportArgs, ExportFormat};
use crate::error::{Result, RlmonError};
use crate::metrics::MetricName;
use crate::record::model::{strip_derived, TELEMETRY};
use crate::record::{self, Recording};

pub fn export(args: ExportArgs) -> Result<u8> {
    let rec = record::load(&args.snapshot)?;
    let io_err = |source| RlmonError::Io { path: args.output.clone().unwrap_or_else(|| "<stdout>".into()), source };
    let mut out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(BufWriter::new(File::create(path).map_err(io_err)?)),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    };
    match args.format {
        ExportFormat::Csv => write_csv(&rec, &mut out),
        ExportFormat::Jsonl => write_jsonl(&rec, &mut out),
    }
    .and_then(|()| out.flush())
    .map_err(io_err)?;
    Ok(0)
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
    writeln!(out, "run,step,time_s,metric,value")?;
    for i in p.by_run_step() {
        let run = csv_field(rec.meta.run_name(p.run[i]));
        let metric = csv_field(&p.metric_names[p.metric[i] as usize]);
        writeln!(out, "{run},{},{},{metric},{}", p.step[i], p.time_s[i], p.value[i])?;
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
        let mut values: Vec<(MetricName, f64)> = group.iter().map(|&i| (names[p.metric[i] as usize].clone(), p.value[i])).collect();
        strip_derived(&mut values);
        let mut obj = serde_json::Map::new();
        obj.insert("run".into(), rec.meta.run_name(p.run[first]).into());
        obj.insert("step".into(), p.step[first].into());
        obj.insert("time".into(), p.time_s[first].into());
        for (name, value) in values {
            obj.insert(name.into_owned(), serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, Into::into));
        }
        serde_json::to_writer(&mut *out, &obj)?;
        out.write_all(b"\n")?;
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
