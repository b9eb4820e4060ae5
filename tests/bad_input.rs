//! The bad-input table (docs/reliability.md): every row hands rlmon something broken
//! and requires an exit code of 0, 1 or 2, a message naming the file where it fails,
//! no panic, and an end within a time limit (a hang fails the row).
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs rlmon with `args` in `dir`, killed (and the row failed) past `limit`.
fn rlmon_in(dir: &Path, args: &[&str], limit: Duration) -> Outcome {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlmon"))
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0")
        .env("RLMON_SESSION_DIR", dir.join("sessions"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(&mut stdout).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(&mut stderr).unwrap_or_default());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("rlmon {args:?} still running after {limit:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let outcome = Outcome { code: status.code().unwrap_or(-1), stdout: out.join().unwrap(), stderr: err.join().unwrap() };
    assert!(!outcome.stderr.contains("panicked"), "rlmon {args:?} panicked:\n{}", outcome.stderr);
    assert!((0..=2).contains(&outcome.code), "rlmon {args:?} exited {}:\n{}", outcome.code, outcome.stderr);
    outcome
}

const LIMIT: Duration = Duration::from_secs(60);

fn check(dir: &Path, file: &str) -> Outcome {
    rlmon_in(dir, &["check", file], LIMIT)
}

/// Exit 2 with a message that names `file`.
fn refused(dir: &Path, args: &[&str], file: &str) -> String {
    let out = rlmon_in(dir, args, LIMIT);
    assert_eq!(out.code, 2, "rlmon {args:?}:\n{}", out.stderr);
    assert!(out.stderr.contains(file), "the message names {file}:\n{}", out.stderr);
    out.stderr
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn lines(range: std::ops::Range<u64>) -> String {
    range.map(|i| format!("{{\"step\": {i}, \"loss\": {}}}\n", 2.0 - i as f64 * 0.001)).collect()
}

fn json(out: &Outcome) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn binary_garbage_empty_files_folders_and_missing_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Deterministic bytes of every value, NULs included.
    let garbage: Vec<u8> = (0..65_536u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    write(d, "garbage.bin", &garbage);
    assert!(refused(d, &["check", "garbage.bin"], "garbage.bin").contains("not UTF-8"));
    write(d, "empty.jsonl", "");
    assert!(refused(d, &["check", "empty.jsonl"], "empty.jsonl").contains("no metric lines"));
    std::fs::create_dir(d.join("a-folder")).unwrap();
    refused(d, &["check", "a-folder"], "a-folder");
    refused(d, &["check", "missing.jsonl"], "missing.jsonl");
    refused(d, &["replay", "--headless", "garbage.bin"], "garbage.bin");
    refused(d, &["replay", "--headless", "a-folder"], "a-folder");
    refused(d, &["export", "--format", "csv", "garbage.bin"], "garbage.bin");
}

#[test]
fn an_unreadable_file_is_refused_by_name() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: running as root, which reads files without read permission");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "secret.jsonl", lines(0..10));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    assert!(refused(dir.path(), &["check", "secret.jsonl"], "secret.jsonl").contains("ermission"));
}

#[test]
fn over_long_and_deeply_nested_lines_are_skipped_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long = format!("{{\"step\": 0, \"loss\": 2.0, \"note\": \"{}\"}}\n", "x".repeat(5 << 20));
    write(d, "long.jsonl", long + &lines(1..60));
    let out = rlmon_in(d, &["check", "--json", "long.jsonl"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = json(&out);
    assert_eq!(report["points"], 59, "{report}");
    assert_eq!(report["skipped"]["too_long"]["lines"], 1, "{report}");

    let deep = format!("{}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let deep_object = format!("{}{}\n", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    write(d, "deep.jsonl", deep + &deep_object + &lines(0..60));
    let out = rlmon_in(d, &["check", "--json", "deep.jsonl"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(json(&out)["points"], 60);
}

#[test]
fn steps_backwards_repeated_or_past_i64_are_resumes_duplicates_or_named_skips() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let steps = ["1", "2", "3", "2", "2", "5", "9223372036854775808", "18446744073709551615", "1e300", "-5", "3.5"];
    let text: String = steps.iter().enumerate().map(|(i, s)| format!("{{\"step\": {s}, \"loss\": {}}}\n", 1.0 + i as f64 * 0.01)).collect();
    write(d, "steps.jsonl", text);
    let out = check(d, "steps.jsonl");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("resumed at step 2"), "{}", out.stdout);
    assert!(out.stdout.contains("must be a non-negative integer"), "the first bad step is quoted:\n{}", out.stdout);
}

#[test]
fn nan_infinity_overflow_and_negative_zero_values() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let values = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "-0", "\"nan\"", "\"inf\"", "null", "true"];
    let text: String = values.iter().enumerate().map(|(i, v)| format!("{{\"step\": {}, \"loss\": {v}}}\n", i + 1)).collect();
    write(d, "values.jsonl", text);
    let out = rlmon_in(d, &["check", "--json", "values.jsonl"], LIMIT);
    let report = json(&out);
    let nan = report["alerts"].as_array().unwrap().iter().find(|a| a["kind"] == "nonfinite" && a["metric"] == "loss");
    let nan = nan.unwrap_or_else(|| panic!("a NaN loss is an alert: {report}"));
    assert_eq!(nan["severity"], "critical");
    assert_eq!(out.code, 1, "a critical alert fails the check");
}

#[test]
fn two_thousand_metrics_in_a_line_are_all_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text: String = (0..30)
        .map(|s| {
            let fields: Vec<String> = (0..2000).map(|i| format!("\"m{i}\": {}", i + s)).collect();
            format!("{{\"step\": {s}, {}}}\n", fields.join(", "))
        })
        .collect();
    write(d, "wide.jsonl", text);
    let out = rlmon_in(d, &["check", "--json", "wide.jsonl"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = json(&out);
    assert_eq!(report["runs"][0]["input"]["read"].as_object().unwrap().len(), 2000);
    let text = check(d, "wide.jsonl").stdout;
    assert!(text.contains("… and 1960 more"), "the text report lists the first names and a count:\n{}", &text[..text.len().min(2000)]);
}

#[test]
fn a_hundred_thousand_distinct_names_are_capped_not_grown_without_bound() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text: String = (0..100_000).map(|i| format!("{{\"step\": {i}, \"metric_{i}\": 1.0, \"loss\": 2.0}}\n")).collect();
    write(d, "names.jsonl", text);
    let out = rlmon_in(d, &["check", "--json", "names.jsonl"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let input = &json(&out)["runs"][0]["input"];
    let read = input["read"].as_object().unwrap().len();
    assert!(read <= 8192, "distinct names kept: {read}");
    assert!(input["over_metric_limit"].as_u64().unwrap() > 90_000, "{input}");
}

#[test]
fn other_formats_broken_are_skipped_or_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "trainer_state.json", "{\"log_history\": 5}");
    refused(d, &["check", "trainer_state.json"], "trainer_state.json");
    write(d, "ragged.csv", "step,loss\n1,2.0\n2\n3,1.9,7,8\nx,y\n4,1.8\n");
    let out = check(d, "ragged.csv");
    assert!(out.stdout.contains("skipped"), "{}", out.stdout);
    write(d, "events.out.tfevents.1.host", [0xffu8; 300]);
    let out = rlmon_in(d, &["check", "events.out.tfevents.1.host"], LIMIT);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("events.out.tfevents.1.host"), "{}", out.stderr);
    write(d, "megatron.log", "iteration x/ y | lm loss: banana |\n".repeat(50));
    refused(d, &["check", "--format", "megatron", "megatron.log"], "megatron.log");
    refused(d, &["check", "--pattern", "(?P<step>", "megatron.log"], "pattern");
}

/// A small headless session of a command run; returns the snapshot's path.
fn record_session(dir: &Path, steps: u32) -> PathBuf {
    let script = format!("import json\nfor i in range({steps}): print(json.dumps({{'step': i, 'loss': 2.0 / (1 + i * 0.01), 'tokens_per_s': 1000.0 + i}}))");
    let config = format!("session = \"rec\"\n[[run]]\nname = \"rec\"\nworkload = \"command\"\ncommand = [\"python3\", \"-c\", {}]\n", serde_json::to_string(&script).unwrap());
    write(dir, "rec.toml", config);
    let out = rlmon_in(dir, &["watch", "--headless", "--json", "--config", "rec.toml"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    json(&out)["snapshot"].as_str().unwrap().into()
}

#[test]
fn a_snapshot_cut_at_every_tenth_of_its_length_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let snapshot = std::fs::read(record_session(d, 300)).unwrap();
    for tenth in 0..10 {
        let name = format!("cut{tenth}.rlmon.parquet");
        write(d, &name, &snapshot[..snapshot.len() * tenth / 10]);
        refused(d, &["replay", "--headless", "--speed", "max", &name], &name);
        refused(d, &["check", &name], &name);
        refused(d, &["compare", &name, &name], &name);
    }
}

/// The snapshot's footer re-encoded with every column chunk claiming a terabyte
/// (and, separately, its row groups claiming 2^62 rows): refused, never allocated.
#[test]
fn a_snapshot_whose_footer_claims_terabytes_is_refused_by_name() {
    use parquet::file::metadata::{ParquetMetaDataReader, ParquetMetaDataWriter};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = record_session(d, 300);
    let bytes = std::fs::read(&path).unwrap();
    let meta = ParquetMetaDataReader::new().parse_and_finish(&std::fs::File::open(&path).unwrap()).unwrap();
    let footer_len = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap()) as usize;
    let data = &bytes[..bytes.len() - 8 - footer_len];
    let forge = |huge_chunks: bool| {
        let mut builder = meta.clone().into_builder();
        let groups = builder
            .take_row_groups()
            .into_iter()
            .map(|g| {
                let columns = g.columns().iter().map(|c| if huge_chunks { c.clone().into_builder().set_total_compressed_size(1 << 40).build().unwrap() } else { c.clone() }).collect();
                let rows = if huge_chunks { g.num_rows() } else { 1 << 62 };
                g.into_builder().set_column_metadata(columns).set_num_rows(rows).build().unwrap()
            })
            .collect();
        let mut footer = Vec::new();
        ParquetMetaDataWriter::new(&mut footer, &builder.set_row_groups(groups).build()).finish().unwrap();
        [data, &footer[..]].concat()
    };
    write(d, "terabytes.rlmon.parquet", forge(true));
    for args in [&["replay", "--headless", "--speed", "max", "terabytes.rlmon.parquet"][..], &["check", "terabytes.rlmon.parquet"], &["compare", "terabytes.rlmon.parquet", "terabytes.rlmon.parquet"]] {
        let err = refused(d, args, "terabytes.rlmon.parquet");
        assert!(err.contains("corrupted footer"), "{err}");
    }
    write(d, "rows.rlmon.parquet", forge(false));
    // A row count the pages do not hold is not believed either: the rows that are
    // there are read, with no buffer sized by the claim.
    let out = rlmon_in(d, &["check", "--json", "rows.rlmon.parquet"], LIMIT);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(json(&out)["runs"][0]["last_step"], 299, "{}", out.stdout);
}

/// Kills rlmon (SIGKILL) mid-session so its journal stays; returns the journal folder.
fn interrupted_journal(dir: &Path) -> Option<PathBuf> {
    let script = "import json, time\nfor i in range(100000):\n    print(json.dumps({'step': i, 'loss': 2.0 / (1 + i * 0.01)}), flush=True)\n    time.sleep(0.002)";
    let config = format!("session = \"cut\"\n[[run]]\nname = \"cut\"\nworkload = \"command\"\ncommand = [\"python3\", \"-c\", {}]\n", serde_json::to_string(script).unwrap());
    write(dir, "cut.toml", config);
    let sessions = dir.join("sessions");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlmon"))
        .args(["watch", "--headless", "--config", "cut.toml", "--session-dir"])
        .arg(&sessions)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until the journal has synced a few hundred points (it syncs every second).
    let deadline = Instant::now() + Duration::from_secs(60);
    let journal = loop {
        let journal = std::fs::read_dir(&sessions).ok().and_then(|mut d| d.find_map(|e| Some(e.ok()?.path()).filter(|p| p.extension().is_some_and(|e| e == "journal"))));
        let synced = journal.as_ref().and_then(|j| std::fs::metadata(j.join("segment-000001.log")).ok()).map_or(0, |m| m.len());
        if synced > 8_000 || Instant::now() > deadline {
            break journal;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    if journal.is_none() {
        eprintln!("skipped: no journal left behind");
    }
    journal
}

#[test]
fn a_journal_with_a_flipped_byte_in_each_region_recovers_or_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(journal) = interrupted_journal(d) else { return };
    let segment = journal.join("segment-000001.log");
    let original = std::fs::read(&segment).unwrap();
    let whole = rlmon_in(d, &["check", "--json", journal.to_str().unwrap()], LIMIT);
    assert_eq!(whole.code, 0, "an interrupted journal reads back: {}", whole.stderr);
    let points = json(&whole)["points"].as_u64().unwrap();
    assert!(points > 10, "{points} points journalled");
    // Magic, version, the header record, an early event, the middle, the last bytes.
    let n = original.len();
    for at in [0, 5, 12, 40, n / 4, n / 2, 3 * n / 4, n - 2] {
        let mut bytes = original.clone();
        bytes[at] ^= 0x5a;
        std::fs::write(&segment, &bytes).unwrap();
        let out = rlmon_in(d, &["check", "--json", journal.to_str().unwrap()], LIMIT);
        if out.code == 2 {
            assert!(out.stderr.contains(".rlmon.journal"), "byte {at}: the message names the journal:\n{}", out.stderr);
        } else {
            // Recovered: the events up to the damaged record.
            let kept = json(&out)["points"].as_u64().unwrap();
            assert!(kept <= points, "byte {at}: {kept} of {points}");
        }
        refused_or_read(d, &["replay", "--headless", "--speed", "max", journal.to_str().unwrap()]);
    }
    std::fs::write(&segment, &original).unwrap();
}

fn refused_or_read(dir: &Path, args: &[&str]) {
    let out = rlmon_in(dir, args, LIMIT);
    if out.code == 2 {
        assert!(out.stderr.contains("rlmon:"), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn a_config_with_every_field_of_the_wrong_type_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fields = [
        "steps = \"ten\"",
        "seed = -1.5",
        "batch_size = [1]",
        "device = 7",
        "threads = {}",
        "workload = 3",
        "name = true",
        "lr = \"high\"",
        "replicas = \"two\"",
        "price_per_hour = \"free\"",
    ];
    for field in fields {
        let text = format!("[[run]]\nname = \"x\"\nworkload = \"lm\"\n{field}\n");
        // A repeated key is itself an error; the type error is what is asked for.
        let text = if field.starts_with("name") || field.starts_with("workload") {
            format!("[[run]]\n{field}\n")
        } else {
            text
        };
        write(d, "bad.toml", &text);
        let err = refused(d, &["watch", "--headless", "--config", "bad.toml"], "bad.toml");
        assert!(err.contains("bad.toml:"), "{field}: the line is named:\n{err}");
    }
    write(d, "not-toml.toml", "[[run\nname = ");
    refused(d, &["watch", "--headless", "--config", "not-toml.toml"], "not-toml.toml");
    write(d, "binary.toml", [0u8, 159, 146, 150, 255]);
    refused(d, &["watch", "--headless", "--config", "binary.toml"], "binary.toml");
}

#[test]
fn a_theme_with_unknown_colours_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let snapshot = record_session(d, 20);
    write(d, "bad-theme.toml", "accent = \"ultraviolet\"\nwarn = \"#12345\"\n");
    let out = rlmon_in(d, &["replay", "--headless", "--theme", "bad-theme.toml", snapshot.to_str().unwrap()], LIMIT);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("bad-theme.toml") && out.stderr.contains("ultraviolet"), "{}", out.stderr);
    write(d, "garbage-theme.toml", [0xffu8, 0xfe, 0]);
    refused(d, &["replay", "--headless", "--theme", "garbage-theme.toml", snapshot.to_str().unwrap()], "garbage-theme.toml");
}

/// Mounts a small tmpfs (read-only when asked); `None` (with a visible skip) where
/// this user may not mount.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, options: &str) -> Option<Mount> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount").args(["-t", "tmpfs", "-o", options, "tmpfs"]).arg(at).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        }
        ok.then(|| Mount(at.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_session_folder_is_said_and_a_read_only_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let steps = 20_000;
    let script = format!("import json\nfor i in range({steps}): print(json.dumps({{'step': i, 'loss': 2.0 / (1 + i * 0.01), 'grad_norm': 1.0 + (i % 7) * 0.1}}))");
    write(d, "big.toml", format!("session = \"big\"\n[[run]]\nname = \"big\"\nworkload = \"command\"\ncommand = [\"python3\", \"-c\", {}]\n", serde_json::to_string(&script).unwrap()));
    let Some(full) = Mount::tmpfs(&d.join("full"), "size=64k") else { return };
    let out = rlmon_in(d, &["watch", "--headless", "--config", "big.toml", "--session-dir", "full"], LIMIT);
    assert_eq!(out.code, 0, "the run itself finished:\n{}", out.stderr);
    assert!(out.stderr.contains("the journal stopped (No space left on device"), "said while running:\n{}", out.stderr);
    assert!(out.stderr.contains("holds the session only up to where it stopped"), "the final word is honest:\n{}", out.stderr);
    drop(full);
    let Some(_ro) = Mount::tmpfs(&d.join("ro"), "ro,size=64k") else { return };
    let err = refused(d, &["watch", "--headless", "--config", "big.toml", "--session-dir", "ro"], "ro");
    assert!(err.contains("cannot write the session folder") && err.contains("--session-dir"), "{err}");
}
