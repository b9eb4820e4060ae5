//! Entry points for the fuzz targets (fuzz/, `scripts/fuzz.sh`) and for the corpus
//! test that replays every saved input in plain `cargo test`. Each takes arbitrary
//! bytes and must return without panicking, hanging or allocating without bound;
//! what the parser makes of them is thrown away.
use std::path::Path;

use crate::app::check::analyse;
use crate::ingest::{detect, text::Pattern, Format};
use crate::metrics::catalog::Preset;

/// Every target by name; the corpus lives in `fuzz/corpus/NAME/`.
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("jsonl", jsonl),
    ("csv", |d| log(d, Format::Csv(b','))),
    ("tsv", |d| log(d, Format::Csv(b'\t'))),
    ("trainer_state", |d| log(d, Format::TrainerState)),
    ("json_doc", |d| log(d, Format::JsonDocument)),
    ("hf_log", |d| log(d, Format::HfLog)),
    ("megatron", |d| log(d, Format::Text(Preset::Megatron))),
    ("nanogpt", |d| log(d, Format::Text(Preset::NanoGpt))),
    ("deepspeed", |d| log(d, Format::Text(Preset::DeepSpeed))),
    ("text", |d| log(d, Format::Text(Preset::Generic))),
    ("tensorboard", |d| log(d, Format::TensorBoard)),
    ("detected", detected),
    ("pattern", pattern),
    ("config", config),
    ("theme", theme),
    ("snapshot", snapshot),
    ("journal", journal),
    ("worker", worker),
    ("output", output),
    ("mlflow", mlflow),
    ("wandb", wandb),
];

/// The target named `name`.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// A log through the whole of `rlmon check`: parser, normalizer, detectors.
fn log(data: &[u8], format: Format) {
    let _ = analyse(data, format, "fuzz", None);
}

/// A JSONL log through `check`; and each line read by the flat-object scanner and
/// by serde_json must give the same record.
fn jsonl(data: &[u8]) {
    log(data, Format::Jsonl);
    for line in data.split(|b| *b == b'\n') {
        if let Ok(line) = std::str::from_utf8(line) {
            let (scanned, serde) = crate::ingest::jsonl::both_ways(line);
            assert_eq!(format!("{scanned:?}"), format!("{serde:?}"), "{line:?}");
        }
    }
}

/// The format told from the content, as `rlmon check` does for a file.
fn detected(data: &[u8]) {
    let head = String::from_utf8_lossy(&data[..data.len().min(64 * 1024)]);
    log(data, detect(Path::new("fuzz.log"), &head));
}

/// The first line is the user's regex, the rest the log it reads.
fn pattern(data: &[u8]) {
    let (first, rest) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(regex) = std::str::from_utf8(first) else { return };
    if let Ok(p) = Pattern::new(regex) {
        log(rest, Format::Pattern(p));
    }
}

fn config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::config::SessionConfig::from_str(text, Path::new("/fuzz/config.toml"));
    }
}

fn theme(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::ui::theme::Theme::parse_layered(text, Path::new("/fuzz/theme.toml"));
    }
}

/// A snapshot read, then replayed into its final state (what replay and compare do).
fn snapshot(data: &[u8]) {
    if let Ok(rec) = crate::record::snapshot::read_bytes(data) {
        let _ = rec.final_state();
    }
}

/// The bytes as the first segment of an interrupted journal, recovered.
fn journal(data: &[u8]) {
    let Ok(dir) = tempfile_dir() else { return };
    if std::fs::write(dir.join("segment-000001.log"), data).is_ok() {
        if let Ok(r) = crate::record::journal::recover(&dir) {
            let _ = r.recording.final_state();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The training worker's stdout as rlmon reads it (frames arriving in pieces).
fn worker(data: &[u8]) {
    let mut decoder = crate::workload::protocol::Decoder::default();
    for piece in data.chunks(7) {
        if decoder.push(piece).is_err() {
            return;
        }
    }
}

/// A command's output as a live run reads it: cut into lines (and a progress bar's
/// `\r` states) from pieces as they arrive, the format told from the first lines.
fn output(data: &[u8]) {
    use crate::workload::command::stream::{LineSplitter, MetricStream};
    let mut splitter = LineSplitter::default();
    let mut stream = MetricStream::new(Path::new("stdout"), None, true);
    for (i, piece) in data.chunks(13).enumerate() {
        for line in splitter.push(piece) {
            let _ = stream.line(line, i as f64);
        }
        let _ = stream.flush();
    }
    if let Some(line) = splitter.finish() {
        let _ = stream.line(line, 1e9);
    }
    let _ = stream.finish(1e9);
}

/// An MLflow run's metric files: the input's blank-line-separated parts, one file each.
fn mlflow(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let files: Vec<(String, String)> = text.split("\n\n").take(16).enumerate().map(|(i, part)| (format!("m{i}"), part.to_owned())).collect();
    let _ = crate::ingest::mlflow::run_records(&files);
}

/// A W&B run file: read whole, and again fed in uneven pieces as a file read while
/// it is written (the two must agree), then through the whole of `rlmon check`.
fn wandb(data: &[u8]) {
    use crate::ingest::wandb::RunReader;
    let whole = crate::ingest::wandb::read_all(data);
    let mut reader = RunReader::default();
    let mut pieces = Vec::new();
    let mut at = 0;
    let mut size = 1;
    let fed = loop {
        if at >= data.len() {
            pieces.extend(reader.finish());
            break Ok(pieces);
        }
        let end = (at + size).min(data.len());
        match reader.push(&data[at..end]) {
            Ok(out) => pieces.extend(out),
            Err(e) => break Err(e),
        }
        at = end;
        size = size * 3 % 4093 + 1;
    };
    match (&whole, &fed) {
        // Compared as text: a NaN read is not equal to itself.
        (Ok((out, _)), Ok(fed)) => assert_eq!(format!("{out:?}"), format!("{fed:?}"), "read whole and in pieces differ"),
        (Err(_), Err(_)) => {}
        _ => panic!("read whole and in pieces disagree on whether it is a W&B file"),
    }
    log(data, Format::Wandb);
}

fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("rlmon-fuzz-{}-{}.rlmon.journal", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
