//! Lossless compression of a block of points, in three bit streams: steps and
//! times as delta-of-delta (times on their IEEE bit patterns), values XORed with
//! the previous value (Gorilla, Pelkonen et al. 2015). Regular steps and a steady
//! cadence cost about a bit per point; a value costs 1 bit when it repeats and
//! its changed bits otherwise. Every f64 (NaN payloads, infinities, -0) round-trips
//! bit for bit, because only bit patterns are coded.

/// Zero bytes after the last stream, so a reader may load 16 bytes anywhere in it.
const PAD: usize = 16;

struct BitWriter {
    out: Vec<u8>,
    acc: u128,
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
        self.acc = (self.acc << n) | bits as u128;
        self.pending += n;
        while self.pending >= 8 {
            self.pending -= 8;
            self.out.push((self.acc >> self.pending) as u8);
        }
        self.acc &= (1u128 << self.pending) - 1;
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
        if width == 64 || z < 1u64 << width {
            w.put(prefix, len);
            return w.put(z, width);
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
fn put_dod(w: &mut BitWriter, xs: impl Iterator<Item = u64>) {
    let (mut prev, mut delta) = (0u64, 0u64);
    for (i, x) in xs.enumerate() {
        if i == 0 {
            w.put(x, 64);
        } else {
            let d = x.wrapping_sub(prev);
            put_signed(w, d.wrapping_sub(delta) as i64);
            delta = d;
        }
        prev = x;
    }
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
                w.put(0b11, 2);
                w.put(lead as u64, 6);
                w.put(meaningful as u64 - 1, 6);
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
    put_xor(&mut w, values.iter().copied());
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
    get_xor(&mut BitReader::at(block, offset(block, 4)), n, |x| out.push(x));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bit_pattern_round_trips() {
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
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
