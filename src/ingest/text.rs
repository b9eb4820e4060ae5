//! Text logs of common trainers, read by presets, and a user's own pattern.
//!
//! - Megatron-LM: ` iteration   10/ 500 | consumed samples: 640 | elapsed time per
//!   iteration (ms): 1234.5 | learning rate: 1.5E-06 | lm loss: 1.08E+01 | grad norm: 5.1 |`
//! - nanoGPT: `iter 100: loss 2.3456, time 123.45ms, mfu 12.34%` and its evaluation
//!   `step 100: train loss 2.34, val loss 2.45`; modded-nanogpt:
//!   `step:100/1750 train_loss:3.9 train_time:12345ms step_avg:123.45ms`
//! - DeepSpeed: `[Rank 0] step=10, skipped=0, lr=[0.0001], mom=[(0.9, 0.95)]`, its
//!   throughput timer `epoch=0/micro_step=10/global_step=10, CurrSamplesPerSec=50.3,
//!   MemAllocated=1.2GB`, and DeepSpeed-Chat's `Epoch: 0 | Step: 10 | Actor Loss: 0.12 |
//!   Critic Loss: 0.34` with its `Average reward score: 1.2` line for the same step,
//!   and the pipeline engine's `steps: 10 loss: 2.34 iter time (s): 0.51 samples/sec: 62.5`.
//! - Any other trainer (`Generic`): lines of `key: value`, `key=value` or `key value`
//!   pairs (see `kv`) with at least one metric the catalog knows; the step from a
//!   `step`/`iter`/`iteration`/`global_step`/`num_updates` pair, else a progress
//!   counter (`120/1000`, after an `Epoch E` the epoch's offset added), else none
//!   (each line counts on). Some trainers print a step over several lines: a header
//!   ending in `:` whose step the indented lines under it share (Composer's
//!   `[batch=16/625]:` then `\t Train loss/train/total: 7.12`), a line naming only
//!   a step over indented `key=value` lines (OLMo's `[step=10/739328,epoch=0]`), a
//!   table of `| key | value |` rows between dashed rules (Stable-Baselines3), or
//!   rows of numbers under a header row of names (fastai).
//!
//! Words are mapped to metrics by the catalog's preset tables
//! (`catalog::preset_conversion`); lines a preset does not recognise are plain text.
use regex::Regex;

use super::{kv, number_in_text, Line, Record, SkipKind};
use crate::metrics::catalog::{self, Conversion, Preset};

/// One line of a trainer's log.
pub fn parse(preset: Preset, line: &str) -> Line {
    let line = without_logging_prefix(line);
    if preset == Preset::Generic {
        return generic(line);
    }
    let pairs = match preset {
        Preset::Megatron => megatron(line),
        Preset::NanoGpt => nanogpt(line),
        // Megatron-DeepSpeed prints Megatron's iteration lines (the loss) among the
        // engine's: those are read as Megatron's.
        Preset::DeepSpeed => match deepspeed(line) {
            None => return record(Preset::Megatron, megatron(line), value_of),
            found => found,
        },
        Preset::Generic => None,
    };
    record(preset, pairs, value_of)
}

/// One line of a log of printed dicts (`hf-log`) read in order: a dict without a step
/// of its own right under a line naming one and ending in `:` is that step's
/// (TorchBeast's `Steps 3200 @ 640.2 SPS. Loss 61.08. Stats:` over its stats dict).
pub fn parse_printed_in_order(line: &str, progress: &mut Progress) -> Line {
    let header = progress.dict_header.take();
    match super::hf::parse_printed(line) {
        Line::Metrics(mut rec) => {
            if let (Some(step), None) = (header, rec.step) {
                rec.step = Some(step);
                rec.continues = false;
            } else if rec.step.is_none() && !rec.continues {
                if let Some((step, rate)) = progress.trainer_bar.number_dict() {
                    rec.step = Some(step);
                    // The training bar's rate (`1.73s/it`) is the step time where the dict logs none.
                    if let Some(seconds) = rate.filter(|_| !rec.fields.iter().any(|(n, _)| n == catalog::STEP_TIME_S)) {
                        rec.fields.push((catalog::STEP_TIME_S.into(), seconds));
                    }
                }
            }
            Line::Metrics(rec)
        }
        Line::Text => {
            let text = without_logging_prefix(line).trim_end();
            if text.ends_with(':') {
                progress.dict_header = generic_line(text, Accept::Any).step;
            }
            if let Some((n, m)) = tqdm_count(text) {
                progress.trainer_bar.drawn(n, m, bar_seconds_per_step(text));
            }
            Line::Text
        }
        other => other,
    }
}

/// A memory's value with a magnitude letter (`3.35G`, `3108M`, `512K`), in bytes:
/// under a word for memory the letter is a binary unit.
fn binary_magnitude(value: &str) -> Option<f64> {
    let value = value.trim();
    let (number, unit) = value.split_at(value.len().checked_sub(1)?);
    let factor = match unit {
        "G" => 1073741824.0,
        "M" => 1048576.0,
        "K" => 1024.0,
        _ => return None,
    };
    number.parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| v * factor)
}

/// The Trainer's progress bar (` 12%|█▏   | 25/200 [00:43<05:01, 1.73s/it]`),
/// drawn before each logged dict: its count is the step the dict was logged at
/// (the dicts carry none, and are logged every `logging_steps`).
#[derive(Debug, Clone, Default)]
pub struct TrainerBar {
    /// The newest bar's count and total, and its rate in seconds a step.
    latest: Option<(u64, u64, Option<f64>)>,
    /// The newest count and rate of the bar of the training bar's total, when
    /// another bar was drawn after it (TRL's vLLM `Processed prompts: 512/512`
    /// between the training bar and each dict).
    of_total: Option<(u64, Option<f64>)>,
    /// The newest bar still running (count under its total), before the training
    /// bar is known.
    running: Option<(u64, u64, Option<f64>)>,
    /// The training bar's total, from the first dict it numbered: an evaluation's
    /// bar (`63/63`) or a data pass's (`Map: 2001024/2001024`) is another bar.
    total: Option<u64>,
    /// The step last given to a dict from the bar.
    numbered: Option<u64>,
}

impl TrainerBar {
    /// The step of a training dict, and the bar's rate: the bar's count when it
    /// moved on since the dict before; `None` (the dict counts on) without a new
    /// count. The first bar taken must still be running (a finished bar before
    /// training is a data pass's).
    fn number_dict(&mut self) -> Option<(u64, Option<f64>)> {
        let (n, m, rate) = match (self.latest?, self.total, self.of_total) {
            // The newest bar is another's: the training bar's newest count numbers the dict.
            ((_, m, _), Some(total), Some((n, rate))) if m != total => (n, total, rate),
            // A finished bar drawn after a running one, before the training bar is known.
            ((n, m, _), None, _) if n >= m => self.running.unwrap_or((n, m, None)),
            (latest, _, _) => latest,
        };
        let the_training_bar = match self.total {
            Some(total) => total == m,
            None => n < m,
        };
        if !the_training_bar || self.numbered.is_some_and(|s| n <= s) {
            return None;
        }
        self.total = Some(m);
        self.numbered = Some(n);
        Some((n, rate))
    }

    /// Notes a bar drawn: count `n` of total `m`, at `rate` seconds a step.
    fn drawn(&mut self, n: u64, m: u64, rate: Option<f64>) {
        self.latest = Some((n, m, rate));
        if n < m {
            self.running = Some((n, m, rate));
        }
        if self.total == Some(m) {
            self.of_total = Some((n, rate));
        }
    }
}

/// Whether a line is only a progress bar (`  3%|▎  | 12/357 [01:04<6:24:33, 64.81s/it]`,
/// vLLM's `Processed prompts: 100%|...| 512/512 [..., est. speed input: 3155.10
/// toks/s]`): a count and rates, no `key=value` of the trainer's.
pub fn is_plain_bar(line: &str) -> bool {
    let text = without_logging_prefix(line);
    tqdm_count(text).is_some() && !text.contains('=')
}

/// A tqdm bar's count and total: `25/15633` after its percentage and bar
/// (`  0%|          | 25/15633 [00:43<7:29:10,  1.73s/it]`, with or without a label).
fn tqdm_count(text: &str) -> Option<(u64, u64)> {
    let (_, after_percent) = text.split_once("%|")?;
    let (_, rest) = after_percent.split_once('|')?;
    kv::fraction(rest.split_whitespace().next()?).filter(|(n, m)| n <= m)
}

/// One line of a preset's log read in order: as [`parse`], and after a step, a
/// line of one known metric alone belongs to it.
pub fn parse_in_order(preset: Preset, line: &str, progress: &mut Progress) -> Line {
    let line = without_logging_prefix(line);
    if preset == Preset::Generic {
        return parse_generic(line, progress);
    }
    match parse(preset, line) {
        Line::Metrics(rec) => {
            progress.seen_step |= rec.step.is_some();
            Line::Metrics(rec)
        }
        Line::Text if progress.seen_step => lone_known_metric(line).or_else(|| trainer_dict(line, true)).or_else(|| named_step_line(line)).unwrap_or(Line::Text),
        Line::Text => trainer_dict(line, false).or_else(|| named_step_line(line)).unwrap_or(Line::Text),
        other => other,
    }
}

/// A Hugging Face Trainer's printed dict in another preset's log (the Trainer run
/// under DeepSpeed prints both): after a step line, more of that step.
fn trainer_dict(line: &str, after_step: bool) -> Option<Line> {
    if !line.trim_start().starts_with("{'") && super::hf::after_prefix(line).is_none() {
        return None;
    }
    match super::hf::parse_printed(line) {
        Line::Metrics(mut rec) => {
            rec.continues |= after_step && rec.step.is_none();
            Some(Line::Metrics(rec))
        }
        _ => None,
    }
}

/// A line of the trainer's own in a preset's log that names its step beside a
/// metric rlmon knows (ChatGLM's fine-tuning script prints `loss:2.38,
/// global_step:20` among DeepSpeed's lines): read as any other trainer's line.
fn named_step_line(line: &str) -> Option<Line> {
    match generic_line(&plain_marks(line), Accept::Known) {
        Generic { line: Line::Metrics(rec), .. } if rec.step.is_some() => Some(Line::Metrics(rec)),
        _ => None,
    }
}

/// A line that is one `key: value` of a metric the catalog knows and nothing else
/// (CleanRL's `SPS: 1234`, printed alone after its `global_step=1234, ...` line,
/// which reads as DeepSpeed's): more of the step before it. Only read after a
/// step: before one it is a config dump's line.
fn lone_known_metric(line: &str) -> Option<Line> {
    if line.starts_with([' ', '\t']) {
        return None;
    }
    let (pairs, counters) = kv::pairs(line);
    let [(key, value)] = pairs.as_slice() else { return None };
    let whole = line.trim();
    if !counters.is_empty() || !whole.starts_with(key) || !whole.ends_with(value) {
        return None;
    }
    let name = match catalog::preset_conversion(Preset::Generic, key) {
        Conversion::Rename(name) => name,
        Conversion::Scale(..) | Conversion::Cumulative(..) => return None,
    };
    catalog::info(name)?;
    let fields = vec![(name.into(), kv::value(value)?)];
    Some(Line::Metrics(Record { step: None, canonical: true, continues: true, fields, ..Default::default() }))
}

/// The record of a recognised line, its words converted by the preset's table.
fn record(preset: Preset, pairs: Parsed<'_>, value_of: fn(&str) -> Option<f64>) -> Line {
    let Some((step, continues, pairs)) = pairs else { return Line::Text };
    record_of_values(preset, step, continues, pairs.into_iter().map(|(word, value)| (word, value_of(value))))
}

/// The record of a line's words and their values (`None`: not a number).
fn record_of_values<W: AsRef<str>>(preset: Preset, step: Option<u64>, continues: bool, values: impl IntoIterator<Item = (W, Option<f64>)>) -> Line {
    let mut rec = Record { step, canonical: true, continues, ..Default::default() };
    // The fields that are a mean of the loss (`Average Loss`), and how many are the loss.
    let (mut means, mut losses) = (Vec::new(), 0);
    // The renamed fields: their place, their word, and how strongly the word
    // stands for its metric, read only where two words name one (see below).
    let mut renamed: Vec<(usize, W, Option<usize>)> = Vec::new();
    for (written, value) in values {
        let word = written.as_ref();
        match value {
            Some(v) => match catalog::preset_conversion(preset, word) {
                Conversion::Rename(name) => {
                    if name == catalog::LOSS {
                        losses += 1;
                        if catalog::is_mean_loss_word(word) {
                            means.push(rec.fields.len());
                        }
                    }
                    renamed.push((rec.fields.len(), written, None));
                    rec.fields.push((name.into(), v));
                }
                Conversion::Scale(name, f) => rec.fields.push((name.into(), v * f)),
                // No preset word is a running total today; keep the value as written.
                Conversion::Cumulative(name) => rec.fields.push((name.into(), v)),
            },
            None => rec.ignored.push(word.trim().to_owned()),
        }
    }
    if losses > means.len() {
        // Beside the loss itself, a mean of it keeps its own name.
        for at in means {
            let name = &mut rec.fields[at].0;
            *name = catalog::MEAN_LOSS.into();
        }
    }
    // Two words for one metric on a line (AllenNLP's `batch_loss: 0.59, loss:
    // 0.57`): the one that names it most plainly (the catalog's own name before an
    // alias) is read, at the first one's place; of equals, the first.
    if renamed.len() > 1 {
        // (The catalog's alias list is long: a word's rank is read only for such a pair.)
        fn rank_of<W: AsRef<str>>(entry: &mut (usize, W, Option<usize>)) -> usize {
            let (_, word, rank) = entry;
            *rank.get_or_insert_with(|| catalog::alias_rank(catalog::tidy_word(word.as_ref())))
        }
        let mut drop = Vec::new();
        for i in 1..renamed.len() {
            let at = renamed[i].0;
            let Some(j) = (0..i).find(|&j| !drop.contains(&renamed[j].0) && rec.fields[renamed[j].0].0 == rec.fields[at].0) else { continue };
            let rank = rank_of(&mut renamed[i]);
            if rank < rank_of(&mut renamed[j]) {
                rec.fields[renamed[j].0].1 = rec.fields[at].1;
                renamed[j].2 = Some(rank);
            }
            drop.push(at);
        }
        drop.sort_unstable();
        for at in drop.into_iter().rev() {
            rec.fields.remove(at);
        }
    }
    if rec.fields.is_empty() {
        return Line::Skip(SkipKind::NoNumbers, format!("a {preset:?} line without numbers"));
    }
    Line::Metrics(rec)
}

/// `(step, continues the previous step, [(word, value text)])` of a recognised line.
type Parsed<'a> = Option<(Option<u64>, bool, Vec<(&'a str, &'a str)>)>;

fn integer(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

/// A value as printed: a number, maybe with a unit (`123.4ms`, `12.3%`, `1.2GB`), or
/// a bracketed list whose first number counts (`[0.0001]`).
fn value_of(text: &str) -> Option<f64> {
    let t = text.trim().trim_start_matches('[').trim_end_matches(']');
    let t = t.split(',').next().unwrap_or(t).trim();
    if let Some(x) = number_in_text(t) {
        return Some(x);
    }
    for (unit, factor) in [("ms", 1.0), ("%", 1.0), ("GB", 1073741824.0), ("MB", 1048576.0), ("s", 1.0)] {
        if let Some(x) = t.strip_suffix(unit).and_then(number_in_text) {
            return Some(x * factor);
        }
    }
    None
}

/// `key: value` segments between `|`.
fn bar_pairs(text: &str) -> Vec<(&str, &str)> {
    // `lm loss: 1.2E+01`, or Megatron-DeepSpeed's newer `lm loss=11.208768`.
    text.split('|').filter_map(|seg| seg.rsplit_once(':').or_else(|| seg.split_once('='))).map(|(k, v)| (k.trim(), v.trim())).filter(|(k, _)| !k.is_empty()).collect()
}

fn megatron(line: &str) -> Parsed<'_> {
    // Its evaluation: ` validation loss at iteration 30 | lm loss value: 8.9E+00 | lm loss PPL: ...`.
    if let Some(at) = line.find("validation loss at iteration") {
        let rest = &line[at + "validation loss at iteration".len()..];
        let (step, tail) = rest.split_once('|')?;
        return Some((Some(integer(step)?), false, bar_pairs(tail)));
    }
    let at = line.find("iteration")?;
    let rest = &line[at + "iteration".len()..];
    let (head, tail) = rest.split_once('|')?;
    let (step, _total) = head.split_once('/')?;
    // (`iteration=       1/  317892` in Megatron-DeepSpeed's newer lines.)
    let mut step = integer(step.trim_start().trim_start_matches('='))?;
    let mut pairs = bar_pairs(tail);
    // NeMo 2 prints `Training epoch 0, iteration 3/99 | ... | global_step: 3 | ...`:
    // the iteration restarts with every epoch, the global step does not.
    if let Some(at) = pairs.iter().position(|(k, v)| *k == "global_step" && integer(v).is_some()) {
        step = integer(pairs.remove(at).1)?;
    }
    Some((Some(step), false, pairs))
}

/// Byte offsets where `word` starts a word in `line`: at the start or after a
/// character that is not part of a word, so a timestamp, rank or logger prefix
/// before the trainer's text does not hide it (`2023-03-22 09:30:39 iter 2920: ...`),
/// while `substep 5:` does not read as `step 5:`.
fn word_starts<'a>(line: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    line.match_indices(word).map(|(at, _)| at).filter(move |&at| !line[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_'))
}

/// The first place in `line` where `read` recognises a line of the preset; a match
/// after a prefix also needs a number among its values, so prose that happens to
/// contain `step 5:` stays text.
fn first_match<'a>(line: &'a str, words: &[&'a str], read: impl Fn(&'a str) -> Parsed<'a>) -> Parsed<'a> {
    let mut starts: Vec<usize> = words.iter().flat_map(|w| word_starts(line, w)).collect();
    starts.sort_unstable();
    starts.dedup();
    starts.into_iter().find_map(|at| read(&line[at..]).filter(|(_, _, pairs)| at == 0 || pairs.iter().any(|(_, v)| value_of(v).is_some())))
}

fn nanogpt(line: &str) -> Parsed<'_> {
    let line = line.trim();
    // (A step word after a bar is one segment of a line of segments, LitGPT's
    // `Ep 1 | iter 4 | step 1: loss train (curr): 1.585`: the generic reader's.)
    first_match(line, &["step:", "iter ", "step "], |at| if line[..line.len() - at.len()].trim_end().ends_with('|') { None } else { nanogpt_at(at) })
}

/// A nanoGPT line from its step word on.
fn nanogpt_at(line: &str) -> Parsed<'_> {
    // modded-nanogpt: `step:N/M key:value ...`
    if let Some(rest) = line.strip_prefix("step:") {
        let mut tokens = rest.split_whitespace();
        let step = integer(tokens.next()?.split('/').next()?)?;
        let pairs = tokens.filter_map(|t| t.split_once(':')).collect();
        return Some((Some(step), false, pairs));
    }
    // nanoGPT: `iter N: key value, key value` or `step N: key value, ...` (and
    // scripts in its style: `step N: loss X lr Y`).
    let rest = line.strip_prefix("iter ").or_else(|| line.strip_prefix("step "))?;
    let (step, rest) = rest.split_once(':')?;
    // LitGPT and lit-llama: `iter N step M: loss X, iter time: Tms`, a line per
    // micro-batch; the optimizer step M repeats over them, so the iter numbers the points.
    let step = integer(step).or_else(|| match step.split_whitespace().collect::<Vec<_>>()[..] {
        [iter, "step", optimizer_step] if line.starts_with("iter ") && integer(optimizer_step).is_some() => integer(iter),
        _ => None,
    })?;
    let mut pairs = kv::pairs(rest).0;
    // An `iter` line is a training step: its `train loss` is the loss (minGPT's
    // `epoch 1 iter 10: train loss 2.31. lr 6e-04`), where nanoGPT's `step` line
    // evaluates the training set.
    if line.starts_with("iter ") {
        for (key, _) in &mut pairs {
            if key.trim().eq_ignore_ascii_case("train loss") {
                *key = catalog::LOSS;
            }
        }
    }
    Some((Some(step), false, pairs))
}

/// Whether a word names the step in a generic line (lower case, spaces and dashes
/// as underscores: `Global Step` is `global_step`). (A `match`: asked of every
/// pair of every line, it costs one length test for most.)
pub(super) fn is_step_word(name: &str) -> bool {
    matches!(
        name,
        "step" | "steps" | "iter" | "iters" | "iteration" | "global_step" | "globalstep" | "num_updates" | "updates" | "update" | "train_step" | "_step" | "trainer/global_step" | "train/global_step"
        // Stable-Baselines3's tables count environment steps.
        | "total_timesteps" | "time/total_timesteps"
        // MaxText: `completed step: 10, seconds: 1.2, ...`.
        | "completed_step"
        // Tianshou's bar counts environment steps across its epochs; Sample Factory
        // reports the environment frames so far.
        | "env_step" | "total_num_frames"
        // OpenAI Baselines' table (ppo2's `misc/total_timesteps`); garage's environment steps.
        | "misc/total_timesteps" | "total_env_steps" | "totalenvsteps"
        // PyMARL's and EPyMARL's `Recent Stats | t_env:    8443380 | Episode:   331792`.
        | "t_env"
        // Chinese scripts' "training count", "iteration count", "step count" (`训练次数：100, Loss：1.98`).
        | "训练次数" | "迭代次数" | "训练步数" | "步数"
    )
}
/// A tidy name without the word that announces a step as it starts (Dopamine's
/// `Starting iteration 3`, rsl_rl's `Learning iteration 3/1500`): the step word,
/// or the name as it was.
fn as_step_word(name: String) -> String {
    match ["starting_", "beginning_", "learning_", "training_", "at_"].iter().find_map(|p| name.strip_prefix(p)) {
        Some(rest) if is_step_word(rest) => rest.to_owned(),
        _ => name,
    }
}

/// Words whose value is a position within a pass rather than the step: read as a
/// progress counter (a new pass starts when it goes back). `token` and `sample` count
/// only with a total (`[token=4096/100000]`, Composer's duration in tokens).
const COUNTER_WORDS: &[&str] = &["batch", "batch_idx", "token", "sample"];
/// Words whose value is not a metric: a tool's run number, a process id, an ETA
/// (scikit-learn's `Estimated Time`, CatBoost's `remaining: 57.4s`).
/// (And a process's parallel ranks in a logger's prefix: nanotron's `[INFO|DP=0|PP=0|TP=0]`.)
/// (And the count a value is over: icefall's `loss[loss=1.065, over 2436.00 frames. ]`.)
/// (A `match`: asked of every pair of every line, it costs one length test for most.)
fn is_not_metric(name: &str) -> bool {
    matches!(name, "v_num" | "pid" | "eta" | "estimated_time" | "remaining_time" | "remaining" | "time_remaining" | "time_left" | "rank" | "local_rank" | "world_size" | "end_of_epoch" | "end_of_training" | "dp" | "pp" | "tp" | "over")
}

/// What a generic log's lines carry from one to the next: progress counters restart
/// with every epoch or pass (Keras' `12/100` after `Epoch 2/10`), and a step that
/// went back would read as a resume that drops the earlier passes; some trainers
/// print one step over several lines (a header and indented `key: value` lines, or
/// a table of rows).
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Steps of the passes before the current one.
    offset: u64,
    /// The last counter read `(n, m)`.
    last: Option<(u64, u64)>,
    /// Under a block header (`[batch=16/625]:`): the step its indented lines
    /// belong to; `Some(None)` for a header without one (they continue the step
    /// before: Composer's eval results).
    block: Option<Option<u64>>,
    /// The header ended with `:`, so every number under it is a metric; under a
    /// bare step (OLMo's `[step=10/739328,epoch=0]`) only lines of one `key=value`.
    block_loose: bool,
    /// The block's header announced an evaluation (Coqui TTS's `--> EVAL
    /// PERFORMANCE`): its lines are results, under evaluation names.
    block_evaluation: bool,
    /// A table being read (Stable-Baselines3's `| key | value |` rows between
    /// dashed rules): its rows so far as `key: value` text, under their section.
    table: Option<Table>,
    /// The column names of a header row (fastai's `epoch  train_loss  valid_loss
    /// accuracy  time`): the rows of numbers under it are read by column.
    columns: Option<Vec<String>>,
    /// An `Epoch 2/10` line came since the last counter: the next counter that
    /// does not go past the last one starts a new pass (Keras prints each epoch's
    /// final `100/100 - loss: ...` alone under its header).
    new_epoch: bool,
    /// A line named a step (or a counter stood for one): a later line of known
    /// metrics alone belongs to it (CleanRL's `SPS: 1234` after
    /// `global_step=1234, episodic_return=56.0`).
    seen_step: bool,
    /// A line of metrics came (with a step or not).
    seen_metrics: bool,
    /// The last metric line was a finished bar (`10000/10000`, `190/190`) with no
    /// epoch of its own, with its values: a line of results right after it is
    /// that pass's, unless it gives one of them another value (PaddleOCR's `best
    /// metric, acc: 0` after its last `epoch: [10/10], ..., acc: 0.57`).
    finished_bar: Option<Vec<(super::FieldName, f64)>>,
    /// A Trainer's progress bar, numbering its printed dicts.
    trainer_bar: TrainerBar,
    /// Every number is a metric, known to rlmon or not ([`super::Format::Pairs`]).
    every_pair: bool,
    /// The epoch of the last line whose batch number has no total (MXNet's
    /// `Epoch[0] Batch [200]`): a line of another epoch starts a new pass, and a
    /// line of this epoch without a batch is its results (`Epoch[0] Train-accuracy=0.9`).
    epoch: Option<u64>,
    /// The step of a line that announced an evaluation (BigDL's `[Iteration 469]
    /// Validate model...`): later lines of that step are its results.
    evaluation: Option<u64>,
    /// That evaluation's results came on lines labelled as its own, without the
    /// step (Caffe's `Test net output #0: accuracy = 0.97`).
    evaluation_labelled: bool,
    /// A line announced an evaluation pass (`Validating`) and no training pass
    /// or epoch came since.
    evaluation_pass: bool,
    /// The last metric line was one of an evaluation's own batches (`Test: [ 10/196]`):
    /// a line of results right after them, without a step or counter (the
    /// ImageNet example's ` * Acc@1 76.1 Acc@5 92.9`), is the evaluation's summary.
    after_evaluation_batches: bool,
    /// The step of a line that named only a step, the names read under it, and
    /// whether the line was indented (centred: rsl_rl's `Learning iteration 3/1500`
    /// over its indented `Mean reward: 1.25` lines), so indented lines are its too.
    step_line: Option<(u64, Vec<super::FieldName>, bool)>,
    /// Whether a line naming only an epoch (`Epoch 3`) numbers the lines under it:
    /// `None` until one comes; yes when it came before any step, until a line under
    /// one repeats a name (an epoch of many prints) or a step of its own comes.
    epoch_clock: Option<bool>,
    /// The indentation of the line before, when it was a metric line: an indented
    /// line of one `key= value` right under it, indented alike, is more of its step.
    after_metrics: Option<String>,
    /// Whether the epochs named beside a counter with its total count from 1 (the
    /// first such line's epoch was 1), or from 0.
    epochs_from_one: Option<bool>,
    /// The label whose counter numbers a labelled logger's steps (Acme's
    /// `[Learner] Learner Steps = 1000`).
    clock_label: Option<String>,
    /// The step of a header right before a printed dict (see [`parse_printed_in_order`]).
    dict_header: Option<u64>,
    /// Steps named beside their epoch (pix2pix's `(epoch: 2, iters: 78, ...)`,
    /// DeepSpeech's `Epoch 66 | Training | ... | Steps: 18595 | Loss: ...`).
    beside_epoch: BesideEpoch,
    /// A header without a step came (`Result for PPO_...:`): if the next line is
    /// an indented `key: value`, its indentation is the block's margin.
    nested_header: bool,
    /// The indentation read as the left edge (see [`at_the_margin`]).
    margin: Option<usize>,
    /// A line of that block named its step.
    block_stepped: bool,
    /// The rows of W&B's console `Run summary:` block being read, as `| key: value `.
    wandb_summary: Option<String>,
    /// The loss scale an fp16 loss scaler's message set since the last metric
    /// line ([`loss_scale_message`]): it goes with the next one, the step the
    /// overflow happened in.
    loss_scale: Option<f64>,
    /// Whether the first of several scaler messages between two metric lines may
    /// go to the step before: the metric lines before them hold no scale.
    loss_scale_to_step_before: bool,
    /// Whether a metric line was read, and whether one since the last scaler
    /// message holds a scale (logged or given).
    scaled_since_message: Option<bool>,
    /// Steps a line names, exact or rounded (LeRobot's `step:1K`).
    rounded_steps: RoundedSteps,
    /// The last line read was a trainer's message of a non-finite loss or gradient
    /// ([`nonfinite_message`]): the next such message without a step says more of
    /// the same step (detectron2's `loss_dict = {'loss_cls': nan, ...}` under its error).
    after_nonfinite_message: bool,
    /// The largest total of a bar's counter (`8/300`): the bar that numbers the
    /// steps when bars of other totals are drawn between its lines.
    clock_total: Option<u64>,
}

/// Steps printed rounded to a magnitude (LeRobot's `step:2K` for 1,600 to 2,400,
/// logged every 200): the same number for several lines. A rounded step is
/// numbered on from the step before by the interval the exact steps before it
/// kept, while that stays within the rounding of its printed value (a gap in the
/// log is taken at its printed value), so no line merges into another's step.
#[derive(Debug, Clone, Default)]
struct RoundedSteps {
    last: Option<u64>,
    interval: Option<u64>,
}

impl RoundedSteps {
    /// The step of a line that prints `printed`, rounded to `unit` (1,000 for
    /// `2K`) or exact (`None`).
    fn number(&mut self, printed: u64, unit: Option<u64>) -> u64 {
        let step = match (unit, self.last, self.interval) {
            (Some(unit), Some(last), Some(interval)) if (last + interval).abs_diff(printed) <= unit => last + interval,
            _ => printed,
        };
        if unit.is_none() {
            if let Some(last) = self.last.filter(|l| step > *l) {
                self.interval = Some(step - last);
            }
        }
        self.last = Some(step);
        step
    }
}

impl Progress {
    /// Notes a loss scaler's message: the scale it set. Of several messages between
    /// two metric lines (apex halving the scale from 256 to 2 over eight skipped
    /// steps that print no line), the first is the step before's, as a part of it,
    /// and the last the next line's: a fall the run took in one gap is seen whole.
    pub fn note_loss_scale(&mut self, scale: f64) -> Line {
        match self.loss_scale.replace(scale) {
            None => {
                // The gap's first message: the step before may take it if it has no scale.
                self.loss_scale_to_step_before = self.scaled_since_message == Some(false);
                self.scaled_since_message = self.scaled_since_message.map(|_| false);
                Line::Text
            }
            Some(first) if std::mem::take(&mut self.loss_scale_to_step_before) => Line::Metrics(Record { step: None, canonical: true, continues: true, fields: vec![(catalog::LOSS_SCALE.into(), first)], ..Default::default() }),
            Some(_) => Line::Text,
        }
    }

    /// A parsed line, or where it read nothing, a trainer's message that the loss or
    /// the gradients became non-finite ([`nonfinite_message`]) as a NaN value, or a
    /// layer's expert loads printed as a list ([`expert_loads`]).
    pub fn with_messages(&mut self, line: &str, parsed: Line) -> Line {
        match parsed {
            Line::Text => match nonfinite_message(line) {
                Some(message) => Line::Metrics(message.record(std::mem::replace(&mut self.after_nonfinite_message, true))),
                None => expert_loads(line).map_or(Line::Text, Line::Metrics),
            },
            Line::Metrics(rec) => {
                self.after_nonfinite_message = false;
                Line::Metrics(rec)
            }
            other => other,
        }
    }

    /// A parsed line, given the loss scale a scaler's message set before it when it
    /// is the next metric line and logs no scale of its own.
    pub fn with_loss_scale(&mut self, parsed: Line) -> Line {
        match parsed {
            Line::Metrics(mut rec) => {
                let own = rec.fields.iter().any(|(name, _)| name.contains("scale"));
                let given = self.loss_scale.take().filter(|_| !own);
                if let Some(scale) = given {
                    rec.fields.push((catalog::LOSS_SCALE.into(), scale));
                }
                self.scaled_since_message = Some(self.scaled_since_message == Some(true) || own || given.is_some());
                self.loss_scale_to_step_before = false;
                Line::Metrics(rec)
            }
            other => other,
        }
    }
}

/// The loss scale set by an fp16 loss scaler's message, which names no step:
/// apex's `Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to
/// 256.0`, DeepSpeed's `OVERFLOW! Rank 0 Skipping step. Attempted loss scale:
/// 16384.0, reducing to 8192.0`, fairseq's `gradient overflow detected, ignoring
/// gradient, setting loss scale to: 64.0`, MindSpore's `overflow, still update,
/// loss scale adjust to 1024.0`: the number after the line's last `to`, on a line
/// that says the scale changed.
pub fn loss_scale_message(line: &str) -> Option<f64> {
    // Most lines name no scale: one search, set up once, rules them out.
    static SCAL: std::sync::LazyLock<memchr::memmem::Finder<'static>> = std::sync::LazyLock::new(|| memchr::memmem::Finder::new("scal"));
    let at = SCAL.find(line.as_bytes())?;
    let lower = line.to_ascii_lowercase();
    let names_a_change = ["overflow", "reduc", "decreas", "increas", "lower", "rais", "adjust", "setting"].iter().any(|w| lower.contains(w));
    if !names_a_change || (!lower.contains("loss scale") && !lower.contains(catalog::LOSS_SCALE)) {
        return None;
    }
    let words: Vec<&str> = lower[at..].split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    let to = words.iter().rposition(|w| w.trim_end_matches(':') == "to")?;
    let value: f64 = words.get(to + 1)?.trim_end_matches(['.', '!']).parse().ok()?;
    (value.is_finite() && value > 0.0).then_some(value)
}

/// What a trainer's message says became non-finite: the loss or the gradients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonFiniteMessage {
    Loss { step: Option<u64> },
    Grad { step: Option<u64> },
}

impl NonFiniteMessage {
    /// The message as a record: the quantity it names as NaN, at the step it
    /// names, else the step after the last one logged (the step that failed).
    pub fn record(self, continues: bool) -> Record {
        let (metric, step) = match self {
            NonFiniteMessage::Loss { step } => (catalog::LOSS, step),
            NonFiniteMessage::Grad { step } => (catalog::GRAD_NORM, step),
        };
        Record { step, canonical: true, continues: continues && step.is_none(), fields: vec![(metric.into(), f64::NAN)], ..Default::default() }
    }
}

/// A trainer's own message that its loss or gradients stopped being finite, on a
/// line that logs no value: detectron2's `FloatingPointError: Loss became infinite
/// or NaN at iteration=15421!`, Megatron's `found NaN in local grad norm`, torch's
/// `The total norm of order 2.0 for gradients from parameters is non-finite`, its
/// anomaly mode's `Function 'MulBackward0' returned nan values`, Lightning's
/// `Monitored metric val_loss = nan is not finite`, Keras' `Batch 9: Invalid loss,
/// terminating training`. A run that stops on such an error logs no NaN value at
/// all. Not a loss scaler skipping a step (fp16's overflows are expected), nor a
/// line that only says what would happen (`if`, `whether`, a negation).
pub fn nonfinite_message(line: &str) -> Option<NonFiniteMessage> {
    // Most lines name nothing non-finite: one pass over the bytes rules them out.
    static NAN_OR_INF: std::sync::LazyLock<regex::bytes::Regex> = std::sync::LazyLock::new(|| regex::bytes::Regex::new(r"(?i)nan|inf|finite|invalid").expect("a valid pattern"));
    if !NAN_OR_INF.is_match(line.as_bytes()) {
        return None;
    }
    let lower = line.to_ascii_lowercase();
    // The words, each with where it starts.
    let mut words: Vec<(usize, &str)> = Vec::new();
    let mut from = None;
    for (i, c) in lower.char_indices().chain(std::iter::once((lower.len(), ' '))) {
        match (from, c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            (None, true) => from = Some(i),
            (Some(f), false) => {
                words.push((f, &lower[f..i]));
                from = None;
            }
            _ => {}
        }
    }
    let word_at = |i: usize| words.get(i).map_or("", |w| w.1);
    let is_loss = |w: &str| w.contains(catalog::LOSS);
    let is_grad = |w: &str| w.starts_with("grad") || w.contains("backward");
    let hedged = words.iter().enumerate().any(|(i, (_, w))| {
        matches!(*w, "if" | "whether" | "unless" | "no" | "without" | "never" | "avoid" | "prevent" | "overflow" | "scaler" | "ignore" | "ignoring" | "ignored")
            || w.starts_with("skip")
            // A loss scaler's own words (`loss scale`, `loss_scale`).
            || *w == catalog::LOSS_SCALE
            || (is_loss(w) && word_at(i + 1) == "scale")
    });
    if hedged {
        return None;
    }
    // (A starting value that changed is a sentinel, not a fault: Keras' `val_loss
    // improved from inf to 2.04`, the early-stopping recipe's `(inf --> 0.69)`.)
    // Nor is a best value yet to be set (`best val loss so far: inf`).
    let sentinel = |i: usize| {
        word_at(i.wrapping_sub(1)) == "from" || matches!(word_at(i + 1), "to" | "--" | "-") || words[..i].iter().any(|(_, w)| matches!(*w, "best" | "lowest" | "initial" | "init"))
    };
    // What each non-finite word is said of: a value's own name when it is one
    // (`'loss_cls': nan`; a NaN of `mean_episode_return` in a dict of losses
    // is none), else the line's words.
    let (mut loss, mut grad, mut stated) = (false, false, false);
    for (i, &(at, w)) in words.iter().enumerate() {
        let value = matches!(w, "nan" | "nans" | "inf" | "infs" | "infinite" | "infinity" | "non-finite" | "nonfinite" | "-inf") && !sentinel(i);
        let phrase = (w == "finite" && matches!(word_at(i.wrapping_sub(1)), "not" | "non")) || (w == "invalid" && is_loss(word_at(i + 1)));
        if !value && !phrase {
            continue;
        }
        let before = i.checked_sub(1).map_or("", |k| &lower[words[k].0 + words[k].1.len()..at]);
        if value && before.contains([':', '=']) {
            // (A setting's infinite bound is no fault: `grad_clip: inf`, `max_loss=inf`.)
            let setting = |k: &str| ["clip", "max", "thresh", "limit", "bound", "cap", "scale"].iter().any(|w| k.contains(w));
            let keys: Vec<&str> = [word_at(i.wrapping_sub(1)), word_at(i.wrapping_sub(2))].into_iter().filter(|k| !setting(k)).collect();
            loss |= keys.iter().any(|k| is_loss(k));
            grad |= keys.iter().any(|k| is_grad(k));
        } else {
            stated = true;
        }
    }
    if stated {
        loss |= words.iter().any(|(_, w)| is_loss(w));
        grad |= words.iter().any(|(_, w)| is_grad(w));
    }
    // The step the line names (`iteration=15421`, `at step 300`, `iter 12`).
    let step = words.windows(2).find_map(|pair| if is_step_word(pair[0].1) && pair[0].1 != "steps" { pair[1].1.parse::<u64>().ok() } else { None });
    match (loss, grad) {
        (true, _) => Some(NonFiniteMessage::Loss { step }),
        (false, true) => Some(NonFiniteMessage::Grad { step }),
        _ => None,
    }
}

/// The tokens each expert of a layer took, printed as a list under a name of expert
/// loads on a line of its own: a DeepSpeed MoE script's `moe layer 0: exp_counts=[4436,
/// 4410, 3979, ...], l_aux=1.026`, a tensor's `layer 3 tokens_per_expert:
/// tensor([512, 498, ...], device='cuda:0')`, NumPy's `[512 498 ...]`. The list's
/// name, with the words before it (the layer), is read as the catalog reads a
/// logged vector's (`moe_layer_0/exp_counts/E3` is `moe/L0/load/E3`). The loads
/// are the step's the line comes after (such lines follow the step's metrics).
pub fn expert_loads(line: &str) -> Option<Record> {
    // Most text lines hold no list: ruled out before a lower-case copy is made.
    memchr::memchr(b'[', line.as_bytes())?;
    let lower = without_logging_prefix(line).to_ascii_lowercase();
    if !(lower.contains("exp") || lower.contains("moe") || lower.contains("rout")) {
        return None;
    }
    let mut fields = Vec::new();
    let mut from = 0;
    while let Some(open) = lower[from..].find('[').map(|i| i + from) {
        from = open + 1;
        let Some(close) = lower[open + 1..].find(']').map(|i| i + open + 1) else { break };
        let inner = &lower[open + 1..close];
        if inner.contains('[') {
            continue;
        }
        let values: Vec<f64> = inner.split([',', ' ']).filter(|v| !v.is_empty()).map_while(|v| v.trim_end_matches('.').parse::<f64>().ok()).collect();
        if values.len() < 2 || values.len() != inner.split([',', ' ']).filter(|v| !v.is_empty()).count() || values.iter().any(|v| !v.is_finite() || *v < 0.0) {
            continue;
        }
        // The name: the word before `=`/`:` (and a tensor's `tensor(`).
        let before = lower[..open].trim_end();
        let before = before.strip_suffix("tensor(").unwrap_or(before).trim_end();
        let Some(before) = before.strip_suffix(['=', ':']) else { continue };
        let before = before.trim_end();
        let name_at = before.rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'))).map_or(0, |i| i + 1);
        let (context, name) = before.split_at(name_at);
        if name.is_empty() {
            continue;
        }
        let context: Vec<&str> = context.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
        let prefix = context.join("_");
        let loads: Option<Vec<(super::FieldName, f64)>> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let metric = catalog::moe_alias(&format!("{prefix}/{name}/E{i}"))?;
                metric.ends_with(&format!("/load/E{i}")).then(|| (metric.into(), *v))
            })
            .collect();
        fields.extend(loads.unwrap_or_default());
    }
    (!fields.is_empty()).then(|| Record { canonical: true, continues: true, fields, ..Default::default() })
}

/// A step named on a line with its epoch may count within the epoch: it goes back
/// (or, on a line of the same metrics, stays) as the epoch moves on. Such steps
/// are numbered on after the epochs before, as a bar's counter is, so a new epoch
/// reads as more steps rather than as a resume that drops the earlier ones.
#[derive(Debug, Clone, Copy, Default)]
struct BesideEpoch {
    /// The epoch and step of the last such line, and its metrics' names (a hash).
    last: Option<(u64, u64, u64)>,
    /// The steps of the epochs before, once the steps were seen to restart.
    offset: u64,
}

impl BesideEpoch {
    /// The step of a line of `epoch` naming `step`; `learn`: a training line, whose
    /// step tells whether the steps restart.
    fn step(&mut self, epoch: u64, step: u64, names: u64, learn: bool) -> u64 {
        if !learn {
            return self.offset.saturating_add(step);
        }
        if let Some((last_epoch, last_step, last_names)) = self.last {
            // (An epoch that goes back is a resume, told as one.)
            if epoch > last_epoch && (step < last_step || (step == last_step && names == last_names)) {
                self.offset = self.offset.saturating_add(last_step);
            }
        }
        self.last = Some((epoch, step, names));
        self.offset.saturating_add(step)
    }
}

/// A hash of a record's metric names: lines of the same metrics hash alike.
fn names_hash(fields: &[(super::FieldName, f64)]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (name, _) in fields {
        name.hash(&mut h);
    }
    h.finish()
}

#[derive(Debug, Clone, Default)]
struct Table {
    section: String,
    rows: String,
}

impl Progress {
    /// `every_pair`: every `key: value` pair is a metric, not only lines with one
    /// that rlmon knows.
    pub fn new(every_pair: bool) -> Progress {
        Progress { every_pair, ..Progress::default() }
    }

    /// Notes a bar's counter `(n, m)`: the running bar of the largest total is the
    /// clock. A bar that finished is no clock of the bars after it (a data pass's
    /// `Map: 2001/2001` before the training bar's `25/300`).
    fn note_bar(&mut self, (n, m): (u64, u64)) {
        if m == 0 {
            return;
        }
        if n < m {
            self.clock_total = Some(self.clock_total.map_or(m, |t| t.max(m)));
        } else if self.clock_total == Some(m) {
            self.clock_total = None;
        }
    }

    /// Whether counter `(n, m)` is a bar nested in the clock's: a smaller total
    /// than a bar drawn before (tqdm's inner bar of each outer step, redrawn from 0).
    fn nested_bar(&mut self, counter: (u64, u64)) -> bool {
        let nested = counter.1 > 0 && self.clock_total.is_some_and(|t| counter.1 < t);
        self.note_bar(counter);
        nested
    }

    /// The step of counter `(n, m)`: a counter below the last one starts a new pass.
    fn step(&mut self, (n, m): (u64, u64)) -> u64 {
        if let Some((last_n, last_m)) = self.last {
            if n < last_n || (self.new_epoch && n <= last_n) {
                let last_step = self.offset.saturating_add(last_n);
                self.offset = self.offset.saturating_add(last_m.max(last_n));
                // Batches counted from 0 without a total (icefall's `Epoch 1, batch
                // 0`): the new pass starts after the last one's last step, not on it.
                if self.offset.saturating_add(n) <= last_step {
                    self.offset = last_step + 1 - n;
                }
            }
        }
        self.new_epoch = false;
        self.last = Some((n, m));
        self.offset.saturating_add(n)
    }
}

/// `line` less the margin of the nested block it is in: a header without a step
/// over an indented dump of nested `key: value` lines (Ray Tune's `Result for
/// PPO_CartPole-v1_863fd_00000:` over its result's YAML) is read as the dump printed
/// at the left edge (RLlib's `pretty_print`), each nested level indented from there.
/// The block ends at a line less indented than its first.
fn at_the_margin<'a>(line: &'a str, progress: &mut Progress) -> &'a str {
    let depth = indentation(line).len();
    if std::mem::take(&mut progress.nested_header) && depth > 0 && single_pair_or_key(line) {
        progress.margin = Some(depth);
        progress.block_stepped = false;
        // A result, not a configuration's dump: its step is on its way.
        progress.seen_step = true;
    }
    match progress.margin {
        Some(margin) if depth >= margin => &line[margin..],
        Some(_) if !line.trim().is_empty() => {
            progress.margin = None;
            line
        }
        _ => line,
    }
}

/// Whether a line is one `key: value` pair or a nested block's `key:`.
fn single_pair_or_key(line: &str) -> bool {
    let t = line.trim();
    (t.ends_with(':') && !t.contains(' ')) || single_pair(line)
}

/// One line of a generic log, its progress counters numbered on from the lines
/// before it and the blocks and tables it is part of (a whole log read in order).
/// A line that only adds to a table being read is `Blank`; the table's record
/// comes with its closing rule.
pub fn parse_generic(line: &str, progress: &mut Progress) -> Line {
    let read = parse_generic_line(line, progress);
    // In a nested dump's block (see [`at_the_margin`]) the lines before the one
    // naming the step await it.
    match read {
        Line::Metrics(mut rec) if progress.margin.is_some() && !progress.block_stepped => {
            if rec.step.is_some() {
                progress.block_stepped = true;
            } else {
                rec.awaits_step = true;
            }
            Line::Metrics(rec)
        }
        other => other,
    }
}

fn parse_generic_line(line: &str, progress: &mut Progress) -> Line {
    // Colours go before any rule reads the line: rsl_rl's centred header is
    // bold (`\x1b[1m Learning iteration 3/1500 \x1b[0m`).
    let cleaned = plain_marks(line);
    let line = without_logging_prefix(&cleaned);
    let line = at_the_margin(line, progress);
    let after_metrics = progress.after_metrics.take();
    if is_rule(line) {
        return match progress.table.take() {
            Some(t) if !t.rows.is_empty() => from_table(&t, progress),
            // An opening rule (or two in a row): rows follow.
            _ => {
                progress.table = Some(Table::default());
                Line::Blank
            }
        };
    }
    // A table whose opening rule is not in the log (an excerpt that starts inside
    // one): a `| key | number |` row opens it, its closing rule ends it.
    if progress.table.is_none() && line.trim_start().starts_with('|') && matches!(table_row(line), Some(Row::Pair(_, v)) if kv::plain_number(v).is_some()) {
        progress.table = Some(Table::default());
    }
    if let Some(table) = &mut progress.table {
        match table_row(line) {
            Some(Row::Section(name)) => {
                table.section = name.to_owned();
                return Line::Blank;
            }
            Some(Row::Pair(key, value)) => {
                table.rows.push_str(&format!("| {}{key}: {value} ", table.section));
                return Line::Blank;
            }
            // Not a table after all: the rule was decoration.
            None => progress.table = None,
        }
    }
    if let Some(names) = column_names(line) {
        progress.columns = Some(names);
        return Line::Text;
    }
    if let Some(columns) = &progress.columns {
        if let Some(pairs) = column_row(columns, line) {
            let read = generic_line(&pairs, Accept::Any);
            return match read.line {
                // A step column numbers the row; the epoch beside it is no metric.
                Line::Metrics(mut rec) if rec.step.is_some() => {
                    without_epoch(&mut rec);
                    Line::Metrics(rec)
                }
                // A row per epoch (ultralytics' `1/3  3.21G  1.312 ...`, fastai's
                // `0  1.23  0.87 ...`): the epoch column numbers it.
                Line::Metrics(mut rec) if rec.step.is_none() => {
                    rec.step = column_epoch(columns, line);
                    if rec.step.is_some() {
                        // The epoch numbers the row: it is no metric of it.
                        without_epoch(&mut rec);
                    }
                    Line::Metrics(rec)
                }
                other => other,
            };
        }
    }
    if let Some(read) = wandb_console(line, progress).or_else(|| optuna_trial(line)) {
        return read;
    }
    if let Some(results) = epoch_results(line).or_else(|| estimator_evaluation(line)) {
        return results;
    }
    if let Some(tick) = gan_tick(line) {
        progress.seen_step = true;
        return tick;
    }
    // A snapshot's metric before any tick belongs to no step read.
    if let Some(metric) = snapshot_metric(line) {
        return if progress.seen_step { metric } else { Line::Text };
    }
    if let Some(read) = labelled_counter_line(line, progress) {
        return read;
    }
    let phase = logger_phase(line);
    if phase == Some(LoggerPhase::EpochSummary) {
        return Line::Text;
    }
    let indented = line.starts_with([' ', '\t']) && !opens_with_arrow(line);
    // Under a header, every number is the trainer's metric, known to rlmon or not.
    let accept = if progress.every_pair {
        Accept::Written
    } else if indented && progress.block.is_some() && (progress.block_loose || single_pair(line)) {
        Accept::Any
    } else if !indented && (progress.margin.is_some() || progress.step_line.as_ref().is_some_and(|(_, _, centred)| !centred)) && (single_pair(line) || only_written_pairs(line)) {
        // `key: value` lines under a line naming only its step (DeepRM's
        // `Iteration: 3` then `MeanRew: -257.4`; PyMARL's `Recent Stats | t_env:
        // 8443380` then `battle_won_mean:  0.0025\tdead_allies_mean:  5.99`):
        // that step's, known or not.
        Accept::Any
    } else {
        Accept::Known
    };
    // Where every written pair is read, a warning's numbers are no metrics.
    if accept == Accept::Written && is_warning_message(line) {
        return Line::Text;
    }
    let mut read = generic_line(line, accept);
    if accept == Accept::Known && matches!(read.line, Line::Text) && read.step.is_some() && !indented && only_written_pairs(line) {
        // A line naming its step among pairs written with their `:` or `=` holds the
        // trainer's metrics, known or not (pix2pix's `(epoch: 1, iters: 100, time:
        // 0.103, data: 0.641) G_GAN: 1.166 G_L1: 40.355 ...`).
        read = generic_line(line, Accept::Any);
    }
    match read.line {
        Line::Metrics(mut rec) => {
            if let (Some(step), Some(_)) = (rec.step, read.step) {
                rec.step = Some(progress.rounded_steps.number(step, read.step_rounded));
            }
            // ML-Agents names the behaviour each line is of: a run each.
            if let Some(behaviour) = behaviour_of(line) {
                rec.run = Some(behaviour.to_owned());
            }
            // (An evaluation's own count, DeepSpeech's `Epoch 0 | Validation | ... |
            // Steps: 120`, says nothing of the training steps' restarts.)
            let evaluation_segment = names_an_evaluation_segment(line);
            // Its step, when below the training's before it, counts the evaluation's
            // batches (fairseq's `| valid | ... | num_updates 1563` is the step).
            let own_count = evaluation_segment && rec.step.is_some_and(|s| progress.beside_epoch.last.is_some_and(|(_, last, _)| s < last));
            if let (Some(step), Some(epoch), None) = (rec.step, read.epoch, read.counter) {
                let learn = !evaluation_segment && !mentions_evaluation(line);
                rec.step = Some(progress.beside_epoch.step(epoch, step, names_hash(&rec.fields), learn));
            }
            let after_finished_bar = std::mem::take(&mut progress.finished_bar);
            // A logger's evaluation phase, or an evaluation's own batches (timm's
            // `Test: [ 10/48]`, mmengine's `Epoch(val) [1][500/500]`), are no
            // training steps: without a step of their own their results belong to
            // the step before them, under evaluation names.
            let announced = rec.step.is_some() && rec.step == progress.evaluation && !progress.evaluation_labelled;
            let evaluation_result = rec.step.is_none() && read.counter.is_none() && labels_evaluation(line);
            // The results of an evaluation announced with its step (Caffe's `Iteration
            // 200, Testing net (#0)` then `Test net output #0: accuracy = 0.97`) are at
            // that step, however many lines they take.
            let of_announced = progress.evaluation.filter(|_| evaluation_result);
            if !announced && of_announced.is_none() {
                progress.evaluation = None;
            }
            // Its results came labelled: a later line of its step is training again.
            progress.evaluation_labelled |= of_announced.is_some();
            // Under an announced evaluation pass (AllenNLP's `... - Validating`), a bar's
            // counter counts the evaluation's batches: its results, not a training step.
            let in_evaluation_pass = progress.evaluation_pass && rec.step.is_none();
            if in_evaluation_pass {
                read.counter = None;
            }
            let evaluation_batch = rec.step.is_none() && is_evaluation_pass(line);
            let evaluation_summary = std::mem::replace(&mut progress.after_evaluation_batches, evaluation_batch) && rec.step.is_none() && read.counter.is_none();
            // (The label before a step is looked for last: most lines are settled before.)
            if own_count {
                // Its results are the training step's before it.
                rec.step = None;
            }
            if phase == Some(LoggerPhase::Evaluation) || evaluation_batch || evaluation_segment || evaluation_result || announced || in_evaluation_pass || evaluation_summary || (rec.step.is_some() && evaluation_at_step(line)) {
                rec.continues = rec.step.is_none() && of_announced.is_none();
                rec.step = rec.step.or(of_announced);
                // (The epoch it names is the step's, no result: Ignite's `Validation Results - Epoch: 1`.)
                without_epoch(&mut rec);
                evaluation_names(&mut rec.fields);
            } else if read.counter.is_some_and(|c| progress.nested_bar(c)) {
                // A bar nested in the clock's (OpenRLHF's `Train epoch: 4/4` of each
                // `Episode: 8/300`): its values are the outer bar's next step's.
                rec.awaits_step = true;
            } else if let Some(counter) = read.counter {
                progress.finished_bar = (read.epoch.is_none() && counter.1 > 0 && counter.0 == counter.1).then(|| rec.fields.clone());
                if counter.1 == 0 && read.epoch.is_some() {
                    // Batches numbered within their epoch: the epoch is no metric,
                    // and the next epoch's batches start a new pass.
                    progress.new_epoch |= progress.epoch.is_some_and(|e| Some(e) != read.epoch);
                    progress.epoch = read.epoch;
                    without_epoch(&mut rec);
                }
                let mut counter = counter;
                if let (Some(epoch), true) = (read.epoch, counter.1 > 0) {
                    // The epochs before this one count their steps; a log whose first
                    // epoch is 1 (MMDetection's `Epoch [1][50/500]`) numbers them from 1.
                    if *progress.epochs_from_one.get_or_insert(epoch == 1) {
                        counter.0 = counter.0.saturating_sub(counter.1);
                    }
                }
                rec.step = Some(progress.step(counter));
            } else if rec.step.is_none() && read.epoch.is_some() && read.epoch == progress.epoch {
                // The epoch's results after its batches: at its last step.
                without_epoch(&mut rec);
                if rec.fields.is_empty() {
                    return Line::Text;
                }
                rec.continues = true;
            }
            if is_summary(line) {
                // `| end of epoch 1 | valid loss 5.98`: the results of the step before.
                rec.step = None;
                rec.continues = true;
            }
            if !indented && rec.step.is_none() && progress.seen_step && rec.fields.iter().all(|(name, _)| catalog::info(catalog::canonical(name)).is_some()) {
                // Metrics alone, after the step: more of that step, not a new one.
                rec.continues = true;
            }
            let agrees = |bar: &[(super::FieldName, f64)]| rec.fields.iter().all(|(name, v)| bar.iter().find(|(n, _)| n == name).is_none_or(|(_, b)| b == v || (b.is_nan() && v.is_nan())));
            if after_finished_bar.as_deref().is_some_and(agrees) && !indented && rec.step.is_none() && read.counter.is_none() {
                // The results printed after a pass's finished bar (keras-rl's `50
                // episodes - episode_reward: ...`, SpeechBrain's `epoch: 1, lr: 1.0 -
                // train loss: 0.94 - valid loss: 1.23`): at its last step, and the
                // epoch they name is that pass's, no metric.
                without_epoch(&mut rec);
                if rec.fields.is_empty() {
                    return Line::Text;
                }
                rec.continues = true;
            }
            // Under a line that named only a step (`=== Step 100 ===`), the lines
            // without one are that step's, until one repeats a name (a step of its own).
            if rec.step.is_some() || read.counter.is_some() {
                progress.step_line = None;
                progress.epoch_clock = progress.epoch_clock.map(|_| false);
            } else if let Some((step, names, centred)) = &mut progress.step_line {
                let under = !indented || *centred;
                if under && rec.fields.iter().all(|(name, _)| !names.contains(name)) {
                    names.extend(rec.fields.iter().map(|(name, _)| name.clone()));
                    rec.step = Some(*step);
                    rec.continues = false;
                } else if under {
                    progress.step_line = None;
                    progress.epoch_clock = progress.epoch_clock.map(|_| false);
                }
            }
            match progress.block {
                Some(block) if indented && rec.step.is_none() => match block {
                    Some(step) => rec.step = Some(step),
                    // Under a header before any step: a configuration's dump
                    // (torchtune's `optimizer:` then `  lr: 2.0e-05`), not results.
                    None if !progress.seen_step => return Line::Text,
                    None => {
                        rec.continues = true;
                        if progress.block_evaluation {
                            evaluation_names(&mut rec.fields);
                        }
                    }
                },
                _ if !indented => progress.block = None,
                _ => {}
            }
            progress.seen_step |= rec.step.is_some();
            progress.seen_metrics = true;
            progress.after_metrics = Some(indentation(line).to_owned());
            Line::Metrics(rec)
        }
        // One `key= value` of the trainer's own right under an indented metric line,
        // indented alike: more of that step (TensorFlow-Examples' loop prints the epoch's
        // time under its `Epoch: 0001 cost= 29.9`).
        Line::Text if !indentation(line).is_empty() && after_metrics.as_deref() == Some(indentation(line)) && single_pair(line) => match generic_line(line, Accept::Any).line {
            Line::Metrics(mut rec) => {
                rec.step = None;
                rec.continues = true;
                progress.after_metrics = after_metrics;
                Line::Metrics(rec)
            }
            other => other,
        },
        other => {
            progress.seen_step |= read.step.is_some();
            // A bar drawn before its first metrics (tqdm's `0/300` as it starts) is
            // already the clock of the bars nested in it.
            if let Some(counter) = read.counter.filter(|_| !mentions_evaluation(line)) {
                progress.note_bar(counter);
            }
            if read.step.is_some() && mentions_evaluation(line) {
                progress.evaluation = read.step;
                progress.evaluation_labelled = false;
            } else if read.step.is_some() && read.step != progress.evaluation {
                progress.evaluation = None;
            }
            if !indented {
                progress.block = None;
            }
            match announced_pass(line) {
                Some(Pass::Evaluation) => progress.evaluation_pass = true,
                Some(Pass::Epoch) => {
                    progress.evaluation_pass = false;
                    progress.new_epoch = true;
                    // `Epoch 3` before any step: its lines are that epoch's (a NaN under
                    // it is reported at epoch 3, not at its line's count).
                    // (`Epoch 2/100` alone on its line, or in the first of its ` | `
                    // parts, is read as no count: it starts the clock only before
                    // any metric line, as a line of step-less metrics before it
                    // already numbers them by line.)
                    let message = logged_message(line);
                    let alone = announced_epoch(message.split(" | ").next().unwrap_or(message)).filter(|(_, alone)| *alone).map(|(epoch, _)| epoch);
                    let starts_clock = !progress.seen_step && (read.epoch.is_some() || !progress.seen_metrics);
                    if *progress.epoch_clock.get_or_insert(starts_clock) {
                        progress.step_line = read.epoch.or(alone).map(|epoch| (epoch, Vec::new(), false));
                    }
                }
                Some(Pass::Training) => progress.evaluation_pass = false,
                None => {}
            }
            // A header: `[epoch=1][batch=16/625]:`; an evaluation's
            // (`[Eval batch=10/10] Eval on eval data:`) counts its own batches, and
            // its results belong to the training step before it.
            if !indented && line.trim_end().ends_with(':') {
                let step = if mentions_evaluation(line) { None } else { read.step.or_else(|| read.counter.map(|c| progress.step(c))) };
                // (A header in words: a nested dump's own `info:` is a key of it.)
                progress.nested_header = step.is_none() && !mentions_evaluation(line) && progress.margin.is_none() && line.trim().contains(' ');
                if progress.nested_header {
                    // A new block: the step named under the block before is not its.
                    progress.step_line = None;
                }
                progress.block = Some(step);
                progress.block_loose = true;
                progress.block_evaluation = false;
                // A header naming its step (RLlib's `Training iteration 3:`): the
                // un-indented lines under it are that step's too.
                if let Some(step) = read.step.filter(|_| step.is_some()) {
                    progress.step_line = Some((step, Vec::new(), false));
                }
            } else if !indented && read.step.is_some() && !mentions_evaluation(line) {
                progress.block = Some(read.step);
                progress.block_loose = false;
                progress.block_evaluation = false;
                progress.step_line = read.step.map(|step| (step, Vec::new(), false));
            } else if indented && !mentions_evaluation(line) && line.split_whitespace().count() <= 3 {
                // A centred header of a step and its total (rsl_rl's `Learning iteration 3/1500`).
                let with_total = line.split_whitespace().any(|w| kv::fraction(w).is_some());
                let step = read.step.filter(|_| with_total).or_else(|| read.counter.filter(|c| c.1 > 0).map(|c| progress.step(c)));
                if let Some(step) = step {
                    progress.step_line = Some((step, Vec::new(), true));
                }
            } else if !indented && read.step.is_none() && progress.seen_step && line.split_whitespace().count() <= 4 && mentions_evaluation(line) {
                // An evaluation's short header without a step (Coqui TTS's `--> EVAL
                // PERFORMANCE`): the indented `key: value` lines under it are the
                // results of the step before.
                progress.block = Some(None);
                progress.block_loose = false;
                progress.block_evaluation = true;
            }
            other
        }
    }
}

/// The spaces and tabs a line starts with.
fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Whether an indented line is one `key=value` or `key: value` pair and nothing
/// else (not a traceback's `File "x.py", line 42`).
fn single_pair(line: &str) -> bool {
    // (After a list's marks: Coqui TTS's `     | > loss: 3.63  (3.53)`, `- loss: 3.63`.)
    let t = line.trim().trim_start_matches(['|', '>', '-', '*', '•', ' ']);
    let Some(at) = t.find(['=', ':']) else { return false };
    let (key, value) = (t[..at].trim(), t[at + 1..].trim());
    // A running mean in brackets after the value annotates it (`3.63  (3.53)`).
    let value = match value.split_once(" (") {
        Some((v, note)) if note.ends_with(')') => v.trim(),
        _ => value,
    };
    let value = kv::wrapped_scalar(value).unwrap_or(value);
    key.starts_with(|c: char| c.is_ascii_alphabetic()) && key.chars().all(|c| c.is_ascii_alphanumeric() || " _/.-()".contains(c)) && kv::value(value).is_some()
}

/// Whether a line opens with an arrow after its indentation (Coqui TTS's ` --> STEP:
/// 25/496 -- GLOBAL_STEP: 25` over its indented `| > loss: ...` lines): a header, not
/// a line under one.
fn opens_with_arrow(line: &str) -> bool {
    let t = line.trim_start();
    ["-->", "==>", "=>", "->"].iter().any(|a| t.starts_with(a))
}

/// Whether a line is nothing but two or more `key: value` (or `key=value`) pairs
/// of numbers, each key a word written with its `:` or `=`.
fn only_written_pairs(line: &str) -> bool {
    let (pairs, counters) = kv::pairs(line);
    let covered: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
    pairs.len() >= 2 && counters.is_empty() && pairs.iter().all(|(k, v)| is_written(line, k) && !k.contains(' ') && kv::value(v).is_some()) && 2 * covered >= line.split_whitespace().map(str::len).sum::<usize>()
}

/// Whether `key` (a slice of `line`) is followed by its `:` or `=` (`cost= 29.9`,
/// `loss : 2.3`), not a bare `word 12`.
fn is_written(line: &str, key: &str) -> bool {
    let end = (key.as_ptr() as usize).checked_sub(line.as_ptr() as usize).map(|at| at + key.len());
    end.and_then(|end| line.get(end..)).is_some_and(|rest| rest.trim_start().starts_with([':', '=']))
}

/// Whether a line is one `name: value` pair whose name has words beside its label's
/// (`Validation perplexity: 901.12`, not a bar's `Validation: 100%`).
fn names_one_result(line: &str) -> bool {
    single_pair(line) && line.trim().split([':', '=']).next().is_some_and(|key| key.split_whitespace().count() >= 2)
}

/// `rec` without its `epoch` field, where the epoch numbers its step.
fn without_epoch(rec: &mut Record) {
    rec.fields.retain(|(name, _)| !name.eq_ignore_ascii_case("epoch"));
}

/// MXNet's `Epoch[0] Batch [100-200]`: counters in brackets right after their word,
/// spelled as `Epoch 0 Batch 200` is read (a range's end is the batch reached);
/// `None` when the line has none.
fn bracketed_counters(line: &str) -> Option<String> {
    static COUNTER: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"(?i)\b(epoch|batch)\s?\[\s*(?:\d+\s*-\s*)?(\d+)\s*\]").expect("a valid pattern"));
    // (Most lines have no bracket, or none after either word: no regex for them.)
    if !line.contains('[') {
        return None;
    }
    let word = |w: &[u8]| (w[..5].eq_ignore_ascii_case(b"epoch") || w[..5].eq_ignore_ascii_case(b"batch")) && matches!(w[5], b'[' | b' ');
    if !line.as_bytes().windows(6).any(word) {
        return None;
    }
    replaced(&COUNTER, line, "$1 $2 ")
}

/// `line` with every match of `pattern` replaced; `None` when nothing matched.
fn replaced(pattern: &Regex, line: &str, with: &str) -> Option<String> {
    match pattern.replace_all(line, with) {
        std::borrow::Cow::Owned(s) => Some(s),
        std::borrow::Cow::Borrowed(_) => None,
    }
}

/// ESPnet's counters glued to their words (`3epoch:train:101-200batch:`), spelled as
/// `epoch 3 batch 200` is read (the batch reached numbers the step within its
/// epoch); `None` when the line has none.
fn glued_counters(line: &str) -> Option<String> {
    static GLUED: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"(?i)\b(\d+)epoch:[a-z_]+:(?:\d+-)?(\d+)batch\b:?").expect("a valid pattern"));
    if !line.contains("epoch:") || !line.contains("batch") {
        return None;
    }
    replaced(&GLUED, line, "epoch $1 batch $2 ")
}

/// Sample Factory's report lines, spelled as pairs: `Fps is (10 sec: 3686.4, 60 sec:
/// ..., 300 sec: ...). Total num frames: 36864. Throughput: 0: 897.2. Samples: ...`
/// (the environment frames so far number the step, the last 10 seconds' rate is the
/// speed; the per-policy fields are no metrics), and `Avg episode reward: [(0,
/// '4.480')]` (policy 0's mean episode reward). `None` for any other line.
fn sample_factory(line: &str) -> Option<String> {
    static FPS: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"Fps is \(10 sec: ([^,]+), 60 sec: [^)]*\)\. Total num frames: (\d+)").expect("a valid pattern"));
    static REWARD: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"Avg episode reward: \[\(0, '([^']+)'\)").expect("a valid pattern"));
    if line.contains("Fps is (") {
        let c = FPS.captures(line)?;
        // The first report's rates are `nan` (no window yet): no speed to read.
        let fps = c[1].trim();
        return Some(if fps.parse::<f64>().is_ok_and(f64::is_finite) { format!("total_num_frames: {}, samples_per_s: {fps}", &c[2]) } else { format!("total_num_frames: {}", &c[2]) });
    }
    if line.contains("Avg episode reward: [(") {
        return REWARD.captures(line).map(|c| format!("avg_episode_reward: {}", &c[1]));
    }
    None
}

/// Marian's progress lines, spelled as pairs: `Ep. 1 : Up. 500 : Sen. 128,000 : Cost
/// 8.185 * 1,765,384 @ 3,456 after 1,765,384 : Time 110.93s : 15914.94 words/s : gNorm
/// 1.23 : L.r. 3.0e-04` (the update numbers the step, the cost per word is the loss),
/// and its validators' `[valid] Ep. 1 : Up. 5000 : ce-mean-words : 3.12 : new best`
/// (the mean cross-entropy per word is the validation loss; any other validator,
/// `bleu`, `perplexity`, is `val_` its name). `None` for any other line.
fn marian(line: &str) -> Option<String> {
    let at = line.find("Ep. ")?;
    let mut segments = line[at..].split(" : ").map(str::trim);
    let number = |text: &str| text.split_whitespace().next().map(|n| n.trim_end_matches('s').replace(',', ""));
    let mut out = String::new();
    let mut step = None;
    let valid = line[..at].contains("[valid]");
    while let Some(segment) = segments.next() {
        let (word, rest) = segment.split_once(' ').unwrap_or((segment, ""));
        match word {
            "Up." => step = number(rest),
            "Cost" if !valid => out.push_str(&format!(", loss: {}", number(rest)?)),
            "gNorm" if !valid => out.push_str(&format!(", grad_norm: {}", number(rest)?)),
            "L.r." if !valid => out.push_str(&format!(", lr: {}", number(rest)?)),
            _ if !valid && rest == "words/s" => out.push_str(&format!(", tokens_per_s: {}", word.replace(',', ""))),
            // A validator's name, then its value.
            name if valid && step.is_some() && rest.is_empty() && !name.ends_with('.') => {
                let value = number(segments.next()?)?;
                let name = if matches!(name, "ce-mean-words" | "ce-mean") { catalog::VAL_LOSS.to_owned() } else { format!("val_{}", name.replace('-', "_")) };
                out.push_str(&format!(", {name}: {value}"));
            }
            _ => {}
        }
    }
    let step = step?;
    (!out.is_empty()).then(|| format!("step: {step}{out}"))
}

/// Darknet's (YOLO's) progress line, spelled as pairs: `1: 697.416260, 697.416260
/// avg, 0.000000 rate, 3.466498 seconds, 64 images` (and the newer ` 12: 6.27, 8.03
/// avg loss, 0.0010 rate, 3.47 seconds, 768 images, 22.1 hours left`): the iteration,
/// the batch's loss, its running average (no metric: the loss already is one), the
/// learning rate and the iteration's seconds. `None` for any other line.
fn darknet(line: &str) -> Option<String> {
    static PROGRESS: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"^\s*(\d+): ([-+.\w]+), [-+.\w]+ avg(?: loss)?, ([-+.\w]+) rate, ([-+.\w]+) seconds, \d+ images").expect("a valid pattern")
    });
    if !line.contains(" rate, ") {
        return None;
    }
    let c = PROGRESS.captures(line)?;
    Some(format!("iteration: {}, {}: {}, {}: {}, {}: {}", &c[1], catalog::LOSS, &c[2], catalog::LR, &c[3], catalog::STEP_TIME_S, &c[4]))
}

/// Darknet's per-layer lines between its progress lines (`Region 82 Avg IOU:
/// 0.27, Class: 0.48, ...`, and the newer `v3 (mse loss, Normalizer: ...) Region
/// 106 Avg (IOU: 0.24), count: 9, class_loss = 1095.6, ..., total_loss = 1116.1`):
/// one output layer's diagnostics, not a step.
fn is_darknet_region(line: &str) -> bool {
    let Some(at) = line.find("Region ") else { return false };
    let rest = &line[at + "Region ".len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(" Avg")
}

/// A line of a labelled logger whose counter is named after its label (Acme's
/// `[Learner] Learner Steps = 1000 | Learner Walltime = 12.3 | Loss = 0.5` and
/// `[Actor] Actor Episodes = 10 | Actor Steps = 10000 | Episode Return = 123.4`):
/// the first label met with a counter of its own and a loss (the learner) is the
/// run's clock, its counter the step; another label's lines (the actor's, the
/// evaluator's) count in their own units, so they join the clock's step before
/// them. `None` for any other line.
fn labelled_counter_line(line: &str, progress: &mut Progress) -> Option<Line> {
    let rest = line.trim_start().strip_prefix('[')?;
    let (label, pairs) = rest.split_once("] ")?;
    if label.is_empty() || label.len() > 40 || !label.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-')) || !pairs.contains(" = ") {
        return None;
    }
    let counter = format!("{}_steps", label.trim().to_ascii_lowercase().replace([' ', '-'], "_"));
    let Line::Metrics(mut rec) = generic_line(pairs, Accept::Known).line else { return None };
    let at = rec.fields.iter().position(|(name, _)| name.eq_ignore_ascii_case(&counter));
    // The learner's lines carry its losses: that label's counter is the clock.
    if progress.clock_label.is_none() && at.is_some() && rec.fields.iter().any(|(name, _)| name.contains(catalog::LOSS)) {
        progress.clock_label = Some(label.to_owned());
    }
    match (&progress.clock_label, at) {
        (Some(clock), Some(at)) if clock == label => {
            let (_, value) = rec.fields.remove(at);
            rec.step = super::whole_step(value);
            progress.seen_step |= rec.step.is_some();
        }
        // Another label's line (the actor's, the evaluator's), or one before the
        // clock is known: more of the clock's step before it; an evaluator's
        // results under evaluation names.
        (_, Some(_)) | (Some(_), None) => {
            rec.step = None;
            rec.continues = progress.seen_step;
            if label.to_ascii_lowercase().starts_with("eval") {
                evaluation_names(&mut rec.fields);
            }
        }
        _ => return None,
    }
    Some(Line::Metrics(rec))
}

/// ESPnet's summary of an epoch (`3epoch results: [train] loss=... [valid] loss=...,
/// acc=... [att_plot] ...`): its `[train]` part averages steps already read, its
/// `[valid]` part is the evaluation, joined to the last step under evaluation names.
/// `None` for any other line.
fn epoch_results(line: &str) -> Option<Line> {
    let at = line.find("epoch results:")?;
    let rest = &line[at..];
    let Some(valid) = rest.find("[valid]") else { return Some(Line::Text) };
    let valid = &rest[valid + "[valid]".len()..];
    let valid = valid.find(" [").map_or(valid, |end| &valid[..end]);
    // Its durations are spelled out (`time=1 minute and 12.36 seconds`): no metric.
    let valid: String = valid.split(',').filter(|pair| !pair.trim_start().starts_with("time=")).collect::<Vec<_>>().join(",");
    match generic_line(&valid, Accept::Any).line {
        Line::Metrics(mut rec) => {
            rec.step = None;
            rec.continues = true;
            evaluation_names(&mut rec.fields);
            Some(Line::Metrics(rec))
        }
        _ => Some(Line::Text),
    }
}

/// W&B's console lines (`wandb: ...`). Its `Run summary:` block at the end of a
/// run (`wandb:      train loss 1.87978`, a `step 5350` row among them) is the
/// run's last values: read as one point at its step, for a log that printed no
/// step of its own (otherwise the summary repeats, rounded, what was read). The
/// `Run history:` sparklines and the sync hints are text. `None` for any other line.
fn wandb_console(line: &str, progress: &mut Progress) -> Option<Line> {
    let rest = line.strip_prefix("wandb:")?.trim();
    if let Some(rows) = &mut progress.wandb_summary {
        if !rest.is_empty() {
            if let Some((name, value)) = rest.rsplit_once(char::is_whitespace).filter(|(_, v)| kv::plain_number(v).is_some()) {
                rows.push_str(&format!("| {}: {value} ", name.trim()));
            }
            // (A row of text, the run's name: no number.)
            return Some(Line::Blank);
        }
        let rows = progress.wandb_summary.take().unwrap_or_default();
        if progress.seen_step || rows.is_empty() {
            return Some(Line::Text);
        }
        return Some(match generic_line(&rows, Accept::Any).line {
            Line::Metrics(mut rec) => {
                rec.continues = rec.step.is_none();
                // Two names of one metric (a Trainer's `train/loss`, the last step's,
                // and `train_loss`, its mean over the run): the first row's.
                let mut names = std::collections::HashSet::new();
                rec.fields.retain(|(name, _)| names.insert(name.clone()));
                Line::Metrics(rec)
            }
            _ => Line::Text,
        });
    }
    if rest == "Run summary:" {
        progress.wandb_summary = Some(String::new());
        return Some(Line::Blank);
    }
    Some(Line::Text)
}

/// Optuna's report of a finished trial (`Trial 42 finished with value: 0.934375 and
/// parameters: {'lr': 0.002, ...}. Best is trial 31 with value: 0.95.`): the trial
/// numbers the step, its objective is `value` (`value_0`, `value_1`, ... for a
/// study of several, `finished with values: [0.1, 0.2]`) and the best so far
/// `best_value`; the parameters are the trial's settings, no metrics. Other trial
/// lines (`Trial 45 pruned.`) are text. `None` for any other line.
fn optuna_trial(line: &str) -> Option<Line> {
    let rest = line.trim_start().strip_prefix("Trial ")?;
    let (trial, rest) = rest.split_once(' ')?;
    let trial: u64 = trial.parse().ok()?;
    let Some(rest) = rest.strip_prefix("finished with value") else { return Some(Line::Text) };
    let (values, rest) = rest.split_once(" and parameters")?;
    let values = values.trim_start_matches('s').trim_start_matches(':').trim().trim_start_matches('[').trim_end_matches(']');
    let values: Vec<f64> = values.split(',').map(|v| v.trim().parse::<f64>()).collect::<Result<_, _>>().ok()?;
    let mut fields: Vec<(super::FieldName, f64)> = match values.as_slice() {
        [one] => vec![("value".into(), *one)],
        many => many.iter().enumerate().map(|(i, v)| (format!("value_{i}").as_str().into(), *v)).collect(),
    };
    if let Some(best) = rest.rsplit_once("with value: ").and_then(|(_, v)| v.trim().trim_end_matches('.').parse::<f64>().ok()) {
        fields.push(("best_value".into(), best));
    }
    Some(Line::Metrics(Record { step: Some(trial), fields, ..Default::default() }))
}

/// StyleGAN's progress line (StyleGAN2, StyleGAN2-ADA, StyleGAN3): `tick 1401  kimg
/// 5738.6   time 1d 06h 06m   sec/tick 71.0    sec/kimg 17.34   maintenance 274.4
/// gpumem 8.9   augment 6.521`, names and values apart by spaces. The tick numbers
/// the step, its seconds are the step time, the elapsed time spelled in units is
/// the training time, and every other pair is a metric. `None` for any other line.
fn gan_tick(line: &str) -> Option<Line> {
    let rest = line.trim_start().strip_prefix("tick ")?;
    let mut words = rest.split_whitespace();
    let tick: u64 = words.next()?.parse().ok()?;
    let words: Vec<&str> = words.collect();
    if words.first() != Some(&"kimg") {
        return None;
    }
    let mut pairs = format!("step: {tick}");
    let mut at = 0;
    while let Some(&name) = words.get(at) {
        at += 1;
        if name == "time" {
            let mut seconds = 0.0;
            while let Some(s) = words.get(at).and_then(|w| spelled_seconds(w)) {
                seconds += s;
                at += 1;
            }
            pairs.push_str(&format!(", {}: {seconds}", catalog::TRAIN_TIME_S));
            continue;
        }
        let value = words.get(at)?;
        value.parse::<f64>().ok()?;
        at += 1;
        let name = if name == "sec/tick" { catalog::STEP_TIME_S } else { name };
        pairs.push_str(&format!(", {name}: {value}"));
    }
    Some(generic_line(&pairs, Accept::Any).line)
}

/// One part of a duration spelled in units (`1d`, `06h`, `06m`, `26s`), in seconds.
fn spelled_seconds(word: &str) -> Option<f64> {
    let unit = match word.as_bytes().last()? {
        b'd' => 86400.0,
        b'h' => 3600.0,
        b'm' => 60.0,
        b's' => 1.0,
        _ => return None,
    };
    let n: f64 = word[..word.len() - 1].parse().ok()?;
    Some(n * unit)
}

/// A metric of a network snapshot, as StyleGAN prints it after the tick that saved
/// it: more of the step before it. The TensorFlow releases' `network-snapshot-005734
/// time 4m 26s       fid50k_full 46.5633`, the PyTorch ones' `{"results":
/// {"fid50k_full": 4.01}, "metric": ..., "snapshot_pkl": "network-snapshot-000016.pkl", ...}`.
/// `None` for any other line.
fn snapshot_metric(line: &str) -> Option<Line> {
    let line = line.trim();
    if line.starts_with("{\"results\"") && line.contains("\"snapshot_pkl\"") {
        let report: serde_json::Value = serde_json::from_str(line).ok()?;
        let fields: Vec<(super::FieldName, f64)> = report.get("results")?.as_object()?.iter().filter_map(|(name, v)| Some((name.as_str().into(), v.as_f64()?))).collect();
        return (!fields.is_empty()).then(|| Line::Metrics(Record { step: None, continues: true, fields, ..Default::default() }));
    }
    let (snapshot, rest) = line.split_once(char::is_whitespace)?;
    if !snapshot.starts_with("network-") && !snapshot.ends_with(".pkl") {
        return None;
    }
    let mut words: Vec<&str> = rest.split_whitespace().collect();
    let value: f64 = words.pop()?.parse().ok()?;
    let name = words.pop()?;
    if words.first() != Some(&"time") || !words[1..].iter().all(|w| spelled_seconds(w).is_some()) {
        return None;
    }
    let fields = vec![(name.into(), value)];
    Some(Line::Metrics(Record { step: None, continues: true, fields, ..Default::default() }))
}

/// TensorFlow Estimator's evaluation results (`Saving dict for global step 500:
/// accuracy = 0.9712, global_step = 500, loss = 0.0934`): at that step, under
/// evaluation names. `None` for any other line.
fn estimator_evaluation(line: &str) -> Option<Line> {
    let rest = line.trim_start().strip_prefix("Saving dict for global step ")?;
    let (step, results) = rest.split_once(':')?;
    let step = integer(step)?;
    match generic_line(results, Accept::Any).line {
        Line::Metrics(mut rec) => {
            rec.step = Some(step);
            rec.continues = false;
            evaluation_names(&mut rec.fields);
            Some(Line::Metrics(rec))
        }
        _ => Some(Line::Text),
    }
}

/// A line without the prefix of Python logging's default format
/// (`logging.basicConfig()`: `INFO:root:`, `INFO:tensorflow:`, `WARNING:__main__:`),
/// which glues the level and the logger's name to the line's first word.
pub fn without_logging_prefix(line: &str) -> &str {
    let line = without_ray_prefix(line).unwrap_or(line);
    if let Some(rest) = without_glog_prefix(line).or_else(|| without_bracketed_time(line)).or_else(|| without_rllab_time(line)).or_else(|| without_slashed_date(line)) {
        return rest;
    }
    for level in ["INFO:", "DEBUG:", "WARNING:", "ERROR:", "CRITICAL:"] {
        if let Some(rest) = line.strip_prefix(level) {
            let name = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')).count();
            if name > 0 && rest[name..].starts_with(':') {
                return &rest[name + 1..];
            }
        }
    }
    line
}

/// A line without the prefix Ray puts before a worker's output: the actor and its
/// process (`(ActorModelRayActor pid=9041) `, `(RolloutWorker pid=24109, ip=10.0.2.8) `);
/// `None` without one. The worker's lines are the job's own (OpenRLHF's trainer,
/// RLlib's rollouts), not a rank of their own.
fn without_ray_prefix(line: &str) -> Option<&str> {
    let inner_end = line.strip_prefix('(')?.find(')')? + 1;
    let (actor, process) = line[1..inner_end].split_once(' ')?;
    let pid = process.strip_prefix("pid=")?;
    let pid = pid.split_once(',').map_or(pid, |(pid, rest)| if rest.trim_start().starts_with("ip=") { pid } else { "" });
    let named = !actor.is_empty() && actor.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'.'));
    (named && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then(|| line[inner_end + 1..].trim_start())
}

/// A line without rllab's logger prefix, a date and time then ` | ` (rllab,
/// rlpyt and garage print every line so, their tables' rows and rules too:
/// `2020-12-08 21:40:50.116393  | ReturnAverage   -0.48`); `None` without one.
fn without_rllab_time(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let date = b.len() > 19 && b[..10].iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() }) && b[10] == b' ';
    let time = date && b[11..19].iter().enumerate().all(|(i, c)| if i == 2 || i == 5 { *c == b':' } else { c.is_ascii_digit() });
    if !time {
        return None;
    }
    let rest = line[19..].trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',');
    let message = rest.trim_start().strip_prefix('|')?.trim_start();
    // fairseq's `2021-03-01 12:01:00 | INFO | train_inner | ...`: its level and
    // logger tell the phase, and stay.
    let level = message.split(|c: char| c == '|' || c.is_whitespace()).next().unwrap_or("");
    (!["INFO", "DEBUG", "WARNING", "ERROR", "CRITICAL"].contains(&level)).then_some(message)
}

/// A line without a bracketed time and level before its message (OpenNMT-py's
/// `[2023-03-01 12:04:00,001 INFO] Validation accuracy: 11.98`, Marian's
/// `[2019-04-02 10:00:01] `): every word in the brackets a date, a time or a
/// level, one of them a time, or a date and a time among other words; `None`
/// without one.
fn without_bracketed_time(line: &str) -> Option<&str> {
    let (inside, rest) = line.strip_prefix('[')?.split_once(']')?;
    let is_time = |w: &str| w.contains(':') && w.bytes().all(|c| c.is_ascii_digit() || matches!(c, b':' | b'.' | b','));
    let is_date = |w: &str| w.bytes().any(|c| c.is_ascii_digit()) && w.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'-' | b'/'));
    let is_level = |w: &str| ["info", "warn", "warning", "debug", "error", "critical"].iter().any(|l| w.eq_ignore_ascii_case(l));
    let mut words = inside.split_whitespace();
    // A date and a time date the line whatever else the bracket holds (TorchBeast's
    // `[INFO:17945 monobeast:600 2021-08-29 22:14:16,250]`: level, process, source).
    let dated = words.clone().any(|w| is_date(w) && w.len() >= 8) && words.clone().any(is_time);
    (dated || (words.clone().any(is_time) && words.all(|w| is_time(w) || is_date(w) || is_level(w)))).then(|| rest.trim_start())
}

/// A line without a date written with slashes and a time before it, and the
/// logger's name and level after them when given between dashes (MMEngine's
/// `11/27 04:50:30 - mmengine - INFO - `, `2024/01/05 10:00:00 `): the date is no
/// counter of 11 out of 27. `None` without one.
fn without_slashed_date(line: &str) -> Option<&str> {
    static DATED: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"^\d{1,4}/\d{1,2}(?:/\d{1,4})?[ T]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s+-\s+[\w.]+\s+-\s+[A-Z]+\s+-)?\s+").expect("a valid pattern")
    });
    if !line.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    DATED.find(line).map(|m| &line[m.end()..])
}

/// A line without glog's prefix (C++ and abseil logging: Caffe's `I0628
/// 12:00:00.123456 12345 solver.cpp:218] Iteration 100, loss = 0.214`, JAX's
/// `I0501 12:00:00.1 1 logging_writer.py:48] [100] loss=3.2`): a severity letter,
/// month and day, the time, a thread id and `file:line]`; `None` without one.
fn without_glog_prefix(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    if b.len() < 20 || !matches!(b[0], b'I' | b'W' | b'E' | b'F') || !b[1..5].iter().all(u8::is_ascii_digit) || b[5] != b' ' {
        return None;
    }
    let rest = &line[6..];
    let (time, rest) = rest.split_once(' ')?;
    if !(time.len() >= 8 && time.as_bytes()[2] == b':' && time.as_bytes()[5] == b':' && time.bytes().all(|c| c.is_ascii_digit() || matches!(c, b':' | b'.'))) {
        return None;
    }
    let rest = rest.trim_start();
    let (thread, rest) = rest.split_once(' ')?;
    if thread.is_empty() || !thread.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (source, rest) = rest.split_once(']')?;
    // (Caffe indents a step's outputs under it after the prefix: no nesting of the log's own.)
    (source.contains(':') && !source.contains(' ')).then(|| rest.trim_start())
}

/// Whether a logger tagged the line as a warning or an error among its first words
/// (`[LightGBM] [Warning] No further splits with positive gain, best gain: -inf`,
/// `W0312 ...` is glog's and taken out before): a message, whatever numbers it holds.
fn is_warning_message(line: &str) -> bool {
    line.split_whitespace().take(3).any(|w| {
        let w = w.trim_matches(|c: char| matches!(c, '[' | ']' | '(' | ')' | ':' | '|'));
        ["warning", "warn", "error"].iter().any(|l| w.eq_ignore_ascii_case(l))
    })
}

/// What a line that only names a pass announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// `Epoch 2/10`: an epoch starts (training).
    Epoch,
    /// `Training`.
    Training,
    /// `Validating`, `Running evaluation`: the metric lines after it, up to the
    /// next training pass, are its results.
    Evaluation,
}

/// What a logger's line says after its `time - name - LEVEL - ` prefix.
fn logged_message(line: &str) -> &str {
    line.rsplit(" - ").next().unwrap_or(line)
}

/// The pass a line announces, after a logger's ` - ` separated prefix (AllenNLP's
/// `2021-06-27 12:00:01,000 - INFO - allennlp.training.gradient_descent_trainer -
/// Validating`); `None` for any other line.
fn announced_pass(line: &str) -> Option<Pass> {
    let message = logged_message(line);
    if names_an_epoch(message) {
        return Some(Pass::Epoch);
    }
    let message = message.trim().trim_matches(|c: char| matches!(c, '.' | ':' | '*' | ' ' | '=')).to_ascii_lowercase();
    match message.as_str() {
        "training" | "running training" => Some(Pass::Training),
        "validating" | "validation" | "evaluating" | "evaluation" | "running validation" | "running evaluation" | "testing" => Some(Pass::Evaluation),
        _ => None,
    }
}

/// Whether a line announces an epoch: `Epoch 2/10`, `Epoch 2`, `epoch: 2`,
/// keras-rl's `Interval 2 (10000 steps performed)`, or a short sentence ending in
/// one (SpeechBrain's `Going into epoch 2`, `Starting epoch 3`).
fn names_an_epoch(line: &str) -> bool {
    announced_epoch(line).is_some()
}

/// The epoch a line announces ([`names_an_epoch`]): `Epoch 2/10` is 2; and
/// whether the line says nothing else (`Epoch 0/100, Batch 42/29316` counts
/// batches).
fn announced_epoch(line: &str) -> Option<(u64, bool)> {
    let is_pass = |w: &str| w.eq_ignore_ascii_case("epoch") || w.eq_ignore_ascii_case("interval");
    let number = |n: &str| n.split('/').next().and_then(|n| n.parse::<u64>().ok());
    // (Read on every line without metrics: the first six words, kept on the stack.)
    let mut words = [""; 6];
    let mut count = 0;
    for w in line.split(|c: char| c.is_whitespace() || c == ':').filter(|w| !w.is_empty()).take(6) {
        words[count] = w;
        count += 1;
    }
    match &words[..count] {
        [first, n, ..] if is_pass(first) && number(n).is_some() => number(n).map(|n| (n, count == 2)),
        [lead @ .., pass, n] if count <= 5 && is_pass(pass) && lead.iter().all(|w| w.chars().all(|c| c.is_ascii_alphabetic())) => number(n).map(|n| (n, true)),
        _ => None,
    }
}

/// Whether a line speaks of evaluation (`eval`, `validation`, `val`, `test` as words).
fn mentions_evaluation(line: &str) -> bool {
    line.split(|c: char| !c.is_ascii_alphabetic()).any(|w| ["eval", "evaluate", "evaluation", "evaluating", "val", "valid", "validate", "validation", "validating", "test", "testing"].iter().any(|e| w.eq_ignore_ascii_case(e)))
}

/// Whether one of a line's ` | `-separated segments is an evaluation's label alone
/// (Mozilla DeepSpeech's `Epoch 0 | Validation | Elapsed Time: 0:00:31 | Steps: 120 |
/// Loss: 131.55 | Dataset: dev.csv`).
fn names_an_evaluation_segment(line: &str) -> bool {
    line.as_bytes().contains(&b'|') && line.contains(" | ") && line.split('|').skip(1).any(|segment| {
        let w = segment.trim();
        !w.is_empty() && w.bytes().all(|c| c.is_ascii_alphabetic()) && is_evaluation_word(w)
    })
}

/// What a logger's name field says a line is: fairseq tags each line with its
/// logger (`2021-03-01 12:00:00 | INFO | train_inner | epoch 001: ...`): `valid` for
/// an evaluation, `train` for the epoch's summary, whose values average steps
/// already read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoggerPhase {
    Evaluation,
    EpochSummary,
}

fn logger_phase(line: &str) -> Option<LoggerPhase> {
    let mut fields = line.split(" | ");
    let (_time, level, name) = (fields.next()?, fields.next()?, fields.next()?);
    if !matches!(level.trim(), "INFO" | "WARNING" | "DEBUG") {
        return None;
    }
    match name.trim() {
        "train" => Some(LoggerPhase::EpochSummary),
        n if n == "valid" || n.starts_with("valid_") || n == "test" => Some(LoggerPhase::Evaluation),
        _ => None,
    }
}

/// Whether the label right before a line's step names an evaluation (fairseq2's
/// `Valid Metrics (step 100) - NLL Loss: 2.305 | ...`, `Eval at step 500: loss
/// 1.2`): its words, back to the separator before them (` - `, `|`, `]`, `:`),
/// are at most three and one is an evaluation word. The step is `step` as a word
/// (not `global_step=`), then a number.
fn evaluation_at_step(line: &str) -> bool {
    let Some(at) = step_word(line) else { return false };
    let before = &line[..at];
    let from = before.rfind(" - ").map(|i| i + 3).into_iter().chain(before.rfind(['|', ']', ':']).map(|i| i + 1)).max().unwrap_or(0);
    let words: Vec<&str> = before[from..].split(|c: char| !c.is_ascii_alphabetic()).filter(|w| !w.is_empty()).take(4).collect();
    words.len() <= 3 && words.iter().any(|w| is_evaluation_word(w))
}

/// Where the word `step` (any case) that a number follows starts in `line`.
fn step_word(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(i) = line[from..].find(['s', 'S']).map(|i| i + from) {
        from = i + 1;
        if !bytes.get(i..i + 4).is_some_and(|w| w.eq_ignore_ascii_case(b"step")) || i.checked_sub(1).is_some_and(|p| bytes[p].is_ascii_alphanumeric() || bytes[p] == b'_') {
            continue;
        }
        let rest = line[i + 4..].trim_start();
        let rest = rest.strip_prefix([':', '=', '#']).unwrap_or(rest).trim_start();
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            return Some(i);
        }
    }
    None
}

/// Whether a word names an evaluation as a label does (`Test:`, `Validation Results`).
fn is_evaluation_word(word: &str) -> bool {
    ["eval", "evaluation", "val", "valid", "validation", "test", "testing"].iter().any(|e| word.eq_ignore_ascii_case(e))
}

/// Whether a line is an evaluation pass's progress: an evaluation word right before
/// its first bracketed counter (timm's `Test: [  10/48]`, mmengine's `Epoch(val)
/// [1][500/500]`), not a training line that also prints validation results.
fn is_evaluation_pass(line: &str) -> bool {
    let Some(at) = line.find('[').filter(|&at| line[at + 1..].trim_start().starts_with(|c: char| c.is_ascii_digit())) else { return false };
    let before = line[..at].trim_end().trim_end_matches([':', ')', '(']);
    let last = before.rsplit(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
    is_evaluation_word(last)
}

/// Whether a line's label, the words before its first `:`, names an evaluation
/// (PyTorch's MNIST example prints `Test set: Average loss: 0.0335, Accuracy:
/// 9890/10000 (99%)` after each epoch's training lines): its results, not a step.
/// Dashes between the label's words and an output's number (Ignite's `Validation
/// Results - Epoch: 1`, Caffe's `Test net output #0: accuracy = 0.97`) are no words.
fn labels_evaluation(line: &str) -> bool {
    let Some((label, _)) = line.trim_start().split_once(':') else { return false };
    let is_number = |w: &str| w.strip_prefix('#').is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
    let words: Vec<&str> = label.split_whitespace().filter(|w| !(w.bytes().all(|c| c.is_ascii_punctuation()) || is_number(w))).collect();
    (1..=4).contains(&words.len())
        && words.iter().all(|w| w.chars().all(|c| c.is_ascii_alphabetic()))
        && words.iter().any(|w| is_evaluation_word(w))
}

/// A metric's name on an evaluation line: the loss is the validation loss; other
/// names get `val_` unless they already say so (`val_loss`, `eval/acc`).
fn evaluation_name(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    if name == catalog::LOSS {
        catalog::VAL_LOSS.to_owned()
    } else if ["val", "eval", "test", "valid"].iter().any(|p| lower.starts_with(p)) || name.contains('/') {
        name.to_owned()
    } else {
        format!("val_{name}")
    }
}

/// An evaluation's metrics under evaluation names ([`evaluation_name`]). Of a
/// result printed with its total and its mean (BigDL's `(Loss: 11.48, count: 79,
/// Average Loss: 0.1453)`), the mean is the loss.
fn evaluation_names(fields: &mut [(super::FieldName, f64)]) {
    for (name, _) in fields.iter_mut() {
        *name = evaluation_name(name).into();
    }
    if let Some(mean) = fields.iter().position(|(n, _)| n.strip_prefix("val_") == Some(catalog::MEAN_LOSS)) {
        if let Some(total) = fields.iter().position(|(n, _)| *n == catalog::VAL_LOSS) {
            fields[total].0 = "val_loss_sum".into();
        }
        fields[mean].0 = catalog::VAL_LOSS.into();
    }
}

/// Whether a line is a summary of what came before (`| end of epoch 1 | time:
/// 38.4s | valid loss 5.98`, `| End of training | test loss 5.50`): its values are
/// the last step's, not a step of their own.
fn is_summary(line: &str) -> bool {
    let t = line.trim_start().trim_start_matches(['|', '=', '-', ' ']);
    t.get(..7).is_some_and(|w| w.eq_ignore_ascii_case("end of "))
}

/// The cells of a header row or a row under it: split at `|` when the line has
/// one (OpenAI Baselines' `pol_surr |    pol_entpen |  kl`), else at whitespace.
fn cells(line: &str) -> Vec<&str> {
    if grouping_bars(line) {
        // (Bars that set groups of columns apart: ElegantRL's `ID  Step  maxR |
        // avgR  stdR |  expR  objC  etc.`.)
        line.split(|c: char| c.is_whitespace() || c == '|').filter(|c| !c.is_empty()).collect()
    } else if line.contains('|') {
        let t = line.trim();
        let t = t.strip_prefix('|').unwrap_or(t);
        let t = t.strip_suffix('|').unwrap_or(t);
        t.split('|').map(str::trim).collect()
    } else {
        line.split_whitespace().collect()
    }
}

/// Whether a line's bars set groups of space-separated columns apart rather than
/// bound cells: no bar opens it, and a group holds a gap of two spaces or more.
fn grouping_bars(line: &str) -> bool {
    let t = line.trim();
    t.contains('|') && !t.starts_with('|') && t.split('|').any(|group| group.trim().contains("  "))
}

/// The names of a header row: words only, two or more, one of them a metric
/// rlmon knows or a loss.
///
/// Names of several words stand between bars, or apart by two spaces or more
/// (spaCy's `E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  SCORE`, whose `E` is the
/// epoch and `#` the step). A header whose first column is the epoch needs no
/// known name (YOLOv5's `Epoch  gpu_mem  box  obj  cls  labels  img_size`).
fn column_names(line: &str) -> Option<Vec<String>> {
    if line.contains([':', '=', ',', '\t']) {
        return None;
    }
    let grouped = grouping_bars(line);
    let by_bars = line.contains('|') && !grouped;
    let by_gaps = || -> Vec<&str> { line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect() };
    let words = if by_bars || grouped || !line.contains("  ") { cells(line) } else { by_gaps() };
    // A ratio's name spaced around its slash (nolearn's `Train / Val`) is one name.
    let joined: Vec<String>;
    let words: Vec<&str> = if words.iter().any(|w| w.contains(" / ")) {
        joined = words.iter().map(|w| w.replace(" / ", "/")).collect();
        joined.iter().map(String::as_str).collect()
    } else {
        words
    };
    if words.len() < 2 || words.len() > 64 {
        return None;
    }
    let spaced = by_bars || words.iter().any(|w| w.contains(' '));
    // (Each word of a name has a letter: `| epoch   1 |` is a value's cell.)
    let word = |w: &str| w == "#" || (w.split(' ').all(|part| part.is_empty() || part.chars().any(|c| c.is_ascii_alphabetic())) && w.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '.' | '-') || (spaced && c == ' ')));
    if !words.iter().all(|w| word(w)) {
        return None;
    }
    let known = |w: &&str| {
        let name = match catalog::preset_conversion(Preset::Generic, w) {
            Conversion::Rename(n) | Conversion::Scale(n, _) | Conversion::Cumulative(n) => n,
        };
        catalog::info(name).is_some() || name.ends_with(catalog::LOSS) || name.strip_prefix(catalog::LOSS).is_some_and(|rest| rest.starts_with('_'))
    };
    let epoch_first = words.len() >= 3 && words[0].eq_ignore_ascii_case("epoch");
    // Columns in groups with a step among them (ElegantRL's `ID  Step  maxR | avgR ...`).
    let grouped_with_step = grouped && words.len() >= 3 && words.iter().any(|w| is_step_word(&w.to_ascii_lowercase()));
    if !(epoch_first || grouped_with_step || words.iter().any(known)) {
        return None;
    }
    let spacy = words.len() >= 3 && words[0] == "E" && words[1] == "#";
    // YOLOv5's and YOLOv7's `Epoch  gpu_mem  box  obj  cls  total  labels  img_size`:
    // the box, objectness and class columns are their losses, `total` their sum.
    let yolo = words.iter().any(|w| w.eq_ignore_ascii_case("gpu_mem")) && words.contains(&"box");
    Some(
        words
            .iter()
            .enumerate()
            .map(|(i, w)| match (spacy, i, yolo, *w) {
                (true, 0, ..) => "epoch".to_owned(),
                (true, 1, ..) => "step".to_owned(),
                (_, _, true, "box" | "obj" | "cls" | "dfl") => format!("{w}_{}", catalog::LOSS),
                (_, _, true, "total") => catalog::LOSS.to_owned(),
                _ => (*w).to_owned(),
            })
            .collect(),
    )
}

/// A row without the progress bar a trainer draws after its cells (ultralytics:
/// `  1/3  3.21G  1.312 ...  640:  50%|#####     | 4/8 [00:02<00:02,  1.9it/s]`).
fn without_bar(line: &str) -> &str {
    let mut from = 0;
    while let Some(i) = line[from..].find(':') {
        let at = from + i;
        from = at + 1;
        let after = line[at + 1..].trim_start();
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with("%|") {
            return &line[..at];
        }
    }
    line
}

/// The epoch of a row under a header row with an `epoch` column: its number, or
/// the first of `N/M`.
fn column_epoch(columns: &[String], line: &str) -> Option<u64> {
    let at = columns.iter().position(|c| c.eq_ignore_ascii_case("epoch"))?;
    let cell = *cells(without_bar(line)).get(at)?;
    kv::fraction(cell).map(|(n, _)| n).or_else(|| cell.parse().ok())
}

/// A row of numbers under a header row, as `name: value` pairs; `None` when the
/// line is not one (another count of cells, or words among them).
fn column_row(columns: &[String], line: &str) -> Option<String> {
    let mut cells = cells(without_bar(line));
    // A header that ends in `etc.` has more values than names: the named ones count.
    let columns = match columns.split_last() {
        Some((last, named)) if matches!(last.as_str(), "etc." | "etc") && cells.len() >= named.len() => {
            cells.truncate(named.len());
            named
        }
        _ => columns,
    };
    if cells.len() != columns.len() {
        return None;
    }
    // A clock (`00:10`), a missing value (`#na#`) or a number in a unit rlmon does
    // not convert (scikit-learn's remaining time, `7.89m`) fills a cell without a number.
    let clock = |c: &str| c.split(':').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) && c.contains(':');
    let in_a_unit = |c: &str| {
        let number = c.trim_end_matches(|ch: char| ch.is_ascii_alphabetic());
        (1..=3).contains(&(c.len() - number.len())) && number.parse::<f64>().is_ok()
    };
    let mut pairs = String::new();
    for (name, cell) in columns.iter().zip(&cells) {
        if kv::value(cell).is_some() {
            pairs.push_str(&format!("| {name}: {cell} "));
        } else if !(clock(cell) || cell.starts_with('#') || kv::fraction(cell).is_some() || in_a_unit(cell)) {
            return None;
        }
    }
    (!pairs.is_empty()).then_some(pairs)
}

/// A rule of dashes (or `=`, `+`, `|`) that opens or closes a table.
fn is_rule(line: &str) -> bool {
    let t = line.trim();
    // (Columns' rules apart by spaces too: `tabulate`'s `-------  -----`, as
    // rllab, garage and rlpyt print their tables.)
    t.len() >= 8 && t.bytes().all(|b| matches!(b, b'-' | b'=' | b'+' | b'|' | b' ')) && t.bytes().filter(|b| matches!(b, b'-' | b'=')).count() >= 8 && !t.contains(" - ")
}

enum Row<'a> {
    /// `| rollout/ |  |`: the rows below are `rollout/...`.
    Section(&'a str),
    Pair(&'a str, &'a str),
}

/// A table row: `| key | value |`, or a section `| name/ |  |`.
fn table_row(line: &str) -> Option<Row<'_>> {
    let t = line.trim();
    let Some(inner) = t.strip_prefix('|').and_then(|t| t.strip_suffix('|')) else {
        // `tabulate`'s plain rows: `Evaluation/AverageReturn     200` (garage, rllab),
        // `Diagnostics/CumTime (s)     620.99` (rlpyt): a short name, a gap, a number.
        let (key, value) = t.rsplit_once("  ")?;
        let (key, value) = (key.trim(), value.trim());
        let short_name = key.split(' ').count() <= 4 && !key.contains("  ") && is_key(&key.replace(' ', "_"));
        return (short_name && kv::plain_number(value).is_some()).then_some(Row::Pair(key, value));
    };
    let cells: Vec<&str> = inner.split('|').map(str::trim).collect();
    match cells.as_slice() {
        [name] | [name, ""] if name.ends_with('/') && is_key(name) => Some(Row::Section(name)),
        [key, value] if is_key(key) && !value.is_empty() && !value.contains(' ') => Some(Row::Pair(key, value)),
        _ => None,
    }
}

fn is_key(word: &str) -> bool {
    !word.is_empty() && word.len() <= 96 && !word.contains([' ', ':']) && word.chars().any(|c| c.is_ascii_alphabetic())
}

/// The record of a finished table: its rows read as one line of pairs.
fn from_table(table: &Table, progress: &mut Progress) -> Line {
    let mut read = generic_line(&table.rows, Accept::Known);
    // A table of many numbers is a logger's table of metrics whatever their names
    // (OpenAI Baselines' `| eplenmean | 1.12e+03 |`, garage's `policy/LossAfter`).
    let numbers = table.rows.matches("| ").count();
    if matches!(read.line, Line::Metrics(_)) || numbers >= TABLE_OF_METRICS {
        // One known metric makes it a table of metrics: keep all its numbers.
        read = generic_line(&table.rows, Accept::Any);
    }
    match read.line {
        Line::Metrics(mut rec) => {
            if let Some(counter) = read.counter {
                rec.step = Some(progress.step(counter));
            }
            Line::Metrics(rec)
        }
        _ => Line::Text,
    }
}

/// Rows of numbers that make a table between rules a table of metrics, known
/// names or not.
const TABLE_OF_METRICS: usize = 5;

/// A line in no preset's dialect, read alone (its counter and the epoch on the line
/// give the step).
fn generic(line: &str) -> Line {
    let read = generic_line(&plain_marks(line), Accept::Known);
    match (read.line, read.counter) {
        (Line::Metrics(mut rec), Some((n, _))) => {
            rec.step = rec.step.or(Some(n));
            Line::Metrics(rec)
        }
        (other, _) => other,
    }
}

/// What a generic line holds.
struct Generic {
    /// Its metrics (the step named on it, if any), or text.
    line: Line,
    /// The step it names, also when it holds no metric (a block header).
    step: Option<u64>,
    /// The progress counter `(n, m)` that stands for its step when no pair names
    /// one (`n` already counts the epochs before it when the line names its epoch
    /// and the counter its total; `m` is 0 for a count without a total).
    counter: Option<(u64, u64)>,
    /// The epoch the line names (`Epoch[2]`, `epoch=2`), a whole number.
    epoch: Option<u64>,
    /// The unit its step is printed rounded to (1,000 for `step:2K`).
    step_rounded: Option<u64>,
}

/// Which pairs of a generic line make its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Accept {
    /// All of them, if one is a metric rlmon knows.
    Known,
    /// Every number (under a header, in a table that holds a known metric).
    Any,
    /// Every pair whose `:` or `=` is written (`cost= 29.9`, [`super::Format::Pairs`]):
    /// a bare `word 12` is prose or a label there.
    Written,
}

/// A line in no preset's dialect: its pairs, as `accept` says.
fn generic_line(line: &str, accept: Accept) -> Generic {
    let any_metric = accept != Accept::Known;
    // A progress bar rewritten in place keeps only its last state. (Colours are
    // gone already: `parse_generic` and `generic` take them out first.)
    let line = line.rsplit('\r').next().unwrap_or(line);
    let trimmed = line.trim_start();
    // argparse's dump of the run's arguments (`Namespace(batch_size=20, lr=20, ...)`)
    // is its configuration, not a step's metrics.
    // So is a dict of settings after a label (`Config: {'epochs': 100, 'resume': False}`).
    if trimmed.starts_with('{') || trimmed.starts_with('"') || trimmed.starts_with("Namespace(") || kv::is_settings_dict(line) {
        return Generic { line: Line::Text, step: None, counter: None, epoch: None, step_rounded: None };
    }
    // A JSON object after a logger's prefix (`2024-01-01 12:00:00 | {"step": 1, ...}`).
    if let Some(at) = line.find("{\"").filter(|_| line.trim_end().ends_with('}')) {
        if let Line::Metrics(rec) = super::jsonl::parse(&line[at..]) {
            if any_metric || rec.fields.iter().any(|(name, _)| catalog::info(catalog::canonical(name)).is_some()) {
                let step = rec.step;
                return Generic { line: Line::Metrics(rec), step, counter: None, epoch: None, step_rounded: None };
            }
        }
    }
    let spelled;
    if is_darknet_region(line) {
        return Generic { line: Line::Text, step: None, counter: None, epoch: None, step_rounded: None };
    }
    // A scalar printed in its wrapper (`tensor(10.72, device='cuda:0')`) is its number.
    let unwrapped = kv::unwrapped_scalars(line);
    let line = unwrapped.as_deref().unwrap_or(line);
    // So is a dict of one entry after a key (`grad_norm={'0_default': 66.5}`).
    let one_entry = kv::one_entry_dicts(line);
    let line = one_entry.as_deref().unwrap_or(line);
    let mut any_metric = any_metric;
    let spelled_line = bracketed_counters(line).or_else(|| glued_counters(line)).or_else(|| sample_factory(line));
    let spelled_line = spelled_line.or_else(|| {
        let validators = marian(line);
        // A Marian validator's line names its own metric (`bleu`, `perplexity`): each is read.
        any_metric |= validators.is_some() && line.contains("[valid]");
        validators
    });
    let line = match spelled_line.or_else(|| darknet(line)) {
        Some(s) => {
            spelled = s;
            spelled.as_str()
        }
        None => line,
    };
    let (mut pairs, mut progress) = kv::pairs(line);
    // MXNet's `Epoch[0] Time cost=13.2` is the epoch's seconds, not a loss (`cost`).
    for pair in &mut pairs {
        // (A key kv spelled out itself lies outside the line: no word before it.)
        let Some(at) = (pair.0.as_ptr() as usize).checked_sub(line.as_ptr() as usize).filter(|at| *at <= line.len()) else { continue };
        if let Some(with_time) = at.checked_sub(5).and_then(|from| line.get(from..at + pair.0.len())) {
            if with_time.eq_ignore_ascii_case("time cost") {
                pair.0 = with_time;
            }
        }
    }
    if accept == Accept::Written {
        // A step word is the step, written or not (TensorFlow-Examples' `Step 1000:`).
        pairs.retain(|(key, _)| {
            let name = as_step_word(key.trim().to_ascii_lowercase().replace([' ', '-'], "_"));
            is_written(line, key) || is_step_word(&name) || name == "episode"
        });
    }
    let tidy = |w: &str| w.trim().to_ascii_lowercase().replace([' ', '-'], "_");
    let whole = |value: &str| kv::value(value).and_then(super::whole_step);
    let mut step = None;
    let mut step_rounded = None;
    // A step counted within its epoch against the epoch's length (llama-recipes'
    // `Training Epoch: 2/3, step 10/50`): a counter, numbered on over the epochs.
    let mut step_of_epoch: Option<(u64, u64)> = None;
    let mut epoch_of_total = false;
    let mut step_is_iteration = false;
    let mut step_is_global = false;
    let mut epoch = None;
    // The episode that opens a line with no step of its own numbers it (an RL
    // script's `Episode: 59, Actions: 2351, reward: -18`); elsewhere on a line an
    // episode count is a metric (TRL's `episode`: episodes seen so far).
    let mut episode_step = None;
    let mut kept = Vec::new();
    for (key, value) in pairs {
        let (key_text, value_text) = (key, value);
        // A unit in brackets after the key (`Memory (MB)=1234`) applies to its value.
        let (key, factor) = kv::key_without_unit(key);
        let word: std::borrow::Cow<str> = match kv::key_qualifier(&key) {
            Some((name, qualifier)) => qualified(without_phase(name), qualifier).into(),
            None => match key {
                std::borrow::Cow::Borrowed(key) => without_phase(key).into(),
                std::borrow::Cow::Owned(key) => without_phase(&key).to_owned().into(),
            },
        };
        let name = tidy(&word);
        // A bar's label (diffusers' and kohya's `Steps:   0%|`) names no step: its
        // percentage is no count, the bar's `n/total` is.
        let name = as_step_word(name);
        if is_step_word(&name) && !is_bar_percent(line, value) {
            // An iteration may count micro-batches where a step on the same line
            // counts optimizer steps (LitGPT's `iter 1152 step 144`, a line per
            // micro-batch): the iteration wins, so no line is merged into another's step.
            let iteration = ["iter", "iters", "iteration"].contains(&name.as_str());
            // A global step wins over the step within an epoch (Coqui TTS's `STEP:
            // 25/496 -- GLOBAL_STEP: 1025`).
            let global = name.ends_with("global_step") || name == "globalstep";
            // A count in scientific notation is rounded (OpenAI Baselines' table
            // prints `misc/total_timesteps | 7.48e+06 |`, the same for many rows):
            // no step, the records count on.
            let rounded = value.contains(['e', 'E']);
            if !rounded && (step.is_none() || (!step_is_global && (global || (!step_is_iteration && iteration)))) {
                if let Some(s) = kv::fraction(value).map(|(n, _)| n).or_else(|| whole(value)).or_else(|| kv::first_of_counts(value)) {
                    step = Some(s);
                    step_of_epoch = kv::fraction(value).filter(|(_, m)| *m > 0 && !global);
                    // (`2K`: LeRobot rounds its steps.)
                    step_rounded = rounding_unit(value);
                    step_is_iteration = iteration;
                    step_is_global = global;
                }
            }
            continue;
        }
        if name == "episode" && kept.is_empty() && episode_step.is_none() && progress.is_empty() {
            if let Some(n) = whole(value) {
                episode_step = Some(n);
                continue;
            }
        }
        if COUNTER_WORDS.contains(&name.as_str()) {
            // (A batch number without its total, MXNet's `Batch [200]`, counts on
            // within its epoch: the epoch's length is learned from where it ends.)
            let counter = kv::fraction(value).or_else(|| whole(value).filter(|_| name.starts_with("batch")).map(|n| (n, 0)));
            if let Some(counter) = counter {
                progress.push(counter);
                continue;
            }
        }
        // A name starts with a letter: `0m` of fastText's `ETA:   0h 0m 9s` is a clock's piece.
        if is_not_metric(&name)
            || annotates_the_value_before(line, key_text, value_text) || name.starts_with(|c: char| c.is_ascii_digit()) || is_phase_epoch(line, &name, value) || is_bar_percent(line, value) {
            continue;
        }
        // A logger's level glued to its first word (ESPnet's `(trainer:737) INFO: ...`).
        if ["info", "debug", "warning", "error"].contains(&name.as_str()) && kv::value(value).is_none() {
            continue;
        }
        if name == "epoch" {
            epoch = whole(value).filter(|e| *e < 1_000_000_000);
        }
        // `Training Epoch: 2/3`: the epochs are counted against their total, so a
        // step counted against one is counted within its epoch.
        epoch_of_total |= name.ends_with("epoch") && kv::fraction(value).is_some_and(|(_, total)| total > 0);
        // A value in records or tokens per second (BigDL's `Throughput is 1230.7
        // records/second`) is that rate when the trainer's name for it is not one
        // rlmon knows.
        let word = match kv::rate_of_value(value_text) {
            Some(rate) if !is_known(&word) => match rate {
                kv::Rate::Samples => catalog::SAMPLES_PER_S.into(),
                kv::Rate::Tokens => catalog::TOKENS_PER_S.into(),
            },
            _ => word,
        };
        // (A value with its own unit after a unit in the key keeps its own.)
        let value = kv::plain_number(value).map(|v| v * factor).or_else(|| kv::value(value));
        // An accuracy as a count of the total (MNIST's `Accuracy: 9890/10000 (99%)`) is
        // that share.
        let value = value.or_else(|| kv::fraction(value_text).filter(|&(n, m)| m > 0 && n <= m && name.contains("acc")).map(|(n, m)| n as f64 / m as f64));
        // `Epoch 3/100`: the epoch is 3 (the only counter of a line, it numbers the step).
        let value = value.or_else(|| kv::fraction(value_text).filter(|_| name == "epoch").map(|(n, _)| n as f64));
        // Memory in bytes' units under a word for memory is the GPU's or the host's
        // (a word without a unit in its value is read by its name's shape in the normalizer).
        let (word, value) = match catalog::memory_alias(&name).map(|(metric, _, _)| metric) {
            Some(metric) if factor >= 1024.0 || kv::in_bytes(value_text) => (metric.into(), value),
            // (YOLO's `gpu_mem 3.35G`, detectron2's `max_mem: 3108M`: binary units.)
            Some(metric) => match binary_magnitude(value_text) {
                Some(bytes) => (metric.into(), Some(bytes)),
                None => (word, value),
            },
            None => (word, value),
        };
        kept.push((word, value));
    }
    // A progress counter stands for the step when nothing names it: the longest
    // (a bar's `120/1000` rather than an epoch's `[1/3]`), after its epoch's steps.
    // clu's logging writer (JAX and Flax examples): `[100] loss=3.2, lr=0.001`.
    // A counter printed first (`100: loss 2.31`) when Slurm's labels are not
    // its ranks (see `ingest::rank_labels`).
    if step.is_none() && episode_step.is_some() {
        episode_score_as_reward(&mut kept);
    }
    let mut step = step.or(episode_step).or_else(|| bracketed_step(line)).or_else(|| super::task_label(line).map(|(n, _)| u64::from(n)));
    if let Some(counter) = step_of_epoch.filter(|_| epoch_of_total) {
        step = None;
        step_rounded = None;
        progress.push(counter);
    }
    if !progress.is_empty() {
        // A phase's epoch before the pass's counter (MNIST's `Train Epoch: 1 [640/60000
        // (1%)]`) only says which pass the counter is in: the counter numbers the step.
        kept.retain(|(word, _)| !matches!(tidy(word).as_str(), "train_epoch" | "training_epoch"));
    }
    let counter = if step.is_none() {
        progress.iter().copied().max_by_key(|(_, m)| *m).map(|(n, m)| (epoch.filter(|_| m > 0).map_or(n, |e| e.saturating_mul(m).saturating_add(n)), m))
    } else {
        None
    };
    let parsed = match record_of_values(Preset::Generic, step, false, kept) {
        // (A held-out score is known too: Tianshou's `Epoch #1: test_reward: 45.2 ± 12.3`.)
        Line::Metrics(rec) if any_metric || rec.fields.iter().any(|(name, _)| name != "epoch" && (catalog::info(name).is_some() || catalog::is_held_out_score(name))) => Line::Metrics(rec),
        // An evaluation's own line is read for a score under its evaluation name
        // (mmengine's `Iter(val) [500/500]  aAcc: 91.2  mIoU: 56.8`), or when it names
        // one result alone (OpenNMT-py's `Validation perplexity: 901.12`).
        Line::Metrics(rec) if (is_evaluation_pass(line) || labels_evaluation(line)) && (names_one_result(line) || rec.fields.iter().any(|(name, _)| catalog::is_held_out_score(&evaluation_name(name)))) => Line::Metrics(rec),
        Line::Metrics(_) | Line::Skip(..) => Line::Text,
        other => other,
    };
    // A progress bar's rate (tqdm's `11.02it/s`, or `2.5s/it` when slow) is its
    // step time when the line logs none.
    let parsed = match parsed {
        Line::Metrics(mut rec) if !progress.is_empty() && !rec.fields.iter().any(|(n, _)| n == catalog::STEP_TIME_S) => {
            if let Some(seconds) = bar_seconds_per_step(line) {
                rec.fields.push((catalog::STEP_TIME_S.into(), seconds));
            }
            Line::Metrics(rec)
        }
        other => other,
    };
    // OpenMMLab's, detectron2's and timm's `time` beside its `data_time` (timm's
    // `Data:`): the iteration's time, data loading included (a `time` alone may be
    // a clock's).
    let parsed = match parsed {
        Line::Metrics(mut rec) if !rec.fields.iter().any(|(n, _)| n == catalog::STEP_TIME_S) && rec.fields.iter().any(|(n, _)| n == "data_time" || n == "data") => {
            if let Some(field) = rec.fields.iter_mut().find(|(n, _)| n == "time") {
                field.0 = catalog::STEP_TIME_S.into();
            }
            Line::Metrics(rec)
        }
        other => other,
    };
    // A rate printed without a name (llm.c's `(234.12 ms, 69979 tok/s)`, `| 522274
    // tok/s`, Sockeye's `Speed: 650.04 samples/sec 21000.50 tokens/sec`) is that
    // rate when the line logs none of its kind.
    let parsed = match parsed {
        Line::Metrics(mut rec) => {
            let named = |name: &str| rec.fields.iter().any(|(n, _)| n == name);
            if !(named(catalog::TOKENS_PER_S) && named(catalog::SAMPLES_PER_S)) {
                if let Some((rate, value)) = keyless_rate(line) {
                    let name = if rate == kv::Rate::Tokens { catalog::TOKENS_PER_S } else { catalog::SAMPLES_PER_S };
                    if !named(name) {
                        rec.fields.push((name.into(), value));
                    }
                }
            }
            Line::Metrics(rec)
        }
        other => other,
    };
    Generic { line: parsed, step, counter, epoch, step_rounded }
}

/// The behaviour an ML-Agents line is of (`[INFO] Striker. Step: 10000. Time
/// Elapsed: 61.4 s. Mean Reward: -0.733.`, `SoccerTwos?team=0`): its trainers log
/// each behaviour's steps on lines of their own, one run each.
fn behaviour_of(line: &str) -> Option<&str> {
    let rest = line.trim_start();
    let rest = match rest.strip_prefix('[') {
        Some(r) => r.split_once("] ")?.1,
        None => rest,
    };
    let (name, after) = rest.split_once(". Step: ")?;
    let fits = !name.is_empty() && !name.contains(char::is_whitespace) && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '?' | '=' | '.'));
    (fits && after.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

/// The unit a count printed with a magnitude is rounded to: 1,000 for `2K`, 100
/// for `1.2K`; `None` for a count printed whole.
fn rounding_unit(value: &str) -> Option<u64> {
    let v = value.trim();
    let magnitude = match v.chars().last()? {
        'K' | 'k' => 1_000u64,
        'M' => 1_000_000,
        _ => return None,
    };
    let decimals = v[..v.len() - 1].split_once('.').map_or(0, |(_, d)| d.len() as u32);
    Some((magnitude / 10u64.pow(decimals.min(6))).max(1))
}

/// On a line numbered by its episode (a DQN script's `episode: 12  score: 45.0
/// epsilon: 0.5`, `Episode 100\tScore: 21.00\tAverage Score: 30.12`), the score is
/// the episode's return: `score` is the reward, or where there is none, its mean
/// (`Average Score`). A run that names a reward of its own keeps it.
fn episode_score_as_reward(kept: &mut [(std::borrow::Cow<'_, str>, Option<f64>)]) {
    let tidy = |w: &str| catalog::tidy_word(w);
    if kept.iter().any(|(w, _)| catalog::canonical(tidy(w)) == catalog::REWARD) {
        return;
    }
    let mean = |w: &str| matches!(w, "average_score" | "avg_score" | "mean_score" | "average" | "avg");
    let at = kept.iter().position(|(w, v)| v.is_some() && tidy(w) == "score").or_else(|| kept.iter().position(|(w, v)| v.is_some() && mean(tidy(w)) && tidy(w).ends_with("score")));
    if let Some(at) = at {
        kept[at].0 = catalog::REWARD.into();
    }
}

/// A pair alone in brackets right after another value annotates that value (TorchRL's
/// `average reward= 9.29 (init= 9.10)`, a running `loss: 2.3 (avg: 2.5)`): its key
/// names the annotation, not a metric. `key` and `value` are slices of `line`.
fn annotates_the_value_before(line: &str, key: &str, value: &str) -> bool {
    let offset = |part: &str| (part.as_ptr() as usize).checked_sub(line.as_ptr() as usize).filter(|&at| at <= line.len());
    let (Some(key_at), Some(value_at)) = (offset(key), offset(value)) else {
        return false;
    };
    let Some(before) = line[..key_at].trim_end().strip_suffix('(') else {
        return false;
    };
    let after = line.get(value_at + value.len()..).unwrap_or("").trim_start();
    let previous = before.trim_end().rsplit([' ', '=', ':']).next().unwrap_or("");
    after.starts_with(')') && kv::value(previous.trim_end_matches('%')).is_some()
}

/// The first number written with a rate's unit and no name before it (`69979
/// tok/s`, not `throughput: 69979 tok/s` nor OpenNMT-py's `2345/2456 tok/s`).
fn keyless_rate(line: &str) -> Option<(kv::Rate, f64)> {
    if !line.contains("/s") {
        return None;
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(2).enumerate().find_map(|(i, pair)| {
        let rate = kv::rate(pair[1].trim_end_matches([')', ',', ';', '|', ']']))?;
        let value = kv::plain_number(pair[0].trim_start_matches(['(', '|', '[']))?;
        let named = i > 0 && words[i - 1].ends_with([':', '=']);
        (!named).then_some((rate, value))
    })
}

/// Whether a generic log's word names a metric the catalog knows.
fn is_known(word: &str) -> bool {
    match catalog::preset_conversion(Preset::Generic, word) {
        Conversion::Rename(name) | Conversion::Scale(name, _) | Conversion::Cumulative(name) => catalog::info(name).is_some(),
    }
}

/// Whether a pair is a phase word and its epoch before the pass's `[ n/N ]` counter
/// (timm's `Train: 0 [  50/1251 ( 4%)]`): a phase, not a metric (the counter gives
/// the step). `value` is a slice of `line`.
fn is_phase_epoch(line: &str, name: &str, value: &str) -> bool {
    const PHASES: &[&str] = &["train", "training", "eval", "test", "val", "valid", "validation"];
    if !PHASES.contains(&name) || value.parse::<u64>().is_err() {
        return false;
    }
    let Some(at) = (value.as_ptr() as usize).checked_sub(line.as_ptr() as usize).filter(|at| at + value.len() <= line.len()) else { return false };
    let Some(after) = line.get(at + value.len()..).and_then(|rest| rest.trim_start().strip_prefix('[')) else { return false };
    after.split(['(', ']']).next().and_then(kv::fraction).is_some()
}

/// Whether `value` (a slice of `line`) is a progress bar's percentage, right before
/// its bar (`Train:  10%|#   |`): the bar's label is no metric.
fn is_bar_percent(line: &str, value: &str) -> bool {
    let Some(at) = (value.as_ptr() as usize).checked_sub(line.as_ptr() as usize).filter(|at| at + value.len() <= line.len()) else { return false };
    value.ends_with('%') && line[at + value.len()..].starts_with('|')
}

/// The step of a line that starts, after a logger's bracketed prefix, with a bare
/// `[N]` before `key=value` pairs (clu's `I0501 12:00:00.1 1 logging_writer.py:48]
/// [100] loss=3.2, learning_rate=0.001`).
fn bracketed_step(line: &str) -> Option<u64> {
    // (Asked once of the line: each bracket below costs only its own neighbourhood.)
    // LightGBM's `[12]\tvalid_0's auc: 0.81` and Dreamer's `[5000] expl_amount 0.0 /
    // model_grad_norm 12.1 / ...` open their line with the step; elsewhere a
    // bracketed step goes with `key=value` pairs.
    let opens = line.starts_with('[');
    if !line.contains('=') && !opens {
        return None;
    }
    let mut from = 0;
    while let Some(i) = line[from..].find('[') {
        let at = from + i;
        from = at + 1;
        let before = line[..at].trim_end();
        if !(before.is_empty() || before.ends_with(']')) {
            continue;
        }
        let rest = &line[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        // (gpt-2's fine-tuning script adds the seconds so far: `[10 | 17.95] loss=3.1`.)
        let elapsed = || rest[digits..].strip_prefix(" | ").and_then(|r| r.split_once("] ")).is_some_and(|(t, _)| t.parse::<f64>().is_ok());
        let closed = rest[digits..].starts_with("] ") || (at == 0 && rest[digits..].starts_with("]\t"));
        if digits > 0 && (closed || elapsed()) && (at == 0 || line.contains('=')) {
            return rest[..digits].parse().ok();
        }
    }
    None
}

/// The seconds per iteration of a progress bar's rate: `11.02it/s` or `2.50s/it`.
fn bar_seconds_per_step(line: &str) -> Option<f64> {
    line.split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']')).find_map(|word| {
        if let Some(rate) = word.strip_suffix("it/s").and_then(|n| n.parse::<f64>().ok()) {
            return (rate > 0.0 && rate.is_finite()).then(|| 1.0 / rate);
        }
        word.strip_suffix("s/it").and_then(|n| n.parse::<f64>().ok()).filter(|s| *s > 0.0 && s.is_finite())
    })
}

/// A key without the phase word a logger puts before a path-like name (Composer's
/// `Train loss/train/total`, `Eval metrics/eval/LanguageCrossEntropy`): the path
/// names the metric.
/// After the name, a training phase word names nothing more (LitGPT's `loss train`).
fn without_phase(word: &str) -> &str {
    let is_train = |w: &str| ["train", "training"].iter().any(|p| w.eq_ignore_ascii_case(p));
    match word.split_once(' ') {
        Some((phase, rest)) if ["train", "eval"].iter().any(|p| phase.eq_ignore_ascii_case(p)) && rest.contains('/') && !rest.contains(' ') => rest,
        Some((name, phase)) if is_train(phase) && !name.contains(' ') => name,
        _ => word,
    }
}

/// A key's name with the qualifier in brackets after it: the value of this step
/// (`loss train (curr)`) is the name's own; a mean (`Train Loss (Avg)`) is the
/// loss's mean where the name is the loss (the loss itself when the line has no
/// other) and the name's own elsewhere; any other qualifier is part of the name (a
/// GAN's `Loss (G)` and `Loss (D)` are two).
fn qualified(name: &str, qualifier: &str) -> String {
    let lower = qualifier.to_ascii_lowercase();
    let words: Vec<&str> = lower.split([' ', '-', '.']).filter(|w| !w.is_empty()).collect();
    let this_step = ["curr", "cur", "current", "last", "latest", "now", "step", "batch", "iter", "raw", "instant"];
    let mean = ["avg", "average", "mean", "running", "smoothed", "smooth", "ema", "moving", "global", "epoch"];
    if words.iter().all(|w| this_step.contains(w)) {
        return name.to_owned();
    }
    if words.iter().all(|w| mean.contains(w)) {
        let is_loss = catalog::canonical(catalog::tidy_word(name)) == catalog::LOSS;
        return if is_loss { "avg loss".to_owned() } else { name.to_owned() };
    }
    format!("{name} {qualifier}")
}

/// `line` without its terminal escape sequences and with full-width punctuation as
/// ASCII, borrowed when it has neither.
fn plain_marks(line: &str) -> std::borrow::Cow<'_, str> {
    let line: std::borrow::Cow<'_, str> = if line.contains('\x1b') { std::borrow::Cow::Owned(strip_ansi(line)) } else { std::borrow::Cow::Borrowed(line) };
    // Full-width punctuation, as Chinese and Japanese scripts print (`训练次数：100,
    // Loss：1.98`), is the ASCII mark and a space.
    if !line.is_ascii() && line.contains(['\u{FF1A}', '\u{FF0C}', '\u{FF1D}']) {
        return std::borrow::Cow::Owned(line.replace('\u{FF1A}', ": ").replace('\u{FF0C}', ", ").replace('\u{FF1D}', "= "));
    }
    line
}

/// `line` without its terminal escape sequences (colours, cursor moves).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte in '@'..='~'.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    out
}

fn deepspeed(line: &str) -> Parsed<'_> {
    let line = line.trim();
    // DeepSpeed-Chat: `Epoch: 0 | Step: 10 | Actor Loss: ...`, and its reward line.
    // Either may follow a timestamp or logger prefix, which is cut off first.
    if let Some(at) = word_starts(line, "Epoch:").chain(word_starts(line, "Step:")).min().filter(|_| line.contains("Step:")) {
        let pairs = bar_pairs(&line[at..]);
        if let Some(step) = pairs.iter().find(|(k, _)| *k == "Step").and_then(|(_, v)| integer(v)) {
            let pairs = pairs.into_iter().filter(|(k, _)| !matches!(*k, "Step" | "Epoch")).collect();
            return Some((Some(step), false, pairs));
        }
    }
    if let Some(at) = word_starts(line, "Average reward score:").next() {
        return Some((None, true, bar_pairs(&line[at..])));
    }
    // The pipeline engine: `steps: 10 loss: 2.3456 iter time (s): 0.512 samples/sec: 62.5`.
    if let Some(at) = word_starts(line, "steps:").next() {
        let rest = line[at + "steps:".len()..].trim_start();
        let (step, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if let Some(step) = integer(step) {
            return Some((Some(step), false, colon_pairs(rest)));
        }
    }
    // The engine's `step=N, skipped=K, lr=[...]` and the throughput timer's
    // `epoch=0/micro_step=10/global_step=10, CurrSamplesPerSec=50.3, ...`.
    let at = line.find("step=")?;
    let body = &line[line[..at].rfind(char::is_whitespace).map_or(0, |i| i + 1)..];
    let (first, rest) = body.split_once(',')?;
    let step = first.rsplit('/').next().and_then(|f| f.strip_prefix("global_step=").or_else(|| f.strip_prefix("step="))).and_then(integer)?;
    let mut pairs = Vec::new();
    let mut depth = 0i32;
    let mut start = 0usize;
    for (i, c) in rest.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                pairs.extend(rest[start..i].split_once('='));
                start = i + 1;
            }
            _ => {}
        }
    }
    pairs.extend(rest[start..].split_once('='));
    let pairs = pairs.into_iter().map(|(k, v)| (k.trim(), v.trim())).filter(|(k, _)| *k != "mom").collect();
    Some((Some(step), false, pairs))
}

/// `key: value key two: value` pairs: each value is the first word after a colon,
/// and the words after it up to the next colon name the next key.
fn colon_pairs(text: &str) -> Vec<(&str, &str)> {
    let mut pairs = Vec::new();
    let mut segments = text.split(':');
    let Some(mut key) = segments.next() else { return pairs };
    for seg in segments {
        let seg = seg.trim_start();
        let (value, next) = seg.split_once(char::is_whitespace).unwrap_or((seg, ""));
        if !key.trim().is_empty() {
            pairs.push((key.trim(), value));
        }
        key = next;
    }
    pairs
}

/// A user's regex: the named group `step` gives the step, every other named group
/// a metric of that name (aliases apply).
#[derive(Debug, Clone)]
pub struct Pattern {
    regex: Regex,
}

impl Pattern {
    /// Compiles `pattern`; an error message for a bad regex or one without named
    /// metric groups.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let regex = regex::RegexBuilder::new(pattern).size_limit(1 << 20).build().map_err(|e| format!("bad pattern: {e}"))?;
        if !regex.capture_names().flatten().any(|n| n != "step") {
            return Err("the pattern names no metric: use named groups, e.g. (?P<loss>[0-9.eE+-]+)".into());
        }
        Ok(Pattern { regex })
    }

    pub fn parse(&self, line: &str) -> Line {
        let Some(caps) = self.regex.captures(line) else { return Line::Text };
        let mut rec = Record::default();
        for name in self.regex.capture_names().flatten() {
            let Some(m) = caps.name(name) else { continue };
            if name == "step" {
                match integer(m.as_str()) {
                    Some(s) => rec.step = Some(s),
                    None => return Line::Skip(SkipKind::Malformed, format!("step `{}` is not a whole number", m.as_str())),
                }
            } else {
                match value_of(m.as_str()) {
                    Some(v) => rec.fields.push((name.into(), v)),
                    None => rec.ignored.push(name.to_owned()),
                }
            }
        }
        if rec.fields.is_empty() {
            return Line::Skip(SkipKind::NoNumbers, "the pattern matched no number".into());
        }
        Line::Metrics(rec)
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.regex.as_str() == other.regex.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(preset: Preset, line: &str) -> (Option<u64>, Vec<(String, f64)>) {
        match parse(preset, line) {
            Line::Metrics(r) => (r.step, r.fields.into_iter().map(|(n, v)| (n.to_string(), v)).collect()),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn a_trainer_dict_takes_the_step_of_the_progress_bar_drawn_before_it() {
        let mut progress = Progress::default();
        let mut steps = Vec::new();
        let log = "Map: 100%|##########| 2001/2001 [00:47<00:00, 42.64 examples/s]\n  0%|          | 0/300 [00:00<?, ?it/s]\n  8%|8         | 25/300 [00:43<07:29, 1.73s/it]\n{'loss': 2.95, 'grad_norm': 2.06, 'learning_rate': 3.2e-06, 'epoch': 0.0}\n100%|##########| 63/63 [00:05<00:00, 11.5it/s]\n{'eval_loss': 2.9, 'eval_runtime': 5.1, 'epoch': 0.0}\n{'loss': 2.77, 'grad_norm': 2.43, 'learning_rate': 6.4e-06, 'epoch': 0.01}\n 17%|#6        | 50/300 [01:27<07:29, 1.73s/it]\n{'loss': 2.93, 'grad_norm': 1.54, 'learning_rate': 9.6e-06, 'epoch': 0.01}\n";
        for line in log.lines() {
            if let Line::Metrics(r) = parse_printed_in_order(line, &mut progress) {
                steps.push((r.step, r.continues));
            }
        }
        // The data pass's finished bar and the evaluation's bar number nothing; a
        // dict with no new count of the training bar counts on from the one before.
        assert_eq!(steps, [(Some(25), false), (None, true), (None, false), (Some(50), false)]);
        // The training bar's rate is the step time of the dicts it numbers.
        let mut progress = Progress::default();
        let _ = parse_printed_in_order("  8%|8         | 25/300 [00:43<07:29, 1.73s/it]", &mut progress);
        let Line::Metrics(r) = parse_printed_in_order("{'loss': 2.95, 'epoch': 0.0}", &mut progress) else { panic!("a dict") };
        assert_eq!(r.fields.iter().find(|(n, _)| n == catalog::STEP_TIME_S).map(|(_, v)| *v), Some(1.73));
        // TRL with vLLM: generation's bar is drawn between the training bar and each
        // dict, before the training bar is known too.
        let mut progress = Progress::default();
        let mut steps = Vec::new();
        for line in [
            "  0%|          | 0/1036 [00:00<?, ?it/s]",
            "  0%|          | 5/1036 [01:11<4:02:17, 14.10s/it]",
            "Processed prompts: 100%|##########| 512/512 [00:22<00:00, 23.00it/s, est. speed input: 3325.22 toks/s]",
            "{'loss': -0.0003, 'grad_norm': 0.156, 'reward': -1.36, 'epoch': 0.01}",
            "  1%|          | 10/1036 [02:21<4:02:17, 14.10s/it]",
            "Processed prompts: 100%|##########| 512/512 [00:22<00:00, 23.00it/s, est. speed input: 3325.22 toks/s]",
            "{'loss': 0.0001, 'grad_norm': 0.149, 'reward': -1.21, 'epoch': 0.02}",
        ] {
            if let Line::Metrics(r) = parse_printed_in_order(line, &mut progress) {
                steps.push(r.step);
            }
        }
        assert_eq!(steps, [Some(5), Some(10)]);
        assert!(is_plain_bar("Processed prompts: 100%|##########| 512/512 [00:22<00:00, 23.00it/s, est. speed input: 3325.22 toks/s]"));
        assert!(!is_plain_bar("Epoch 0:  45%|####5     | 450/1000 [00:30<00:36, 15.0it/s, loss=2.31]"), "a bar with the trainer's values");
        assert_eq!(tqdm_count("Epoch 1:  12%|█▏  | 120/1000 [00:10<01:20, 11.02it/s]"), Some((120, 1000)));
        assert_eq!(tqdm_count("loss 2.3 | 5/10"), None);
    }

    #[test]
    fn a_summary_right_after_an_evaluations_batches_is_its_result() {
        let log = "Epoch: [0][  10/5005]\tLoss 6.9e+00 (6.95e+00)\tAcc@1   0.00 (  0.12)\nTest: [ 0/196]\tLoss 6.5e+00 (6.5e+00)\tAcc@1   0.20 (  0.20)\n * Acc@1 0.100 Acc@5 0.500\nEpoch: [1][  10/5005]\tLoss 6.1e+00 (6.2e+00)\tAcc@1   0.10 (  0.12)\n";
        let got = records(log);
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got[2].2.iter().any(|(n, v)| n == "val_acc_1" && *v == 0.1), "{got:?}");
        // Not after training lines: a line of its own results.
        assert!(!records("Epoch: [0][  10/5005]\tLoss 6.9e+00\n * Acc@1 0.100 Acc@5 0.500\n")[1].2.iter().any(|(n, _)| n.starts_with("val_")));
    }

    #[test]
    fn a_counter_printed_first_is_the_step_and_a_rate_may_be_named_by_its_unit() {
        assert_eq!(fields(Preset::Generic, "500: train loss 2.8000, val loss 2.8600"), (Some(500), vec![("loss".into(), 2.8), ("val_loss".into(), 2.86)]));
        // A step word on the line wins over the number before it.
        assert_eq!(fields(Preset::Generic, "7: step 20 | loss 2.5 | tok/s 11810").0, Some(20));
        // A clock is no counter.
        assert_eq!(fields(Preset::Generic, "12:30:01 loss 2.5").0, None);
    }

    #[test]
    fn megatron_lines() {
        let line = " [2024-05-01 10:00:00] iteration       20/  500000 | consumed samples:         1280 | elapsed time per iteration (ms): 1500.0 | learning rate: 3.000000E-05 | global batch size:    64 | lm loss: 9.875000E+00 | loss scale: 1.0 | grad norm: 2.500 | number of skipped iterations:   0 | number of nan iterations:   0 |";
        let (step, f) = fields(Preset::Megatron, line);
        assert_eq!(step, Some(20));
        let get = |n: &str| f.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!(get("loss"), Some(9.875));
        assert_eq!(get("lr"), Some(3e-5));
        assert_eq!(get("grad_norm"), Some(2.5));
        assert_eq!(get("step_time_s"), Some(1.5));
        assert_eq!(get("samples"), Some(64.0));
        assert_eq!(get("consumed_samples"), Some(1280.0));
        assert_eq!(parse(Preset::Megatron, "building GPT model ..."), Line::Text);
    }

    #[test]
    fn megatron_deepspeeds_newer_lines_are_megatrons_among_the_engines() {
        let line = "[2024-04-21 02:45:24][INFO][training:1251] -  iteration=       2/  317892 | consumed_samples=         512 | elapsed_time_per_iteration_ms=16030.6 | learning_rate=0.000000 | global_batch_size=  256 | lm loss=11.208171 | loss_scale=65536.0 |";
        let (step, f) = fields(Preset::Megatron, line);
        assert_eq!(step, Some(2));
        let get = |n: &str| f.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!((get(catalog::LOSS), get(catalog::SAMPLES), get(catalog::STEP_TIME_S)), (Some(11.208171), Some(256.0), Some(16.0306)), "{f:?}");
        // In a log read as DeepSpeed's (its engine prints most lines), the iteration
        // line still gives the loss; the engine's own lines read as before.
        assert_eq!(fields(Preset::DeepSpeed, line).0, Some(2));
        assert!(fields(Preset::DeepSpeed, line).1.iter().any(|(k, v)| k == catalog::LOSS && *v == 11.208171));
        assert_eq!(fields(Preset::DeepSpeed, "[Rank 0] step=3, skipped=0, lr=[1.5e-07, 1.5e-07], mom=[(0.9, 0.999)]").0, Some(3));
        assert_eq!(parse(Preset::DeepSpeed, "[Rank 1] (after 1 iterations) memory (MB) | allocated: 4866.6 | max allocated: 14024.8"), Line::Text);
    }

    #[test]
    fn nanogpt_and_modded_nanogpt_lines() {
        assert_eq!(fields(Preset::NanoGpt, "iter 100: loss 2.3456, time 123.45ms, mfu 12.34%"), (Some(100), vec![("loss".into(), 2.3456), ("step_time_s".into(), 0.12345), ("mfu".into(), 12.34)]));
        assert_eq!(fields(Preset::NanoGpt, "step 250: train loss 2.1000, val loss 2.2000"), (Some(250), vec![("eval_train_loss".into(), 2.1), ("val_loss".into(), 2.2)]));
        let (step, f) = fields(Preset::NanoGpt, "step:1000/1750 train_loss:3.2800 train_time:120000ms step_avg:120.00ms");
        assert_eq!(step, Some(1000));
        assert_eq!(f, vec![("loss".into(), 3.28), ("train_time_s".into(), 120.0), ("step_avg_s".into(), 0.12)]);
        assert_eq!(parse(Preset::NanoGpt, "number of parameters: 10.65M"), Line::Text);
        // LitGPT: a line per micro-batch, its iter the step (tests/fixtures/real/litgpt-628-loss-spike.log).
        assert_eq!(fields(Preset::NanoGpt, "iter 1152 step 144: loss 11.4630, iter time: 1260.82ms"), (Some(1152), vec![("loss".into(), 11.463), ("step_time_s".into(), 1.26082)]));
        assert_eq!(fields(Preset::NanoGpt, "iter 1151 step 144: loss 1.7019, iter time: 1106.53ms (optimizer.step)").0, Some(1151));
        // minGPT: an `iter` line's `train loss` is the step's loss.
        assert_eq!(fields(Preset::NanoGpt, "epoch 1 iter 10: train loss 2.31434. lr 6.000000e-04"), (Some(10), vec![("loss".into(), 2.31434), ("lr".into(), 6e-4)]));
    }

    #[test]
    fn presets_read_lines_after_a_prefix() {
        // A timestamp before nanoGPT's `iter` (tests/fixtures/real/nanogpt-215-nan.log).
        assert_eq!(fields(Preset::NanoGpt, "2023-03-22 09:30:39 iter 2920: loss 3.9883, time 1099.34ms, mfu 15.34%"), (Some(2920), vec![("loss".into(), 3.9883), ("step_time_s".into(), 1.09934), ("mfu".into(), 15.34)]));
        assert_eq!(fields(Preset::NanoGpt, "[rank0]: step 250: train loss 2.1000, val loss 2.2000").0, Some(250));
        assert_eq!(fields(Preset::NanoGpt, "INFO 12:00:01 step:1000/1750 train_loss:3.2800").1, vec![("loss".into(), 3.28)]);
        let (step, f) = fields(Preset::NanoGpt, "2023-03-22 09:42:01 iter 3010: loss nan, time 1097.00ms, mfu 15.34%");
        assert_eq!(step, Some(3010));
        assert!(f[0].0 == "loss" && f[0].1.is_nan(), "{f:?}");
        // Not a word start, or prose without numbers: still text.
        assert_eq!(parse(Preset::NanoGpt, "substep 5: loss 2.0"), Line::Text);
        assert_eq!(parse(Preset::NanoGpt, "resuming from step 100: checkpoint loaded"), Line::Text);
        assert_eq!(parse(Preset::NanoGpt, "no step here"), Line::Text);
        let (step, f) = fields(Preset::DeepSpeed, "2024-01-01 10:00:00 INFO Epoch: 0 | Step: 12 | Actor Loss: 0.25 | Critic Loss: 0.5");
        assert_eq!(step, Some(12));
        assert!(f.contains(&("policy_loss".into(), 0.25)), "{f:?}");
        match parse(Preset::DeepSpeed, "[12:00:01] Average reward score: 1.5 | EMA reward score: 1.2") {
            Line::Metrics(r) => assert!(r.continues && r.fields.contains(&("reward".into(), 1.5))),
            other => panic!("{other:?}"),
        }
        let (step, _) = fields(Preset::Megatron, "2024-05-01 10:00:00 [rank0] iteration 20/ 500 | lm loss: 9.875000E+00 |");
        assert_eq!(step, Some(20));
    }

    #[test]
    fn deepspeed_lines() {
        let (step, f) = fields(Preset::DeepSpeed, "[2024-01-01 00:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[0.0001], mom=[(0.9, 0.95)]");
        assert_eq!((step, f), (Some(10), vec![("skipped".into(), 0.0), ("lr".into(), 0.0001)]));
        let (step, f) = fields(Preset::DeepSpeed, "[Rank 0] epoch=0/micro_step=40/global_step=10, RunningAvgSamplesPerSec=52.1, CurrSamplesPerSec=50.3, MemAllocated=1.5GB, MaxMemAllocated=2GB");
        assert_eq!(step, Some(10));
        assert!(f.contains(&("samples_per_s".into(), 50.3)), "{f:?}");
        let (step, f) = fields(Preset::DeepSpeed, "Epoch: 0 | Step: 12 | PPO Epoch: 1 | Actor Loss: 0.25 | Critic Loss: 0.5 | Unsupervised Loss: 0.0");
        assert_eq!(step, Some(12));
        assert!(f.contains(&("policy_loss".into(), 0.25)) && f.contains(&("value_loss".into(), 0.5)), "{f:?}");
        let (step, f) = fields(Preset::DeepSpeed, "steps: 40 loss: 2.3456 iter time (s): 0.512 samples/sec: 62.500");
        assert_eq!(step, Some(40));
        assert_eq!(f, [(catalog::LOSS.to_owned(), 2.3456), (catalog::STEP_TIME_S.to_owned(), 0.512), (catalog::SAMPLES_PER_S.to_owned(), 62.5)]);
        match parse(Preset::DeepSpeed, "Average reward score: 1.5 | EMA reward score: 1.2") {
            Line::Metrics(r) => assert!(r.continues && r.step.is_none() && r.fields.contains(&("reward".into(), 1.5))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn generic_lines_of_other_trainers() {
        let get = |f: &[(String, f64)], n: &str| f.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        // torchtitan, behind its logger prefix; thousands separators and units.
        let (step, f) = fields(Preset::Generic, "[rank0]:[titan] 2025-01-10 12:00:01,123 - root - INFO - step: 12  loss:  7.1234  memory: 31.21GiB(39.49%)  tps: 7,334  mfu: 34.54%");
        assert_eq!(step, Some(12));
        assert_eq!((get(&f, "loss"), get(&f, "tokens_per_s"), get(&f, "mem/gpu_bytes")), (Some(7.1234), Some(7334.0), Some(31.21 * 1073741824.0)));
        // fairseq: the step from num_updates, its names for grad norm and tokens/s.
        let (step, f) = fields(Preset::Generic, "2021-03-01 | INFO | train_inner | epoch 001:    100 / 1000 loss=3.123, ppl=8.7, wps=12345.6, gnorm=1.2, num_updates=1100, lr=0.0005");
        assert_eq!(step, Some(1100));
        assert_eq!((get(&f, "grad_norm"), get(&f, "tokens_per_s"), get(&f, "lr")), (Some(1.2), Some(12345.6), Some(0.0005)));
        // MLX: capitalised words, a unit after a space.
        let (step, f) = fields(Preset::Generic, "Iter 75: Train loss 3.316, Learning Rate 7.000e-05, It/sec 0.933, Tokens/sec 366.098, Peak mem 8.104 GB");
        assert_eq!(step, Some(75));
        assert_eq!((get(&f, "loss"), get(&f, "lr"), get(&f, "tokens_per_s")), (Some(3.316), Some(7e-5), Some(366.098)));
        // A Lightning progress bar: the step from the bar and its epoch.
        let (step, f) = fields(Preset::Generic, "Epoch 2:  12%|█▏        | 120/1000 [00:10<01:20, 11.02it/s, v_num=0, train_loss=2.310]");
        assert_eq!((step, get(&f, "loss"), get(&f, "v_num")), (Some(2120), Some(2.31), None));
        // Keras: a bar's counter, colons before values.
        let (step, f) = fields(Preset::Generic, "12/100 [==>.....] - ETA: 1:00 - loss: 0.1234 - accuracy: 0.5200");
        assert_eq!((step, get(&f, "loss")), (Some(12), Some(0.1234)));
        // Colours, and a bar rewritten in place: its last state.
        let (step, f) = fields(Preset::Generic, "\x1b[32mstep 3\x1b[0m loss=9.0\rstep 4 loss=2.5 grad_norm=nan");
        assert_eq!((step, get(&f, "loss")), (Some(4), Some(2.5)));
        assert!(get(&f, "grad_norm").is_some_and(f64::is_nan));
        // JSON after a logger's prefix.
        let (step, f) = fields(Preset::Generic, "2024-01-01 12:00:00 | INFO | {\"step\": 7, \"train/loss\": 2.5, \"note\": \"x\"}");
        assert_eq!((step, f), (Some(7), vec![("train/loss".into(), 2.5)]));
        assert_eq!(parse(Preset::Generic, "config: {\"lr\": 0.1, \"nested\": {\"a\": 1}} done"), Line::Text);
        // No step anywhere: the line counts on.
        assert_eq!(fields(Preset::Generic, "loss: 2.5 | lr: 1e-4").0, None);
        // A pair in brackets after a value annotates it (TorchRL's reference values, a
        // running average); a unit in brackets before a value is still the key's.
        let (_, f) = fields(Preset::Generic, "step 5: average reward= 9.2944 (init= 9.1000), loss: 2.3 (avg: 2.5), Memory (MB)=1234");
        assert_eq!((get(&f, "reward"), get(&f, "loss"), get(&f, "init"), get(&f, "avg")), (Some(9.2944), Some(2.3), None, None));
        assert!(get(&f, "mem/gpu_bytes").is_some(), "{f:?}");
        // The host's memory by its word; memory without a unit of bytes stays as
        // written here (the normalizer reads it by its name); a magnitude letter
        // after a memory is a binary unit.
        let (_, f) = fields(Preset::Generic, "step: 100, loss: 2.42, rss: 43.38 GiB, memory: 3000");
        assert_eq!((get(&f, "mem/rss_bytes"), get(&f, "memory")), (Some(43.38 * 1073741824.0), Some(3000.0)), "{f:?}");
        let (_, f) = fields(Preset::Generic, "iter: 19  total_loss: 2.061  lr: 0.0004196  max_mem: 3108M");
        assert_eq!(get(&f, "mem/gpu_bytes"), Some(3108.0 * 1048576.0), "{f:?}");
    }

    #[test]
    fn a_time_beside_its_data_time_is_the_iterations() {
        let get = |f: &[(String, f64)], n: &str| f.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        // detectron2, MMEngine, timm: the iteration's time next to its data loading's.
        for line in [
            "[07/27 08:16:34] d2.utils.events INFO:  eta: 0:48:29  iter: 19  total_loss: 2.061  time: 0.2466  last_time: 0.2829  data_time: 0.0273  lr: 0.0004196",
            "07/14 07:12:19 - mmengine - INFO - Epoch(train)  [1][ 50/691]  lr: 2.0580e-03  eta: 3:41:21  time: 0.2466  data_time: 0.0250  memory: 5394  loss: 1.9508",
            "Train: 0 [  50/196 ( 26%)]  Loss: 2.26 (2.08)  Time: 0.2466s, 1026.67/s  (0.272s,  941.10/s)  LR: 1.000e-06  Data: 0.026 (0.049)",
        ] {
            let (_, f) = fields(Preset::Generic, line);
            assert_eq!(get(&f, catalog::STEP_TIME_S), Some(0.2466), "{line}: {f:?}");
        }
        // A time alone is a clock's, kept as written.
        let (_, f) = fields(Preset::Generic, "step: 100, loss: 2.42, time: 1234.5");
        assert_eq!((get(&f, catalog::STEP_TIME_S), get(&f, "time")), (None, Some(1234.5)), "{f:?}");
    }

    #[test]
    fn known_metrics_alone_after_a_step_belong_to_it() {
        // CleanRL: `global_step=N, episodic_return=X` reads as DeepSpeed's; its
        // `SPS` line (environment steps per second) completes that step.
        let log = "global_step=128, episodic_return=10.5\nSPS: 1250\n";
        assert_eq!(crate::ingest::detect(std::path::Path::new("cleanrl.log"), log).name(), "deepspeed");
        let mut progress = Progress::default();
        // Before any step, a config dump's line stays text (and alone, it never
        // makes a log DeepSpeed's).
        assert_eq!(parse_in_order(Preset::DeepSpeed, "lr: 0.0003", &mut progress), Line::Text);
        assert_eq!(parse(Preset::DeepSpeed, "SPS: 1250"), Line::Text);
        assert!(matches!(parse_in_order(Preset::DeepSpeed, "global_step=128, episodic_return=10.5", &mut progress), Line::Metrics(_)));
        match parse_in_order(Preset::DeepSpeed, "SPS: 1250", &mut progress) {
            Line::Metrics(r) => assert_eq!((r.step, r.continues, r.fields), (None, true, vec![(catalog::SAMPLES_PER_S.into(), 1250.0)])),
            other => panic!("{other:?}"),
        }
        for line in ["SPS: 1250 foo: 2", "  SPS: 1250", "note SPS: 1250", "foo: 2", "SPS: fast"] {
            assert_eq!(parse_in_order(Preset::DeepSpeed, line, &mut progress), Line::Text, "{line}");
        }
        // A generic log: after a step, a line of known metrics only joins it; before
        // any step, or with a name rlmon does not know, a line counts on as before.
        let got = records("lr: 0.0003\nstep 5 loss: 2.5\nSPS: 1200\nSPS: 1100 foo: 3\n");
        let steps: Vec<(Option<u64>, bool)> = got.iter().map(|r| (r.0, r.1)).collect();
        assert_eq!(steps, [(None, false), (Some(5), false), (None, true), (None, false)]);
        assert_eq!(got[2].2, [(catalog::SAMPLES_PER_S.to_owned(), 1200.0)]);
    }

    #[test]
    fn a_phase_word_before_its_epoch_and_counter_is_not_a_metric() {
        let (step, f) = fields(Preset::Generic, "Train: 0 [  50/1251 (  4%)]  Loss: 6.91 (6.93)  Time: 0.4s, 300/s  LR: 1.0e-04  Data: 0.01");
        assert_eq!(step, Some(50));
        assert_eq!(f, [("loss".into(), 6.91), (catalog::STEP_TIME_S.into(), 0.4), ("lr".into(), 1.0e-4), ("data".into(), 0.01)], "no `train`, one loss (not its running mean)");
        // A number after a phase word with no counter after it is still read.
        let (_, f) = fields(Preset::Generic, "step 3 train: 2 loss: 1.5");
        assert!(f.contains(&("train".into(), 2.0)), "{f:?}");
    }

    #[test]
    fn a_unit_in_brackets_after_a_key_applies_to_its_value() {
        let (step, f) = fields(Preset::Generic, "step 7 loss: 2.5 Memory (MB)=1234.5 time (ms): 12.3 throughput [tok/s]: 5e3 acc (%): 91.5");
        assert_eq!(step, Some(7));
        assert_eq!(f, [("loss".into(), 2.5), ("mem/gpu_bytes".into(), 1234.5 * 1048576.0), ("time".into(), 0.0123), ("tokens_per_s".into(), 5000.0), ("acc".into(), 91.5)]);
        // A value with its own unit keeps it; a mean in brackets beside the loss is its mean.
        let (_, f) = fields(Preset::Generic, "step 7 loss: 2.5 wait (s): 120ms loss (avg): 9");
        assert_eq!(f, [("loss".into(), 2.5), ("wait".into(), 0.12), ("loss_mean".into(), 9.0)]);
    }

    #[test]
    fn progress_counters_that_restart_number_on() {
        // Keras prints its epoch on a line of its own; each epoch's bar starts at 1.
        let steps = line_steps(&["Epoch 1/2", "50/100 - loss: 0.9", "100/100 - loss: 0.8", "Epoch 2/2", "50/100 - loss: 0.7", "100/100 - loss: 0.6", "step 7 loss=0.5"]);
        assert_eq!(steps, vec![None, Some(50), Some(100), None, Some(150), Some(200), Some(7)]);
    }

    #[test]
    fn a_bars_rate_is_its_step_time() {
        let (step, f) = fields(Preset::Generic, " 12%|█▏        | 120/1000 [00:10<01:20, 12.50it/s, loss=2.31]");
        assert_eq!(step, Some(120));
        assert!(f.contains(&(catalog::STEP_TIME_S.to_owned(), 0.08)), "{f:?}");
        let (_, f) = fields(Preset::Generic, " 12%|█▏        | 120/1000 [05:00<35:00,  2.50s/it, loss=2.31]");
        assert!(f.contains(&(catalog::STEP_TIME_S.to_owned(), 2.5)), "{f:?}");
        // Not without a bar, and not over a step time the line logs.
        let (_, f) = fields(Preset::Generic, "step 5 loss 2.3 speed 12.5it/s");
        assert!(!f.iter().any(|(n, _)| n == catalog::STEP_TIME_S), "{f:?}");
        let (_, f) = fields(Preset::Generic, "120/1000 [00:10<01:20, 12.50it/s, loss=2.31, step_time=0.2]");
        assert_eq!(f.iter().filter(|(n, _)| n == catalog::STEP_TIME_S).count(), 1, "{f:?}");
    }

    #[test]
    fn a_bare_step_line_gives_its_step_to_the_pairs_indented_under_it() {
        // OLMo: a logger's prefix with tabs, the step, then one metric per line.
        let log = "2024-02-06 21:38:29.627\tnode:0\tolmo.train:949\tINFO\t[step=10/739328,epoch=0]\n    train/CrossEntropyLoss=10.87\n    train/Perplexity=52,711\n    throughput/device/tokens_per_second=9,347\n    System/Peak GPU Memory (MB)=12,345\n2024-02-06 21:38:30.001\tnode:0\tolmo.train:949\tINFO\t[step=11/739328,epoch=0]\n    train/CrossEntropyLoss=10.5\n";
        let got = records(log);
        assert!(got.iter().all(|r| r.0 == Some(10) || r.0 == Some(11)), "{got:?}");
        let at10: Vec<(&str, f64)> = got.iter().filter(|r| r.0 == Some(10)).flat_map(|r| r.2.iter().map(|(n, v)| (n.as_str(), *v))).collect();
        // A key with a bracketed unit, `Memory (MB)`, is read without it, in bytes.
        assert_eq!(at10.len(), 4, "the pairs under the step: {at10:?}");
        assert_eq!((at10[0], at10[2]), ((catalog::LOSS, 10.87), (catalog::TOKENS_PER_S, 9347.0)));
        assert_eq!(at10[3], (catalog::MEM_GPU_BYTES, 12345.0 * 1048576.0));
        assert_eq!(crate::ingest::detect(std::path::Path::new("train.log"), log).name(), "text", "not a TSV for its tabs");
        // A traceback after a step line is not read as metrics.
        let got = records("step 5 done\n  File \"train.py\", line 42, in main\n    loss: 2.5\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(5)], "{got:?}");
    }

    #[test]
    fn an_epoch_header_starts_a_new_pass_even_when_its_bar_shows_only_its_end() {
        // Keras without a terminal prints each epoch's final state alone.
        let steps = line_steps(&["Epoch 1/3", "100/100 [==========] - 3s 25ms/step - loss: 0.9", "Epoch 2/3", "100/100 [==========] - 3s 25ms/step - loss: 0.8", "100/100 [==========] - loss: 0.8", "Epoch 3/3", "100/100 - 2s - loss: 0.7"]);
        assert_eq!(steps, vec![None, Some(100), None, Some(200), Some(200), None, Some(300)], "a repeated final state without a header is the same step");
    }

    /// llama-recipes counts its steps within each epoch: the second epoch's steps
    /// follow the first's instead of going back (which would read as a resume).
    /// A step of the run's total beside a whole epoch (OLMo's `[step=10/739328,
    /// epoch=0]`) is the step itself.
    #[test]
    fn a_step_counted_within_an_epoch_of_a_total_numbers_on_over_the_epochs() {
        let log = "Training Epoch: 1/2, step 0/3 completed (loss: 1.70)\nTraining Epoch: 1/2, step 1/3 completed (loss: 1.69)\nTraining Epoch: 1/2, step 2/3 completed (loss: 1.68)\n\
            Training Epoch: 2/2, step 0/3 completed (loss: 1.40)\nTraining Epoch: 2/2, step 1/3 completed (loss: nan)\n";
        let got = records(log);
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(0), Some(1), Some(2), Some(3), Some(4)], "{got:?}");
        let got = records("[step=10/739328,epoch=0] train/CrossEntropyLoss=10.87\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(10)], "{got:?}");
    }

    #[test]
    fn an_epoch_of_a_total_is_the_epoch_and_pairs_read_every_written_pair() {
        // `Epoch 47/100 - loss: nan`: the epoch a field (the normalizer makes it the step).
        let got = records("Epoch 47/100 - loss: nan - val_loss: nan - lr: 1.0e-03 - 12.4s\nepoch=48 train_loss=0.51\n");
        assert_eq!(got[0].2[0], ("epoch".to_owned(), 47.0), "{got:?}");
        assert_eq!((got[0].0, got[1].0, got[1].2[0].clone()), (None, None, ("epoch".to_owned(), 48.0)));
        // Every pair with its `:` or `=` written, known or not; a bare `word 12` is none.
        let mut progress = Progress::new(true);
        let read = |line: &str, progress: &mut Progress| match parse_generic(line, progress) {
            Line::Metrics(r) => r.fields.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
            _ => Vec::new(),
        };
        assert_eq!(read("Step 1: Generator Loss: 0.774581, Discriminator Loss: 1.300602", &mut progress), [("generator_loss".to_owned(), 0.774581), ("discriminator_loss".to_owned(), 1.300602)]);
        assert!(matches!(parse_generic("Step 1000: Generator Loss: 4.06", &mut progress), Line::Metrics(r) if r.step == Some(1000)), "the step word numbers it, written or not");
        assert_eq!(read("\ttime this epoch= 1.7", &mut progress), [("time_this_epoch".to_owned(), 1.7)]);
        assert!(read("Loaded 5 shards in 12 s", &mut progress).is_empty());
        assert!(read("Loaded 5 shards in 12 s", &mut Progress::default()).is_empty());
        assert!(read("Step 1: Generator Loss: 0.774581", &mut Progress::default()).is_empty(), "without pairs: no metric rlmon knows");
    }

    #[test]
    fn cost_is_the_loss_and_a_pair_under_a_metric_line_is_more_of_its_step() {
        // TensorFlow-Examples' loop: `Epoch: 0001 cost= 29.9`, here indented by a tab,
        // and the epoch's time on the next line, indented alike.
        let got = records("Start training...\n\tEpoch: 0001 cost= 29.860479714\n\ttime this epoch= 1.7\n\tEpoch: 0002 cost= 7.912305178\ncost: 1.2\n");
        assert_eq!(got[0], (None, false, vec![("epoch".to_owned(), 1.0), (catalog::LOSS.to_owned(), 29.860479714)]));
        assert_eq!(got[1], (None, true, vec![("time_this_epoch".to_owned(), 1.7)]));
        assert_eq!(got[3].2, [(catalog::LOSS.to_owned(), 1.2)]);
        // Not indented alike, or not right under a metric line: text, as before.
        assert_eq!(records("\tEpoch: 0001 cost= 29.86\ntime this epoch= 1.7\n").len(), 1);
        assert_eq!(records("\tEpoch: 0001 cost= 29.86\n\tsaving\n\ttime this epoch= 1.7\n").len(), 1);
    }

    #[test]
    fn bigdl_sentences_name_their_values() {
        // BigDL's (and Analytics Zoo's) DistriOptimizer: bracketed counters, then
        // sentences `X is V.`; the throughput in records per second is samples/s.
        let line = "2018-03-06 10:15:07 INFO  DistriOptimizer$:408 - [Epoch 1 256/60000][Iteration 2][Wall Clock 2.051s] Trained 128 records in 0.104 seconds. Throughput is 1230.77 records/second. Loss is 2.2981. Sequentialc8f7b2e1's hyper parameters: Current learning rate is 0.05. Current dampening is 1.7976931348623157E308. ";
        let Line::Metrics(rec) = parse_generic(line, &mut Progress::default()) else { panic!("{line}") };
        let get = |name: &str| rec.fields.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        assert_eq!(rec.step, Some(2));
        assert_eq!((get(catalog::LOSS), get(catalog::SAMPLES_PER_S), get(catalog::LR)), (Some(2.2981), Some(1230.77), Some(0.05)), "{:?}", rec.fields);
        // The first releases' line, cut where the thread's copy ends, and `Infinity`.
        let line = "2017-08-20 16:11:46 INFO  DistriOptimizer$:295 - [Epoch 64 740096/1281167][Iteration 45459][Wall Clock 197340.717246379s] Train 1792 in 4.006890034seconds. Throughput is 447.22968 records/second. Loss is Infinity. Current learning rate is 0.046281366472703075. Current momentum";
        let Line::Metrics(rec) = parse_generic(line, &mut Progress::default()) else { panic!("{line}") };
        assert_eq!(rec.step, Some(45459));
        assert!(rec.fields.iter().any(|(n, v)| n == catalog::LOSS && *v == f64::INFINITY), "{:?}", rec.fields);
        assert!(rec.fields.iter().any(|(n, v)| n == catalog::LR && *v == 0.046281366472703075), "{:?}", rec.fields);
        // A rate in tokens per second, a unit that is no rate, prose with `is`.
        let got = records("step 3 loss 2.1 speed 5120 tokens/s\nstep 4 loss 2.0 speed 12 steps/s\nstep 5 loss 1.9. the model is ready\n");
        assert_eq!(got[0].2[1], (catalog::TOKENS_PER_S.to_owned(), 5120.0));
        assert_eq!(got[1].2[1], ("speed".to_owned(), 12.0));
        assert_eq!(got[2].2, [(catalog::LOSS.to_owned(), 1.9)]);
    }

    #[test]
    fn a_line_announcing_an_evaluation_at_a_step_makes_that_steps_later_lines_its_results() {
        let log = "[Epoch 1 60032/60000][Iteration 469][Wall Clock 64.1s] Trained 96 records in 0.081 seconds. Throughput is 1185.19 records/second. Loss is 0.1623.\n\
                   [Epoch 1 60032/60000][Iteration 469][Wall Clock 64.1s] Validate model...\n\
                   [Epoch 1 60032/60000][Iteration 469][Wall Clock 64.1s] validate model throughput is 5521.3 records/second\n\
                   [Epoch 1 60032/60000][Iteration 469][Wall Clock 64.1s] Loss is (Loss: 11.4806, count: 79, Average Loss: 0.14532)\n\
                   [Epoch 2 128/60000][Iteration 470][Wall Clock 64.2s] Trained 128 records in 0.113 seconds. Throughput is 1132.74 records/second. Loss is 0.1412.\n";
        let got = records(log);
        let value = |i: usize, name: &str| got[i].2.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(469), Some(469), Some(469), Some(470)]);
        assert_eq!((value(0, catalog::LOSS), value(0, catalog::SAMPLES_PER_S)), (Some(0.1623), Some(1185.19)));
        assert_eq!(value(1, "val_samples_per_s"), Some(5521.3));
        assert_eq!((value(2, catalog::VAL_LOSS), value(2, "val_loss_sum"), value(2, catalog::LOSS)), (Some(0.14532), Some(11.4806), None), "the mean is the loss: {:?}", got[2]);
        assert_eq!((value(3, catalog::LOSS), value(3, catalog::VAL_LOSS)), (Some(0.1412), None), "the next step trains again");
    }

    /// The step of each line of a generic log read in order (`None`: no metrics on it).
    fn line_steps(lines: &[&str]) -> Vec<Option<u64>> {
        let mut progress = Progress::default();
        lines
            .iter()
            .map(|l| match parse_generic(l, &mut progress) {
                Line::Metrics(r) => r.step,
                _ => None,
            })
            .collect()
    }

    /// The records of a generic log read in order: `(step, continues, fields)`.
    fn records(log: &str) -> Vec<(Option<u64>, bool, Vec<(String, f64)>)> {
        let mut progress = Progress::default();
        log.lines()
            .filter_map(|l| match parse_generic(l, &mut progress) {
                Line::Metrics(r) => Some((r.step, r.continues, r.fields.into_iter().map(|(n, v)| (n.to_string(), v)).collect())),
                _ => None,
            })
            .collect()
    }

    /// Ray Tune's verbose output: `Result for <trial>:` over the result's YAML,
    /// indented, its `training_iteration` near the end. Read as RLlib's
    /// `pretty_print` at the margin, each result at its own iteration (it was one
    /// point at step 0, or each metric a step early).
    #[test]
    fn a_nested_dump_under_a_header_is_read_at_its_step() {
        let result = |i: u32, kl: f64| format!("Result for PPO_CartPole-v1_863fd_00000:\n  agent_timesteps_total: {}\n  info:\n    learner:\n      default_policy:\n        learner_stats:\n          kl: {kl}\n          entropy: .nan\n  iterations_since_restore: {i}\n  training_iteration: {i}\n  trial_id: 863fd_00000\n  warmup_time: 5.1\n", 4000 * i);
        let log = format!("== Status ==\nCurrent time: 2024-06-26 10:29:07\n{}{}== Status ==\n{}", result(1, 0.01), result(2, 0.08), result(3, 0.02));
        let mut progress = Progress::default();
        let mut n = crate::ingest::normalize::Normalizer::default();
        let mut points = Vec::new();
        for line in log.lines() {
            if let Line::Metrics(rec) = parse_generic(line, &mut progress) {
                points.extend(n.push(rec));
            }
        }
        points.extend(n.finish());
        let kl: Vec<(u64, f64)> = points.iter().filter_map(|e| if let crate::ingest::normalize::Emit::Point(p) = e { p.values.iter().find(|(k, _)| k == catalog::KL).map(|(_, v)| (p.step, *v)) } else { None }).collect();
        assert_eq!(kl, [(1, 0.01), (2, 0.08), (3, 0.02)], "{points:?}");
        let nan_entropy = points.iter().any(|e| matches!(e, crate::ingest::normalize::Emit::Point(p) if p.values.iter().any(|(k, v)| k == catalog::ENTROPY && v.is_nan())));
        assert!(nan_entropy, "YAML's `.nan` is NaN");
    }

    #[test]
    fn steps_named_beside_their_epoch_that_restart_with_it_count_on() {
        // pix2pix and CycleGAN: `iters` counts within the epoch.
        let got = line_steps(&[
            "(epoch: 1, iters: 100, time: 0.103, data: 0.641) G_GAN: 1.166 G_L1: 40.355 D_real: 0.465 D_fake: 0.438 ",
            "(epoch: 1, iters: 200, time: 0.114, data: 0.001) G_GAN: 1.709 G_L1: 42.086 D_real: 0.430 D_fake: 0.488 ",
            "End of epoch 1 / 500 \t Time Taken: 69 sec",
            "learning rate 0.0002000 -> 0.0002000",
            "(epoch: 2, iters: 78, time: 0.070, data: 0.003) G_GAN: 1.461 G_L1: 44.868 D_real: 0.135 D_fake: 0.097 ",
            "(epoch: 2, iters: 178, time: 0.117, data: 0.178) G_GAN: 4.091 G_L1: 44.220 D_real: 0.064 D_fake: 1.134 ",
        ]);
        assert_eq!(got, [Some(100), Some(200), None, None, Some(278), Some(378)]);
        // Mozilla DeepSpeech: the step count of each epoch's bar, the same every epoch.
        let got = line_steps(&[
            "Epoch 65 |   Training | Elapsed Time: 0:10:10 | Steps: 18595 | Loss: 116.308748",
            "Epoch 66 |   Training | Elapsed Time: 0:10:02 | Steps: 18595 | Loss: 114.976197",
            "Epoch 67 |   Training | Elapsed Time: 0:09:59 | Steps: 18595 | Loss: 117.706127",
        ]);
        assert_eq!(got, [Some(18595), Some(37190), Some(55785)]);
        // With its evaluation after each epoch: that epoch's last step's, as `val_*`.
        let got = records(
            "Epoch 0 |   Training | Elapsed Time: 0:09:41 | Steps: 2950 | Loss: 142.117305\nEpoch 0 | Validation | Elapsed Time: 0:00:31 | Steps: 120 | Loss: 131.552091 | Dataset: dev.csv\nEpoch 1 |   Training | Elapsed Time: 0:09:38 | Steps: 2950 | Loss: 128.403317\n",
        );
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(Some(2950), false), (None, true), (Some(5900), false)], "{got:?}");
        assert!(got[1].2.iter().any(|(n, v)| n == catalog::VAL_LOSS && *v == 131.552091), "{got:?}");
        // A global step beside its epoch stays as it is; an evaluation at the
        // epoch's last step, under other names, is at that step.
        let got = line_steps(&["epoch 1 step 900 loss 0.5", "epoch 1 step 1000 loss 0.4", "epoch 2 step 1000 val_loss 0.45", "epoch 2 step 1100 loss 0.39"]);
        assert_eq!(got, [Some(900), Some(1000), Some(1000), Some(1100)]);
    }

    #[test]
    fn an_arrow_header_gives_its_global_step_to_the_bulleted_lines_under_it() {
        // Coqui TTS: a running mean in brackets after each value, a tensor's print.
        let got = records("   --> TIME: 2024-03-18 13:31:34 -- STEP: 25/496 -- GLOBAL_STEP: 1525\n     | > loss: 3.63  (3.53)\n     | > grad_norm: tensor(10.7261, device='cuda:0')  (tensor(9.88, device='cuda:0'))\n\n  --> EVAL PERFORMANCE\n     | > avg_loss: 3.2231 (-0.1207)\n");
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(Some(1525), false), (Some(1525), false), (None, true)], "{got:?}");
        assert_eq!(got[1].2, [(catalog::GRAD_NORM.to_owned(), 10.7261)]);
        assert_eq!(got[2].2, [(catalog::VAL_LOSS.to_owned(), 3.2231)], "the evaluation's block: the step before's results");
    }

    #[test]
    fn a_bracketed_date_and_time_is_a_loggers_prefix_whatever_else_it_holds() {
        assert_eq!(without_logging_prefix("[INFO:17945 monobeast:600 2021-08-29 22:14:16,250] Episode ended after 761 steps. Return: -21.0"), "Episode ended after 761 steps. Return: -21.0");
        assert_eq!(without_logging_prefix("[2023-03-01 12:04:00,001 INFO] Validation accuracy: 11.98"), "Validation accuracy: 11.98");
        assert_eq!(without_logging_prefix("[12] loss: 0.3"), "[12] loss: 0.3", "a step in brackets stays");
        assert_eq!(without_logging_prefix("(ActorModelRayActor pid=9041) Train epoch [1/1]: 4/4 [01:36<00:00, act_loss=0.004]"), "Train epoch [1/1]: 4/4 [01:36<00:00, act_loss=0.004]");
        assert_eq!(without_logging_prefix("(RolloutWorker pid=24109, ip=10.0.2.8) 2025-01-07 23:24:46,249\tWARNING env.py:162 -- text"), "2025-01-07 23:24:46,249\tWARNING env.py:162 -- text");
        assert_eq!(without_logging_prefix("(pid 12) loss: 0.3"), "(pid 12) loss: 0.3");
        assert_eq!(without_logging_prefix("11/27 04:50:30 - mmengine - INFO - per class results:"), "per class results:");
        assert_eq!(without_logging_prefix("2024/01/05 10:00:00 step 3 loss 2.1"), "step 3 loss 2.1");
        assert_eq!(without_logging_prefix("11/27 loss: 0.3"), "11/27 loss: 0.3", "a counter without a time stays");
        // (Read as the `pairs` format reads it: no name rlmon knows.)
        let read = parse_generic("At iteration 100/100/100, mean rms=4.8%, delta=21.3%, BCER train=88.2%", &mut Progress::new(true));
        assert!(matches!(read, Line::Metrics(ref r) if r.step == Some(100)), "Tesseract's counts: the first is the iteration: {read:?}");
    }

    #[test]
    fn a_pass_of_batches_from_zero_starts_after_the_last_passes_last_step() {
        let got = line_steps(&[
            "Epoch 0, batch 0, loss[loss=1.071, over 2436.00 frames. ], batch size: 4",
            "Epoch 0, batch 20, loss[loss=0.2581, over 2695.00 frames. ], batch size: 5",
            "Epoch 1, batch 0, loss[loss=0.2519, over 2436.00 frames. ], batch size: 4",
            "Epoch 1, batch 10, loss[loss=0.1167, over 2828.00 frames. ], batch size: 4",
        ]);
        assert_eq!(got, [Some(0), Some(20), Some(21), Some(31)]);
    }

    #[test]
    fn a_printed_dict_under_a_header_naming_its_step_is_that_steps() {
        let mut progress = Progress::default();
        let steps: Vec<Option<u64>> = [
            "[INFO:17945 monobeast:469 2021-08-29 21:02:16,251] Steps 3200 @ 640.2 SPS. Loss 61.08. Stats:",
            "{'mean_episode_return': nan, 'total_loss': 61.08, 'pg_loss': 58.1}",
            "{'loss': 2.1, 'epoch': 0.5}",
        ]
        .iter()
        .map(|l| match parse_printed_in_order(l, &mut progress) {
            Line::Metrics(r) => r.step,
            _ => None,
        })
        .collect();
        assert_eq!(steps, [None, Some(3200), None], "only the dict right under it");
    }

    #[test]
    fn a_trainers_message_of_a_non_finite_loss_or_gradient_is_a_nan_value() {
        use NonFiniteMessage::{Grad, Loss};
        for (line, said) in [
            ("FloatingPointError: Loss became infinite or NaN at iteration=15421!", Some(Loss { step: Some(15421) })),
            ("loss_dict = {'loss_cls': nan, 'loss_box_reg': nan}", Some(Loss { step: None })),
            ("Rank 0: found NaN in local grad norm in backward pass before data-parallel communication collective", Some(Grad { step: None })),
            ("RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped.", Some(Grad { step: None })),
            ("RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.", Some(Grad { step: None })),
            ("Monitored metric val_loss = nan is not finite. Previous best value was 0.123. Signaling Trainer to stop.", Some(Loss { step: None })),
            ("Batch 9: Invalid loss, terminating training", Some(Loss { step: None })),
            ("WARNING: loss is inf at step 300, stopping", Some(Loss { step: Some(300) })),
            // A loss scaler's skipped step, a hedge, a setting, a negation, a bare
            // warning naming neither a loss nor a gradient: not a fault.
            ("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 16384.0, reducing to 8192.0", None),
            ("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 256.0 (grad norm inf)", None),
            ("--terminate-on-nan   stop training if the loss is NaN", None),
            ("skip_nan_loss: True", None),
            ("logging_nan_inf_filter=True, max_grad_norm=1.0", None),
            ("no NaN loss seen in 1000 steps", None),
            ("NaN or Inf found in input tensor.", None),
            ("Epoch 1: val_loss improved from inf to 2.04556, saving model to checkpoints/best.h5", None),
            ("Validation loss decreased (inf --> 0.693147).  Saving model ...", None),
            ("Best validation loss so far: inf", None),
            ("Training finished: final loss 0.23", None),
            // A printed dict of losses whose NaN is another metric's.
            ("{'episode_returns': (), 'mean_episode_return': nan, 'total_loss': 61.08, 'pg_loss': 58.1}", None),
            ("grad norm: nan | lm loss: 2.3", Some(Grad { step: None })),
            ("grad_clip: inf", None),
            ("gradient_clip_val=inf, max_loss=inf", None),
        ] {
            assert_eq!(nonfinite_message(line), said, "{line}");
        }
        // In a log: at the step it names, else the step after the last one logged;
        // a second message right under the first says more of the same step.
        let mut reader = super::super::LineReader::new(super::super::Format::Text(Preset::Generic), None);
        let mut steps = Vec::new();
        for line in ["step 10 loss 2.5", "step 20 loss 2.4", "Traceback (most recent call last):", "FloatingPointError: Loss became infinite or NaN!", "loss_dict = {'loss_cls': nan}"] {
            if let Line::Metrics(rec) = reader.line(line.as_bytes()) {
                steps.push((rec.step, rec.continues, rec.fields.iter().any(|(_, v)| v.is_nan())));
            }
        }
        assert_eq!(steps, [(Some(10), false, false), (Some(20), false, false), (None, false, true), (None, true, true)]);
    }

    #[test]
    fn a_bar_nested_in_a_bar_of_a_larger_total_waits_for_the_outer_bars_step() {
        // OpenRLHF: each rollout's `Train epoch` bar (4/4, 16/16) between the
        // `Episode` bar's steps (of 300), drawn by a Ray actor.
        let mut progress = Progress::default();
        let got: Vec<(Option<u64>, bool)> = [
            "Episode [1/1]:   0%|          | 0/300 [00:00<?, ?it/s]",
            "(ActorModelRayActor pid=9041) Train epoch [1/1]: 100%|██████████| 4/4 [01:36<00:00, 24.24s/it, act_loss=0.00407, reward=0.201, kl=0]",
            "Episode [1/1]:   0%|          | 1/300 [05:23<26:50:54, 323.26s/it, policy_loss=0.00407, reward=0.201, kl=0]",
            "(ActorModelRayActor pid=9041) Train epoch [1/1]: 100%|██████████| 16/16 [01:15<00:00,  4.69s/it, act_loss=-.0127, reward=0.261, kl=0.0003]",
            "Episode [1/1]:   1%|          | 2/300 [09:33<23:43:42, 286.65s/it, policy_loss=-.0127, reward=0.261, kl=0.0003]",
        ]
        .iter()
        .filter_map(|l| match parse_generic(l, &mut progress) {
            Line::Metrics(r) => Some((r.step, r.awaits_step)),
            _ => None,
        })
        .collect();
        assert_eq!(got, [(None, true), (Some(1), false), (None, true), (Some(2), false)]);
        // A data pass's bar that finished (drawn while running, then done) numbers
        // nothing after it: the training bar of a smaller total is the clock.
        let mut progress = Progress::default();
        let got: Vec<Option<u64>> = [
            "Map:  50%|#####     | 1000/2001 [00:23<00:23, 42.64 examples/s]",
            "Map: 100%|##########| 2001/2001 [00:47<00:00, 42.64 examples/s]",
            "  8%|8         | 25/300 [00:43<07:29,  1.73s/it, loss=2.3]",
            " 17%|#6        | 50/300 [01:27<07:29,  1.73s/it, loss=2.2]",
        ]
        .iter()
        .filter_map(|l| match parse_generic(l, &mut progress) {
            Line::Metrics(r) if r.fields.iter().any(|(n, _)| n == catalog::LOSS) => Some(r.step),
            _ => None,
        })
        .collect();
        assert_eq!(got, [Some(25), Some(50)]);
    }

    #[test]
    fn a_layers_expert_loads_printed_as_a_list_are_its_loads() {
        let loads = |line: &str| expert_loads(line).map(|r| r.fields.iter().map(|(n, v)| (n.to_string(), *v)).collect::<Vec<_>>());
        let l1 = catalog::moe(1);
        assert_eq!(loads("moe layer 1: exp_counts=[4436, 4410, 3979], l_aux=1.0260"), Some(vec![(l1.load(0), 4436.0), (l1.load(1), 4410.0), (l1.load(2), 3979.0)]));
        let l3 = catalog::moe(3);
        assert_eq!(loads("[2024-05-01 10:00:00,123] INFO layer 3 tokens_per_expert: tensor([512, 498], device='cuda:0')"), Some(vec![(l3.load(0), 512.0), (l3.load(1), 498.0)]));
        assert_eq!(loads("moe expert_load = [0.30 0.25 0.45]"), Some(vec![(catalog::moe(0).load(0), 0.3), (catalog::moe(0).load(1), 0.25), (catalog::moe(0).load(2), 0.45)]));
        // Not loads: a learning rate per group, a router's logits, one value, text.
        for line in ["moe step=50, lr=[0.0001, 0.0002]", "moe layer 0: router_logits=[1.2, -0.3]", "moe layer 0: exp_counts=[4436]", "experts: [a, b]"] {
            assert_eq!(loads(line), None, "{line}");
        }
        let Some(rec) = expert_loads("moe layer 0: exp_counts=[1, 2]") else { panic!() };
        assert!(rec.continues && rec.step.is_none(), "the step before's");
    }

    #[test]
    fn a_loss_scalers_message_gives_its_scale_to_the_next_metric_line() {
        for (line, scale) in [
            ("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 256.0", Some(256.0)),
            ("[2023-04-05 11:17:01,183] [INFO] [stage_1_and_2.py:1769:step] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 16384.0, reducing to 8192.0", Some(8192.0)),
            ("2021-03-01 12:01:00 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: 64.0", Some(64.0)),
            ("2024-12-25 09:58:34,125 [WARNING] overflow, still update, loss scale adjust to 1024.0", Some(1024.0)),
            // A metric line that logs its scale, and a config line: not messages.
            (" iteration 20/ 500 | lm loss: 9.875000E+00 | loss scale: 1.0 | grad norm: 2.500 |", None),
            ("mat_diff_loss_scale set to 0.001 from the config", None),
        ] {
            assert_eq!(loss_scale_message(line), scale, "{line}");
        }
        let mut progress = Progress::default();
        progress.note_loss_scale(256.0);
        let Line::Metrics(rec) = progress.with_loss_scale(parse_generic("Train loss 6313 0.149 Grad Norm inf 1.2s/it", &mut Progress::default())) else { panic!() };
        assert!(rec.fields.contains(&(catalog::LOSS_SCALE.into(), 256.0)), "{rec:?}");
        // Given once: the line after has none of it.
        let Line::Metrics(rec) = progress.with_loss_scale(parse_generic("Train loss 6314 0.148 Grad Norm 0.5 1.2s/it", &mut Progress::default())) else { panic!() };
        assert!(!rec.fields.iter().any(|(n, _)| &**n == catalog::LOSS_SCALE));
        // Of several messages before the next line, the first is the step before's
        // (a part of it), the last the next line's.
        let mut progress = Progress::default();
        let _ = progress.with_loss_scale(parse_generic("Train loss 6319 0.9 Grad Norm 0.5 1.2s/it", &mut Progress::default()));
        assert_eq!(progress.note_loss_scale(128.0), Line::Text);
        let Line::Metrics(first) = progress.note_loss_scale(64.0) else { panic!("the first goes to the step before") };
        assert_eq!((first.step, first.continues, first.fields.clone()), (None, true, vec![(catalog::LOSS_SCALE.into(), 128.0)]));
        assert_eq!(progress.note_loss_scale(2.0), Line::Text);
        let Line::Metrics(rec) = progress.with_loss_scale(parse_generic("Train loss 6320 0.9 Grad Norm 0.5 1.2s/it", &mut Progress::default())) else { panic!() };
        assert!(rec.fields.contains(&(catalog::LOSS_SCALE.into(), 2.0)), "{rec:?}");
        // Not where the lines since the last message hold a scale already.
        progress.note_loss_scale(1.0);
        let _ = progress.with_loss_scale(parse_generic("Train loss 6321 0.9 Grad Norm 0.5 1.2s/it", &mut Progress::default()));
        assert_eq!(progress.note_loss_scale(0.5), Line::Text);
        assert_eq!(progress.note_loss_scale(0.25), Line::Text);
    }

    #[test]
    fn a_gans_tick_line_numbers_its_step_and_a_snapshots_metric_joins_it() {
        let got = records(
            "network-snapshot-000000        time 4m 26s       fid50k_full 46.5633\n\
             tick 1401  kimg 5738.6   time 1d 06h 06m   sec/tick 71.0    sec/kimg 17.34   maintenance 274.4  gpumem 8.9   augment 6.521\n\
             network-snapshot-005738        time 4m 26s       fid50k_full 45.1\n\
             {\"results\": {\"fid50k_full\": 44.2}, \"metric\": \"fid50k_full\", \"snapshot_pkl\": \"network-snapshot-005738.pkl\"}\n\
             tick 7 of 10 done\n",
        );
        assert_eq!(got.len(), 3, "the snapshot before any tick, and a sentence, are no metrics: {got:?}");
        let (step, continues, fields) = &got[0];
        assert_eq!((*step, *continues), (Some(1401), false));
        let time = (86400 + 6 * 3600 + 6 * 60) as f64;
        for field in [(catalog::TRAIN_TIME_S, time), (catalog::STEP_TIME_S, 71.0), ("kimg", 5738.6), ("augment", 6.521)] {
            assert!(fields.iter().any(|(n, v)| n == field.0 && *v == field.1), "{field:?} in {fields:?}");
        }
        assert_eq!(got[1], (None, true, vec![("fid50k_full".to_owned(), 45.1)]));
        assert_eq!(got[2], (None, true, vec![("fid50k_full".to_owned(), 44.2)]));
    }

    #[test]
    fn a_table_whose_opening_rule_was_cut_off_is_read_from_its_first_row() {
        let got = records("| grad_norm | 2.34e+05 |\n| loss      | 5.99e+04 |\n| step      | 200      |\n-----------------------\n| metric | value |\n");
        assert_eq!(got, vec![(Some(200), false, vec![("grad_norm".to_owned(), 2.34e5), ("loss".to_owned(), 5.99e4)])]);
    }

    #[test]
    fn a_wandb_run_summary_is_a_point_where_the_log_printed_no_step() {
        let summary = "wandb: Run history:\nwandb:   train/loss █▆▅▄▃▁\nwandb:\nwandb: Run summary:\nwandb:             _step 5350\nwandb:   validation Dice 0.40296\nwandb:        train/loss 1.87978\nwandb:          run_name glowing-sun\nwandb:\nwandb: Find logs at: ./wandb/logs\n";
        let got = records(summary);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, Some(5350));
        assert!(got[0].2.iter().any(|(n, v)| n == "loss" && *v == 1.87978), "{got:?}");
        // After the run's own steps, the summary repeats them: not read.
        assert_eq!(records(&format!("step: 5350, loss: 1.87978\n{summary}")).len(), 1);
    }

    #[test]
    fn an_optuna_trial_is_a_step_and_its_settings_are_no_metrics() {
        let got = records(
            "[I 2020-12-16 12:46:55,364] Trial 42 finished with value: 0.934375 and parameters: {'n_layers': 1, 'lr': 0.0022}. Best is trial 31 with value: 0.95.\n\
             [I 2020-12-16 12:47:05,080] Trial 45 pruned.\n\
             [I 2023-01-01 10:00:00,000] Trial 7 finished with values: [0.5, 12.0] and parameters: {'x': 1}. \n",
        );
        assert_eq!(
            got,
            vec![
                (Some(42), false, vec![("value".to_owned(), 0.934375), ("best_value".to_owned(), 0.95)]),
                (Some(7), false, vec![("value_0".to_owned(), 0.5), ("value_1".to_owned(), 12.0)]),
            ]
        );
    }

    #[test]
    fn a_header_of_column_groups_set_apart_by_bars_reads_its_rows_by_position() {
        let got = records("ID     Step    maxR |    avgR   stdR |    objC   etc.\n0  4.10e+03 -212.33 |\n0  4.10e+03 -212.33 | -212.33   41.2 |    8.42   0.06   0.00\n");
        assert_eq!(got.len(), 1, "the half row is no row: {got:?}");
        let names: Vec<&str> = got[0].2.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["id", "maxr", "avgr", "stdr", "objc"]);
        assert_eq!(got[0].2[4].1, 8.42);
        // A table's cells between bars are no groups.
        assert!(!grouping_bars("| loss | 0.5 |") && grouping_bars("ID  Step | avgR  stdR"));
    }

    #[test]
    fn full_width_marks_and_names_in_any_script_are_read() {
        let got = records("训练次数：100，Loss：2.2841\n整体测试集上的Loss: 301.4\n训练次数：200，Loss：2.1907\n");
        assert_eq!(got.iter().map(|r| (r.0, r.2.clone())).collect::<Vec<_>>(), vec![(Some(100), vec![("loss".to_owned(), 2.2841)]), (Some(200), vec![("loss".to_owned(), 2.1907)])]);
        assert_eq!(catalog::tidy_word("整体测试集上的Loss"), "整体测试集上的loss", "the test set's loss is no `loss`");
    }

    #[test]
    fn a_bracket_opening_a_line_is_its_step_before_pairs_apart_by_slashes() {
        assert_eq!(bracketed_step("[5000] expl_amount 0.3 / model_grad_norm 61.2 / fps 0.0"), Some(5000));
        let got = records("[5000] expl_amount 0.3 / model_grad_norm 61.2 / value_loss 6.4\n");
        assert_eq!(got[0].0, Some(5000));
        assert!(got[0].2.iter().any(|(n, v)| n == "model_grad_norm" && *v == 61.2), "{got:?}");
    }

    #[test]
    fn a_cell_in_a_unit_rlmon_does_not_convert_leaves_the_rest_of_its_row() {
        let got = records("  Iter       Train Loss   Estimated Time \n     1           1.2980            7.89m\n    90           0.8691           53.82s\n");
        assert_eq!(got.iter().map(|r| (r.0, r.2.clone())).collect::<Vec<_>>(), vec![(Some(1), vec![("loss".to_owned(), 1.298)]), (Some(90), vec![("loss".to_owned(), 0.8691)])]);
    }

    #[test]
    fn a_remaining_time_is_no_metric() {
        let got = records("step: 10  loss: 0.68  time_left: 80  remaining: 57.4s\n");
        assert_eq!(got[0].2, [("loss".to_owned(), 0.68)], "{got:?}");
    }

    #[test]
    fn a_qualifier_in_brackets_after_a_key_says_which_value_it_is() {
        let names = |line: &str| records(line).into_iter().flat_map(|r| r.2).collect::<Vec<_>>();
        // LitGPT: this step's value is the loss, the running mean its mean.
        assert_eq!(names("Epoch 1 | iter 10 step 3 | loss train (curr): 1.523, loss train (avg): 1.641, val: n/a"), [("epoch".to_owned(), 1.0), ("loss".to_owned(), 1.523), ("loss_mean".to_owned(), 1.641)]);
        // A mean alone is the loss; of another metric, its own name.
        assert_eq!(names("Epoch 2, Train Loss (Avg): 2.40, Train Accuracy (Avg): 0.35"), [("epoch".to_owned(), 2.0), ("loss".to_owned(), 2.4), ("train_accuracy".to_owned(), 0.35)]);
        // Any other qualifier names a metric apart (a GAN's two losses); a unit is still a unit.
        assert_eq!(names("step 3 Loss (G): 1.2 Loss (D): 0.8 lr: 0.0002 time (ms): 120"), [("loss_g".to_owned(), 1.2), ("loss_d".to_owned(), 0.8), ("lr".to_owned(), 0.0002), ("time".to_owned(), 0.12)]);
        // Several words, and a value glued to the colon.
        let got = records("Ep 1 | iter 4 | step 1: loss train (curr):1.592, val (prev val iter): None | iter time: 183.90 ms (opt.step)");
        assert_eq!((got[0].0, got[0].2.clone()), (Some(4), vec![("ep".to_owned(), 1.0), ("loss".to_owned(), 1.592), ("iter_time".to_owned(), 0.1839)]));
        // An annotation after a value is none (a running `loss: 2.3 (avg: 2.5)`).
        assert_eq!(names("step 5 loss: 2.3 (avg: 2.5)"), [("loss".to_owned(), 2.3)]);
    }

    #[test]
    fn the_score_of_a_line_numbered_by_its_episode_is_its_reward() {
        let got = records("episode: 3   score: 35.0   memory length: 85   epsilon: 0.9657\nEpisode 100\tScore: 21.00\tAverage Score: 30.12\nEpisode 200\tAverage Score: 31.50\nepisode 1200 ended. Score 1.000000\n");
        let reward = |i: usize| got[i].2.iter().find(|(n, _)| n == catalog::REWARD).map(|(_, v)| *v);
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(3), Some(100), Some(200), Some(1200)]);
        assert_eq!((reward(0), reward(1), reward(2), reward(3)), (Some(35.0), Some(21.0), Some(31.5), Some(1.0)));
        // A reward named beside it is the reward; a score on a line of its step is no reward (spaCy's `SCORE`).
        assert_eq!(records("Episode 7 reward: 12.5 score: 3")[0].2, [("reward".to_owned(), 12.5), ("score".to_owned(), 3.0)]);
        assert!(!records("step 7 loss: 2.1 score: 0.81")[0].2.iter().any(|(n, _)| n == catalog::REWARD));
    }

    #[test]
    fn header_rows_of_names_apart_by_gaps_or_led_by_the_epoch() {
        // spaCy: two-word names apart by two spaces, `E` the epoch and `#` the step.
        assert_eq!(column_names("E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  SCORE ").unwrap(), ["epoch", "step", "LOSS TOK2VEC", "LOSS NER", "ENTS_F", "SCORE"]);
        let got = records("E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  SCORE \n---  ------  ------------  --------  ------  ------\n  0     200         25.13   1845.59   64.77    0.65\n");
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, Some(200));
        assert!(!got[0].2.iter().any(|(n, _)| n == "epoch"), "{got:?}");
        // YOLOv5: no known name, but the epoch leads.
        assert!(column_names("      Epoch   gpu_mem       box       obj       cls    labels  img_size").is_some());
        assert!(column_names("Class  Images  Labels  P  R").is_none(), "no epoch, no known name");
        // A line of cells holding values is no header (PyTorch's word-language-model example).
        assert!(column_names("| epoch   1 |   600/ 2983 batches | lr 20.00 | ms/batch 12.01 | loss  6.49 | ppl   657.73").is_none());
    }

    #[test]
    fn an_announced_evaluation_pass_holds_the_lines_up_to_the_next_training_pass() {
        assert_eq!(announced_pass("2021-06-27 12:00:01,000 - INFO - allennlp.training.gradient_descent_trainer - Validating"), Some(Pass::Evaluation));
        assert_eq!(announced_pass("***** Running Evaluation *****"), Some(Pass::Evaluation));
        assert_eq!(announced_pass("2021-06-27 12:00:02,000 - INFO - allennlp.training.gradient_descent_trainer - Epoch 1/9"), Some(Pass::Epoch));
        assert_eq!(announced_pass("validation loss 0.3"), None);
        let got = records("Epoch 0/9\nloss: 0.69 ||: 100%|##| 100/100 [00:01<00:00, 50.00it/s]\nValidating\nloss: 0.66 ||: 100%|##| 20/20 [00:00<00:00, 80.00it/s]\nEpoch 1/9\nloss: 0.57 ||: 100%|##| 100/100 [00:01<00:00, 50.00it/s]\n");
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(Some(100), false), (None, true), (Some(200), false)], "{got:?}");
        assert!(got[1].2.iter().any(|(n, v)| n == catalog::VAL_LOSS && *v == 0.66), "{got:?}");
    }

    #[test]
    fn an_epoch_announced_with_its_total_numbers_the_lines_under_it() {
        // A script's settings dict is no step; `Epoch 1/100` before any metric
        // line numbers the loss under it (MathAlphaZero's Chinese log).
        let log = "2026-05-22 02:54:53,879 - INFO - 参数配置: {'epochs': 100, 'lr': 0.001, 'load_model': 'data/brain_3.0.pth', 'no_auto_discover': False}\n\
            2026-05-22 02:56:39,224 - INFO - Epoch 1/100 | 课程深度: 2 | 经验池大小: 85\n\
            2026-05-22 02:57:12,678 - INFO - 训练损失: 32.1293\n\
            2026-05-22 02:57:12,716 - INFO - Epoch 2/100 | 课程深度: 2 | 经验池大小: 97\n\
            2026-05-22 02:57:44,904 - INFO - 训练损失: 25.0835\n";
        let got = records(log);
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(1), Some(2)], "{got:?}");
        assert_eq!(got[0].2, [(catalog::LOSS.to_owned(), 32.1293)]);
        let got = records("Epoch 1/10\nloss: 0.9\nEpoch 2/10\nloss: 0.8\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(1), Some(2)], "{got:?}");
        // An epoch beside a batch counter does not number the lines under it;
        // neither does one after metric lines of no step.
        let got = records("Epoch 0/100, Batch 42/29316\nTotal loss is 721.2\nEpoch 0/100, Batch 43/29316\nTotal loss is 1554.5\n");
        assert!(got.iter().all(|r| r.0 != Some(0)), "{got:?}");
        let got = records("loss 0.9\nloss 0.8\nEpoch 1/10\nloss: 0.7\n");
        assert!(got.iter().all(|r| r.0.is_none()), "{got:?}");
    }

    #[test]
    fn a_name_starts_with_a_letter() {
        // fastText: the ETA's pieces are no metrics.
        let got = records("Progress:  50.0% words/sec/thread:   76841 lr:  0.050012 avg.loss:  6.123456 ETA:   0h 0m 5s");
        assert!(got[0].2.iter().all(|(n, _)| n.starts_with(|c: char| c.is_ascii_alphabetic())), "{got:?}");
        assert!(got[0].2.contains(&(catalog::LOSS.to_owned(), 6.123456)), "{got:?}");
    }

    #[test]
    fn a_line_naming_only_a_step_gives_it_to_the_lines_under_it() {
        let got = records("=== Step 100 ===\nloss: 2.3\ngrad_norm: 1.5\n=== Step 200 ===\nloss: 2.1\n");
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(Some(100), false), (Some(100), false), (Some(200), false)], "{got:?}");
        // A name again under one header: a step of its own, counted on as before.
        let got = records("Step 100\nloss: 2.3\nloss: 2.2\n");
        assert_eq!((got[0].0, got[1].0), (Some(100), None), "{got:?}");
        // Dopamine: the iteration announced as it starts.
        let got = records("Starting iteration 3\nloss: 2.3\n");
        assert_eq!(got[0].0, Some(3), "{got:?}");
    }

    #[test]
    fn one_pair_a_line_under_a_step_of_its_own_is_that_steps_whatever_its_name() {
        // DeepRM: a tab pads each pair, a spread follows some values, names are its own.
        let got = records("Iteration: \t 0\nNumTrajs: \t 200\nLoss:     \t 0.1269\nMeanRew: \t -257.43 +- 63.18\n-----------------\nIteration: \t 1\nNumTrajs: \t 200\nLoss:     \t 0.1925\nMeanRew: \t -261.04 +- 57.66\n");
        let at = |step: u64| got.iter().filter(|r| r.0 == Some(step)).flat_map(|r| r.2.clone()).collect::<Vec<_>>();
        assert_eq!(at(0), [("numtrajs".to_owned(), 200.0), (catalog::LOSS.to_owned(), 0.1269), ("meanrew".to_owned(), -257.43)], "{got:?}");
        assert_eq!(at(1).len(), 3, "{got:?}");
        // Before any step, such lines are a configuration's, not metrics.
        assert!(records("seed: 3\nbatch_size: 32\n").is_empty());
        // PyMARL: rows of several pairs under its `Recent Stats | t_env: N` header.
        let got = records("[INFO 09:39:05] my_main Recent Stats | t_env:    8443380 | Episode:   331792\nbattle_won_mean:           0.0025\tdead_allies_mean:          5.9931\nepsilon:                   0.0500\tgrad_norm:                 1.2608\tloss:                      0.1001\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(8443380), Some(8443380)], "{got:?}");
        assert!(got[0].2.iter().any(|(n, v)| n == "battle_won_mean" && *v == 0.0025), "{got:?}");
    }

    #[test]
    fn logger_tables_of_numbers_are_read_whatever_their_names_and_a_rounded_count_is_no_step() {
        // OpenAI Baselines: `misc/total_timesteps` in three figures repeats; the tables count on.
        let table = |reward: &str| format!("{}\n| eprewmean               | {reward}      |\n| fps                     | 721      |\n| loss/approxkl           | 0.0043   |\n| loss/policy_entropy     | 0.786    |\n| misc/nupdates           | 7.3e+03  |\n| misc/total_timesteps    | 7.48e+06 |\n{}\n", "-".repeat(38), "-".repeat(38));
        let got = records(&(table("836") + &table("831")));
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [None, None], "{got:?}");
        assert!(got[1].2.iter().any(|(n, v)| n == catalog::REWARD && *v == 831.0), "{got:?}");
        // garage and rllab: `tabulate`'s rows between rules apart by spaces, no known name needed.
        let got = records("---------------------------------------  ---------------\nEnvExecTime                                   0.266177\nEvaluation/AverageReturn                    200\nEvaluation/NumTrajs                          52\nTotalEnvSteps                            193658\npolicy/LossAfter                             -0.00815415\nPolicyExecTime                                1.18185\n---------------------------------------  ---------------\n");
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, Some(193658), "{got:?}");
        assert!(got[0].2.iter().any(|(n, v)| n == "policy/lossafter" && *v == -0.00815415), "{got:?}");
        // rlpyt and rllab: the logger's time before every row and rule, a unit in a name.
        let got = records("2020-12-08 21:40:50.116393  | -----------------------------  ------------\n2020-12-08 21:40:50.116401  | Diagnostics/CumTime (s)            620.99\n2020-12-08 21:40:50.116412  | ReturnAverage                     -0.48\n2020-12-08 21:40:50.116420  | loss/Average                        nan\n2020-12-08 21:40:50.116433  | loss/Std                           0.31\n2020-12-08 21:40:50.116440  | grad_norm/Average                  41.2\n2020-12-08 21:40:50.116452  | -----------------------------  ------------\n");
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].2.iter().any(|(n, v)| n == catalog::REWARD && *v == -0.48) && got[0].2.iter().any(|(n, v)| n == "loss/average" && v.is_nan()), "{got:?}");
        // fairseq's time and level stay: its logger names the phase.
        assert_eq!(without_logging_prefix("2021-03-01 12:01:00 | INFO | train_inner | epoch 001:    100 / 1563 loss=12.3"), "2021-03-01 12:01:00 | INFO | train_inner | epoch 001:    100 / 1563 loss=12.3");
        // A decoration of dashes over prose is no table.
        assert!(records("--------  --------\nStarting the run now\n--------  --------\n").is_empty());
    }

    #[test]
    fn the_episode_that_opens_a_line_numbers_it() {
        let got = records("Episode: 59, Actions: 2351, reward: -18, Avg. reward: -19.900\nEpisode: 60, Actions: 1738, reward: -21, Avg. reward: -19.900\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(59), Some(60)], "{got:?}");
        assert!(!got[0].2.iter().any(|(n, _)| n == "episode"), "{got:?}");
        // Behind a counter, the counter numbers the line and the episode is its
        // metric (keras-rl's `11087/50000: episode: 81`).
        let got = records(" 11087/50000: episode: 81, duration: 5.514s, episode reward: -752.191, loss: 0.5\n");
        assert_eq!(got[0].0, Some(11087), "{got:?}");
    }

    #[test]
    fn a_line_naming_its_step_is_read_in_a_presets_log() {
        let mut progress = Progress::default();
        let read: Vec<_> = ["[2023-04-05 11:17:06,841] [INFO] [logging.py:75:log_dist] [Rank 0] step=20, skipped=19, lr=[1e-05], mom=[[0.9, 0.95]]", "loss:2.384765625, global_step:20"]
            .iter()
            .map(|l| match parse_in_order(Preset::DeepSpeed, l, &mut progress) {
                Line::Metrics(r) => (r.step, r.fields.iter().map(|(n, v)| (n.to_string(), *v)).collect::<Vec<_>>()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(read[1], (Some(20), vec![("loss".to_owned(), 2.384765625)]), "{read:?}");
    }

    #[test]
    fn an_interval_of_steps_is_a_pass_like_an_epoch() {
        // keras-rl: each interval's bar counts its own steps to the same total.
        let got = records("Interval 1 (0 steps performed)\n10000/10000 [====] - 45s - reward: -6.69\nInterval 2 (10000 steps performed)\n10000/10000 [====] - 44s - reward: -3.24\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(10000), Some(20000)], "{got:?}");
        // SpeechBrain announces its epochs in a sentence.
        let got = records("speechbrain.utils.epoch_loop - Going into epoch 1\n100%|####| 190/190 [03:08<00:00,  1.01it/s, train_loss=0.945]\nspeechbrain.utils.epoch_loop - Going into epoch 2\n100%|####| 190/190 [03:02<00:00,  1.04it/s, train_loss=0.726]\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(190), Some(380)], "{got:?}");
        // The results printed after a finished bar are that pass's, at its last
        // step, unless they give one of its values another: keras-rl's episode
        // reward after its bar's mean reward (both `reward`) is a step of its own.
        let got = records("Interval 1 (0 steps performed)\n10000/10000 [====] - 45s - reward: -6.69\n50 episodes - loss: 0.804 - mean_q: -31.1\n");
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(Some(10000), false), (None, true)], "{got:?}");
        let got = records("Interval 1 (0 steps performed)\n10000/10000 [====] - 45s - reward: -6.69\n50 episodes - episode_reward: -1338.704 [-1778.884, -888.810] - loss: 0.804 - mean_q: -31.1\n");
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(Some(10000), false), (None, false)], "{got:?}");
        let got = records("100%|####| 190/190 [03:08<00:00,  1.01it/s, train_loss=0.945]\nspeechbrain.utils.train_logger - epoch: 1, lr: 1.00e+00 - train loss: 9.45e-01 - valid loss: 1.23\n");
        assert_eq!((got[1].0, got[1].1), (None, true), "{got:?}");
        assert!(!got[1].2.iter().any(|(n, _)| n == "epoch"), "{got:?}");
        // A line giving one of the bar's values another is no result of its pass.
        let got = records("epoch: [10/10], lr: 0.000545, acc: 0.574219, loss: 3.874272\nbest metric, acc: 0, is_float16: False\n");
        assert!(!got[1].1, "{got:?}");
        // A bar still under way is no pass's end.
        let got = records("50/190 [01:00<02:00, train_loss=0.945]\nloss: 0.9, mean_q: 3.1\n");
        assert!(!got[1].1, "{got:?}");
        assert!(!names_an_epoch("Saving the model for the best validation loss at epoch 3 of 10"));
    }

    #[test]
    fn a_line_naming_only_an_epoch_numbers_the_lines_under_it_before_any_step() {
        let got = records("Epoch 1\ntrain loss: 2.31\nval loss: 2.20\nEpoch 2\ntrain loss: nan\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(1), Some(1), Some(2)], "{got:?}");
        // An epoch of many prints (a name again under one header): counted on from there.
        let got = records("Epoch 1\nloss: 2.3\nloss: 2.2\nEpoch 2\nloss: 2.1\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(1), None, None], "{got:?}");
        // Keras: the epoch's bar counts its batches; the epoch does not number them.
        let got = records("Epoch 1/2\n100/100 - 1s - loss: 0.5\nEpoch 2/2\n100/100 - 1s - loss: 0.4\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(100), Some(200)], "{got:?}");
    }

    #[test]
    fn tensorflow_estimators_evaluation_is_at_its_step_under_evaluation_names() {
        let got = records("loss = 0.0993, step = 401 (0.619 sec)\nSaving dict for global step 500: accuracy = 0.9712, global_step = 500, loss = 0.0934\n");
        assert_eq!(got[1].0, Some(500), "{got:?}");
        assert_eq!(got[1].2, [("val_accuracy".to_owned(), 0.9712), (catalog::VAL_LOSS.to_owned(), 0.0934)], "{got:?}");
    }

    #[test]
    fn an_evaluations_own_lines_are_read_for_their_scores() {
        // OpenNMT-py behind its bracketed time and level: one result per line, the step before's.
        let got = records("[2023-03-01 12:03:00,000 INFO] Step 150/100000; acc: 12.75; ppl: 812.30; xent: 6.70;\n[2023-03-01 12:04:00,000 INFO] Validation perplexity: 901.12\n[2023-03-01 12:04:00,001 INFO] Validation accuracy: 11.98\n");
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(Some(150), false), (None, true), (None, true)], "{got:?}");
        assert_eq!(got[1].2, [("validation_perplexity".to_owned(), 901.12)], "{got:?}");
        // mmengine: the validation pass's last line carries the scores (none of them a name rlmon knows).
        let got = records("Iter(train) [ 100/40000]  lr: 9.9e-03  loss: 1.9\nIter(val) [500/500]    aAcc: 91.23  mIoU: 56.78  mAcc: 67.89\n");
        assert!(got[1].1 && got[1].2.iter().any(|(n, v)| n == "val_miou" && *v == 56.78), "{got:?}");
        // Marian: every validator, known or not.
        let got = records("[2019-04-02 10:03:40] [valid] Ep. 1 : Up. 1500 : bleu : 13.45 : new best\n");
        assert_eq!(got[0].2, [("val_bleu".to_owned(), 13.45)], "{got:?}");
        // A bar labelled as an evaluation names no result.
        assert_eq!(records("Validation: 100%\n"), []);
    }

    #[test]
    fn a_bracketed_time_and_level_are_no_part_of_the_line() {
        assert_eq!(without_logging_prefix("[2023-03-01 12:04:00,001 INFO] Validation accuracy: 11.98"), "Validation accuracy: 11.98");
        assert_eq!(without_logging_prefix("[2019-04-02 10:00:01] Training started"), "Training started");
        for not in ["[11/29 10:00:10 d2.utils.events]:  iter: 19", "[rank0]: loss 2", "[100] loss=3.2", "[2023-03-01] loss 2"] {
            assert_eq!(without_logging_prefix(not), not);
        }
    }

    #[test]
    fn a_centred_step_header_numbers_the_indented_lines_under_it() {
        // rsl_rl: the header and every metric indented; `Total timesteps` names no header.
        let got = records("            Learning iteration 0/1500            \n      Value function loss: 0.0123\n           Surrogate loss: -0.0041\n              Mean reward: -0.45\n          Total timesteps: 98304\n           Iteration time: 2.13s\n            Learning iteration 1/1500            \n      Value function loss: 0.0231\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(0), Some(0), Some(0), Some(0), Some(1)], "{got:?}");
        assert_eq!(got[1].2, [(catalog::POLICY_LOSS.to_owned(), -0.0041)], "{got:?}");
        assert_eq!(got[3].2, [(catalog::STEP_TIME_S.to_owned(), 2.13)], "{got:?}");
        // As rsl_rl prints it: the header in bold.
        let got = records("             \x1b[1m Learning iteration 7/1500 \x1b[0m             \n      Value function loss: 0.0123\n              Mean reward: -0.45\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(7), Some(7)], "{got:?}");
        // RLlib's `pretty_print`: a header naming its step and ending in `:` numbers the lines under it.
        let got = records("Training iteration 1:\nepisode_reward_mean: 22.1\ninfo:\n  learner:\n    kl: 0.02\nTraining iteration 2:\nepisode_reward_mean: 41.3\n");
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(Some(1), false), (None, true), (Some(2), false)], "{got:?}");
    }

    #[test]
    fn a_rate_without_a_name_is_that_rate() {
        // llm.c, both styles.
        let got = records("step    2/74: train loss 10.543210 norm 12.1234 lr 2.00e-05 (234.123456 ms, 69979 tok/s)\nstep    2/18865 | loss 10.939411 (+nanz)| norm 15.2109 (+nanz)| lr 1.71e-06 | 1003.86 ms | 71.4% bf16 MFU | 522274 tok/s\n");
        assert!(got[0].2.contains(&(catalog::TOKENS_PER_S.to_owned(), 69979.0)), "{got:?}");
        assert!(got[1].2.contains(&(catalog::TOKENS_PER_S.to_owned(), 522274.0)), "{got:?}");
        // OpenNMT-py's source and target rates are not one rate; a named rate is read by its name.
        assert_eq!(keyless_rate("Step 50/100000; xent: 7.76; 2345/2456 tok/s;"), None);
        assert_eq!(keyless_rate("loss: 2.3 throughput: 1234 tok/s"), None);
    }

    #[test]
    fn glogs_prefix_is_no_part_of_the_line() {
        assert_eq!(without_logging_prefix("I0628 12:00:00.123456 12345 solver.cpp:218] Iteration 100, loss = 0.214"), "Iteration 100, loss = 0.214");
        assert_eq!(without_logging_prefix("W0501 09:15:02.5 140012345678912 trainer.py:48]     Train net output #0: loss = 0.2"), "Train net output #0: loss = 0.2");
        for not in ["I0628 is no prefix: loss = 2", "E2024 12:00:00 x y] loss 2", "I0628 12:00:00.1 x solver.cpp:1] loss 2"] {
            assert_eq!(without_logging_prefix(not), not);
        }
    }

    #[test]
    fn an_evaluation_announced_with_its_step_has_its_labelled_outputs_at_that_step() {
        // Caffe: the test net's outputs come between the announcement and the training line of the same iteration.
        let got = records("Iteration 100, loss = 0.21\nIteration 200, Testing net (#0)\n    Test net output #0: accuracy = 0.97\n    Test net output #1: loss = 0.089 (* 1 = 0.089 loss)\nIteration 200, loss = 0.15\n    Train net output #0: loss = 0.15 (* 1 = 0.15 loss)\n");
        let at = |step: u64, name: &str| got.iter().filter(|r| r.0 == Some(step)).flat_map(|r| r.2.iter()).find(|(n, _)| n == name).map(|(_, v)| *v);
        assert_eq!((at(200, "val_accuracy"), at(200, catalog::VAL_LOSS), at(200, catalog::LOSS)), (Some(0.97), Some(0.089), Some(0.15)), "{got:?}");
        assert!(labels_evaluation("Validation Results - Epoch: 1  Avg accuracy: 0.94"));
        assert!(labels_evaluation("Test net output #1: loss = 0.089"));
        assert!(!labels_evaluation("Training Results - Epoch: 1  Avg loss: 0.21"));
    }

    #[test]
    fn darknets_progress_line_is_its_iteration() {
        for (line, step, loss, lr, seconds) in [
            ("1: 697.416260, 697.416260 avg, 0.000000 rate, 3.466498 seconds, 64 images", 1, 697.41626, 0.0, 3.466498),
            (" 1200: 6.274102, 8.031544 avg loss, 0.001000 rate, 3.471000 seconds, 76800 images, 22.1 hours left", 1200, 6.274102, 0.001, 3.471),
        ] {
            let got = records(line);
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].0, Some(step));
            assert_eq!(got[0].2, [(catalog::LOSS.to_owned(), loss), (catalog::LR.to_owned(), lr), (catalog::STEP_TIME_S.to_owned(), seconds)]);
        }
        let got = records(" 7: -nan, -nan avg loss, 0.000010 rate, 3.5 seconds, 448 images, 21.0 hours left");
        assert!(got[0].2[0].1.is_nan(), "{got:?}");
        // A layer's diagnostics between iterations: no step, though it names a total loss.
        assert!(records("v3 (iou loss, Normalizer: (iou: 0.07, obj: 1.00, cls: 1.00) Region 150 Avg (IOU: 0.25), count: 4, class_loss = 1121.5, iou_loss = 7.39, total_loss = 1128.9 ").is_empty());
        assert!(records("Region 82 Avg IOU: 0.279510, Class: 0.487458, Obj: 0.499466, No Obj: 0.500460, .5R: 0.111111, .75R: 0.000000,  count: 9").is_empty());
    }

    #[test]
    fn a_bracketed_counter_with_the_seconds_so_far_is_the_step() {
        // nshepperd's gpt-2: `[counter | time] loss=... avg=...`.
        let got = records("[1010 | 7.48] loss=3.44 avg=3.44\n[1020 | 20.80] loss=3.28 avg=3.36\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(1010), Some(1020)]);
        assert_eq!(bracketed_step("[12 | x] loss=1"), None, "seconds are a number");
    }

    #[test]
    fn a_mean_of_the_loss_is_the_loss_only_without_the_loss_itself() {
        assert_eq!(records("step 3, avr_loss=0.0912")[0].2, [(catalog::LOSS.to_owned(), 0.0912)]);
        assert_eq!(records("step 3, loss=0.5, avg_loss=0.61")[0].2, [(catalog::LOSS.to_owned(), 0.5), (catalog::MEAN_LOSS.to_owned(), 0.61)]);
    }

    #[test]
    fn python_loggings_default_prefix_is_not_part_of_the_first_word() {
        // `logging.basicConfig()`: `LEVEL:logger:message`; the step word was glued to it.
        let got = records("INFO:root:step=10 loss=2.3\nINFO:__main__:step=20 loss=2.2\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(10), Some(20)], "{got:?}");
        assert_eq!(without_logging_prefix("INFO:tensorflow:loss = 2.3, step = 100"), "loss = 2.3, step = 100");
        assert_eq!(without_logging_prefix("INFO: loss=2"), "INFO: loss=2", "no logger name: not the default format");
        assert_eq!(without_logging_prefix("loss:2"), "loss:2");
    }

    #[test]
    fn batches_numbered_within_their_epoch_count_on_across_epochs() {
        // MXNet's Speedometer and epoch-end lines: batches restart each epoch, whose
        // length is learned from where it ends; the epoch's results join its last batch.
        let log = "INFO:root:Epoch[0] Batch [0-100]\tSpeed: 4512.45 samples/sec\taccuracy=0.78\n\
                   INFO:root:Epoch[0] Batch [100-200]\tSpeed: 4601.11 samples/sec\taccuracy=0.91\n\
                   INFO:root:Epoch[0] Train-accuracy=0.92\n\
                   INFO:root:Epoch[0] Time cost=13.215\n\
                   INFO:root:Epoch[0] Validation-cross-entropy=0.16\n\
                   INFO:root:Epoch[1] Batch [0-100]\tSpeed: 4599.45 samples/sec\taccuracy=0.96\n";
        let got = records(log);
        let steps: Vec<_> = got.iter().map(|r| (r.0, r.1)).collect();
        // (`Train-accuracy` and `Time cost` alone are no metric rlmon knows: text.)
        assert_eq!(steps, [(Some(100), false), (Some(200), false), (None, true), (Some(300), false)], "{got:?}");
        assert!(got.iter().all(|r| r.2.iter().all(|(n, _)| n != "epoch" && n != "loss")), "the epoch numbers the steps; a time cost is no loss: {got:?}");
        assert_eq!(got[2].2, [("val_loss".to_owned(), 0.16)]);
        // GluonCV's `[Epoch 1 Batch 100]` reads alike; an epoch with one printed batch too.
        let got = records("[Epoch 0 Batch 100] Speed: 12.5 samples/sec accuracy=0.1\n[Epoch 1 Batch 100] Speed: 12.5 samples/sec accuracy=0.2\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(100), Some(200)], "{got:?}");
    }

    #[test]
    fn a_tables_epoch_column_numbers_its_rows_and_is_no_metric() {
        // fastai's progress table printed to a console.
        let got = records("epoch     train_loss  valid_loss  error_rate  time    \n0         0.168927    0.020729    0.006766    00:38     \n1         0.064392    0.012938    0.004060    00:37     \n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(0), Some(1)], "{got:?}");
        assert!(got.iter().all(|r| r.2.iter().all(|(n, _)| n != "epoch")), "{got:?}");
    }

    #[test]
    fn a_header_gives_its_step_to_the_indented_lines_under_it() {
        // Composer's console log: a progress header, then one metric a line; its
        // evaluation results continue the training step before them.
        let log = "Config:\nmax_duration: 2ba\n[batch=1/2]:\n\t Train time/batch: 0\n\t Train loss/train/total: 7.1239\n\t Train lr-DecoupledAdamW/group0: 0.0006\n\t Train throughput/device/tokens_per_sec: 19728.1263\n[batch=2/2]:\n\t Train loss/train/total: 6.5\n\t Train l2_norm/grad/global: 1.25\n[Eval batch=5/5] Eval on eval data:\n\t Eval metrics/eval/LanguageCrossEntropy: 6.75\nsome other output\n\t loss: 3.0\n";
        let got = records(log);
        let steps: Vec<(Option<u64>, bool)> = got.iter().map(|(s, c, _)| (*s, *c)).collect();
        assert_eq!(steps, vec![(Some(1), false), (Some(1), false), (Some(1), false), (Some(1), false), (Some(2), false), (Some(2), false), (None, true), (None, false)]);
        let names: Vec<&str> = got.iter().flat_map(|(_, _, f)| f.iter().map(|(n, _)| n.as_str())).collect();
        assert_eq!(names, vec!["time/batch", "loss", "lr", "tokens_per_s", "loss", "grad_norm", "val_loss", "loss"]);
        // Composer's epoch-long runs: `[epoch=E][batch=B/N]`, the batch restarting each epoch.
        let steps: Vec<Option<u64>> = records("[epoch=1][batch=1/2]:\n\t Train loss/train/total: 2\n[epoch=1][batch=2/2]:\n\t Train loss/train/total: 2\n[epoch=2][batch=1/2]:\n\t Train loss/train/total: 2\n").into_iter().map(|r| r.0).collect();
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    }

    #[test]
    fn a_table_between_rules_is_one_record() {
        // Stable-Baselines3: sections, rows, a rule before and after every table.
        let table = |it: u64, rew: f64| format!("-----------------------------------------\n| rollout/                |             |\n|    ep_len_mean          | 200         |\n|    ep_rew_mean          | {rew:<11} |\n| time/                   |             |\n|    fps                  | 1170        |\n|    iterations           | {it:<11} |\n|    total_timesteps      | {:<11} |\n| train/                  |             |\n|    approx_kl            | 0.012       |\n|    entropy_loss         | -1.38       |\n|    learning_rate        | 0.0003      |\n|    loss                 | 12.3        |\n|    policy_gradient_loss | -0.0123     |\n-----------------------------------------\n", it * 2048);
        let log = format!("Using cpu device\n{}{}", table(1, -1200.5), table(2, -1100.0));
        let got = records(&log);
        assert_eq!(got.len(), 2, "{got:?}");
        let (step, _, fields) = &got[1];
        assert_eq!(*step, Some(4096));
        let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!((get("reward"), get("samples_per_s"), get("lr"), get("loss"), get("policy_loss")), (Some(-1100.0), Some(1170.0), Some(0.0003), Some(12.3), Some(-0.0123)));
        assert_eq!((get("entropy"), get("approx_kl"), get("rollout/ep_len_mean")), (Some(1.38), Some(0.012), Some(200.0)));
        // A rule as decoration around ordinary lines: those lines are read as ever.
        let got = records("==========\nEpoch 1 step 5 loss: 2.5\n==========\nstep 6 loss: 2.4\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), vec![Some(5), Some(6)]);
        // A table of no metric rlmon knows is not a record.
        assert!(records("--------------\n| name | value |\n| foo | 1 |\n--------------\n").is_empty());
    }

    #[test]
    fn rows_under_a_header_row_are_read_by_column() {
        // fastai: a header row, a row of numbers per epoch, a clock in the last cell.
        let log = "epoch     train_loss  valid_loss  accuracy  time    \n0         1.234567    0.876543    0.700000  00:10     \n1         0.934567    #na#        0.750000  00:10\nsaving model\n2         0.834567    0.746543    0.780000  00:11     \n";
        let got = records(log);
        assert_eq!(got.len(), 3, "{got:?}");
        let get = |i: usize, n: &str| got[i].2.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!((get(0, "loss"), get(0, "val_loss"), get(0, "accuracy")), (Some(1.234567), Some(0.876543), Some(0.7)));
        assert_eq!((get(1, "loss"), get(1, "val_loss")), (Some(0.934567), None));
        // Words of prose are not a header; a header of unknown names is not one either.
        assert!(records("training is done now\n1 2 3 4\n").is_empty());
        assert!(records("alpha gamma\n1 2\n").is_empty());
    }

    #[test]
    fn rows_under_a_header_row_of_cells_split_at_bars_are_read_by_column() {
        // OpenAI Baselines' PPO: a header row of names between `|`, a row per optimisation epoch.
        let log = "********* Iteration 10 ************\nOptimizing...\n     pol_surr |    pol_entpen |       vf_loss |            kl |           ent\n      0.95906 |       0.00000 |      1.73e+05 |       0.01685 |      -0.34684\n      0.42724 |       0.00000 |      1.67e+05 |       1.75743 |      -0.35772\n";
        let got = records(log);
        assert_eq!(got.len(), 2, "{got:?}");
        let get = |i: usize, n: &str| got[i].2.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!((get(0, "kl"), get(0, "value_loss"), get(1, "kl")), (Some(0.01685), Some(1.73e5), Some(1.75743)));
        // Rows of another count of cells, or with words, are not read by it.
        assert!(records("pol_surr | kl\n0.9 | 0.1 | 3\nnot | numbers\n").is_empty());
        // A DeepSpeed-Chat line (`Epoch: 0 | Step: 10 | ...`) is no header row.
        assert!(column_names("Epoch: 0 | Step: 10 | Actor Loss: 0.12").is_none());
        // A Markdown table of a trainer's results, names of several words.
        let got = records("| Epoch | Training Loss | Validation Loss |\n|-------|---------------|-----------------|\n| 1 | 0.912 | 0.874 |\n| 2 | 0.701 | 0.790 |\n");
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[1].2.contains(&("loss".into(), 0.701)) && got[1].2.contains(&("val_loss".into(), 0.79)), "{got:?}");
    }

    #[test]
    fn an_iteration_and_a_step_on_one_line_number_the_point_by_the_iteration() {
        // LitGPT prints a line per micro-batch; its optimizer step repeats over them.
        assert_eq!(fields(Preset::Generic, "Epoch 1 | iter 1152 step 144 | loss train: 11.463, val: n/a | iter time: 1260.82 ms").0, Some(1152));
        assert_eq!(fields(Preset::Generic, "step 144 iter 1152: loss 11.463").0, Some(1152));
    }

    #[test]
    fn a_label_naming_an_evaluation_before_the_step_makes_an_evaluation_line() {
        for (line, want) in [
            ("[11/27/24 10:13:50] INFO     fairseq2.recipes - Valid Metrics (step 100) - NLL Loss: 2.305 | Number of Sequences: 512", true),
            ("Eval at step 500: loss 1.2", true),
            ("validation step: 40 loss=0.3", true),
            ("[11/27/24 10:13:50] INFO     fairseq2.recipes - Train Metrics (step 100) - NLL Loss: 2.055 | Gradient Norm: 1.20", false),
            ("step 100 | val_loss 2.3 | loss 2.1", false),
            ("global_step=100 eval_loss=2.3", false),
            ("Saving the model for later validation at step 100, loss 2.1", false),
            ("Evaluation done, steps: 100", false),
        ] {
            assert_eq!(evaluation_at_step(line), want, "{line}");
        }
    }

    #[test]
    fn an_evaluation_pass_belongs_to_the_step_before_under_evaluation_names() {
        // timm: the test pass counts its own batches; they do not move the training step.
        let got = records("Train: 0 [1250/1251 (100%)]  Loss: 6.712 (6.85)  LR: 1.000e-06\nTest: [  48/48]  Time: 0.105 (0.212)  Loss:  6.7969 (6.8020)  Acc@1:  0.7075 ( 0.6500)\nTrain: 1 [  50/1251 (  4%)]  Loss: 6.652 (6.68)  LR: 2.008e-04\n");
        let steps: Vec<(Option<u64>, bool)> = got.iter().map(|r| (r.0, r.1)).collect();
        assert_eq!(steps, [(Some(1250), false), (None, true), (Some(1301), false)]);
        assert!(got[1].2.contains(&(catalog::VAL_LOSS.to_owned(), 6.7969)) && !got[1].2.iter().any(|(n, _)| n == catalog::LOSS), "{got:?}");
        // mmengine's `Epoch(val)`; a training line that prints a validation loss is no evaluation pass.
        assert!(is_evaluation_pass("2024/05/01 12:08:00 - mmengine - INFO - Epoch(val)  [1][500/500]    coco/bbox_mAP: 0.2130"));
        assert!(!is_evaluation_pass("2024/05/01 - mmengine - INFO - Epoch(train)  [1][  50/1000]  loss: 2.1"));
        assert!(!is_evaluation_pass("Epoch 0: 100%|###| 10/10 [00:05<00:00, val_loss=2.05]"));
    }

    #[test]
    fn a_line_labelled_as_an_evaluation_is_the_results_of_the_step_before() {
        // PyTorch's MNIST example: the test set's loss is no training loss of the epoch's last step.
        let got = records("Train Epoch: 1 [59520/60000 (99%)]\tLoss: 0.012345\n\nTest set: Average loss: 0.0335, Accuracy: 9890/10000 (99%)\n\nTrain Epoch: 2 [0/60000 (0%)]\tLoss: 0.021000\n");
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!((got[1].0, got[1].1), (None, true), "{got:?}");
        assert!(got[1].2.iter().any(|(n, v)| n == catalog::VAL_LOSS && *v == 0.0335) && !got[1].2.iter().any(|(n, _)| n == catalog::LOSS), "{got:?}");
        assert!(labels_evaluation("Validation: loss 0.3"));
        assert!(!labels_evaluation("val_loss: 0.3"));
        assert!(!labels_evaluation("Train Epoch: 1 [0/60000 (0%)]"));
        assert!(!labels_evaluation("2024-05-01 12:00:00 test loss 0.3"));
    }

    #[test]
    fn a_summary_line_belongs_to_the_step_before() {
        // PyTorch's examples: `end of epoch` is no point of its own, and no metric either.
        let got = records("| epoch   1 |   600/ 2983 batches | lr 20.00 | ms/batch 12.01 | loss  6.49 | ppl   657.73\n| end of epoch   1 | time: 38.45s | valid loss  5.98 | valid ppl   395.62\n");
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(Some(600), false), (None, true)]);
        assert!(got[1].2.contains(&(catalog::VAL_LOSS.to_owned(), 5.98)) && !got[1].2.iter().any(|(n, _)| n == "end_of_epoch"), "{got:?}");
    }

    #[test]
    fn fairseqs_logger_names_tell_evaluations_and_epoch_summaries() {
        let log = "2021-03-01 12:03:24 | INFO | train_inner | epoch 001:    300 / 1563 loss=9.251, ppl=609.3, num_updates=300, gnorm=1.201\n2021-03-01 12:20:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 8.912 | ppl 481.72 | num_updates 1563\n2021-03-01 12:20:01 | INFO | train | epoch 001 | loss 9.912 | ppl 963.5 | num_updates 1563\n";
        let got = records(log);
        assert_eq!(got.len(), 2, "the epoch's summary is no point: {got:?}");
        assert_eq!(got[1].0, Some(1563));
        assert!(got[1].2.contains(&(catalog::VAL_LOSS.to_owned(), 8.912)) && !got[1].2.iter().any(|(n, _)| n == catalog::LOSS), "{got:?}");
    }

    #[test]
    fn clus_bracketed_step_source_locations_and_bar_labels() {
        // clu's logging writer after absl's prefix: `[100]` is the step, `train.py:48` no metric.
        let (step, f) = fields(Preset::Generic, "I0501 12:01:00.000000 140012345678912 logging_writer.py:48] [100] learning_rate=8.0e-05, loss=7.8123");
        assert_eq!((step, f), (Some(100), vec![(catalog::LR.into(), 8.0e-05), (catalog::LOSS.into(), 7.8123)]));
        let (_, f) = fields(Preset::Generic, "I0501 12:00:00.000000 1400 train.py:141] epoch:  1, train_loss: 0.2404");
        assert!(!f.iter().any(|(n, _)| n.contains("py")), "{f:?}");
        assert_eq!(bracketed_step("[1][  50/1000] loss: 2"), None);
        assert_eq!(bracketed_step("x [12] loss=2"), None, "after prose, not after a prefix");
        // A bar's label before its percentage (levanter's `Train:  10%|#  |`) is no metric.
        let (step, f) = fields(Preset::Generic, "Train:   1%|1         | 10/1000 [00:31<51:30,  3.12s/it, loss=10.8]");
        assert_eq!(step, Some(10));
        assert!(!f.iter().any(|(n, _)| n == "train"), "{f:?}");
        // MaxText's `completed step`.
        assert_eq!(fields(Preset::Generic, "completed step: 5, seconds: 1.800, Tokens/s/device: 27306.980, loss: 9.102").0, Some(5));
    }

    #[test]
    fn a_configuration_dumped_under_a_header_before_any_step_is_no_point() {
        // torchtune prints its resolved config: `optimizer:` then `  lr: 2.0e-05`.
        let got = records("optimizer:\n  _component_: torch.optim.AdamW\n  lr: 2.0e-05\nstep 1 loss: 2.5\n");
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(1)], "{got:?}");
    }

    #[test]
    fn a_trainers_dict_in_a_deepspeed_log_is_more_of_its_step() {
        let mut progress = Progress::default();
        let log = ["[2024-05-01 12:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[9.999e-05], mom=[(0.9, 0.95)]", "{'loss': 2.345, 'learning_rate': 9.999e-05, 'epoch': 0.01}"];
        let got: Vec<Line> = log.iter().map(|l| parse_in_order(Preset::DeepSpeed, l, &mut progress)).collect();
        match &got[1] {
            Line::Metrics(r) => assert_eq!((r.step, r.continues, r.fields[0].clone()), (None, true, ("loss".into(), 2.345))),
            other => panic!("{other:?}"),
        }
        // Its end-of-run summary is still no point.
        assert_eq!(parse_in_order(Preset::DeepSpeed, "{'train_runtime': 10.0, 'train_loss': 2.2}", &mut progress), Line::Text);
    }

    #[test]
    fn nemo2s_global_step_numbers_its_lines_across_epochs() {
        let (step, f) = fields(Preset::Megatron, "Training epoch 1, iteration 3/99 | lr: 5.997e-07 | global_batch_size: 512 | global_step: 103 | reduced_train_loss: 10.91 | train_step_timing in s: 5.1");
        assert_eq!(step, Some(103));
        assert!(f.contains(&(catalog::LOSS.into(), 10.91)) && f.contains(&(catalog::STEP_TIME_S.into(), 5.1)) && !f.iter().any(|(n, _)| n == "global_step"), "{f:?}");
    }

    #[test]
    fn megatrons_validation_line_is_the_validation_loss_of_its_iteration() {
        let (step, f) = fields(Preset::Megatron, " validation loss at iteration 30 | lm loss value: 8.912345E+00 | lm loss PPL: 7.421234E+03 | ");
        assert_eq!(step, Some(30));
        assert_eq!(f[0], (catalog::VAL_LOSS.into(), 8.912345));
    }

    #[test]
    fn rows_with_a_progress_bar_after_their_cells_are_read_by_column() {
        // ultralytics: a header row per epoch, the row's bar states joined by `\r`.
        let log = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n        1/3      3.21G      1.312      2.812      1.402         45        640:  50%|#####     | 4/8 [00:02<00:02,  1.9it/s]\n                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|##########| 4/4 [00:01<00:00,  3.1it/s]\n                   all        128        929      0.651      0.541      0.612      0.451\n      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n        2/3      3.35G      1.201      2.012      1.301         38        640: 100%|##########| 8/8 [00:04<00:00,  1.9it/s]\n";
        let got = records(log);
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(1), Some(2)], "{got:?}");
        let get = |i: usize, n: &str| got[i].2.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        // (`3.35G` under a word for memory: GiB.)
        assert_eq!((get(0, "box_loss"), get(1, "cls_loss"), get(1, catalog::MEM_GPU_BYTES)), (Some(1.312), Some(2.012), Some(3.35 * 1073741824.0)));
        assert_eq!(without_bar("1/3  3.21G  640:  50%|#####| 4/8"), "1/3  3.21G  640");
        assert_eq!(without_bar("epoch: 2  loss: 0.5"), "epoch: 2  loss: 0.5");
    }

    #[test]
    fn a_bar_labelled_steps_is_numbered_by_its_count_not_its_percentage() {
        // diffusers' and kohya's training scripts: `Steps:   0%|` before the bar.
        let log = "Steps:   0%|          | 1/1000 [00:01<16:39,  1.00s/it, loss=0.123, lr=0.0001]\rSteps:   0%|          | 2/1000 [00:02<16:39,  1.00s/it, loss=0.113, lr=0.0001]\n\
                   Steps:   0%|          | 3/1000 [00:03<16:39,  1.00s/it, loss=nan, lr=0.0001]\n";
        let got = records(log);
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(2), Some(3)], "{got:?}");
    }

    #[test]
    fn tianshou_counts_environment_steps_and_logs_its_test_reward() {
        let log = "Epoch #1: 10001it [00:12, 800.12it/s, env_step=10000, len=23, loss=0.512, n/ep=0, n/st=10, rew=23.00]\n\
                   Epoch #1: test_reward: 45.230000 ± 12.345678, best_reward: 45.230000 ± 12.345678 in #1\n";
        let got = records(log);
        assert_eq!(got[0].0, Some(10000), "{got:?}");
        assert!(got[0].2.contains(&(catalog::REWARD.into(), 23.0)), "{got:?}");
        assert!(got.get(1).is_some_and(|r| r.2.contains(&("test_reward".into(), 45.23))), "{got:?}");
    }

    #[test]
    fn argparse_arguments_are_no_metrics() {
        // PyTorch's word-language-model example prints its arguments first.
        assert_eq!(parse(Preset::Generic, "Namespace(batch_size=20, bptt=35, clip=0.25, cuda=True, epochs=12, lr=20, seed=1111)"), Line::Text);
    }

    #[test]
    fn an_ml_agents_line_names_its_behaviour() {
        assert_eq!(behaviour_of("[INFO] Striker. Step: 10000. Time Elapsed: 61.405 s. Mean Reward: -0.733."), Some("Striker"));
        assert_eq!(behaviour_of("[INFO] SoccerTwos?team=0. Step: 20000. Mean Reward: 0.1."), Some("SoccerTwos?team=0"));
        assert_eq!(behaviour_of("Epoch 3. Step: 100. loss 2.3"), None, "words are no behaviour");
        assert_eq!(behaviour_of("step: 100 loss: 2.3"), None);
    }

    #[test]
    fn of_two_words_for_one_metric_the_plainer_is_read() {
        // AllenNLP's bar: the running `loss` is the loss, not the batch's.
        let (_, f) = fields(Preset::Generic, "accuracy: 0.61, batch_loss: 0.59, loss: 0.57 ||: 100%|##########| 100/100");
        assert_eq!(f, [("accuracy".into(), 0.61), ("loss".into(), 0.57)]);
        // A script that prints only the batch's loss.
        let (_, f) = fields(Preset::Generic, "2025-03-02 05:16:20,962 - INFO - Epoch 1 - Batch loss: 12.1336");
        assert!(f.contains(&("loss".into(), 12.1336)), "{f:?}");
    }

    #[test]
    fn steps_rounded_to_a_magnitude_count_on_by_the_exact_steps_interval() {
        assert_eq!((rounding_unit("2K"), rounding_unit("1.2K"), rounding_unit("3M"), rounding_unit("2000")), (Some(1000), Some(100), Some(1_000_000), None));
        // LeRobot logs every 200 and rounds to the nearest thousand.
        let mut r = RoundedSteps::default();
        let printed = [(400, None), (600, None), (800, None), (1000, Some(1000)), (1000, Some(1000)), (1000, Some(1000)), (2000, Some(1000)), (2000, Some(1000))];
        let got: Vec<u64> = printed.iter().map(|(p, u)| r.number(*p, *u)).collect();
        assert_eq!(got, [400, 600, 800, 1000, 1200, 1400, 1600, 1800]);
        // A gap in the log beyond the rounding: the printed value.
        assert_eq!(r.number(9000, Some(1000)), 9000);
        // No interval known yet: as printed.
        assert_eq!(RoundedSteps::default().number(5000, Some(1000)), 5000);
    }

    #[test]
    fn generic_lines_need_a_known_metric() {
        for line in [
            "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]",
            "Downloading: 45.2MB, eta 12s",
            "step 5 of 10 done",
            "{\"step\": 1, \"loss\": 2.0}",
            "2024-01-01 12:00:00 INFO world_size=8 rank=0 pid=1234",
            "",
        ] {
            assert_eq!(parse(Preset::Generic, line), Line::Text, "{line}");
        }
    }

    #[test]
    fn nanogpt_style_lines_without_commas() {
        let (step, f) = fields(Preset::NanoGpt, "epoch 0 step 10: loss 1.6876 lr 0.0001");
        assert_eq!(step, Some(10));
        assert_eq!(f, vec![("loss".into(), 1.6876), ("lr".into(), 0.0001)]);
    }

    #[test]
    fn a_users_pattern() {
        let p = Pattern::new(r"ep (?P<step>\d+) loss=(?P<loss>\S+) acc=(?P<acc>\S+)").unwrap();
        match p.parse("ep 7 loss=0.5 acc=91.5%") {
            Line::Metrics(r) => assert_eq!((r.step, r.fields), (Some(7), vec![("loss".into(), 0.5), ("acc".into(), 91.5)])),
            other => panic!("{other:?}"),
        }
        assert_eq!(p.parse("unrelated"), Line::Text);
        assert!(Pattern::new(r"(?P<step>\d+)").unwrap_err().contains("names no metric"));
        assert!(Pattern::new(r"(").unwrap_err().starts_with("bad pattern"));
    }
}
