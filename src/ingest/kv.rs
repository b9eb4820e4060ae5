//! `key value` pairs in a line of free-form log text, as trainers print them in
//! every dialect: `loss: 2.31`, `loss=2.31`, `Train loss 2.31`, `lr 1e-4`,
//! `actor/entropy:0.52`, separated by `|`, `,`, ` - `, tabs, brackets or spaces
//! (torchtitan's `step:  1  loss:  7.12  tps: 7,334`, Lightning's and tqdm's
//! postfix `[00:10<01:20, 11.0it/s, v_num=0, train_loss=2.31]`, fairseq's
//! `loss=3.2, ppl=9.1, gnorm=0.8`, MLX's `Iter 25: Train loss 1.593, It/sec 0.99`,
//! Keras' `1/100 [==>...] - ETA: 1:00 - loss: 0.12`).
//!
//! Pure text in, slices of it out: which words are metrics is the catalog's call.

use crate::metrics::catalog;

/// A key and its value as printed (`2.31`, `123ms`, `8.1 GB`, `1000/1750`), both
/// slices of the line.
pub type Pair<'a> = (&'a str, &'a str);

/// A word of a key: letters, digits and the punctuation metric names use.
fn is_key_word(t: &str) -> bool {
    // (Letters of any script: a Chinese script's `训练次数：100` names its step.)
    t.chars().any(|c| c.is_alphabetic())
        && t.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '-' | '#' | '@' | '\''))
        && t.len() <= 64
}

/// Units a value may carry, written after it with or without a space.
const UNITS: &[(&str, f64)] = &[
    ("ms", 1e-3),
    ("s", 1.0),
    ("sec", 1.0),
    ("%", 1.0),
    ("GiB", 1073741824.0),
    ("GB", 1073741824.0),
    ("MiB", 1048576.0),
    ("MB", 1048576.0),
    ("KiB", 1024.0),
    ("KB", 1024.0),
    ("it/s", 1.0),
    ("s/it", 1.0),
    ("tok/s", 1.0),
    ("tokens/s", 1.0),
    // A bare rate (timm's `Time: 0.41s, 621.3/s`): a value, never a key's word.
    ("/s", 1.0),
];

/// Counts abbreviated as some trainers print them, written right after the number
/// (nanotron's `tokens_per_sec: 1.09M`, `consumed_tokens: 262K`).
const MAGNITUDES: &[(&str, f64)] = &[("K", 1e3), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("B", 1e9), ("T", 1e12)];

/// A source file's name, as loggers print `file:line` (`train.py:141`).
fn is_source_location(key: &str) -> bool {
    [".py", ".cc", ".cpp", ".c", ".h", ".rs", ".go", ".java", ".js", ".ts", ".lua", ".jl"].iter().any(|ext| key.ends_with(ext) && key.len() > ext.len())
}

/// Whether `token` (a slice of `line`, `v` its part after the `:`) stands alone in
/// round brackets with a line number: a logger's `(%(module)s:%(lineno)d)`.
fn is_bracketed_line_number(line: &str, token: &str, v: &str) -> bool {
    let Some(at) = (token.as_ptr() as usize).checked_sub(line.as_ptr() as usize).filter(|at| at + token.len() <= line.len()) else { return false };
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && line[..at].ends_with('(') && line[at + token.len()..].starts_with(')')
}

/// A count per second written after a value (`updates/sec`, `it/s`, `steps/second`).
fn is_per_second(t: &str) -> bool {
    let t = t.trim_end_matches(',');
    t.split_once('/').is_some_and(|(what, per)| !what.is_empty() && what.bytes().all(|b| b.is_ascii_alphabetic()) && ["s", "sec", "second"].contains(&per))
}

fn is_unit(t: &str) -> bool {
    UNITS.iter().any(|(u, _)| *u == t) || rate(t).is_some()
}

/// What a rate's unit counts per second, written after a value (`1230.7
/// records/second`, `512 samples/s`, `7334 tokens/sec`): samples or tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    Samples,
    Tokens,
}

/// The rate a unit names (`records/second`, `images/sec`, `tokens/s`), if it is
/// one (the catalog's words: [`catalog::rate_named_by_unit`]).
pub fn rate(unit: &str) -> Option<Rate> {
    match catalog::rate_named_by_unit(unit)? {
        catalog::TOKENS_PER_S => Some(Rate::Tokens),
        _ => Some(Rate::Samples),
    }
}

/// The rate named by the unit a value is written with (`65.7 records/second`).
pub fn rate_of_value(text: &str) -> Option<Rate> {
    let (number, unit) = text.trim().rsplit_once(char::is_whitespace)?;
    plain_number(number)?;
    rate(unit)
}

/// A number as printed: `2.31`, `-1e-4`, `3.2E+00`, `nan`, `inf`, `7,334`.
pub fn plain_number(t: &str) -> Option<f64> {
    let t = t.trim();
    if t.contains(',') {
        // Thousands separators only: 1,234 or 12,345,678.5
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        let groups: Vec<&str> = int.trim_start_matches('-').split(',').collect();
        let ok = groups.len() > 1
            && (1..=3).contains(&groups[0].len())
            && groups[1..].iter().all(|g| g.len() == 3)
            && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit()));
        if !ok {
            return None;
        }
        let joined = format!("{}{}{}", int.replace(',', ""), if frac.is_empty() { "" } else { "." }, frac);
        return joined.parse().ok();
    }
    super::number_in_text(t)
}

/// A value with its unit converted to seconds, bytes or as written (`123ms` is
/// 0.123, `8.1 GB` is bytes, `34.5%` is 34.5).
pub fn value(text: &str) -> Option<f64> {
    let t = without_spread(text).trim();
    if let Some(x) = plain_number(t) {
        return Some(x);
    }
    UNITS
        .iter()
        .find_map(|(unit, factor)| t.strip_suffix(unit).and_then(plain_number).map(|x| x * factor))
        .or_else(|| MAGNITUDES.iter().find_map(|(suffix, factor)| t.strip_suffix(suffix).filter(|n| n.ends_with(|c: char| c.is_ascii_digit())).and_then(plain_number).map(|x| x * factor)))
        .or_else(|| rate_of_value(t).and_then(|_| plain_number(t.rsplit_once(char::is_whitespace)?.0)))
}

/// Whether a value is written in bytes' units (`31.21GiB(39.49%)`, `8.1 GB`).
pub fn in_bytes(text: &str) -> bool {
    let t = text.split('(').next().unwrap_or(text).trim();
    UNITS.iter().filter(|(_, factor)| *factor >= 1024.0).any(|(u, _)| t.strip_suffix(u).is_some_and(|n| n.trim_end().ends_with(|c: char| c.is_ascii_digit())))
}

/// Units that convert a value to rlmon's base units (seconds, bytes) or name a
/// percentage: after them a key's name alone says what it measures; a rate's unit
/// (`tok/s`) says what is counted, so it stays in the name.
fn unit_is_dropped(unit: &str) -> bool {
    !unit.contains('/')
}

/// The unit in a key's brackets: `(MB)` or `[tok/s]` at the end of `key`, its name
/// before it and its factor to rlmon's units (`Memory (MB)` is `Memory` in bytes,
/// `time (ms)` `time` in seconds); `None` when the key carries no unit.
fn key_unit(key: &str) -> Option<(&str, &str, f64)> {
    let close = key.chars().next_back()?;
    let open = match close {
        ')' => '(',
        ']' => '[',
        _ => return None,
    };
    let at = key.rfind(open)?;
    let unit = key[at + 1..key.len() - 1].trim();
    let name = key[..at].trim_end();
    let factor = UNITS.iter().find(|(u, _)| *u == unit).map(|(_, f)| *f).or_else(|| rate(unit).map(|_| 1.0))?;
    (!name.is_empty()).then_some((name, unit, factor))
}

/// A key's name and the factor its value takes from a unit in brackets: `Memory
/// (MB)` gives `memory` in bytes; a rate keeps its unit in the name (`throughput
/// tok/s`), unless the name is none rlmon knows: then the unit names the rate
/// (InternLM's `tgs (tokens/gpu/second)` is `tokens_per_s`).
pub fn key_without_unit(key: &str) -> (std::borrow::Cow<'_, str>, f64) {
    match key_unit(key) {
        Some((name, unit, factor)) if unit_is_dropped(unit) => (name.into(), factor),
        Some((name, unit, factor)) => match catalog::rate_named_by_unit(unit) {
            Some(rate) if !catalog::knows(catalog::tidy_word(name)) => (rate.into(), factor),
            _ => (format!("{name} {unit}").into(), factor),
        },
        None => (key.into(), 1.0),
    }
}

/// The length of a bracketed unit at the start of `t` (`(MB)`, `[tok/s]`), with its
/// brackets.
fn bracketed_unit(t: &str) -> Option<usize> {
    let close = match t.as_bytes().first()? {
        b'(' => ')',
        b'[' => ']',
        _ => return None,
    };
    let end = t.find(close)?;
    is_unit(t[1..end].trim()).then_some(end + 1)
}

/// The length of a qualifier in round brackets at the start of `t`, with its
/// brackets, when a `:` or `=` follows it: LitGPT's `loss train (curr): 1.65`,
/// `Train Loss (Avg): 2.5`, a GAN's `Loss (G): 1.2`. It is one to three words of
/// letters; a unit is [`bracketed_unit`]'s.
pub fn bracketed_qualifier(t: &str) -> Option<usize> {
    let inner = t.strip_prefix('(')?;
    let end = inner.find(')')?;
    let words = &inner[..end];
    let fits = !words.trim().is_empty()
        && words.len() <= 24
        && words.split_whitespace().count() <= 3
        && words.bytes().all(|b| b.is_ascii_alphabetic() || b == b' ' || b == b'-' || b == b'.')
        && !is_unit(words.trim());
    (fits && inner[end + 1..].trim_start().starts_with([':', '='])).then_some(end + 2)
}

/// A key's name and the qualifier in brackets after it (`loss train (curr)`:
/// `loss train` and `curr`), or `None` when it ends in none.
pub fn key_qualifier(key: &str) -> Option<(&str, &str)> {
    let inner = key.strip_suffix(')')?;
    let open = inner.rfind('(')?;
    let name = inner[..open].trim_end();
    (!name.is_empty() && bracketed_qualifier(&format!("{}:", &key[open..])).is_some()).then(|| (name, inner[open + 1..].trim()))
}

/// A value without the spread written after it (`-257.4 +- 63.1`, `0.91 ± 0.02`).
fn without_spread(text: &str) -> &str {
    // A byte scan: every value of a text log comes through here.
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        let spread = match c {
            b'+' => b[i + 1..].starts_with(b"- ") || b[i + 1..].starts_with(b"/- "),
            // `±` is 0xC2 0xB1 in UTF-8.
            0xC2 => b[i + 1..].starts_with(&[0xB1, b' ']),
            _ => false,
        };
        if spread && i > 0 && b[i - 1] == b' ' {
            return &text[..i - 1];
        }
    }
    text
}

/// `N/M` (a progress counter, `step:100/1750`): N and M.
pub fn fraction(text: &str) -> Option<(u64, u64)> {
    let (n, m) = text.trim().split_once('/')?;
    Some((n.trim().parse().ok()?, m.trim().parse().ok()?))
}

fn is_value(t: &str) -> bool {
    value(t).is_some() || fraction(t).is_some()
}

/// Where `line` splits into segments that each hold at most a few pairs.
fn segments(line: &str) -> Vec<&str> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        // A unit in brackets between a key and its `=` or `:` (`Memory (MB)=1234`)
        // is part of the key.
        if matches!(b[i], b'(' | b'[') && i > 0 && (b[i - 1] == b' ' || b[i - 1].is_ascii_alphanumeric()) {
            if let Some(len) = bracketed_unit(&line[i..]).or_else(|| bracketed_qualifier(&line[i..])) {
                if line[i + len..].trim_start().starts_with(['=', ':']) {
                    i += len;
                    continue;
                }
            }
        }
        let width = match b[i] {
            // A tab right after a key's `:` or `=` (`Loss:\t0.12`, DeepRM's
            // `Loss:     \t 0.12`) pads the pair; elsewhere it parts pairs.
            b'\t' if line[..i].trim_end_matches([' ', '\t']).ends_with([':', '=']) && line[i..].split_whitespace().next().is_some_and(|v| is_value(v.trim_end_matches(','))) => 0,
            b'|' | b';' | b'\t' | b'[' | b']' | b'(' | b')' | b'{' | b'}' | b'<' | b'>' => 1,
            // A comma between digit groups is a thousands separator (7,334).
            b',' => {
                let thousands = i > 0
                    && b[i - 1].is_ascii_digit()
                    && b.len() >= i + 4
                    && b[i + 1..i + 4].iter().all(u8::is_ascii_digit)
                    && b.get(i + 4).is_none_or(|c| !c.is_ascii_digit());
                usize::from(!thousands)
            }
            b' ' if b[i..].starts_with(b" - ") => 3,
            // A sentence's full stop (BigDL's `Loss is 2.302. Current learning rate
            // is 0.05.`): no key or value runs past it.
            // (Not an abbreviation's, before the name it qualifies: `Avg. reward: -19.9`.)
            b'.' if i > 0 && b[i - 1].is_ascii_alphanumeric() && b.get(i + 1).is_none_or(|c| *c == b' ') && !after_abbreviation(&line[..i]) => 1,
            _ => 0,
        };
        if width == 0 {
            i += 1;
            continue;
        }
        out.push(&line[start..i]);
        i += width;
        start = i;
    }
    out.push(&line[start..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// Whether `before` ends with an abbreviation that qualifies the name after its
/// full stop (`Avg.`, `Approx.`, `Cum.`).
fn after_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
    ["avg", "ave", "approx", "cum", "tot", "est"].iter().any(|a| word.eq_ignore_ascii_case(a))
}

/// The text of `line` from the start of `a` to the end of `b` (both slices of it).
fn span<'a>(line: &'a str, a: &str, b: &str) -> &'a str {
    let base = line.as_ptr() as usize;
    let from = a.as_ptr() as usize - base;
    let to = b.as_ptr() as usize - base + b.len();
    &line[from..to]
}

/// Whether a name before a bracket wraps a scalar in print: PyTorch's `tensor(10.72,
/// device='cuda:0')`, NumPy 2's `np.float64(0.123)`, JAX's `Array(1.2, dtype=float32)`,
/// TensorFlow's `tf.Tensor(1.2, shape=(), dtype=float32)`.
fn is_scalar_wrapper(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    ["tensor", "Tensor", "array", "Array", "DeviceArray", "float64", "float32", "float16", "bfloat16", "int64", "int32", "Decimal"].contains(&last)
}

/// The number a scalar's printed wrapper holds (`tensor(10.72` of a token), else `None`.
pub fn wrapped_scalar(token: &str) -> Option<&str> {
    let open = token.find('(')?;
    let inner = token[open + 1..].trim_end_matches([')', ',']);
    (is_scalar_wrapper(&token[..open]) && is_value(inner)).then_some(inner)
}

/// The first of three or more counts apart by slashes (Tesseract's `At iteration
/// 6100/6100/6101,`: the iteration, then the samples seen and trained); two are a
/// counter and its total ([`fraction`]).
pub fn first_of_counts(value: &str) -> Option<u64> {
    let value = value.trim_end_matches(',');
    if !value.as_bytes().contains(&b'/') || value.split('/').count() < 3 || !value.split('/').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    value.split('/').next()?.parse().ok()
}

/// `line` with each scalar's printed wrapper replaced by the number it holds
/// (`grad_norm: tensor(10.72, device='cuda:0')` is `grad_norm: 10.72`); `None` when
/// it has none.
pub fn unwrapped_scalars(line: &str) -> Option<String> {
    if !line.contains('(') {
        return None;
    }
    let mut out = String::new();
    let (mut last, mut from) = (0, 0);
    while let Some(open) = line[from..].find('(').map(|i| i + from) {
        from = open + 1;
        // (After the last character of no name, whatever its width.)
        let start = line[..open].char_indices().rev().find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).map_or(0, |(p, c)| p + c.len_utf8());
        let rest = &line[open + 1..];
        let number = rest[..rest.find([',', ')']).unwrap_or(rest.len())].trim();
        if start < last || !is_scalar_wrapper(&line[start..open]) || !is_value(number) {
            continue;
        }
        // To the wrapper's closing bracket (`device='cuda:0'` holds none).
        let end = open + 1 + rest.find(')').map_or(rest.len(), |c| c + 1);
        out.push_str(&line[last..start]);
        out.push_str(number);
        last = end;
        from = end;
    }
    (last > 0).then(|| {
        out.push_str(&line[last..]);
        out
    })
}

/// `line` with each dict of one entry after a key's `=` or `:` replaced by the
/// entry's number, where the entry's name is none rlmon knows (InternLM's
/// `grad_norm={'0_default': 66.5}`, the norm of its one parameter group, is
/// `grad_norm=66.5`; `metrics: {'loss': 0.5}` stays the loss); `None` when it has none.
pub fn one_entry_dicts(line: &str) -> Option<String> {
    if !line.contains('{') {
        return None;
    }
    let quoted = |t: &str| t.len() >= 3 && ((t.starts_with('\'') && t.ends_with('\'')) || (t.starts_with('"') && t.ends_with('"')));
    let mut out = String::new();
    let (mut last, mut from) = (0, 0);
    while let Some(open) = line[from..].find('{').map(|i| i + from) {
        from = open + 1;
        let Some(close) = line[open..].find('}').map(|i| i + open) else { break };
        let before = line[..open].trim_end();
        let after_key = before.len() > 1 && before.ends_with(['=', ':']) && before[..before.len() - 1].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        let inner = &line[open + 1..close];
        let entry = inner.split_once(':').filter(|(name, v)| {
            let name = name.trim();
            !inner.contains(',') && quoted(name) && is_value(v.trim()) && !catalog::knows(catalog::tidy_word(&name[1..name.len() - 1]))
        });
        if let (true, Some((_, v))) = (after_key, entry) {
            out.push_str(&line[last..open]);
            out.push_str(v.trim());
            last = close + 1;
            from = close + 1;
        }
    }
    (last > 0).then(|| {
        out.push_str(&line[last..]);
        out
    })
}

/// Whether the line ends in a dict of the run's settings: three entries or more,
/// one of them a word (a quoted string, a path) or a flag (`True`, `False`,
/// `None`), as a script prints its configuration after a label
/// (`参数配置: {'epochs': 100, 'load_model': 'data/brain.pth', 'reset': False}`).
/// A step's metrics are numbers (`{'loss': 0.52, 'learning_rate': 5e-05}`).
pub fn is_settings_dict(line: &str) -> bool {
    let line = line.trim_end();
    let Some(body) = line.find('{').map(|at| &line[at..]).filter(|b| b.ends_with('}')) else { return false };
    // Python's repr (single-quoted keys): a JSON object after a prefix is the
    // JSON reader's to judge (mmcv's `"mode": "train"` beside its metrics).
    let values: Vec<&str> = body.match_indices("': ").map(|(at, _)| body[at + 3..].trim_start()).collect();
    let word = |v: &&str| v.starts_with(['\'', '"']) || ["True", "False", "None"].iter().any(|f| v.strip_prefix(f).is_some_and(|rest| rest.starts_with([',', '}', ' '])));
    values.len() >= 3 && values.iter().any(word)
}

/// Whether a key names a counter (`Epoch 3 0.52` is an epoch and a value, no iteration).
fn names_a_counter(key: &str) -> bool {
    let last = key.rsplit(|c: char| !c.is_ascii_alphabetic()).find(|w| !w.is_empty()).unwrap_or("");
    ["epoch", "step", "steps", "iter", "iteration", "batch", "episode", "round", "update", "updates", "frame", "frames"].iter().any(|w| last.eq_ignore_ascii_case(w))
}

/// Whether `token` is a whole `key=value` or `key:value` pair with a number.
fn one_token_pair(token: &str) -> bool {
    token.find(['=', ':']).filter(|&at| at > 0 && at + 1 < token.len()).is_some_and(|at| is_key_word(&token[..at]) && is_value(token[at + 1..].trim_end_matches(',')))
}

/// Whether word `a` comes right before `b` in `line`, one space apart (both slices of it).
fn right_before(line: &str, a: &str, b: &str) -> bool {
    let end_a = a.as_ptr() as usize - line.as_ptr() as usize + a.len();
    let start_b = b.as_ptr() as usize - line.as_ptr() as usize;
    start_b == end_a + 1 && line.as_bytes()[end_a] == b' '
}

/// The pairs of `line`, in order, and the progress counters (`120/1000`) that stand
/// alone, not as any key's value.
pub fn pairs(line: &str) -> (Vec<Pair<'_>>, Vec<(u64, u64)>) {
    let mut out: Vec<Pair> = Vec::new();
    let mut progress = Vec::new();
    for segment in segments(line) {
        // Key words waiting for their value; `closed` once one ends in `:` or `=`.
        let mut words: Vec<&str> = Vec::new();
        let mut closed = false;
        // Whether the last token was a value (so a unit after it belongs to it).
        let mut after_value = false;
        let mut tokens = segment.split_whitespace().peekable();
        while let Some(token) = tokens.next() {
            // A counter padded after its slash (PyTorch's word-language-model
            // example: `  200/ 2983 batches`) is one value.
            let padded_total = token.strip_suffix('/').filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if let (Some(_), Some(&total)) = (padded_total, tokens.peek()) {
                if !total.is_empty() && total.bytes().all(|b| b.is_ascii_digit()) {
                    tokens.next();
                    let counter = span(line, token, total);
                    match (closed, words.first(), words.last()) {
                        (_, Some(first), Some(last)) => out.push((span(line, first, last), counter)),
                        _ => progress.extend(fraction(counter)),
                    }
                    words.clear();
                    closed = false;
                    after_value = false;
                    continue;
                }
            }
            // A spread after a value (DeepRM's `MeanRew: -257.4 +- 63.1`, `acc 0.91 ±
            // 0.02`): part of it, no pair of its own.
            if after_value && matches!(token, "+-" | "±" | "+/-") {
                if tokens.peek().is_some_and(|t| is_value(t.trim_end_matches(','))) {
                    tokens.next();
                }
                continue;
            }
            if after_value && is_unit(token) {
                if let Some(last) = out.last_mut() {
                    last.1 = span(line, last.1, token);
                }
                after_value = false;
                continue;
            }
            let value_before = std::mem::replace(&mut after_value, false);
            // Another key where a value should be (`train_opt_callback: iter= 4`):
            // the first had none.
            if closed && token.ends_with(['=', ':']) && !is_value(token.trim_end_matches(['=', ':'])) && is_key_word(token.trim_end_matches(['=', ':'])) {
                words.clear();
                words.push(token.trim_end_matches(['=', ':']));
                continue;
            }
            // A label before pairs (`Train: loss=0.52 acc=0.81`, `Entrenamiento:
            // loss=2.03`): its words name no value of their own.
            if closed && one_token_pair(token) {
                words.clear();
                closed = false;
            }
            if closed {
                // `key: value`: whatever follows the colon is the value.
                let v = token.trim_end_matches([',', ':']);
                without_so_far(&mut words);
                if let (Some(first), Some(last)) = (words.first(), words.last()) {
                    out.push((span(line, first, last), v));
                }
                words.clear();
                closed = false;
                after_value = is_value(v);
                continue;
            }
            // A unit in brackets ends the key before it: `(MB)=1234.5`, `(ms):`.
            if let (Some(&first), Some(len)) = (words.first(), bracketed_unit(token)) {
                let (unit, rest) = token.split_at(len);
                let v = rest.get(1..).unwrap_or("").trim_end_matches(',');
                if rest.is_empty() || rest == ":" || rest == "=" {
                    words.push(unit);
                    closed = !rest.is_empty();
                    continue;
                }
                if rest.starts_with(['=', ':']) && is_value(v) {
                    out.push((span(line, first, unit), v));
                    words.clear();
                    after_value = true;
                    continue;
                }
            }
            // A qualifier in brackets ends the key before it (`loss train (curr): 1.6`,
            // `val (prev val iter): None`): it is the key's last word.
            if let (Some(&first), true, false) = (words.first(), token.starts_with('('), closed) {
                let at = token.as_ptr() as usize - line.as_ptr() as usize;
                if let Some(len) = bracketed_qualifier(&line[at..]) {
                    let qualifier = &line[at..at + len];
                    while tokens.peek().is_some_and(|t| (t.as_ptr() as usize - line.as_ptr() as usize) < at + len) {
                        tokens.next();
                    }
                    words.push(qualifier);
                    closed = true;
                    let key = span(line, first, qualifier);
                    // (The `:` may be glued to the value: `(avg):2.5`.)
                    let glued = line[at + len..].trim_start().get(1..).filter(|v| !v.is_empty() && !v.starts_with(' '));
                    if let Some(v) = glued.and_then(|v| v.split_whitespace().next()) {
                        let v = v.trim_end_matches(',');
                        out.push((key, v));
                        words.clear();
                        closed = false;
                        after_value = is_value(v);
                        if tokens.peek().is_some_and(|t| t.as_ptr() as usize - line.as_ptr() as usize <= at + len + 1) {
                            tokens.next();
                        }
                    }
                    continue;
                }
            }
            // `key=value` or `key:value` in one token.
            if let Some(at) = token.find(['=', ':']).filter(|&at| at > 0 && at + 1 < token.len()) {
                let (key, v) = (&token[..at], token[at + 1..].trim_end_matches(','));
                // (Or the module and line in brackets of Python's logging format,
                // ESPnet's `(trainer:732)`.)
                if is_source_location(key) || is_bracketed_line_number(line, token, v) {
                    // A logger's `train.py:141`: where the line was written.
                    words.clear();
                    continue;
                }
                if is_key_word(key) && (is_value(v) || !v.chars().any(|c| c.is_ascii_digit())) {
                    // `train_step_timing in s=1.01` (NeMo): the unit ends a longer name.
                    let key = match (words.first(), words.last()) {
                        (Some(first), Some(&"in")) if is_unit(key) => span(line, first, key),
                        // Words right before name it with the key (Tesseract's `char
                        // train=90%`, `word train=100%`: two metrics, not one `train`).
                        (Some(&first), Some(&last)) if words.len() <= 2 && words.iter().all(|w| w.bytes().all(|b| b.is_ascii_alphabetic())) && right_before(line, last, key) => span(line, first, key),
                        _ => key,
                    };
                    out.push((key, v));
                    words.clear();
                    after_value = is_value(v);
                    continue;
                }
            }
            let bare = token.trim_end_matches([':', '=']);
            let ends_key = bare.len() < token.len();
            let number = token.trim_end_matches([':', ',']);
            // Counts apart by slashes after key words (Tesseract's `At iteration
            // 6100/6100/6101,`): the pair's value, for a step word to read.
            if first_of_counts(number).is_some() {
                if let (Some(first), Some(last)) = (words.first(), words.last()) {
                    out.push((span(line, first, last), number));
                }
                words.clear();
                closed = false;
                continue;
            }
            // (`nan` and `inf` read as values: a word never does.)
            if is_value(number) {
                // `Loss at step 100 : 2.5`, TensorFlow's word2vec `Average loss at
                // step 2000: 4.37`: the counter's number, then the value of the
                // words before `at`.
                if let Some(at) = words.iter().rposition(|w| *w == "at").filter(|&i| i > 0 && i + 2 == words.len() && names_a_counter(words[i + 1])) {
                    out.push((words[at + 1], number));
                    words.truncate(at);
                    closed = token.ends_with([':', '=']);
                    // (Only a value right after, or after a lone `:`, is theirs.)
                    let next = tokens.peek().map(|t| t.trim_end_matches(','));
                    if !next.is_some_and(|t| matches!(t, ":" | "=") || is_value(t)) {
                        words.clear();
                    }
                    continue;
                }
                without_so_far(&mut words);
                // A unit after a keyless number (OpenNMT's `2345/2456 tok/s`) is its
                // own, never that of a pair before it.
                after_value = match (words.first(), words.last()) {
                    (Some(first), Some(last)) => {
                        out.push((span(line, first, last), number));
                        true
                    }
                    // A whole number then a keyless decimal after a name (NVIDIA's
                    // Tacotron 2: `Train loss 6312 0.149928 Grad Norm 0.51`,
                    // `Validation loss 6312:  0.149928`): the iteration, then the value.
                    _ if value_before && number.contains('.') && out.last().is_some_and(|(key, v)| v.bytes().all(|b| b.is_ascii_digit()) && !names_a_counter(key)) => {
                        let (key, iteration) = out.pop().expect("a pair before");
                        out.push(("iteration", iteration));
                        out.push((key, number));
                        true
                    }
                    _ => {
                        progress.extend(fraction(number));
                        // Its unit goes with it, not to the next number as a key
                        // (Sockeye's `Speed: 650.04 samples/sec 21000.50 tokens/sec
                        // 2.10 updates/sec`: 2.10 is no tokens/sec).
                        if tokens.peek().is_some_and(|t| is_unit(t) || is_per_second(t)) {
                            tokens.next();
                        }
                        false
                    }
                };
                words.clear();
                continue;
            }
            // `loss = 2.302, step = 1` (TensorFlow's estimator): a lone `=` or `:`
            // closes the key before it.
            if bare.is_empty() && ends_key && !words.is_empty() && !closed {
                closed = true;
                continue;
            }
            // `Loss is 2.302`, `Current learning rate is 0.05` (BigDL): the words
            // before `is` are the key.
            if bare == "is" && !words.is_empty() && !closed && tokens.peek().is_some_and(|t| is_value(t.trim_end_matches([',', ':']))) {
                closed = true;
                continue;
            }
            if is_key_word(bare) {
                // Keys are short: prose before a number is not all of its name.
                if words.len() == 4 {
                    words.remove(0);
                }
                words.push(bare);
                closed = ends_key;
            } else {
                words.clear();
            }
        }
    }
    // A source file's line named by a logger (InternLM's `[training_internlm.py,
    // line 413, in record_metrics]`, a traceback's `File "x.py", line 12`) is no metric.
    out.retain(|(key, value)| !is_source_line_number(line, key, value));
    (out, progress)
}

/// A running mean's `so far` (PaddlePaddle's `avg loss so far is 0.11`) is no
/// part of its name.
fn without_so_far(words: &mut Vec<&str>) {
    let n = words.len();
    if n > 2 && words[n - 1].eq_ignore_ascii_case("far") && ["so", "thus"].iter().any(|w| words[n - 2].eq_ignore_ascii_case(w)) {
        words.truncate(n - 2);
    }
}

/// Whether `key` (a slice of `line`) is `line` with a whole number, right after a
/// source file's name (`train.py,`, `"model.py",`).
fn is_source_line_number(line: &str, key: &str, value: &str) -> bool {
    if !key.eq_ignore_ascii_case("line") || !value.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Some(at) = (key.as_ptr() as usize).checked_sub(line.as_ptr() as usize).filter(|at| *at <= line.len()) else { return false };
    let before = line[..at].trim_end().trim_end_matches(',').trim_end_matches(['"', '\'']);
    let file = before.rsplit(|c: char| c.is_whitespace() || matches!(c, '[' | '(' | '"' | '\'')).next().unwrap_or("");
    file.rsplit_once('.').is_some_and(|(stem, ext)| !stem.is_empty() && ["py", "cc", "cpp", "c", "h", "rs", "lua", "js", "ts", "go", "java", "jl", "scala"].contains(&ext))
}

#[cfg(test)]
mod tests {
    use super::*;


    #[test]
    fn a_qualifier_in_brackets_stays_with_its_key() {
        assert_eq!(pairs("loss train (curr): 1.6, val (prev val iter): None | iter time: 2 ms").0, [("loss train (curr)", "1.6"), ("val (prev val iter)", "None"), ("iter time", "2 ms")]);
        assert_eq!(key_qualifier("loss train (curr)"), Some(("loss train", "curr")));
        assert_eq!(key_qualifier("time (ms)"), None, "a unit is no qualifier");
        assert_eq!(bracketed_qualifier("(avg) 2.5"), None, "a qualifier comes before a `:` or `=`");
        assert_eq!(bracketed_qualifier("(a very long list of words): 1"), None);
    }

    #[test]
    fn a_label_before_pairs_names_none_and_a_counter_after_at_is_the_step() {
        assert_eq!(pairs("Train: loss=0.52 acc=0.81").0, [("loss", "0.52"), ("acc", "0.81")]);
        assert_eq!(pairs("Entrenamiento: loss=2.0265 (value=0.2445, policy=1.3063)").0, [("loss", "2.0265"), ("value", "0.2445"), ("policy", "1.3063")]);
        assert_eq!(pairs("lr: 0.1 loss: 2.5").0, [("lr", "0.1"), ("loss", "2.5")], "a pair's value stays its own");
        assert_eq!(pairs("Loss at step 100 : nan").0, [("step", "100"), ("Loss", "nan")]);
        assert_eq!(pairs("Average loss at step  2000 :  4.37").0, [("step", "2000"), ("Average loss", "4.37")]);
        assert_eq!(pairs("Average loss at step 2000: 4.37").0, [("step", "2000"), ("Average loss", "4.37")]);
        assert_eq!(pairs("loss at iteration 500 = 0.3").0, [("iteration", "500"), ("loss", "0.3")]);
        assert_eq!(pairs("arrived at step 5").0, [("step", "5")], "words before `at` with no value name none");
        assert_eq!(pairs("Checkpoint at step 500 saved in 3.2 s").0, [("step", "500"), ("saved in", "3.2 s")]);
    }

    #[test]
    fn a_running_means_so_far_is_no_part_of_its_name() {
        assert_eq!(pairs("Epoch 0, Step 25, total used time 7.17 (s), avg loss so far is 0.1098").0.last(), Some(&("avg loss", "0.1098")));
        assert_eq!(pairs("mean reward thus far: 12.5").0, [("mean reward", "12.5")]);
        assert_eq!(pairs("so far: 3").0, [("so far", "3")], "nothing else to name it");
    }

    #[test]
    fn a_whole_number_then_a_keyless_decimal_is_the_iteration_then_the_value() {
        assert_eq!(pairs("Train loss 6312 0.149928 Grad Norm 0.512 1.23s/it").0, [("iteration", "6312"), ("Train loss", "0.149928"), ("Grad Norm", "0.512")]);
        assert_eq!(pairs("Validation loss 6312:  0.149928").0, [("iteration", "6312"), ("Validation loss", "0.149928")]);
        assert_eq!(pairs("Epoch 3 0.52").0, [("Epoch", "3")], "a counter's number stays its own");
    }

    #[test]
    fn words_right_before_a_key_name_it_and_counts_apart_by_slashes_are_a_value() {
        let (got, _) = pairs("At iteration 6100/6100/6101, mean rms=4.062%, BCER train=56.386%, BWER train=96.702%");
        assert_eq!(got, [("At iteration", "6100/6100/6101"), ("mean rms", "4.062%"), ("BCER train", "56.386%"), ("BWER train", "96.702%")]);
        // A number between the words and the key parts them (`Epoch 1 loss=0.3`).
        assert_eq!(pairs("Epoch 1 loss=0.3").0, [("Epoch", "1"), ("loss", "0.3")]);
    }


    #[test]
    fn a_source_files_line_is_no_metric() {
        assert_eq!(pairs("INFO [training_internlm.py, line 413, in record_metrics] - pid=6794 : step=0 loss=11.6").0, [("pid", "6794"), ("step", "0"), ("loss", "11.6")]);
        assert_eq!(pairs("File \"train.py\", line 12, in main").0, []);
        assert_eq!(pairs("line 3 loss 0.5 lines=4").0, [("line", "3"), ("loss", "0.5"), ("lines", "4")], "a line named by no file stays");
    }

    #[test]
    fn a_dict_of_settings_is_no_step() {
        assert!(is_settings_dict("2026-05-22 02:54:53,879 - INFO - 参数配置: {'epochs': 100, 'lr': 0.001, 'load_model': 'data/brain_3.0.pth', 'no_auto_discover': False}"));
        assert!(is_settings_dict("config: {'batch_size': 32, 'lr': 0.001, 'resume': None}"));
        assert!(!is_settings_dict("{'loss': 0.52, 'grad_norm': 1.3, 'learning_rate': 5e-05, 'epoch': 0.5}"), "a step's metrics");
        assert!(!is_settings_dict("args: {'optim': 'adam', 'lr': 0.1}"), "two entries may be a step's");
        assert!(!is_settings_dict("12:00 | {\"mode\": \"train\", \"epoch\": 1, \"iter\": 50, \"loss\": 0.5}"), "JSON is the JSON reader's");
    }

    #[test]
    fn a_dict_of_one_entry_after_a_key_is_its_number() {
        assert_eq!(one_entry_dicts("loss=11.6 grad_norm={'0_default': 66.51} lr=4e-07").as_deref(), Some("loss=11.6 grad_norm=66.51 lr=4e-07"));
        assert_eq!(one_entry_dicts("metrics: {'loss': 0.5}"), None, "a metric's own name stays");
        assert_eq!(one_entry_dicts("grad_norm={'a': 1.0, 'b': 2.0}"), None, "several entries stay");
        assert_eq!(one_entry_dicts("{'0_default': 66.5}"), None, "no key before");
    }

    #[test]
    fn a_scalars_printed_wrapper_holds_its_number() {
        assert_eq!(unwrapped_scalars("loss: 0.5 grad_norm: tensor(10.7261, device='cuda:0') lr: 1e-4").as_deref(), Some("loss: 0.5 grad_norm: 10.7261 lr: 1e-4"));
        assert_eq!(unwrapped_scalars("'reward': np.float64(0.125), 'kl': Array(0.02, dtype=float32)").as_deref(), Some("'reward': 0.125, 'kl': 0.02"));
        assert_eq!(unwrapped_scalars("time (ms): 12.3, Epoch(train) [1][50/500]"), None, "a unit or a phase in brackets is no wrapper");
        assert_eq!(wrapped_scalar("tensor(1.25"), Some("1.25"));
        assert_eq!(wrapped_scalar("(3.53)"), None);
        assert_eq!(unwrapped_scalars("é(1.5) ü tensor(2.5)").as_deref(), Some("é(1.5) ü 2.5"), "a name after a wide character");
    }


    fn p(line: &str) -> Vec<(String, String)> {
        pairs(line).0.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
    }

    #[test]
    fn a_lone_equals_sign_or_colon_closes_the_key_before_it() {
        assert_eq!(p("loss = 2.302, step = 101 (31.2 sec)"), kv(&[("loss", "2.302"), ("step", "101")]));
        assert_eq!(p("val acc : 0.61"), kv(&[("val acc", "0.61")]));
    }

    fn kv(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_tab_after_a_keys_colon_pads_it_and_a_spread_after_a_value_is_no_pair() {
        assert_eq!(p("Loss:\t0.12"), kv(&[("Loss", "0.12")]));
        assert_eq!(p("Loss:     \t 0.12"), kv(&[("Loss", "0.12")]));
        // Between pairs a tab still parts them.
        assert_eq!(p("epoch: 1\tloss: 0.5"), kv(&[("epoch", "1"), ("loss", "0.5")]));
        // Before a word it parts a label from the pair after it.
        assert_eq!(p("Test set:\tAverage loss: 0.1"), kv(&[("Average loss", "0.1")]));
        assert_eq!(p("MeanRew: -257.4 +- 63.1 MaxRew: -199.9"), kv(&[("MeanRew", "-257.4"), ("MaxRew", "-199.9")]));
        assert_eq!(p("acc 0.91 ± 0.02, loss 0.3"), kv(&[("acc", "0.91"), ("loss", "0.3")]));
        assert_eq!(value("-257.4 +- 63.1"), Some(-257.4));
    }

    #[test]
    fn dialects() {
        assert_eq!(p("loss 1.6876 lr 0.0001"), kv(&[("loss", "1.6876"), ("lr", "0.0001")]));
        assert_eq!(p("Iter 25: Train loss 1.593, Learning Rate 7.000e-05, Peak mem 8.104 GB"), kv(&[("Iter", "25"), ("Train loss", "1.593"), ("Learning Rate", "7.000e-05"), ("Peak mem", "8.104 GB")]));
        assert_eq!(
            p("[rank0]:[titan] 2025-01-10 12:00:01,123 - root - INFO - step:  1  loss:  7.1234  memory: 31.21GiB(39.49%)  tps: 7,334  mfu: 34.54%"),
            kv(&[("step", "1"), ("loss", "7.1234"), ("memory", "31.21GiB"), ("tps", "7,334"), ("mfu", "34.54%")])
        );
        assert_eq!(p("Epoch 0:  12%|█▏  | 120/1000 [00:10<01:20, 11.02it/s, v_num=0, train_loss=2.310]"), kv(&[("Epoch", "0"), ("v_num", "0"), ("train_loss", "2.310")]));
        assert_eq!(pairs("Epoch 0:  12%|█▏  | 120/1000 [00:10<01:20, 11.02it/s]").1, vec![(120, 1000)]);
        // PyTorch's word-language-model example pads the total after the slash.
        assert_eq!(pairs("| epoch   1 |   200/ 2983 batches | lr 20.0000 | ms/batch 12.12 | loss  7.64 | ppl  2079.22").1, vec![(200, 2983)]);
        assert_eq!(p("batch 200/ 2983 loss 7.64"), kv(&[("batch", "200/ 2983"), ("loss", "7.64")]));
        // ESPnet: the logger's `(module:line)` is no metric.
        let espnet = p("[host] 2023-05-01 10:00:00,000 (trainer:732) INFO: 1epoch:train:1-100batch: iter_time=1.234e-04, loss=67.8, optim0_lr0=1.0e-05");
        assert!(!espnet.iter().any(|(k, _)| k == "trainer") && espnet.contains(&("loss".into(), "67.8".into())), "{espnet:?}");
        assert_eq!(p("epoch (x:12) loss=1.0"), kv(&[("loss", "1.0")]));
        // A unit after a keyless number is its own, not the next number's key.
        assert_eq!(
            p("Epoch[0] Batch [50]\tSpeed: 650.04 samples/sec 21000.50 tokens/sec 2.10 updates/sec\tperplexity=382.3"),
            kv(&[("Speed", "650.04 samples/sec"), ("perplexity", "382.3")])
        );
        // OpenNMT-py: a keyless rate after the learning rate is no unit of it.
        assert_eq!(
            p("[2023-05-01 10:00:01,123 INFO] Step 50/100000; acc:   5.12; ppl: 2345.67; xent: 7.76; lr: 0.00010; 2345/2456 tok/s;     12 sec"),
            kv(&[("Step", "50/100000"), ("acc", "5.12"), ("ppl", "2345.67"), ("xent", "7.76"), ("lr", "0.00010")])
        );
        assert_eq!(p("step:10 - actor/entropy:0.5012 - critic/score/mean:0.33"), kv(&[("step", "10"), ("actor/entropy", "0.5012"), ("critic/score/mean", "0.33")]));
        assert_eq!(p("epoch 001:    100 / 1000 loss=3.123, ppl=8.7, gnorm=1.2, num_updates=100"), kv(&[("epoch", "001"), ("loss", "3.123"), ("ppl", "8.7"), ("gnorm", "1.2"), ("num_updates", "100")]));
        assert_eq!(p("1/100 [==>.....] - ETA: 1:00 - loss: 0.1234 - accuracy: 0.52"), kv(&[("ETA", "1:00"), ("loss", "0.1234"), ("accuracy", "0.52")]));
        assert_eq!(p("iter 100: loss 2.3456, time 123.45ms, mfu 12.34%"), kv(&[("iter", "100"), ("loss", "2.3456"), ("time", "123.45ms"), ("mfu", "12.34%")]));
        assert_eq!(p("Epoch 0: : 10it [00:10, reduced_train_loss=9.87, global_step=19.00, train_step_timing in s=1.002]"), kv(&[("Epoch", "0"), ("reduced_train_loss", "9.87"), ("global_step", "19.00"), ("train_step_timing in s", "1.002")]));
        assert_eq!(p("loss nan, grad_norm inf"), vec![("loss".into(), "nan".into()), ("grad_norm".into(), "inf".into())]);
    }

    #[test]
    fn a_unit_in_brackets_is_part_of_the_key() {
        assert_eq!(p("Memory (MB)=1234.5 time (ms): 12.3 | throughput [tok/s]: 5e3"), kv(&[("Memory (MB)", "1234.5"), ("time (ms)", "12.3"), ("throughput [tok/s]", "5e3")]));
        // Brackets of other text still split pairs; a qualifier before a `:` is the key's.
        assert_eq!(p("memory: 31.21GiB(39.49%) loss (avg): 2.5"), kv(&[("memory", "31.21GiB"), ("loss (avg)", "2.5")]));
        assert_eq!(key_unit("Memory (MB)"), Some(("Memory", "MB", 1048576.0)));
        assert_eq!(key_unit("loss (avg)"), None);
        assert_eq!(key_without_unit("time (ms)"), ("time".into(), 1e-3));
        assert_eq!(key_without_unit("throughput [tok/s]"), ("tokens_per_s".into(), 1.0), "a name rlmon does not know");
        assert_eq!(key_without_unit("tgs (tokens/gpu/second)"), ("tokens_per_s".into(), 1.0));
        assert_eq!(key_without_unit("tokens_per_s [tok/s]"), ("tokens_per_s tok/s".into(), 1.0), "a name rlmon knows keeps it");
        assert_eq!(key_without_unit("loss"), ("loss".into(), 1.0));
    }

    #[test]
    fn values_and_units() {
        assert_eq!(value("123.45ms"), Some(0.12345));
        assert_eq!(value("8 GB"), Some(8.0 * 1073741824.0));
        assert_eq!(value("7,334"), Some(7334.0));
        assert_eq!(value("1,234,567.5"), Some(1234567.5));
        assert_eq!(value("12,34"), None);
        assert_eq!(value("34.5%"), Some(34.5));
        assert_eq!(value("1.09M"), Some(1.09e6));
        assert_eq!(value("136K"), Some(136e3));
        assert_eq!(value("M"), None);
        assert_eq!(value("nanM"), None);
        assert_eq!(value("3.2E+00"), Some(3.2));
        assert!(value("nan").is_some_and(f64::is_nan));
        assert!(value(".nan").is_some_and(f64::is_nan) && value("-.inf") == Some(f64::NEG_INFINITY));
        assert_eq!(value("1:00"), None);
        assert_eq!(fraction("1000/1750"), Some((1000, 1750)));
    }

    #[test]
    fn a_key_where_a_value_should_be_starts_again() {
        // llama.cpp's finetune: `train_opt_callback: iter=     4 sample=33/1024 loss=6.5`.
        assert_eq!(p("train_opt_callback: iter=     4 sample=33/1024 loss=6.51"), kv(&[("iter", "4"), ("sample", "33/1024"), ("loss", "6.51")]));
        // A logger's source location is no pair.
        assert_eq!(p("I0501 train.py:141] epoch:  1, loss: 0.24"), kv(&[("epoch", "1"), ("loss", "0.24")]));
    }

    #[test]
    fn odd_input_does_not_panic() {
        for line in ["", "=", ":", "a=", "=1", "| | |", "é=1 ü: 2", "x ::: 3", "a,1,2,3", "  -  -  ", "k: ", "1,2,", "█=3", "a (ms", "a (MB)", "(ms)=1", "a [s]=", "x (é)=1"] {
            let _ = pairs(line);
        }
    }
}
