//! Length- and checksum-framed records, the journal's unit of durability. A frame is
//! `len: u32 LE | crc32(payload): u32 LE | payload`. A reader stops at the first frame
//! that is cut short or fails its checksum: everything before it is intact, and
//! nothing after a torn write can be trusted. Pure logic over byte slices and writers.
use std::io::{self, Write};

/// Frames larger than this are refused on write and treated as corruption on read,
/// so a damaged length field never turns into a huge allocation.
pub const MAX_FRAME: usize = 16 << 20;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 8;

/// Writes one frame; returns the bytes written.
pub fn write_frame(out: &mut impl Write, payload: &[u8]) -> io::Result<usize> {
    if payload.len() > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("record of {} bytes exceeds {MAX_FRAME}", payload.len())));
    }
    let mut header = [0u8; HEADER_LEN];
    header[..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    header[4..].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.write_all(&header)?;
    out.write_all(payload)?;
    Ok(HEADER_LEN + payload.len())
}

/// Why reading stopped before the end of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// Every byte belonged to a whole, valid frame.
    Clean,
    /// The last frame is incomplete (a write cut short by a crash), at this offset.
    Torn { offset: usize },
    /// A frame's length is impossible or its checksum does not match, at this offset.
    Corrupt { offset: usize, reason: String },
}

/// Splits `bytes` into frame payloads, stopping at the first bad frame.
pub fn read_frames(bytes: &[u8]) -> (Vec<&[u8]>, Tail) {
    let mut frames = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < HEADER_LEN {
            return (frames, Tail::Torn { offset: at });
        }
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        if len > MAX_FRAME {
            return (frames, Tail::Corrupt { offset: at, reason: format!("record length {len} exceeds {MAX_FRAME}") });
        }
        if rest.len() < HEADER_LEN + len {
            return (frames, Tail::Torn { offset: at });
        }
        let payload = &rest[HEADER_LEN..HEADER_LEN + len];
        if crc32fast::hash(payload) != crc {
            return (frames, Tail::Corrupt { offset: at, reason: "checksum mismatch".into() });
        }
        frames.push(payload);
        at += HEADER_LEN + len;
    }
    (frames, Tail::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(payloads: &[&[u8]]) -> (Vec<u8>, Vec<usize>) {
        let mut out = Vec::new();
        let mut ends = vec![0];
        for p in payloads {
            write_frame(&mut out, p).unwrap();
            ends.push(out.len());
        }
        (out, ends)
    }

    #[test]
    fn every_cut_keeps_exactly_the_whole_frames_before_it() {
        let payloads: [&[u8]; 4] = [b"alpha", b"", b"a longer third payload", b"z"];
        let (bytes, ends) = framed(&payloads);
        for cut in 0..=bytes.len() {
            let (frames, tail) = read_frames(&bytes[..cut]);
            let whole = ends.iter().filter(|e| **e <= cut).count() - 1;
            assert_eq!(frames, payloads[..whole].to_vec(), "cut at {cut}");
            let at_boundary = ends.contains(&cut);
            assert_eq!(tail == Tail::Clean, at_boundary, "cut at {cut}: {tail:?}");
        }
    }

    #[test]
    fn a_flipped_byte_stops_reading_at_its_frame() {
        let (mut bytes, ends) = framed(&[b"one", b"two", b"three"]);
        bytes[ends[1] + HEADER_LEN] ^= 0x40;
        let (frames, tail) = read_frames(&bytes);
        assert_eq!(frames, vec![b"one".as_slice()]);
        assert!(matches!(tail, Tail::Corrupt { offset, .. } if offset == ends[1]));
    }

    #[test]
    fn huge_length_fields_are_corruption_not_allocations() {
        let mut bytes = u32::MAX.to_le_bytes().to_vec();
        bytes.extend([0; 12]);
        let (frames, tail) = read_frames(&bytes);
        assert!(frames.is_empty());
        assert!(matches!(tail, Tail::Corrupt { .. }), "{tail:?}");
        assert!(write_frame(&mut Vec::new(), &vec![0; MAX_FRAME + 1]).is_err());
    }
}
