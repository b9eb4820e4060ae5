//! A run's clock: the time of each of its steps, kept once for all the run's
//! series. A run's metrics mostly arrive together, at the same (step, time), so a
//! series' sealed block can refer to the clock's blocks for its times instead of
//! storing them (a jittered wall clock costs about 4.6 bytes a point when every
//! series stores it). A block shares the clock only when every one of its points'
//! times is the clock's time at that step, bit for bit; otherwise it keeps its own.
//!
//! The clock's sealed blocks never change: a series block holds the ones it reads,
//! so a resume (which drops the clock's steps from some step on) cannot change the
//! times a sealed block reads back.
use std::sync::{Arc, Mutex, MutexGuard};

use super::codec;

/// Steps per clock block once the clock seals by itself. A series sealing a block
/// whose last step is still in the clock's tail seals the tail up to that step
/// first, so clock blocks may be shorter.
const CLOCK_BLOCK: usize = 1024;

/// A series block shares the clock only when the clock blocks it reads hold at most
/// this many steps per point of its own: a series logged every few steps keeps its
/// own times, since reading them would decode the clock's every step.
const MAX_STEPS_READ_PER_POINT: usize = 4;

/// Decoded clock blocks kept for the series that seal one after another against
/// the same steps.
const DECODED_KEPT: usize = 4;

/// One run's clock, shared by its series (a clone is the same clock). The run's
/// owner notes each step's time before its series are given the step's points.
#[derive(Clone, Default)]
pub struct Clock(Arc<Mutex<Log>>);

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

#[derive(Default)]
struct Log {
    /// Ascending, with disjoint step ranges.
    sealed: Vec<Arc<ClockBlock>>,
    /// The steps after the sealed blocks (ascending) and their times.
    steps: Vec<u64>,
    times: Vec<f64>,
    /// The clock blocks decoded last, for the next series that checks its times.
    decoded: Vec<(Arc<ClockBlock>, Arc<Entries>)>,
}

/// Compressed steps and times of consecutive noted steps (see [`codec`]).
#[derive(Debug)]
pub(super) struct ClockBlock {
    bytes: Box<[u8]>,
    len: usize,
    first_step: u64,
    last_step: u64,
}

struct Entries {
    steps: Vec<u64>,
    times: Vec<f64>,
}

impl ClockBlock {
    fn new(steps: &[u64], times: &[f64]) -> ClockBlock {
        ClockBlock {
            bytes: codec::encode(steps, times, &[]),
            len: steps.len(),
            first_step: steps.first().copied().unwrap_or(0),
            last_step: steps.last().copied().unwrap_or(0),
        }
    }

    fn decode(&self) -> Entries {
        let mut e = Entries { steps: Vec::with_capacity(self.len), times: Vec::with_capacity(self.len) };
        codec::decode_steps(&self.bytes, self.len, &mut e.steps);
        codec::decode_times(&self.bytes, self.len, &mut e.times);
        e
    }

    fn heap_bytes(&self) -> usize {
        std::mem::size_of::<ClockBlock>() + 2 * std::mem::size_of::<usize>() + self.bytes.len()
    }
}

impl Clock {
    pub fn new() -> Clock {
        Clock::default()
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Step `step` happened at `time_s`. A step at or before the last one noted is
    /// ignored (a resume calls [`Clock::truncate_from`] first).
    pub fn note(&self, step: u64, time_s: f64) {
        let mut log = self.lock();
        let last = log.steps.last().copied().or_else(|| log.sealed.last().map(|b| b.last_step));
        if last.is_some_and(|last| step <= last) {
            return;
        }
        log.steps.push(step);
        log.times.push(time_s);
        if log.steps.len() >= CLOCK_BLOCK {
            log.seal_through(u64::MAX);
        }
    }

    /// Forgets the steps at `step` and after (the run resumed from an earlier step).
    /// Series blocks that read the dropped steps keep the blocks they read.
    pub fn truncate_from(&self, step: u64) {
        let mut log = self.lock();
        let keep = log.steps.partition_point(|s| *s < step);
        if keep > 0 || log.sealed.last().is_none_or(|b| b.last_step < step) {
            log.steps.truncate(keep);
            log.times.truncate(keep);
            return;
        }
        // The cut falls in the sealed blocks: the kept part of the block it cuts
        // becomes the tail again.
        let cut = log.sealed.partition_point(|b| b.last_step < step);
        let entries = log.sealed[cut].decode();
        let kept = entries.steps.partition_point(|s| *s < step);
        log.sealed.truncate(cut);
        log.steps = entries.steps[..kept].to_vec();
        log.times = entries.times[..kept].to_vec();
        log.decoded.clear();
    }

    /// Bytes the clock holds on the heap (counted once per run, apart from its series).
    pub fn heap_bytes(&self) -> usize {
        let log = self.lock();
        let sealed: usize = log.sealed.iter().map(|b| b.heap_bytes()).sum();
        sealed + log.sealed.capacity() * std::mem::size_of::<usize>() + (log.steps.capacity() + log.times.capacity()) * 8
    }

    /// The clock blocks that give each of `steps` (ascending) exactly its time in
    /// `times`, if there are such blocks and reading them costs little; `None`
    /// when the series must keep its own times.
    pub(super) fn share(&self, steps: &[u64], times: &[f64]) -> Option<Box<[Arc<ClockBlock>]>> {
        let (&first, &last) = (steps.first()?, steps.last()?);
        let mut log = self.lock();
        if log.steps.first().is_some_and(|s| *s <= last) {
            log.seal_through(last);
        }
        let from = log.sealed.partition_point(|b| b.last_step < first);
        let to = log.sealed.partition_point(|b| b.first_step <= last);
        let blocks = log.sealed.get(from..to)?;
        if blocks.iter().map(|b| b.len).sum::<usize>() > MAX_STEPS_READ_PER_POINT * steps.len() {
            return None;
        }
        let blocks: Box<[Arc<ClockBlock>]> = blocks.into();
        let decoded: Vec<Arc<Entries>> = blocks.iter().map(|b| log.decoded(b)).collect();
        if let [d] = &decoded[..] {
            if d.steps == steps {
                // The block's steps are the clock block's (a metric logged at
                // every step): the times match when every one has the same bits.
                return (d.times.len() == times.len() && d.times.iter().zip(times).all(|(a, b)| a.to_bits() == b.to_bits())).then_some(blocks);
            }
        }
        let mut i = 0;
        let mut same = true;
        lookup(decoded.iter().map(|d| &**d), steps, |t| {
            same &= t.is_some_and(|t| t.to_bits() == times[i].to_bits());
            i += 1;
        });
        same.then_some(blocks)
    }
}

impl Log {
    /// Seals the tail's steps up to `last` into a block.
    fn seal_through(&mut self, last: u64) {
        let n = self.steps.partition_point(|s| *s <= last);
        if n == 0 {
            return;
        }
        let block = Arc::new(ClockBlock::new(&self.steps[..n], &self.times[..n]));
        // The block's entries as decoding would give them (the code is
        // lossless): the series sealing the same steps next compare with them.
        let entries = Arc::new(Entries { steps: self.steps[..n].to_vec(), times: self.times[..n].to_vec() });
        if self.decoded.len() == DECODED_KEPT {
            self.decoded.remove(0);
        }
        self.decoded.push((block.clone(), entries));
        self.sealed.push(block);
        self.steps.drain(..n);
        self.times.drain(..n);
    }

    fn decoded(&mut self, block: &Arc<ClockBlock>) -> Arc<Entries> {
        if let Some((_, e)) = self.decoded.iter().find(|(b, _)| Arc::ptr_eq(b, block)) {
            return e.clone();
        }
        let e = Arc::new(block.decode());
        if self.decoded.len() == DECODED_KEPT {
            self.decoded.remove(0);
        }
        self.decoded.push((block.clone(), e.clone()));
        e
    }
}

/// Calls `found` with the time of each of `steps` (ascending) in `entries` (the
/// decoded clock blocks, ascending), `None` where the clock has no such step.
fn lookup<'a>(entries: impl Iterator<Item = &'a Entries>, steps: &[u64], mut found: impl FnMut(Option<f64>)) {
    let mut entries = entries.flat_map(|e| e.steps.iter().copied().zip(e.times.iter().copied())).peekable();
    let mut prev = None;
    for &step in steps {
        // Steps that go back (never in a shared block) read nothing.
        if prev.is_some_and(|p| step < p) {
            found(None);
            continue;
        }
        prev = Some(step);
        while entries.next_if(|(s, _)| *s < step).is_some() {}
        found(entries.peek().filter(|(s, _)| *s == step).map(|(_, t)| *t));
    }
}

/// The times of `steps` (a shared block's, ascending) read from `blocks`.
pub(super) fn times_of(blocks: &[Arc<ClockBlock>], steps: &[u64], out: &mut Vec<f64>) {
    let decoded: Vec<Entries> = blocks.iter().map(|b| b.decode()).collect();
    lookup(decoded.iter(), steps, |t| out.push(t.unwrap_or(f64::NAN)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_shares_the_clock_only_when_every_time_matches() {
        let clock = Clock::new();
        for s in 0..3000u64 {
            clock.note(s, s as f64 * 0.3 + 1e-7 * (s % 7) as f64);
        }
        let steps: Vec<u64> = (1000..2024).collect();
        let times: Vec<f64> = steps.iter().map(|s| *s as f64 * 0.3 + 1e-7 * (s % 7) as f64).collect();
        let blocks = clock.share(&steps, &times).expect("same times");
        let mut back = Vec::new();
        times_of(&blocks, &steps, &mut back);
        assert_eq!(back.iter().map(|t| t.to_bits()).collect::<Vec<_>>(), times.iter().map(|t| t.to_bits()).collect::<Vec<_>>());
        let mut other = times.clone();
        other[500] = f64::from_bits(other[500].to_bits() ^ 1);
        assert!(clock.share(&steps, &other).is_none(), "one time differs by an ulp");
        let missing: Vec<u64> = steps.iter().map(|s| s + 5000).collect();
        assert!(clock.share(&missing, &times).is_none(), "steps the clock never saw");
        // Every 8th step: reading the clock would decode 8 steps a point.
        let sparse: Vec<u64> = (0..300).map(|k| k * 8).collect();
        let sparse_times: Vec<f64> = sparse.iter().map(|s| *s as f64 * 0.3 + 1e-7 * (s % 7) as f64).collect();
        assert!(clock.share(&sparse, &sparse_times).is_none());
    }

    #[test]
    fn a_resume_leaves_blocks_already_shared_as_they_were() {
        let clock = Clock::new();
        for s in 0..2048u64 {
            clock.note(s, s as f64);
        }
        let steps: Vec<u64> = (0..1024).collect();
        let times: Vec<f64> = steps.iter().map(|s| *s as f64).collect();
        let blocks = clock.share(&steps, &times).unwrap();
        clock.truncate_from(500);
        for s in 500..1600u64 {
            clock.note(s, s as f64 + 0.5);
        }
        let mut back = Vec::new();
        times_of(&blocks, &steps, &mut back);
        assert_eq!(back, times);
        let resumed: Vec<u64> = (500..1524).collect();
        let resumed_times: Vec<f64> = resumed.iter().map(|s| *s as f64 + 0.5).collect();
        assert!(clock.share(&resumed, &resumed_times).is_some());
        assert!(clock.share(&resumed, &times).is_none());
    }
}
