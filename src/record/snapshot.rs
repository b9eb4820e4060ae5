//! Snapshot files: the session in Parquet, long format (run, step, time_s, metric,
//! value) with the `rlmon` JSON metadata (design.md, "Snapshot"). Written atomically
//! (temporary file, fsync, rename, fsync of the folder), so a snapshot on disk is
//! always whole. Reading checks everything and names what is wrong.
use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::{KeyValue, ParquetMetaData};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::model::{Meta, Points, Recording, FORMAT_VERSION, TELEMETRY};
use super::BadFile;

/// The key of the JSON metadata in the Parquet footer.
pub const META_KEY: &str = "rlmon";
/// Rows per record batch, written and read.
pub(super) const BATCH_ROWS: usize = 1 << 20;
const PARQUET_MAGIC: &[u8; 4] = b"PAR1";

fn schema() -> Arc<Schema> {
    let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    Arc::new(Schema::new(vec![
        Field::new("run", dict.clone(), false),
        Field::new("step", DataType::Int64, false),
        Field::new("time_s", DataType::Float64, false),
        Field::new("metric", dict, false),
        Field::new("value", DataType::Float64, false),
    ]))
}

/// Rows per row group, at most (unless one step alone has more points): each
/// group is whole steps, metric-major inside, so every series is one long stretch.
/// Its `time_s` page (8 bytes a row, uncompressed) must stay far below Parquet's
/// 2 GiB page limit, and readers allocate it at once.
const GROUP_ROWS: usize = 1 << 24;
/// How a file is written: its row order and zstd level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub order: RowOrder,
    pub zstd_level: i32,
}

/// Snapshots: small for keeping and sharing. zstd 19 saves another 1.5% and writes
/// about 10x slower (docs/benchmarks.md).
pub const SNAPSHOT: Settings = Settings { order: RowOrder::StepBlocks, zstd_level: 9 };
/// Journal checkpoints: short-lived, written while training runs on the same cores;
/// zstd 3 writes about 8% faster than 9 for 1.6% more bytes (level 1 loses the
/// repeated times: 6.1 bytes/point; docs/benchmarks.md).
pub const CHECKPOINT: Settings = Settings { order: RowOrder::StepBlocks, zstd_level: 3 };

/// Encodings chosen for size (docs/benchmarks.md): steps as deltas, floats split
/// into byte streams (exponents and high mantissa bytes compress, noise does not),
/// names as dictionaries; zstd over all. Pages are large and not cut by row count,
/// so zstd sees a whole series at a time and, in `time_s`, the run's times once per
/// metric within one page, where their repeats cost almost nothing.
fn properties(meta_json: String, zstd_level: i32) -> parquet::errors::Result<WriterProperties> {
    let plain = |b: parquet::file::properties::WriterPropertiesBuilder, col: &str, enc: Encoding| {
        b.set_column_dictionary_enabled(ColumnPath::from(col), false).set_column_encoding(ColumnPath::from(col), enc)
    };
    let b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(zstd_level)?))
        // Row groups end where `write_file` flushes: at block boundaries.
        .set_max_row_group_row_count(None)
        .set_data_page_row_count_limit(usize::MAX)
        .set_data_page_size_limit(32 << 20)
        .set_column_data_page_size_limit(ColumnPath::from("time_s"), GROUP_ROWS * 8)
        .set_key_value_metadata(Some(vec![KeyValue::new(META_KEY.into(), meta_json)]));
    let b = plain(b, "step", Encoding::DELTA_BINARY_PACKED);
    let b = plain(b, "time_s", Encoding::BYTE_STREAM_SPLIT);
    let b = plain(b, "value", Encoding::BYTE_STREAM_SPLIT);
    Ok(b.build())
}

/// Row order in the file. Both keep a series' points in step order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOrder {
    /// Blocks of whole steps (one row group each, up to `GROUP_ROWS` rows); inside a
    /// block run, metric, step: byte-stream-split sees one series at a time.
    StepBlocks,
    /// run, step, metric in one stretch: the metrics of one step are adjacent (the
    /// layout before step blocks, kept for comparison).
    RunStepMetric,
}

/// Point indices in file order, and the row groups as ranges of them.
fn file_order(p: &Points, order: RowOrder, group_rows: usize) -> (Vec<usize>, Vec<std::ops::Range<usize>>) {
    let mut rows: Vec<usize> = (0..p.len()).collect();
    rows.sort_by_key(|&i| (p.run[i], p.step[i], p.metric[i]));
    if order == RowOrder::RunStepMetric {
        let groups = (0..rows.len()).step_by(group_rows).map(|s| s..(s + group_rows).min(rows.len())).collect();
        return (rows, groups);
    }
    let key = |i: usize| (p.run[i], p.step[i]);
    let mut groups = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        // Cut at the last step boundary that keeps the group within `group_rows`,
        // or after the first step when that step alone is larger.
        let mut end = (start + group_rows).min(rows.len());
        if end < rows.len() {
            let boundary = key(rows[end]);
            while end > start && key(rows[end - 1]) == boundary {
                end -= 1;
            }
            if end == start {
                let first = key(rows[start]);
                end = start + rows[start..].iter().position(|&i| key(i) != first).unwrap_or(rows.len() - start);
            }
        }
        // Stable: each series keeps its step order.
        rows[start..end].sort_by_key(|&i| (p.run[i], p.metric[i]));
        groups.push(start..end);
        start = end;
    }
    (rows, groups)
}

/// Writes `rec` to `path` atomically: a reader sees the old file or the new one,
/// never a part.
pub fn write(path: &Path, rec: &Recording) -> std::io::Result<()> {
    write_with(path, rec, SNAPSHOT)
}

/// [`write`] with chosen settings (journal checkpoints, measuring).
pub fn write_with(path: &Path, rec: &Recording, settings: Settings) -> std::io::Result<()> {
    write_parts(path, &rec.meta, [Cow::Borrowed(&rec.points)], settings)
}

/// Writes `meta` and the points of `parts` atomically, one part after another,
/// each sorted into row groups of its own: a journal's final snapshot holds one
/// part in memory at a time (a checkpoint read back, or the points since).
pub fn write_parts<'a>(path: &Path, meta: &Meta, parts: impl IntoIterator<Item = Cow<'a, Points>>, settings: Settings) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("snapshot");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = write_file(&tmp, meta, parts, settings, GROUP_ROWS).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    // The rename itself is durable once the folder is synced.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// [`write_with`] with row groups of at most `group_rows` rows (tests of readers
/// that go group by group), not atomic.
#[cfg(test)]
pub(crate) fn write_groups(path: &Path, rec: &Recording, settings: Settings, group_rows: usize) -> std::io::Result<()> {
    write_file(path, &rec.meta, [Cow::Borrowed(&rec.points)], settings, group_rows)
}

fn write_file<'a>(path: &Path, meta: &Meta, parts: impl IntoIterator<Item = Cow<'a, Points>>, settings: Settings, group_rows: usize) -> std::io::Result<()> {
    let meta_json = serde_json::to_string(meta)?;
    let props = properties(meta_json, settings.zstd_level).map_err(std::io::Error::other)?;
    let file = File::create(path)?;
    let mut writer = ArrowWriter::try_new(file, schema(), Some(props)).map_err(std::io::Error::other)?;
    // Dictionary values: runs in metadata order, telemetry last.
    let mut run_names: Vec<&str> = meta.runs.iter().map(|r| r.name.as_str()).collect();
    run_names.push(&meta.telemetry_run);
    let run_values: ArrayRef = Arc::new(StringArray::from(run_names));
    for part in parts {
        write_part(&mut writer, meta, &part, &run_values, settings, group_rows)?;
    }
    let file = writer.into_inner().map_err(std::io::Error::other)?;
    file.sync_all()
}

/// One part's points, in file order, as row groups of their own.
fn write_part(writer: &mut ArrowWriter<File>, meta: &Meta, p: &Points, run_values: &ArrayRef, settings: Settings, group_rows: usize) -> std::io::Result<()> {
    let (order, groups) = file_order(p, settings.order, group_rows);
    let telemetry_key = meta.runs.len() as i32;
    let metric_values: ArrayRef = Arc::new(StringArray::from_iter_values(p.metric_names.iter()));
    for group in groups {
        for chunk in order[group].chunks(BATCH_ROWS) {
            let run_keys = Int32Array::from_iter_values(chunk.iter().map(|&i| if p.run[i] == TELEMETRY { telemetry_key } else { p.run[i] as i32 }));
            let metric_keys = Int32Array::from_iter_values(chunk.iter().map(|&i| p.metric[i] as i32));
            let columns: Vec<ArrayRef> = vec![
                Arc::new(DictionaryArray::<Int32Type>::try_new(run_keys, run_values.clone()).map_err(std::io::Error::other)?),
                Arc::new(Int64Array::from_iter_values(chunk.iter().map(|&i| p.step[i] as i64))),
                Arc::new(Float64Array::from_iter_values(chunk.iter().map(|&i| p.time_s[i]))),
                Arc::new(DictionaryArray::<Int32Type>::try_new(metric_keys, metric_values.clone()).map_err(std::io::Error::other)?),
                Arc::new(Float64Array::from_iter_values(chunk.iter().map(|&i| p.value[i]))),
            ];
            let batch = RecordBatch::try_new(schema(), columns).map_err(std::io::Error::other)?;
            writer.write(&batch).map_err(std::io::Error::other)?;
        }
        // One row group per block.
        writer.flush().map_err(std::io::Error::other)?;
    }
    Ok(())
}

/// Whether a file starts like Parquet (to tell snapshots from journals and text).
pub fn looks_like_parquet(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && &magic == PARQUET_MAGIC
}

/// Reads a snapshot; any problem comes back as a sentence about the file.
pub fn read(path: &Path) -> Result<Recording, BadFile> {
    let file = File::open(path).map_err(|e| BadFile(format!("cannot open: {e}")))?;
    if !looks_like_parquet(path) {
        return Err(BadFile("not a Parquet file (no PAR1 header)".into()));
    }
    read_from(file)
}

/// Reads a snapshot held in memory (the fuzz targets feed it bytes).
pub fn read_bytes(bytes: &[u8]) -> Result<Recording, BadFile> {
    if !bytes.starts_with(PARQUET_MAGIC) {
        return Err(BadFile("not a Parquet file (no PAR1 header)".into()));
    }
    read_from(bytes::Bytes::copy_from_slice(bytes))
}

/// The Parquet reader can panic on a damaged file (a dictionary page missing, for
/// one, found by fuzzing): that is a damaged snapshot, said as such.
fn read_from<R: parquet::file::reader::ChunkReader + 'static>(source: R) -> Result<Recording, BadFile> {
    crate::error::contain_panic(|| read_parquet(source)).unwrap_or_else(|why| Err(BadFile(format!("corrupted data (the Parquet reader failed: {why})"))))
}

fn read_parquet<R: parquet::file::reader::ChunkReader + 'static>(source: R) -> Result<Recording, BadFile> {
    let file_len = source.len();
    let builder = ParquetRecordBatchReaderBuilder::try_new(source)
        .map_err(|e| BadFile(format!("not a readable Parquet file (truncated or corrupted?): {e}")))?;
    check_claims(builder.metadata(), file_len)?;
    let meta = parse_meta(builder.metadata().file_metadata().key_value_metadata())?;
    let fields = builder.schema().fields();
    for name in ["run", "step", "time_s", "metric", "value"] {
        if fields.find(name).is_none() {
            return Err(BadFile(format!("no `{name}` column: not an rlmon snapshot")));
        }
    }
    let reader = builder.with_batch_size(BATCH_ROWS).build().map_err(|e| BadFile(format!("unreadable: {e}")))?;
    let mut points = Points::default();
    for batch in reader {
        let batch = batch.map_err(|e| BadFile(format!("corrupted data: {e}")))?;
        append_batch(&batch, &meta, &mut points, true)?;
    }
    Ok(Recording::from_parts(meta, points))
}

/// The footer is believed only as far as the file goes: a column chunk said to
/// lie past the file's end (a damaged or forged footer claiming terabytes) is a
/// corrupted file, said as such before any page is read or any buffer sized by it.
pub(super) fn check_claims(meta: &ParquetMetaData, file_len: u64) -> Result<(), BadFile> {
    for (g, group) in meta.row_groups().iter().enumerate() {
        for column in group.columns() {
            let start = column.dictionary_page_offset().unwrap_or_else(|| column.data_page_offset());
            let len = column.compressed_size();
            let end = u64::try_from(start).ok().zip(u64::try_from(len).ok()).and_then(|(s, l)| s.checked_add(l));
            if end.is_none_or(|end| end > file_len) {
                return Err(BadFile(format!(
                    "corrupted footer: row group {g} claims {len} bytes of `{}` at byte {start}, but the file has {file_len}",
                    column.column_path()
                )));
            }
        }
    }
    Ok(())
}

/// Parses and checks the `rlmon` metadata.
pub fn parse_meta(kv: Option<&Vec<KeyValue>>) -> Result<Meta, BadFile> {
    let json = kv
        .and_then(|kv| kv.iter().find(|k| k.key == META_KEY))
        .and_then(|k| k.value.as_deref())
        .ok_or_else(|| BadFile(format!("a Parquet file without `{META_KEY}` metadata: not an rlmon snapshot")))?;
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| BadFile(format!("`{META_KEY}` metadata is not JSON: {e}")))?;
    let version = value.get("format_version").and_then(serde_json::Value::as_u64);
    match version {
        None => return Err(BadFile("`rlmon` metadata has no format_version".into())),
        Some(v) if v > u64::from(FORMAT_VERSION) => {
            return Err(BadFile(format!("snapshot format version {v} is newer than this rlmon reads ({FORMAT_VERSION}); upgrade rlmon")))
        }
        Some(_) => {}
    }
    let meta: Meta = serde_json::from_value(value).map_err(|e| BadFile(format!("`rlmon` metadata is malformed: {e}")))?;
    let mut names: Vec<&str> = meta.runs.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(BadFile("`rlmon` metadata names a run twice".into()));
    }
    Ok(meta)
}

/// Strings of a column that is either dictionary-encoded or plain.
enum Names<'a> {
    Dict { keys: &'a Int32Array, values: Vec<Option<&'a str>> },
    Plain(&'a StringArray),
}

impl<'a> Names<'a> {
    fn of(col: &'a ArrayRef, name: &str) -> Result<Self, BadFile> {
        if col.null_count() > 0 {
            return Err(BadFile(format!("column `{name}` has missing values")));
        }
        if let Some(d) = col.as_any().downcast_ref::<DictionaryArray<Int32Type>>() {
            let values = d.values().as_any().downcast_ref::<StringArray>().ok_or_else(|| BadFile(format!("column `{name}` is not text")))?;
            return Ok(Names::Dict { keys: d.keys(), values: (0..values.len()).map(|i| values.is_valid(i).then(|| values.value(i))).collect() });
        }
        col.as_any().downcast_ref::<StringArray>().map(Names::Plain).ok_or_else(|| BadFile(format!("column `{name}` is not text")))
    }

    /// Maps every row through `lookup`, calling it once per distinct dictionary value.
    fn map(&self, mut lookup: impl FnMut(&str) -> Result<u32, BadFile>, out: &mut Vec<u32>) -> Result<(), BadFile> {
        match self {
            Names::Dict { keys, values } => {
                let ids = values.iter().map(|v| v.map(&mut lookup).transpose()).collect::<Result<Vec<_>, _>>()?;
                for k in keys.values() {
                    let id = ids.get(*k as usize).copied().flatten().ok_or_else(|| BadFile("dictionary key out of range".into()))?;
                    out.push(id);
                }
            }
            Names::Plain(a) => {
                for i in 0..a.len() {
                    out.push(lookup(a.value(i))?);
                }
            }
        }
        Ok(())
    }
}

/// Appends a batch's rows to `points`, checking every column. Without `with_time`
/// the batch may lack `time_s` (a read that does not need it) and no time is kept.
pub(super) fn append_batch(batch: &RecordBatch, meta: &Meta, points: &mut Points, with_time: bool) -> Result<(), BadFile> {
    let col = |name: &str| batch.column_by_name(name).ok_or_else(|| BadFile(format!("no `{name}` column")));
    let floats = |name: &str| -> Result<Float64Array, BadFile> {
        let c = col(name)?;
        let a = c.as_any().downcast_ref::<Float64Array>().ok_or_else(|| BadFile(format!("column `{name}` is not float64")))?;
        if a.null_count() > 0 {
            return Err(BadFile(format!("column `{name}` has missing values")));
        }
        Ok(a.clone())
    };
    let step_col = col("step")?;
    let steps = step_col.as_any().downcast_ref::<Int64Array>().ok_or_else(|| BadFile("column `step` is not int64".into()))?;
    if steps.null_count() > 0 || steps.values().iter().any(|s| *s < 0) {
        return Err(BadFile("column `step` has missing or negative values".into()));
    }
    let values = floats("value")?;
    if with_time {
        points.time_s.extend(floats("time_s")?.values().iter());
    }
    let (run_col, metric_col) = (col("run")?, col("metric")?);
    Names::of(run_col, "run")?.map(|n| meta.run_index(n).ok_or_else(|| BadFile(format!("points of run `{n}`, which the metadata does not list"))), &mut points.run)?;
    let mut metric_ids = Vec::with_capacity(batch.num_rows());
    Names::of(metric_col, "metric")?.map(|n| Ok(points.metric_id(n)), &mut metric_ids)?;
    points.metric.extend(metric_ids);
    points.step.extend(steps.values().iter().map(|s| *s as u64));
    points.value.extend(values.values().iter());
    Ok(())
}

/// A batch's rows checked as [`append_batch`] checks them (the same problems, found
/// in the same order) and read in place, without copying its columns: runs and
/// metrics as ids, a dictionary's values looked up once each. Metric names meet
/// `names`' table as `append_batch` meets it.
pub(super) struct Rows<'a> {
    run: Ids<'a>,
    metric: Ids<'a>,
    pub step: &'a [i64],
    /// Present when read with times.
    pub time_s: Option<&'a [f64]>,
    /// Empty when read without values.
    pub value: &'a [f64],
}

impl<'a> Rows<'a> {
    /// Without `with_value` the batch may lack `value` (checked on its own with
    /// [`check_values`]).
    pub fn of(batch: &'a RecordBatch, meta: &Meta, names: &mut Points, with_time: bool, with_value: bool) -> Result<Self, BadFile> {
        let col = |name: &str| batch.column_by_name(name).ok_or_else(|| BadFile(format!("no `{name}` column")));
        let floats = |name: &str| -> Result<&'a [f64], BadFile> {
            let c = batch.column_by_name(name).ok_or_else(|| BadFile(format!("no `{name}` column")))?;
            let a = c.as_any().downcast_ref::<Float64Array>().ok_or_else(|| BadFile(format!("column `{name}` is not float64")))?;
            if a.null_count() > 0 {
                return Err(BadFile(format!("column `{name}` has missing values")));
            }
            Ok(a.values())
        };
        let steps = col("step")?.as_any().downcast_ref::<Int64Array>().ok_or_else(|| BadFile("column `step` is not int64".into()))?;
        if steps.null_count() > 0 || steps.values().iter().any(|s| *s < 0) {
            return Err(BadFile("column `step` has missing or negative values".into()));
        }
        let value = if with_value { floats("value")? } else { &[] };
        let time_s = if with_time { Some(floats("time_s")?) } else { None };
        let (run_col, metric_col) = (col("run")?, col("metric")?);
        let run = Ids::of(Names::of(run_col, "run")?, |n| meta.run_index(n).ok_or_else(|| BadFile(format!("points of run `{n}`, which the metadata does not list"))))?;
        let metric = Ids::of(Names::of(metric_col, "metric")?, |n| Ok(names.metric_id(n)))?;
        Ok(Rows { run, metric, step: steps.values(), time_s, value })
    }

    pub fn len(&self) -> usize {
        self.step.len()
    }

    /// Row `i`'s run index (as [`Points::run`] holds it).
    #[inline]
    pub fn run(&self, i: usize) -> u32 {
        self.run.get(i)
    }

    /// Row `i`'s metric id in `names`' table.
    #[inline]
    pub fn metric(&self, i: usize) -> u32 {
        self.metric.get(i)
    }
}

/// A batch read with the `value` column alone, checked as [`append_batch`] checks it.
pub(super) fn check_values(batch: &RecordBatch) -> Result<(), BadFile> {
    let c = batch.column_by_name("value").ok_or_else(|| BadFile("no `value` column".into()))?;
    let a = c.as_any().downcast_ref::<Float64Array>().ok_or_else(|| BadFile("column `value` is not float64".into()))?;
    if a.null_count() > 0 {
        return Err(BadFile("column `value` has missing values".into()));
    }
    Ok(())
}

/// A text column's rows as ids: through its dictionary (every key checked to name
/// a value) or one by one.
enum Ids<'a> {
    Dict { keys: &'a [i32], ids: Vec<u32> },
    Each(Vec<u32>),
}

impl<'a> Ids<'a> {
    fn of(names: Names<'a>, mut lookup: impl FnMut(&str) -> Result<u32, BadFile>) -> Result<Self, BadFile> {
        match names {
            Names::Dict { keys, values } => {
                let ids = values.iter().map(|v| v.map(&mut lookup).transpose()).collect::<Result<Vec<_>, _>>()?;
                let keys = keys.values();
                if keys.iter().any(|k| ids.get(*k as usize).is_none_or(Option::is_none)) {
                    return Err(BadFile("dictionary key out of range".into()));
                }
                Ok(Ids::Dict { keys, ids: ids.into_iter().map(|id| id.unwrap_or(u32::MAX)).collect() })
            }
            plain => {
                let mut ids = Vec::new();
                plain.map(lookup, &mut ids)?;
                Ok(Ids::Each(ids))
            }
        }
    }

    #[inline]
    fn get(&self, i: usize) -> u32 {
        match self {
            Ids::Dict { keys, ids } => ids[keys[i] as usize],
            Ids::Each(ids) => ids[i],
        }
    }
}

/// `<dir>/<stem>.rlmon.parquet`, written atomically.
pub fn write_in(dir: &Path, stem: &str, rec: &Recording) -> std::io::Result<PathBuf> {
    let path = super::naming::snapshot_path(dir, stem);
    write(&path, rec)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::model::tests::{live_and_recorded, same_series};

    /// A footer rewritten so that every column chunk claims a terabyte: refused by
    /// name before any page is read.
    #[test]
    fn a_footer_claiming_terabytes_is_refused_before_reading() {
        use parquet::file::metadata::{ParquetMetaDataReader, ParquetMetaDataWriter};
        let (_, rec) = live_and_recorded();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.rlmon.parquet");
        write(&path, &rec).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let file = File::open(&path).unwrap();
        let meta = ParquetMetaDataReader::new().parse_and_finish(&file).unwrap();
        let footer_len = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap()) as usize;
        let data = &bytes[..bytes.len() - 8 - footer_len];
        let mut builder = meta.into_builder();
        let groups = builder
            .take_row_groups()
            .into_iter()
            .map(|g| {
                let columns = g.columns().iter().map(|c| c.clone().into_builder().set_total_compressed_size(1 << 40).build().unwrap()).collect();
                g.into_builder().set_column_metadata(columns).build().unwrap()
            })
            .collect();
        let forged_meta = builder.set_row_groups(groups).build();
        let mut footer = Vec::new();
        // The writer adds the footer's length and the magic itself.
        ParquetMetaDataWriter::new(&mut footer, &forged_meta).finish().unwrap();
        let forged = [data, &footer[..]].concat();
        let forged_path = dir.path().join("forged.parquet");
        std::fs::write(&forged_path, &forged).unwrap();
        for result in [read(&forged_path), read_bytes(&forged)] {
            let err = result.err().expect("a forged footer is refused").0;
            assert!(err.contains("corrupted footer") && err.contains("1099511627776 bytes"), "{err}");
        }
    }

    #[test]
    fn round_trip_keeps_every_point_and_the_metadata() {
        let (live, mut rec) = live_and_recorded();
        rec.meta.alerts = vec![serde_json::json!({"kind": "nonfinite", "severity": "critical", "run": "b", "metric": "loss", "step": 5, "time_s": 0.25, "value": null, "message": "loss is NaN"})];
        rec.meta.markers = vec![serde_json::json!({"step": 5, "label": "nan"})];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.rlmon.parquet");
        write(&path, &rec).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back.meta, rec.meta);
        assert_eq!(back.points.len(), rec.points.len());
        same_series(&live, &back.final_state());
        // Only the finished file is left: no temporary beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let (_, rec) = live_and_recorded();
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.rlmon.parquet");
        write(&good, &rec).unwrap();
        let bytes = std::fs::read(&good).unwrap();
        let check = |name: &str, bytes: &[u8], needle: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            let err = read(&p).expect_err(name).0;
            assert!(err.contains(needle), "{name}: {err}");
        };
        check("text", b"step,loss\n1,2.0\n", "not a Parquet file");
        check("empty", b"", "not a Parquet file");
        for cut in [5, bytes.len() / 2, bytes.len() - 3] {
            check("truncated", &bytes[..cut], "truncated or corrupted");
        }
        let mut newer = rec.clone();
        newer.meta.format_version = FORMAT_VERSION + 1;
        write(&dir.path().join("newer"), &newer).unwrap();
        assert!(read(&dir.path().join("newer")).unwrap_err().0.contains("newer than this rlmon reads"));
        // Flipped bytes anywhere in the data pages: an error or (where the flip hits
        // slack) the file still reads; never a panic.
        for at in (4..bytes.len() - 8).step_by(97) {
            let mut b = bytes.clone();
            b[at] ^= 0x5a;
            let p = dir.path().join("flipped");
            std::fs::write(&p, &b).unwrap();
            let _ = read(&p);
        }
    }

    #[test]
    fn step_blocks_cut_at_step_boundaries_and_keep_series_in_step_order() {
        let mut p = Points::default();
        let names: Vec<u32> = ["loss", "lr", "kl"].iter().map(|n| p.metric_id(n)).collect();
        for step in 1..=10u64 {
            // Arrival order differs from name order; step 5 logs one extra metric.
            for &m in names.iter().rev() {
                p.push(0, step, step as f64, m, 0.0);
            }
            if step == 5 {
                let extra = p.metric_id("reward");
                p.push(0, step, step as f64, extra, 0.0);
            }
        }
        let (rows, groups) = file_order(&p, RowOrder::StepBlocks, 7);
        let steps_of = |r: &std::ops::Range<usize>| rows[r.clone()].iter().map(|&i| p.step[i]).collect::<std::collections::BTreeSet<_>>();
        // Whole steps only, never over 7 rows: steps 1-2 (6), 3-4 (6), 5-6 (4 + 3), 7-8, 9-10.
        let sizes: Vec<usize> = groups.iter().map(|g| g.len()).collect();
        assert_eq!(sizes, vec![6, 6, 7, 6, 6]);
        assert_eq!(steps_of(&groups[2]), [5, 6].into());
        for g in &groups {
            // Metric-major inside a group, each series in step order.
            let keys: Vec<(u32, u64)> = rows[g.clone()].iter().map(|&i| (p.metric[i], p.step[i])).collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted);
        }
        // A step larger than a group is kept whole.
        let (_, groups) = file_order(&p, RowOrder::StepBlocks, 2);
        assert!(groups.iter().all(|g| g.len() == 3 || g.len() == 4), "{groups:?}");
        assert_eq!(groups.iter().map(|g| g.len()).sum::<usize>(), p.len());
    }

    #[test]
    fn foreign_parquet_without_metadata_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("foreign.parquet");
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1, 2, 3]))]).unwrap();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        assert!(read(&path).unwrap_err().0.contains("without `rlmon` metadata"));
    }
}
