//! Following a file another program writes: read from its start, then whatever
//! it grows by. A file that shrinks (truncated) or is replaced (rotated: a new
//! file under the same name) is read again from its start; a replaced file's
//! unread end is read first.
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// At most this much is read per poll, so one poll never holds up the others long.
const MAX_READ: u64 = 4 << 20;

pub struct Tail {
    path: PathBuf,
    open: Option<Opened>,
}

struct Opened {
    file: File,
    inode: u64,
    offset: u64,
}

/// What one poll found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TailRead {
    /// New bytes of the file being followed (the old file's end first, on rotation).
    pub bytes: Vec<u8>,
    /// The file was truncated or replaced: `after` holds the new file's bytes.
    pub restarted: Option<Restart>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Restart {
    pub why: &'static str,
    pub after: Vec<u8>,
}

impl Tail {
    pub fn new(path: PathBuf) -> Self {
        Tail { path, open: None }
    }

    /// Whether the file has been found.
    pub fn found(&self) -> bool {
        self.open.is_some()
    }

    /// Reads what is new. A file that does not exist yet is not an error: the
    /// program may create it later.
    pub fn poll(&mut self) -> std::io::Result<TailRead> {
        let mut read = TailRead::default();
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(read),
            Err(e) => return Err(e),
        };
        let why = match &mut self.open {
            None => None,
            Some(o) if o.inode != meta.ino() => {
                read.bytes = read_from(o)?;
                Some("replaced")
            }
            Some(o) if meta.len() < o.offset => Some("truncated"),
            Some(o) => {
                read.bytes = read_from(o)?;
                return Ok(read);
            }
        };
        let file = File::open(&self.path)?;
        let inode = file.metadata()?.ino();
        let mut opened = Opened { file, inode, offset: 0 };
        let bytes = read_from(&mut opened)?;
        self.open = Some(opened);
        match why {
            Some(why) => read.restarted = Some(Restart { why, after: bytes }),
            None => read.bytes = bytes,
        }
        Ok(read)
    }
}

fn read_from(o: &mut Opened) -> std::io::Result<Vec<u8>> {
    o.file.seek(SeekFrom::Start(o.offset))?;
    let mut buf = Vec::new();
    (&mut o.file).take(MAX_READ).read_to_end(&mut buf)?;
    o.offset += buf.len() as u64;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn grows_truncates_and_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let mut tail = Tail::new(path.clone());
        assert_eq!(tail.poll().unwrap(), TailRead::default(), "not there yet");
        std::fs::write(&path, "a\n").unwrap();
        assert_eq!(tail.poll().unwrap().bytes, b"a\n");
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"b\n").unwrap();
        assert_eq!(tail.poll().unwrap().bytes, b"b\n");
        assert_eq!(tail.poll().unwrap(), TailRead::default());
        std::fs::write(&path, "c\n").unwrap();
        let r = tail.poll().unwrap();
        assert_eq!(r.restarted, Some(Restart { why: "truncated", after: b"c\n".to_vec() }));
        // Rotation: the old file gets a last line, then a new file takes its name.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"d\n").unwrap();
        std::fs::rename(&path, dir.path().join("m.jsonl.1")).unwrap();
        std::fs::write(&path, "e\n").unwrap();
        let r = tail.poll().unwrap();
        assert_eq!(r.bytes, b"d\n", "the old file's end first");
        assert_eq!(r.restarted, Some(Restart { why: "replaced", after: b"e\n".to_vec() }));
    }
}
