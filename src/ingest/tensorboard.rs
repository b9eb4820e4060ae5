//! TensorBoard event files (`events.out.tfevents.*`): TFRecord framing (a length
//! and the data, each followed by its masked CRC32C) around `Event` protobufs whose
//! summaries carry scalars, written as `simple_value` (the classic writer) or as a
//! one-element tensor (`add_scalar(..., new_style=True)`, and TensorFlow 2). A
//! record cut short at the end of the file is one still being written: it is left
//! for the next read, not an error. A record whose checksum fails is skipped.
use prost::Message;

use super::{Line, Record, SkipKind};

/// A record longer than this is not a scalar summary: skipped unread.
const MAX_RECORD: u64 = 16 << 20;

fn masked_crc(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(bytes);
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// What the framing yields.
#[derive(Debug, PartialEq)]
pub enum Framed<'a> {
    /// One record's data, and the bytes consumed.
    Record(&'a [u8], usize),
    /// A damaged record (bad checksum, absurd length), and the bytes to skip.
    Damaged(String, usize),
    /// Not enough bytes yet for a whole record.
    Incomplete,
}

/// The next record at the start of `buf`.
pub fn next_record(buf: &[u8]) -> Framed<'_> {
    if buf.len() < 12 {
        return Framed::Incomplete;
    }
    let len = u64::from_le_bytes(buf[0..8].try_into().unwrap_or_default());
    let len_crc = u32::from_le_bytes(buf[8..12].try_into().unwrap_or_default());
    if masked_crc(&buf[0..8]) != len_crc {
        // The length itself is damaged: nothing after it can be trusted.
        return Framed::Damaged("record length fails its checksum".into(), buf.len());
    }
    if len > MAX_RECORD {
        return Framed::Damaged(format!("record of {len} bytes"), buf.len());
    }
    let end = 12 + len as usize + 4;
    if buf.len() < end {
        return Framed::Incomplete;
    }
    let data = &buf[12..12 + len as usize];
    let data_crc = u32::from_le_bytes(buf[end - 4..end].try_into().unwrap_or_default());
    if masked_crc(data) != data_crc {
        return Framed::Damaged("record data fails its checksum".into(), end);
    }
    Framed::Record(data, end)
}

#[derive(Clone, PartialEq, Message)]
struct Event {
    #[prost(double, tag = "1")]
    wall_time: f64,
    #[prost(int64, tag = "2")]
    step: i64,
    #[prost(message, optional, tag = "5")]
    summary: Option<Summary>,
}

#[derive(Clone, PartialEq, Message)]
struct Summary {
    #[prost(message, repeated, tag = "1")]
    value: Vec<SummaryValue>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryValue {
    #[prost(string, tag = "1")]
    tag: String,
    #[prost(float, optional, tag = "2")]
    simple_value: Option<f32>,
    #[prost(message, optional, tag = "8")]
    tensor: Option<Tensor>,
}

#[derive(Clone, PartialEq, Message)]
struct Tensor {
    #[prost(int32, tag = "1")]
    dtype: i32,
    #[prost(bytes = "vec", tag = "4")]
    tensor_content: Vec<u8>,
    #[prost(float, repeated, tag = "5")]
    float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    double_val: Vec<f64>,
    #[prost(int32, repeated, tag = "7")]
    int_val: Vec<i32>,
    #[prost(int64, repeated, tag = "10")]
    int64_val: Vec<i64>,
}

// TensorFlow's DataType codes for the scalar kinds.
const DT_FLOAT: i32 = 1;
const DT_DOUBLE: i32 = 2;
const DT_INT32: i32 = 3;
const DT_INT64: i32 = 9;

impl Tensor {
    /// The value of a one-element numeric tensor.
    fn scalar(&self) -> Option<f64> {
        if let Some(v) = self.float_val.first() {
            return Some(f64::from(*v));
        }
        if let Some(v) = self.double_val.first() {
            return Some(*v);
        }
        if let Some(v) = self.int64_val.first() {
            return Some(*v as f64);
        }
        if let Some(v) = self.int_val.first() {
            return Some(f64::from(*v));
        }
        let c = &self.tensor_content;
        match self.dtype {
            DT_FLOAT if c.len() == 4 => Some(f64::from(f32::from_le_bytes(c[..4].try_into().ok()?))),
            DT_DOUBLE if c.len() == 8 => Some(f64::from_le_bytes(c[..8].try_into().ok()?)),
            DT_INT32 if c.len() == 4 => Some(f64::from(i32::from_le_bytes(c[..4].try_into().ok()?))),
            DT_INT64 if c.len() == 8 => Some(i64::from_le_bytes(c[..8].try_into().ok()?) as f64),
            _ => None,
        }
    }
}

/// One record's data as a metric line: its scalars under their tags; events
/// without scalars (the file version, graphs, images) are plain text.
pub fn parse_event(data: &[u8]) -> Line {
    let Ok(event) = Event::decode(data) else { return Line::Skip(SkipKind::Malformed, "an event that is not a TensorBoard Event".into()) };
    let Some(summary) = event.summary else { return Line::Text };
    let mut rec = Record { time: Some(event.wall_time).filter(|t| t.is_finite() && *t > 0.0), ..Default::default() };
    rec.step = u64::try_from(event.step).ok();
    for v in summary.value {
        match v.simple_value.map(f64::from).or_else(|| v.tensor.as_ref().and_then(Tensor::scalar)) {
            Some(x) => rec.fields.push((v.tag.into(), x)),
            None => rec.ignored.push(v.tag),
        }
    }
    if rec.fields.is_empty() {
        return Line::Text;
    }
    Line::Metrics(rec)
}

/// Every record of a whole file's bytes, in order; a cut-short tail is left out.
pub fn read_all(bytes: &[u8], mut f: impl FnMut(usize, Line)) {
    let mut at = 0usize;
    let mut index = 0usize;
    while at < bytes.len() {
        index += 1;
        match next_record(&bytes[at..]) {
            Framed::Record(data, used) => {
                f(index, parse_event(data));
                at += used;
            }
            Framed::Damaged(why, used) => {
                f(index, Line::Skip(SkipKind::Malformed, why));
                at += used;
            }
            Framed::Incomplete => break,
        }
    }
}

/// Whether a file name is a TensorBoard event file's.
pub fn is_event_file(name: &str) -> bool {
    name.contains("tfevents")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A framed record around `data`.
    fn frame(data: &[u8]) -> Vec<u8> {
        let len = (data.len() as u64).to_le_bytes();
        let mut out = len.to_vec();
        out.extend(masked_crc(&len).to_le_bytes());
        out.extend(data);
        out.extend(masked_crc(data).to_le_bytes());
        out
    }

    fn event(step: i64, tag: &str, simple: Option<f32>, tensor: Option<Tensor>) -> Vec<u8> {
        let e = Event { wall_time: 1.7e9, step, summary: Some(Summary { value: vec![SummaryValue { tag: tag.into(), simple_value: simple, tensor }] }) };
        e.encode_to_vec()
    }

    #[test]
    fn scalars_in_both_styles_and_a_cut_short_tail() {
        let mut bytes = frame(&Event { wall_time: 1.7e9, step: 0, summary: None }.encode_to_vec());
        bytes.extend(frame(&event(1, "loss", Some(2.5), None)));
        let t = Tensor { dtype: DT_FLOAT, tensor_content: 1.25f32.to_le_bytes().to_vec(), ..Default::default() };
        bytes.extend(frame(&event(2, "grad_norm", None, Some(t))));
        let whole = bytes.len();
        bytes.extend(&frame(&event(3, "loss", Some(2.0), None))[..10]);
        let mut lines = Vec::new();
        read_all(&bytes, |i, l| lines.push((i, l)));
        assert_eq!(lines.len(), 3, "the cut-short record waits");
        assert_eq!(lines[0].1, Line::Text, "the file version");
        let Line::Metrics(r) = &lines[2].1 else { panic!("{:?}", lines[2]) };
        assert_eq!((r.step, r.fields.clone()), (Some(2), vec![("grad_norm".into(), 1.25)]));
        assert!(matches!(next_record(&bytes[whole..]), Framed::Incomplete));
    }

    #[test]
    fn damage_is_skipped_with_a_reason() {
        let mut bytes = frame(&event(1, "loss", Some(2.5), None));
        let n = bytes.len();
        bytes[n - 6] ^= 0x40;
        assert!(matches!(next_record(&bytes), Framed::Damaged(ref why, used) if why.contains("data") && used == n));
        bytes[0] ^= 1;
        assert!(matches!(next_record(&bytes), Framed::Damaged(ref why, _) if why.contains("length")));
        assert_eq!(parse_event(&[0xff, 0xff, 0xff]), Line::Skip(SkipKind::Malformed, "an event that is not a TensorBoard Event".into()));
    }
}
