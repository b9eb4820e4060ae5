//! Lossless compression of a block of points, in three bit streams: steps and
//! times as delta-of-delta (times on their IEEE bit patterns), values XORed with
//! the previous value (Gorilla, Pelkonen et al. 2015), or, when smaller, as the
//! integers of decimals with few digits or as indices into the block's few
//! distinct values. Regular steps and a steady cadence cost about a bit per point;
//! an XORed value costs 1 bit when it repeats and its changed bits otherwise; a
//! logged decimal like `2.3456` the bits of its spread within the block. Every f64
//! (NaN payloads, infinities, -0) round-trips bit for bit: a code is chosen only
//! when it reproduces every value's bit pattern.

/// Zero bytes after the last stream, so a reader may load 16 bytes anywhere in it.
const PAD: usize = 16;

struct BitWriter {
    out: Vec<u8>,
    /// The bits not yet written out: fewer than 8, in the low bits.
    acc: u64,
    pending: u32,
}

impl BitWriter {
    fn new() -> Self {
        BitWriter { out: Vec::new(), acc: 0, pending: 0 }
    }

    /// Appends the low `n` bits of `bits` (n <= 64), most significant first.
    fn put(&mut self, bits: u64, n: u32) {
        if n == 0 {
            return;
        }
        let bits = if n == 64 { bits } else { bits & ((1u64 << n) - 1) };
        // Fewer than 8 bits wait in `acc`: with these, at most 71, of which the
        // whole bytes (1 to 8 of them, at most 64 bits) go out.
        let acc = ((self.acc as u128) << n) | bits as u128;
        let pending = self.pending + n;
        let whole = pending / 8;
        self.pending = pending % 8;
        if whole > 0 {
            // The whole bytes at the top of one word, most significant first,
            // written with one 8-byte copy; the bytes past them are cut off.
            let word = ((acc >> self.pending) as u64) << (64 - 8 * whole);
            let len = self.out.len();
            self.out.extend_from_slice(&word.to_be_bytes());
            self.out.truncate(len + whole as usize);
        }
        self.acc = acc as u64 & ((1u64 << self.pending) - 1);
    }

    fn bit_len(&self) -> usize {
        self.out.len() * 8 + self.pending as usize
    }

    fn finish(mut self) -> Vec<u8> {
        if self.pending > 0 {
            let n = 8 - self.pending;
            self.put(0, n);
        }
        self.out
    }
}

struct BitReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    fn at(bytes: &'a [u8], pos: usize) -> Self {
        BitReader { bytes, pos }
    }

    /// The next `n` bits (n <= 64); zeros past the end, so a bad block reads as
    /// garbage values instead of panicking.
    fn get(&mut self, n: u32) -> u64 {
        if n == 0 {
            return 0;
        }
        let byte = self.pos / 8;
        let window = match self.bytes.get(byte..byte + 16) {
            Some(w) => u128::from_be_bytes(w.try_into().unwrap_or([0; 16])),
            None => {
                let mut w = [0u8; 16];
                let tail = self.bytes.get(byte..).unwrap_or(&[]);
                w[..tail.len().min(16)].copy_from_slice(&tail[..tail.len().min(16)]);
                u128::from_be_bytes(w)
            }
        };
        self.pos += n as usize;
        ((window << (self.pos - n as usize) % 8) >> (128 - n)) as u64
    }

    fn bit(&mut self) -> bool {
        self.get(1) == 1
    }
}

/// Integer changes by size: a 0 bit for none, else a prefix and the zigzagged change.
const WIDTHS: [(u64, u32, u32); 5] = [(0b10, 2, 7), (0b110, 3, 9), (0b1110, 4, 12), (0b11110, 5, 32), (0b11111, 5, 64)];

fn put_signed(w: &mut BitWriter, d: i64) {
    let z = ((d << 1) ^ (d >> 63)) as u64;
    if z == 0 {
        return w.put(0, 1);
    }
    for (prefix, len, width) in WIDTHS {
        if width == 64 {
            w.put(prefix, len);
            return w.put(z, width);
        }
        if z < 1u64 << width {
            // The prefix and the change in one write (at most 37 bits).
            return w.put(prefix << width | z, len + width);
        }
    }
}

fn get_signed(r: &mut BitReader) -> i64 {
    let mut ones = 0;
    while ones < 4 && r.bit() {
        ones += 1;
    }
    let width = match ones {
        0 => return 0,
        1 => 7,
        2 => 9,
        3 => 12,
        _ => {
            if r.bit() {
                64
            } else {
                32
            }
        }
    };
    let z = r.get(width);
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Delta-of-delta of a sequence of 64-bit patterns (wrapping, so any pattern fits).
/// A run of unchanged deltas (regular steps, a steady clock) is a run of 0 bits,
/// written up to 64 at a time.
fn put_dod(w: &mut BitWriter, xs: impl Iterator<Item = u64>) {
    let (mut prev, mut delta) = (0u64, 0u64);
    let mut zeros = 0u32;
    for (i, x) in xs.enumerate() {
        if i == 0 {
            w.put(x, 64);
        } else {
            let d = x.wrapping_sub(prev);
            let dod = d.wrapping_sub(delta);
            if dod == 0 {
                zeros += 1;
                if zeros == 64 {
                    w.put(0, 64);
                    zeros = 0;
                }
            } else {
                w.put(0, zeros);
                zeros = 0;
                put_signed(w, dod as i64);
            }
            delta = d;
        }
        prev = x;
    }
    w.put(0, zeros);
}

fn get_dod(r: &mut BitReader, n: usize, mut out: impl FnMut(u64)) {
    let (mut prev, mut delta) = (0u64, 0u64);
    for i in 0..n {
        let x = if i == 0 {
            r.get(64)
        } else {
            delta = delta.wrapping_add(get_signed(r) as u64);
            prev.wrapping_add(delta)
        };
        out(x);
        prev = x;
    }
}

/// The bits [`put_xor`] writes for `xs`, counted without writing them.
fn xor_bits(xs: &[f64]) -> usize {
    let Some(first) = xs.first() else { return 0 };
    let mut prev = first.to_bits();
    let (mut lead, mut trail) = (u32::MAX, 0u32);
    let mut bits = 64usize;
    for x in &xs[1..] {
        let x = x.to_bits();
        let d = x ^ prev;
        bits += if d == 0 {
            1
        } else if lead != u32::MAX && d.leading_zeros() >= lead && d.trailing_zeros() >= trail {
            2 + (64 - lead - trail) as usize
        } else {
            (lead, trail) = (d.leading_zeros().min(63), d.trailing_zeros());
            14 + (64 - lead - trail) as usize
        };
        prev = x;
    }
    bits
}

fn put_xor(w: &mut BitWriter, xs: impl Iterator<Item = f64>) {
    let mut prev = 0u64;
    let (mut lead, mut trail) = (u32::MAX, 0u32);
    for (i, x) in xs.enumerate() {
        let x = x.to_bits();
        if i == 0 {
            w.put(x, 64);
        } else {
            let d = x ^ prev;
            if d == 0 {
                w.put(0, 1);
            } else if lead != u32::MAX && d.leading_zeros() >= lead && d.trailing_zeros() >= trail {
                // Inside the previous meaningful window.
                w.put(0b10, 2);
                w.put(d >> trail, 64 - lead - trail);
            } else {
                (lead, trail) = (d.leading_zeros().min(63), d.trailing_zeros());
                let meaningful = 64 - lead - trail;
                // The code, the leading zeros and the width in one write.
                w.put(0b11 << 12 | (lead as u64) << 6 | (meaningful as u64 - 1), 14);
                w.put(d >> trail, meaningful);
            }
        }
        prev = x;
    }
}

fn get_xor(r: &mut BitReader, n: usize, mut out: impl FnMut(f64)) {
    let mut prev = 0u64;
    let (mut lead, mut trail) = (0u32, 0u32);
    for i in 0..n {
        let x = if i == 0 {
            r.get(64)
        } else if !r.bit() {
            prev
        } else {
            if r.bit() {
                lead = r.get(6) as u32;
                let meaningful = r.get(6) as u32 + 1;
                trail = 64u32.saturating_sub(lead + meaningful);
            }
            let meaningful = 64u32.saturating_sub(lead + trail);
            prev ^ (r.get(meaningful).checked_shl(trail).unwrap_or(0))
        };
        out(f64::from_bits(x));
        prev = x;
    }
}

/// How a block's values are coded, in the first 2 bits of their stream. Each
/// block takes the smallest that reproduces every value bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum ValueCode {
    /// XOR with the previous value: any f64.
    Xor = 0,
    /// Decimals: every value is `n / 10^k` for one `k` and integers `n` that fit
    /// in a few bits above the block's smallest (a trainer printing `loss 2.3456`,
    /// a count, a learning rate of few digits).
    Decimal = 1,
    /// Decimals coded as changes from the previous one (a trend wider than its steps).
    DecimalDelta = 2,
    /// Few distinct values, each kept once and pointed to (an accuracy of
    /// `correct / batch`, a clip fraction, a step-wise learning rate).
    Dictionary = 3,
}

/// Powers of ten that are exact in an f64, for the decimal codes.
const POW10: [f64; 16] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/// Integers scaled from decimals stay below this, so the scaling is exact.
const DECIMAL_LIMIT: f64 = (1u64 << 52) as f64;

/// A block's values as integers at one number of decimals `k`; the few that are
/// not (a NaN, a -0, a value of full precision) are kept aside bit for bit, their
/// integer slot repeating the one before.
struct Decimals {
    k: usize,
    ns: Vec<i64>,
    exceptions: Vec<(usize, u64)>,
}

/// Bits an exception costs: its index and its pattern.
const EXCEPTION_BITS: usize = 32 + 64;

/// `y.round() as i64`, without the library's rounding call: below 2^52 the
/// fraction `y - trunc(y)` is exact and rounds half away from zero; at or above
/// it `y` is an integer already (or NaN, or infinite: the same saturating cast).
fn round_i64(y: f64) -> i64 {
    if y.abs() < DECIMAL_LIMIT {
        let t = y as i64;
        let f = y - t as f64;
        if f >= 0.5 {
            t + 1
        } else if f <= -0.5 {
            t - 1
        } else {
            t
        }
    } else {
        y as i64
    }
}

fn as_decimals(xs: &[f64]) -> Option<Decimals> {
    // The block's decimals so far: a value exact at them needs one try (a value
    // exact at fewer decimals is exact at more). Gives up as soon as more than an
    // eighth of the values are not decimals, so a block of full-precision values
    // costs a few tries, not sixteen a value.
    let (mut k, mut misses) = (0, 0);
    let mut each = Vec::with_capacity(xs.len());
    for (i, x) in xs.iter().enumerate() {
        // Each value's decimals and its integer at them.
        let found = (x.to_bits() != (-0.0f64).to_bits())
            .then(|| (k..POW10.len()).take_while(|&j| (x * POW10[j]).abs() < DECIMAL_LIMIT).find_map(|j| Some(round_i64(x * POW10[j])).filter(|n| (*n as f64 / POW10[j]).to_bits() == x.to_bits()).map(|n| (j, n))))
            .flatten();
        match found {
            Some((j, _)) => k = j,
            None => misses += 1,
        }
        if misses > 4.max((i + 1) / 8) {
            return None;
        }
        each.push(found);
    }
    each.iter().flatten().next()?;
    let p = POW10[k];
    // Exceptions before the first decimal take its integer, so they widen nothing.
    let mut last = xs.iter().zip(&each).find_map(|(x, d)| d.map(|_| round_i64(x * p))).unwrap_or(0);
    let (mut ns, mut exceptions) = (Vec::with_capacity(xs.len()), Vec::new());
    for (i, (x, d)) in xs.iter().zip(&each).enumerate() {
        // A value exact at its own decimals is exact at more; checked, not
        // assumed (a value found at the block's decimals was checked there).
        let exact = match *d {
            Some((j, n)) if j == k => Some(n),
            Some(_) => Some(round_i64(x * p)).filter(|n| (*n as f64 / p).to_bits() == x.to_bits()),
            None => None,
        };
        if let Some(n) = exact {
            last = n;
        } else {
            exceptions.push((i, x.to_bits()));
            if exceptions.len() > xs.len() / 8 {
                return None;
            }
        }
        ns.push(last);
    }
    Some(Decimals { k, ns, exceptions })
}

/// Bits that hold every number from 0 to `span`.
fn width_of(span: u64) -> u32 {
    64 - span.leading_zeros()
}

/// The smallest and largest of a non-empty sequence.
fn min_max(xs: impl Iterator<Item = i64>) -> (i64, i64) {
    xs.fold((i64::MAX, i64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)))
}

fn put_values(w: &mut BitWriter, xs: &[f64]) {
    if xs.is_empty() {
        return;
    }
    // XOR is counted first and kept unless another code is smaller.
    let mut best = (2 + xor_bits(xs), ValueCode::Xor);
    let decimals = as_decimals(xs);
    let mut spread = (0, 0, 0, 0);
    if let Some(d) = &decimals {
        let (lo, hi) = min_max(d.ns.iter().copied());
        let (dlo, dhi) = if d.ns.len() > 1 { min_max(d.ns.windows(2).map(|p| p[1].wrapping_sub(p[0]))) } else { (0, 0) };
        spread = (lo, width_of(hi.wrapping_sub(lo) as u64), dlo, width_of(dhi.wrapping_sub(dlo) as u64));
        let head = 4 + 32 + d.exceptions.len() * EXCEPTION_BITS + 7;
        best = best.min((head + 64 + xs.len() * spread.1 as usize, ValueCode::Decimal));
        best = best.min((head + 128 + (xs.len() - 1) * spread.3 as usize, ValueCode::DecimalDelta));
    }
    let dictionary = Dictionary::of(xs, best.0);
    let index_width = dictionary.as_ref().map_or(0, |d| width_of(d.distinct.len().max(1) as u64 - 1));
    if let Some(d) = &dictionary {
        best = best.min((32 + d.distinct.len() * 64 + xs.len() * index_width as usize, ValueCode::Dictionary));
    }
    w.put(best.1 as u64, 2);
    match (best.1, decimals) {
        (ValueCode::Decimal | ValueCode::DecimalDelta, Some(d)) => {
            w.put(d.k as u64, 4);
            w.put(d.exceptions.len() as u64, 32);
            for (i, bits) in &d.exceptions {
                w.put(*i as u64, 32);
                w.put(*bits, 64);
            }
            let (lo, width, dlo, dwidth) = spread;
            if best.1 == ValueCode::Decimal {
                w.put(width as u64, 7);
                w.put(lo as u64, 64);
                d.ns.iter().for_each(|n| w.put(n.wrapping_sub(lo) as u64, width));
            } else {
                w.put(dwidth as u64, 7);
                w.put(d.ns[0] as u64, 64);
                w.put(dlo as u64, 64);
                d.ns.windows(2).for_each(|p| w.put(p[1].wrapping_sub(p[0]).wrapping_sub(dlo) as u64, dwidth));
            }
        }
        (ValueCode::Dictionary, _) if let Some(d) = dictionary => {
            w.put(d.distinct.len() as u64, 32);
            d.distinct.iter().for_each(|v| w.put(*v, 64));
            d.indices.iter().for_each(|i| w.put(*i as u64, index_width));
        }
        _ => put_xor(w, xs.iter().copied()),
    }
}

/// A block's distinct bit patterns in order of first appearance, and each
/// value's index among them.
struct Dictionary {
    distinct: Vec<u64>,
    indices: Vec<u32>,
}

impl Dictionary {
    /// The block's dictionary when it could cost fewer than `budget` bits. A block
    /// whose first 128 values repeat fewer than 16 times is not tried (its
    /// dictionary would not be small), so most blocks skip it.
    fn of(xs: &[f64], budget: usize) -> Option<Dictionary> {
        const SAMPLE: usize = 128;
        if xs.len() >= SAMPLE {
            let mut sample: Vec<u64> = xs[..SAMPLE].iter().map(|x| x.to_bits()).collect();
            sample.sort_unstable();
            sample.dedup();
            if sample.len() > SAMPLE - 16 {
                return None;
            }
        }
        // An open-addressed table of indices into `distinct`, at most half full.
        let slots = (2 * xs.len()).next_power_of_two().max(2);
        let shift = 64 - slots.trailing_zeros();
        let mut table = vec![u32::MAX; slots];
        let (mut distinct, mut indices) = (Vec::new(), Vec::with_capacity(xs.len()));
        for x in xs {
            let bits = x.to_bits();
            let mut at = (bits.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize;
            let index = loop {
                match table[at] {
                    u32::MAX => {
                        table[at] = distinct.len() as u32;
                        distinct.push(bits);
                        if distinct.len() * 64 >= budget {
                            return None;
                        }
                        break table[at];
                    }
                    i if distinct[i as usize] == bits => break i,
                    _ => at = (at + 1) & (slots - 1),
                }
            };
            indices.push(index);
        }
        Some(Dictionary { distinct, indices })
    }
}

fn get_values(r: &mut BitReader, n: usize, mut out: impl FnMut(f64)) {
    if n == 0 {
        return;
    }
    let code = r.get(2);
    match code {
        1 | 2 => {
            let p = POW10[(r.get(4) as usize).min(POW10.len() - 1)];
            let count = r.get(32).min(n as u64) as usize;
            let exceptions: Vec<(u64, u64)> = (0..count).map(|_| (r.get(32), r.get(64))).collect();
            let mut exceptions = exceptions.into_iter().peekable();
            let width = (r.get(7) as u32).min(64);
            let mut x = r.get(64) as i64;
            let dlo = if code == 2 { r.get(64) as i64 } else { 0 };
            for i in 0..n {
                let v = if code == 1 {
                    x.wrapping_add(r.get(width) as i64)
                } else {
                    if i > 0 {
                        x = x.wrapping_add(dlo).wrapping_add(r.get(width) as i64);
                    }
                    x
                };
                match exceptions.next_if(|e| e.0 == i as u64) {
                    Some((_, bits)) => out(f64::from_bits(bits)),
                    None => out(v as f64 / p),
                }
            }
        }
        3 => {
            let count = r.get(32).min(1 << 20) as usize;
            let distinct: Vec<u64> = (0..count).map(|_| r.get(64)).collect();
            let width = width_of(count.max(1) as u64 - 1);
            (0..n).for_each(|_| out(f64::from_bits(distinct.get(r.get(width) as usize).copied().unwrap_or(0))));
        }
        _ => get_xor(r, n, out),
    }
}

/// The bit offsets of the times and values streams, in the first 8 bytes.
const HEADER_BITS: usize = 64;

/// Compresses a block (the three columns have the same length).
pub(super) fn encode(steps: &[u64], times: &[f64], values: &[f64]) -> Box<[u8]> {
    let mut w = BitWriter::new();
    w.put(0, 64);
    put_dod(&mut w, steps.iter().copied());
    let times_at = w.bit_len();
    put_dod(&mut w, times.iter().map(|t| t.to_bits()));
    let values_at = w.bit_len();
    put_values(&mut w, values);
    let mut out = w.finish();
    out[..4].copy_from_slice(&(times_at as u32).to_be_bytes());
    out[4..8].copy_from_slice(&(values_at as u32).to_be_bytes());
    out.extend_from_slice(&[0; PAD]);
    out.into_boxed_slice()
}

fn offset(block: &[u8], at: usize) -> usize {
    block.get(at..at + 4).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// The first `n` steps of a block.
pub(super) fn decode_steps(block: &[u8], n: usize, out: &mut Vec<u64>) {
    get_dod(&mut BitReader::at(block, HEADER_BITS), n, |x| out.push(x));
}

/// The first `n` times of a block.
pub(super) fn decode_times(block: &[u8], n: usize, out: &mut Vec<f64>) {
    get_dod(&mut BitReader::at(block, offset(block, 0)), n, |x| out.push(f64::from_bits(x)));
}

/// The first `n` values of a block.
pub(super) fn decode_values(block: &[u8], n: usize, out: &mut Vec<f64>) {
    get_values(&mut BitReader::at(block, offset(block, 4)), n, |x| out.push(x));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bit_pattern_round_trips() {
        let mut rng = crate::test_rng::Rng(0x9e3779b97f4a7c15);
        let mut next = move || rng.next();
        let special = [f64::NAN, -f64::NAN, f64::from_bits(0x7ff0_0000_0000_0001), f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, f64::MIN_POSITIVE, f64::MAX, 5e-324];
        for case in 0..200 {
            let n = 1 + (next() % 1100) as usize;
            let mut steps = Vec::new();
            let (mut s, mut t) = (next() % 1000, (next() % 1000) as f64);
            let (mut times, mut values) = (Vec::new(), Vec::new());
            for i in 0..n {
                s += match case % 4 {
                    0 => 1,
                    1 => next() % 3,
                    2 => next() % 100_000,
                    _ => next() >> (next() % 64),
                };
                steps.push(s);
                t += if case % 3 == 0 { 0.5 } else { (next() % 1000) as f64 * 1e-3 };
                times.push(if case % 7 == 0 { f64::from_bits(next()) } else { t });
                values.push(match (case + i) % 5 {
                    0 => special[(next() % special.len() as u64) as usize],
                    1 => f64::from_bits(next()),
                    2 => (i as f64 * 0.1).sin() as f32 as f64,
                    _ => values.last().copied().unwrap_or(1.0),
                });
            }
            let block = encode(&steps, &times, &values);
            let (mut s2, mut t2, mut v2) = (Vec::new(), Vec::new(), Vec::new());
            decode_steps(&block, n, &mut s2);
            decode_times(&block, n, &mut t2);
            decode_values(&block, n, &mut v2);
            assert_eq!(s2, steps, "case {case}");
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&t2), bits(&times), "case {case}");
            assert_eq!(bits(&v2), bits(&values), "case {case}");
        }
    }

    fn values_round_trip(values: &[f64]) -> usize {
        let steps: Vec<u64> = (0..values.len() as u64).collect();
        let block = encode(&steps, &[], values);
        let mut back = Vec::new();
        decode_values(&block, values.len(), &mut back);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(values));
        // Any prefix decodes too (a read of the first n points).
        let mut prefix = Vec::new();
        decode_values(&block, values.len() / 3, &mut prefix);
        assert_eq!(bits(&prefix), bits(&values[..values.len() / 3]));
        block.len() - 8 - PAD - steps.len() / 8
    }

    #[test]
    fn logged_decimals_and_few_distinct_values_cost_a_few_bits_and_round_trip() {
        let mut rng = crate::test_rng::Rng(0x2545f4914f6cdd1d);
        let mut noise = move || (rng.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
        let n = 1024;
        // A loss printed with 4 decimals: about 10 bits of spread a point.
        let loss: Vec<f64> = (0..n).map(|i| format!("{:.4}", 2.5 - i as f64 * 1e-4 + 0.05 * noise()).parse().unwrap()).collect();
        assert!(values_round_trip(&loss) < n * 2, "{}", values_round_trip(&loss));
        // The same with a negative sign (a policy loss crossing zero).
        let signed: Vec<f64> = (0..n).map(|i| format!("{:.5}", (i as f64 / 90.0).sin() * 0.02 + 0.003 * noise()).parse().unwrap()).collect();
        assert!(values_round_trip(&signed) < n * 2);
        // Integers (tokens, bytes), a learning rate of few digits, and a wide trend
        // with small steps (the delta code).
        let bytes: Vec<f64> = (0..n).map(|i| (8_000_000_000u64 + i as u64 * 4096) as f64).collect();
        assert!(values_round_trip(&bytes) < n / 2);
        let lr: Vec<f64> = (0..n).map(|i| format!("{:.3e}", 3e-4 * (1.0 - i as f64 / 2048.0)).parse().unwrap()).collect();
        assert!(values_round_trip(&lr) < n * 2);
        // Fractions of a batch: few distinct values, each a full-precision f64.
        let accuracy: Vec<f64> = (0..n).map(|i| ((i * 37) % 97) as f64 / 97.0).collect();
        assert!(values_round_trip(&accuracy) < n * 2, "{}", values_round_trip(&accuracy));
        // Values no code but XOR can keep: -0, NaN and a full-precision fraction
        // among decimals; huge and tiny magnitudes.
        let mut mixed = loss.clone();
        mixed[10] = -0.0;
        mixed[20] = f64::NAN;
        mixed[30] = 1.0 / 3.0;
        values_round_trip(&mixed);
        let extremes: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 4.5e15 + i as f64 } else { 1e-300 * i as f64 }).collect();
        values_round_trip(&extremes);
        let near_limit: Vec<f64> = (0..n).map(|i| ((1u64 << 52) - 1 - i as u64) as f64 / 1e3).collect();
        values_round_trip(&near_limit);
        values_round_trip(&[0.1]);
        values_round_trip(&[f64::INFINITY; 5]);
    }

    #[test]
    fn rounding_to_an_integer_is_the_library_s() {
        let mut rng = crate::test_rng::Rng(0x51ed_2701_f3a5_9c21);
        let special = [0.5, -0.5, 1.5, -2.5, 0.49999999999999994, -0.49999999999999994, 4503599627370495.5, -4503599627370495.5, 4503599627370496.0, 9.3e18, -9.3e18, 1e300, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 5e-324];
        let mut ys: Vec<f64> = special.to_vec();
        for _ in 0..200_000 {
            let r = rng.next();
            ys.push(match r % 3 {
                0 => f64::from_bits(rng.next()),
                1 => (rng.next() % 2_000_000) as f64 / 4.0 - 250_000.0,
                _ => (rng.next() >> (rng.next() % 64)) as f64 * if r % 2 == 0 { 1e-3 } else { -1e-3 },
            });
        }
        for y in ys {
            assert_eq!(round_i64(y), y.round() as i64, "{y:e}");
        }
    }

    #[test]
    fn a_regular_block_is_small() {
        let steps: Vec<u64> = (1..=1024).collect();
        // A wall clock ticking every 0.25 s, a constant value: about 3 bits a point.
        let times: Vec<f64> = steps.iter().map(|s| 1.7e9 + *s as f64 * 0.25).collect();
        let values = vec![1.5; 1024];
        let bytes = encode(&steps, &times, &values).len();
        assert!(bytes < 1024 * 3 / 8 + 64, "{bytes}");
    }
}
