//! Delimited text with a header row: W&B and TensorBoard CSV exports, pandas'
//! `to_csv`, a spreadsheet. The step comes from a column with a common name (`step`,
//! `Step`, `_step`, `global_step`, `iteration`, `iter`), else an `epoch` column of whole
//! numbers (Keras' `CSVLogger`: see the normalizer), else the row number; a time
//! from `time`, `timestamp`, `Wall time`, `_timestamp` or `_runtime`. W&B names its
//! columns `run - metric` (and adds `__MIN`/`__MAX` bands, which are left out):
//! each run becomes a stream. TensorBoard's one-tag export (`Wall time,Step,Value`)
//! takes its metric name from the file name.
use super::{number_in_text, Line, Record, SkipKind};
use crate::metrics::catalog;

const STEP_COLUMNS: &[&str] = &["step", "_step", "global_step", "train/global_step", "trainer/global_step", "iteration", "iter", "steps"];
const TIME_COLUMNS: &[&str] = &["time", "timestamp", "wall time", "wall_time", "_timestamp", "_runtime", "time_s"];
const RUN_COLUMNS: &[&str] = &["run", "run_id", "run name"];

#[derive(Debug, Clone, PartialEq)]
enum Column {
    Step,
    Time,
    Run,
    /// A metric, with the run W&B named in the header (`run - metric`).
    Metric { run: Option<String>, name: String },
    /// Min/max bands and empty names: not read.
    Skip,
}

/// The header, once read.
#[derive(Debug, Clone, Default)]
pub struct Columns {
    columns: Option<Vec<Column>>,
    /// TensorBoard's export calls its one metric `Value`.
    default_metric: Option<String>,
    row: u64,
}

fn split(line: &str, delimiter: u8) -> Result<Vec<String>, String> {
    let mut reader = ::csv::ReaderBuilder::new().has_headers(false).delimiter(delimiter).flexible(true).from_reader(line.as_bytes());
    match reader.records().next() {
        Some(Ok(r)) => Ok(r.iter().map(str::to_owned).collect()),
        Some(Err(e)) => Err(format!("not CSV: {e}")),
        None => Ok(Vec::new()),
    }
}

/// Words a column's name may have (`my-run - train/loss__MIN` has three).
const MAX_HEADER_WORDS: usize = 5;

/// Whether a line could be a header row: two cells or more, none of them a number,
/// a sentence or cut inside brackets, and no comment (`# 12 batch size * 8 GPUs = 491,520` in a config printed above a
/// text log is not a CSV's header).
pub fn could_be_header(line: &str, delimiter: u8) -> bool {
    let line = line.trim_start();
    if line.starts_with('#') || line.starts_with('{') {
        return false;
    }
    // A comma inside brackets is a tuple's or a call's (`(None, 128)`,
    // `TrainingArguments(lr=1e-05, ...)`), not a cell's end.
    // A cell of many words is a sentence's part (a warning's `..., or set ...`).
    let balanced = |c: &str| c.matches(['(', '[']).count() == c.matches([')', ']']).count();
    let name_like = |c: &str| c.split_whitespace().count() <= MAX_HEADER_WORDS && c.trim().trim_matches('"').parse::<f64>().is_err();
    let cells = line.split(delimiter as char).collect::<Vec<_>>();
    cells.len() >= 2 && cells.iter().all(|c| balanced(c) && name_like(c))
}

impl Columns {
    pub fn new(default_metric: Option<String>) -> Self {
        Columns { default_metric, ..Default::default() }
    }

    fn header(&self, cells: &[String]) -> Vec<Column> {
        // A common step column, else the first whose name a text log's step word
        // would be (`total timesteps`, `env_step`): one step column, the others metrics.
        let step_at = cells.iter().position(|c| STEP_COLUMNS.contains(&c.trim().to_ascii_lowercase().as_str())).or_else(|| cells.iter().position(|c| super::text::is_step_word(catalog::tidy_word(c))));
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let c = c.trim();
                let lower = c.to_ascii_lowercase();
                if step_at == Some(i) {
                    Column::Step
                } else if TIME_COLUMNS.contains(&lower.as_str()) {
                    Column::Time
                } else if RUN_COLUMNS.contains(&lower.as_str()) {
                    Column::Run
                } else if c.is_empty() || c.ends_with("__MIN") || c.ends_with("__MAX") {
                    Column::Skip
                } else if lower == "value" && self.default_metric.is_some() {
                    Column::Metric { run: None, name: self.default_metric.clone().unwrap_or_default() }
                } else if let Some((run, metric)) = c.split_once(" - ") {
                    Column::Metric { run: Some(run.trim().to_owned()), name: metric.trim().to_owned() }
                } else {
                    Column::Metric { run: None, name: c.to_owned() }
                }
            })
            .collect()
    }

    /// One line: the header first, then rows. A row with cells for several W&B
    /// runs becomes one record per run.
    pub fn line(&mut self, line: &str, delimiter: u8) -> Line {
        let cells = match split(line, delimiter) {
            Ok(c) => c,
            Err(e) => return Line::Skip(SkipKind::Malformed, e),
        };
        let Some(columns) = &self.columns else {
            self.columns = Some(self.header(&cells));
            return Line::Blank;
        };
        self.row += 1;
        if cells.len() != columns.len() {
            return Line::Skip(SkipKind::Malformed, format!("{} cells, the header has {}", cells.len(), columns.len()));
        }
        let mut rec = Record { step: Some(self.row), counted: true, ..Default::default() };
        for (col, cell) in columns.iter().zip(&cells) {
            let cell = cell.trim();
            match col {
                Column::Step => match number_in_text(cell).filter(|s| s.is_finite() && *s >= 0.0 && *s < 2f64.powi(63)) {
                    Some(s) => {
                        rec.step = Some(s as u64);
                        rec.counted = false;
                    }
                    None => return Line::Skip(SkipKind::Malformed, format!("step `{cell}` is not a non-negative number")),
                },
                Column::Time => rec.time = number_in_text(cell).filter(|t| t.is_finite()),
                Column::Run => rec.run = Some(cell.to_owned()).filter(|r| !r.is_empty()),
                Column::Skip => {}
                Column::Metric { run, name } => {
                    if cell.is_empty() {
                        continue;
                    }
                    match number_in_text(cell) {
                        Some(v) => {
                            // W&B's `run - metric`: the run rides in the name until
                            // `split_runs` makes one record per run.
                            let key = match run {
                                Some(r) => format!("{r}\u{1f}{name}"),
                                None => name.clone(),
                            };
                            rec.fields.push((key.into(), v));
                        }
                        None => rec.ignored.push(name.clone()),
                    }
                }
            }
        }
        if rec.fields.is_empty() {
            return Line::Skip(SkipKind::NoNumbers, "no numeric cell".into());
        }
        Line::Metrics(rec)
    }
}

/// A row whose header named runs (`run - metric`) as one record per run.
pub fn split_runs(rec: Record) -> Vec<Record> {
    if !rec.fields.iter().any(|(k, _)| k.contains('\u{1f}')) {
        return vec![rec];
    }
    let mut out: Vec<Record> = Vec::new();
    for (key, v) in rec.fields {
        let (run, name) = match key.split_once('\u{1f}') {
            Some((r, n)) => (Some(r.to_owned()), n.into()),
            None => (rec.run.clone(), key),
        };
        match out.iter_mut().find(|r| r.run == run) {
            Some(r) => r.fields.push((name, v)),
            None => out.push(Record { run, rank: rec.rank, step: rec.step, counted: rec.counted, time: rec.time, fields: vec![(name, v)], ignored: Vec::new(), canonical: false, continues: false, awaits_step: false }),
        }
    }
    if let Some(first) = out.first_mut() {
        first.ignored = rec.ignored;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str, default_metric: Option<&str>) -> Vec<Line> {
        let mut c = Columns::new(default_metric.map(str::to_owned));
        text.lines().map(|l| c.line(l, b',')).filter(|l| *l != Line::Blank).collect()
    }

    fn rec(l: &Line) -> &Record {
        match l {
            Line::Metrics(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_plain_export_with_a_step_column() {
        let r = rows("epoch,Step,train/loss,learning_rate,note\n0.1,10,2.5,3e-4,warm\n0.2,20,\"2.25\",,\n", None);
        assert_eq!(rec(&r[0]).step, Some(10));
        assert_eq!(rec(&r[0]).fields, vec![("epoch".into(), 0.1), ("train/loss".into(), 2.5), ("learning_rate".into(), 3e-4)]);
        assert_eq!(rec(&r[0]).ignored, vec!["note".to_owned()]);
        assert_eq!(rec(&r[1]).fields, vec![("epoch".into(), 0.2), ("train/loss".into(), 2.25)], "empty cells are left out");
    }

    #[test]
    fn a_step_column_named_as_a_text_logs_step_word() {
        let r = rows("num_episodes,ep_rew_mean,total timesteps\n68,-547.0,5120\n140,-569.4,10240\n", None);
        assert_eq!((rec(&r[0]).step, rec(&r[1]).step), (Some(5120), Some(10240)));
        let r = rows("step,total_timesteps,loss\n1,512,2.0\n", None);
        assert_eq!(rec(&r[0]).step, Some(1), "a common step column wins");
    }

    #[test]
    fn a_header_is_names_not_numbers_or_a_comment() {
        assert!(could_be_header("Step,run - loss,run - loss__MIN", b','));
        assert!(could_be_header(",loss,acc", b','), "pandas' index column has no name");
        assert!(!could_be_header("1,2.5", b','));
        assert!(!could_be_header("# 12 batch size * 1024 block size * 8 GPUs = 491,520", b','));
        assert!(!could_be_header("tokens per iteration will be: 491,520", b','), "a number's thousands");
        assert!(!could_be_header("loss", b','));
        assert!(!could_be_header(" dense (Dense)               (None, 128)               100480", b','), "Keras' model summary");
        assert!(could_be_header("step,loss (train),acc[val]", b','));
        assert!(!could_be_header("FutureWarning: This implementation of AdamW is deprecated and will be removed. Use torch.optim.AdamW instead, or set `no_deprecation_warning=True` to disable this warning", b','));
    }

    #[test]
    fn without_a_step_column_rows_count() {
        let r = rows("loss\n3\n2\n", None);
        assert_eq!((rec(&r[0]).step, rec(&r[1]).step), (Some(1), Some(2)));
    }

    #[test]
    fn tensorboard_exports_take_the_metric_from_the_file_name() {
        let r = rows("Wall time,Step,Value\n1700000000.5,1,2.5\n", Some("train_loss"));
        let r = rec(&r[0]);
        assert_eq!((r.step, r.time), (Some(1), Some(1700000000.5)));
        assert_eq!(r.fields, vec![("train_loss".into(), 2.5)]);
    }

    #[test]
    fn wandb_exports_split_by_run_and_drop_bands() {
        let r = rows("Step,\"a - loss\",\"a - loss__MIN\",\"a - loss__MAX\",\"b - loss\"\n5,2.0,1.9,2.1,3.0\n", None);
        let split = split_runs(rec(&r[0]).clone());
        assert_eq!(split.len(), 2);
        assert_eq!((split[0].run.as_deref(), split[0].step, split[0].fields.clone()), (Some("a"), Some(5), vec![("loss".into(), 2.0)]));
        assert_eq!((split[1].run.as_deref(), split[1].fields.clone()), (Some("b"), vec![("loss".into(), 3.0)]));
    }

    #[test]
    fn bad_rows_say_why() {
        let r = rows("step,loss\n1,2,3\nx,2\n4,\n", None);
        assert!(matches!(&r[0], Line::Skip(SkipKind::Malformed, m) if m.contains("3 cells")));
        assert!(matches!(&r[1], Line::Skip(SkipKind::Malformed, m) if m.contains("step `x`")));
        assert!(matches!(&r[2], Line::Skip(SkipKind::NoNumbers, _)));
    }
}
