//! Session file names: `<session-dir>/<name>-<UTC timestamp>.rlmon.parquet` for
//! snapshots and `.rlmon.journal` (a folder) for journals.
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub const SNAPSHOT_SUFFIX: &str = ".rlmon.parquet";
pub const JOURNAL_SUFFIX: &str = ".rlmon.journal";

/// `YYYYMMDDTHHMMSSZ` for a time, in UTC.
pub fn utc_stamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339) for a time, in UTC.
pub fn utc_rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A session name made safe for a file name.
pub fn file_stem(session: &str, stamp: &str) -> String {
    let safe: String = session.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    format!("{safe}-{stamp}")
}

pub fn snapshot_path(dir: &Path, stem: &str) -> PathBuf {
    dir.join(format!("{stem}{SNAPSHOT_SUFFIX}"))
}

pub fn journal_path(dir: &Path, stem: &str) -> PathBuf {
    dir.join(format!("{stem}{JOURNAL_SUFFIX}"))
}

/// The stem of a journal path (`x/tiny-2026...Z.rlmon.journal` -> `tiny-2026...Z`).
pub fn journal_stem(path: &Path) -> Option<String> {
    path.file_name()?.to_str()?.strip_suffix(JOURNAL_SUFFIX).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_stamps_are_calendar_dates() {
        assert_eq!(utc_stamp(UNIX_EPOCH), "19700101T000000Z");
        // 2024-02-29 12:34:56 UTC (a leap day).
        assert_eq!(utc_stamp(UNIX_EPOCH + Duration::from_secs(1_709_210_096)), "20240229T123456Z");
    }

    #[test]
    fn names_are_file_safe() {
        assert_eq!(file_stem("lr sweep/1", "20240101T000000Z"), "lr_sweep_1-20240101T000000Z");
        let j = journal_path(Path::new("d"), "s-1");
        assert_eq!(journal_stem(&j).as_deref(), Some("s-1"));
    }
}
