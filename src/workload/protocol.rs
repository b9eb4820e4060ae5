//! What rlmon and its training worker (`rlmon-train`, see `train/src/`) say to each
//! other. A built-in run trains in a process of its own, so that libtorch aborting
//! or crashing ends that run only, and so that commands which never train do not
//! load libtorch at all.
//!
//! rlmon writes one [`Job`] as a JSON line to the worker's stdin and keeps stdin
//! open: end of file there means "stop" (rlmon cancelled the run, or rlmon itself
//! is gone). The worker answers on stdout with [`Message`] frames: a little-endian
//! `u32` length, then the message in postcard (compact, and exact for every f64,
//! NaN included). Its stderr is free text for the events pane.
use std::io::{self, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::metrics::MetricName;
use crate::session::{LogLevel, RunOutcome};

/// Bumped whenever [`Job`] or [`Message`] change shape: a worker from another
/// build says so instead of misreading.
pub const PROTOCOL_VERSION: u32 = 1;

/// The executable that trains built-in runs, installed beside `rlmon`.
pub const WORKER_EXE: &str = "rlmon-train";

/// Overrides where rlmon looks for the worker.
pub const WORKER_ENV: &str = "RLMON_TRAIN_BIN";

/// One largest frame: a step's metrics are a few kilobytes; anything near this is
/// a stream out of step, not a message.
pub const MAX_FRAME: usize = 16 << 20;

/// What to train. The worker resolves the session config itself, from the text
/// rlmon read (so an edit of the file after start changes nothing), and trains the
/// run of that name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub protocol: u32,
    /// The config file, for messages and to resolve relative paths.
    pub config_path: PathBuf,
    pub config_text: String,
    pub run: String,
    /// The run's step total after `--max-steps`.
    pub steps: u64,
    /// Intra-op threads, chosen by rlmon for all runs together.
    pub threads: usize,
}

/// From the worker, in order: `Started` once (not when setup fails), `Metrics`
/// for every step, `Log` at any time, `Ended` last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Message {
    /// `libtorch`: the version the worker loaded, for the session's hardware record.
    Started { device: String, threads: usize, libtorch: Option<String> },
    Metrics { step: u64, time_s: f64, values: Vec<(MetricName, f64)> },
    Log { level: LogLevel, message: String },
    Ended { outcome: RunOutcome },
}

/// Writes one frame and flushes it, so rlmon sees each step as it happens.
pub fn write_message(out: &mut impl Write, message: &Message) -> io::Result<()> {
    let body = postcard::to_stdvec(message).map_err(io::Error::other)?;
    out.write_all(&(body.len() as u32).to_le_bytes())?;
    out.write_all(&body)?;
    out.flush()
}

/// Cuts the worker's stdout into messages, whatever sizes it arrives in.
#[derive(Debug, Default)]
pub struct Decoder {
    pending: Vec<u8>,
}

impl Decoder {
    /// The whole messages in what has arrived so far. A frame that cannot be a
    /// message is an error: the stream is out of step and nothing after it can be
    /// trusted.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Message>, String> {
        self.pending.extend_from_slice(bytes);
        let mut messages = Vec::new();
        let mut at = 0;
        while let Some(len_bytes) = self.pending.get(at..at + 4) {
            let len = u32::from_le_bytes(len_bytes.try_into().expect("four bytes")) as usize;
            if len > MAX_FRAME {
                return Err(format!("a frame of {len} bytes (at most {MAX_FRAME})"));
            }
            let Some(body) = self.pending.get(at + 4..at + 4 + len) else { break };
            messages.push(postcard::from_bytes(body).map_err(|e| format!("unreadable message: {e}"))?);
            at += 4 + len;
        }
        self.pending.drain(..at);
        Ok(messages)
    }

    /// Bytes of a frame not yet complete (non-zero at the end: the worker died mid-message).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

/// What `rlmon-train probe` prints (JSON): the libtorch the worker loads, for `doctor`
/// and for a session's hardware record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// Version of the libtorch loaded (from its torch/version.py).
    pub version: Option<String>,
    /// Folder of the loaded libtorch_cpu.so.
    pub path: Option<PathBuf>,
    pub cuda_library_loaded: bool,
    pub cuda_available: bool,
    pub cuda_devices: i64,
    pub cudnn: bool,
    /// libtorch's default intra-op threads.
    pub default_threads: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Message> {
        vec![
            Message::Started { device: "cpu".into(), threads: 2, libtorch: Some("2.11.0".into()) },
            Message::Metrics { step: 7, time_s: 0.5, values: vec![("loss".into(), f64::NAN), ("lr".into(), -0.0)] },
            Message::Log { level: LogLevel::Warn, message: "slow".into() },
            Message::Ended { outcome: RunOutcome::Failed("boom".into()) },
        ]
    }

    #[test]
    fn frames_read_back_whatever_the_chunk_sizes() {
        let mut bytes = Vec::new();
        for m in sample() {
            write_message(&mut bytes, &m).unwrap();
        }
        for chunk in [1, 3, 7, bytes.len()] {
            let mut decoder = Decoder::default();
            let mut got = Vec::new();
            for piece in bytes.chunks(chunk) {
                got.extend(decoder.push(piece).unwrap());
            }
            assert_eq!(decoder.pending(), 0);
            assert_eq!(got.len(), 4);
            let Message::Metrics { values, .. } = &got[1] else { panic!("metrics second") };
            assert!(values[0].1.is_nan() && values[1].1.to_bits() == (-0.0f64).to_bits(), "f64 bits survive");
            assert_eq!(got[3], sample()[3]);
        }
    }

    #[test]
    fn a_stream_out_of_step_is_an_error_not_a_huge_allocation() {
        let mut decoder = Decoder::default();
        assert!(decoder.push(&u32::MAX.to_le_bytes()).unwrap_err().contains("frame of"));
        let mut decoder = Decoder::default();
        assert!(decoder.push(&[2, 0, 0, 0, 0xff, 0xff]).unwrap_err().contains("unreadable"));
        let mut decoder = Decoder::default();
        assert!(decoder.push(&[9, 0, 0, 0, 1]).unwrap().is_empty(), "half a frame waits");
        assert_eq!(decoder.pending(), 5);
    }
}
