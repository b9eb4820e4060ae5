//! Byte-level training data: rlmon's own synthetic text (nothing is downloaded) or the
//! user's text, sampled as random windows in an order fixed by the seed.
use std::path::Path;

use anyhow::{bail, Context, Result};
use tch::{Device, Tensor};

use rlmon::config::DataSource;
use rlmon::workload::rng::SplitMix64;

/// Size of the generated corpus: large enough that a tiny model cannot memorise it
/// within a demo, small enough to build in milliseconds.
const SYNTHETIC_BYTES: usize = 1 << 20;

#[derive(Debug)]
pub struct Corpus {
    bytes: Vec<u8>,
}

impl Corpus {
    pub fn load(source: &DataSource, seed: u64) -> Result<Self> {
        let bytes = match source {
            DataSource::Synthetic => synthetic_text(seed, SYNTHETIC_BYTES),
            DataSource::Text(path) => read_text(path)?,
        };
        Ok(Corpus { bytes })
    }

    /// `batch` windows of `seq_len + 1` bytes at random offsets, as (inputs, targets)
    /// `[batch, seq_len]` int64 tensors on `device`, targets shifted by one.
    pub fn batch(&self, rng: &mut SplitMix64, batch: usize, seq_len: usize, device: Device) -> (Tensor, Tensor) {
        let window = seq_len + 1;
        let starts = self.bytes.len() - window + 1;
        let mut ids = Vec::with_capacity(batch * window);
        for _ in 0..batch {
            let start = rng.below(starts);
            ids.extend(self.bytes[start..start + window].iter().map(|&b| i64::from(b)));
        }
        let all = Tensor::from_slice(&ids).view([batch as i64, window as i64]).to_device(device);
        let inputs = all.narrow(1, 0, seq_len as i64);
        let targets = all.narrow(1, 1, seq_len as i64);
        (inputs, targets)
    }

    /// Checks that a window of `seq_len + 1` bytes fits.
    pub fn check_fits(&self, seq_len: usize) -> Result<()> {
        if self.bytes.len() <= seq_len {
            bail!("training text has {} bytes, fewer than seq_len + 1 = {}", self.bytes.len(), seq_len + 1);
        }
        Ok(())
    }
}

/// A file's bytes, or the bytes of every regular file in a folder (sorted by name,
/// separated by newlines). Subfolders and hidden files are skipped.
fn read_text(path: &Path) -> Result<Vec<u8>> {
    if path.is_file() {
        return std::fs::read(path).with_context(|| format!("reading {}", path.display()));
    }
    let mut files: Vec<_> = std::fs::read_dir(path)
        .with_context(|| format!("reading folder {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("folder {} holds no files", path.display());
    }
    let mut bytes = Vec::new();
    for f in files {
        bytes.extend(std::fs::read(&f).with_context(|| format!("reading {}", f.display()))?);
        bytes.push(b'\n');
    }
    Ok(bytes)
}

const DETERMINERS: &[&str] = &["the", "a", "every", "one", "that"];
const ADJECTIVES: &[&str] = &["small", "quiet", "bright", "heavy", "quick", "old", "green", "careful", "distant", "warm"];
const NOUNS: &[&str] = &["model", "river", "engineer", "lantern", "garden", "signal", "teacher", "kernel", "harbor", "falcon", "matrix", "violin"];
const VERBS: &[&str] = &["watches", "follows", "builds", "carries", "finds", "trains", "measures", "paints", "guards", "answers"];
const PREPOSITIONS: &[&str] = &["near", "under", "beside", "behind", "above", "with"];

/// Deterministic English-like text with learnable structure at several scales:
/// word spelling, a fixed sentence grammar, and exact two-digit addition.
pub fn synthetic_text(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed ^ 0x726c_6d6f_6e00_0001);
    let mut out = String::with_capacity(len + 128);
    while out.len() < len {
        for _ in 0..1 + rng.below(4) {
            if rng.below(4) == 0 {
                let (a, b) = (rng.below(100), rng.below(100));
                out.push_str(&format!("{a} + {b} = {}. ", a + b));
            } else {
                let det = rng.pick(DETERMINERS);
                let mut subject = format!("{det} {} {}", rng.pick(ADJECTIVES), rng.pick(NOUNS));
                subject[..1].make_ascii_uppercase();
                out.push_str(&format!(
                    "{subject} {} {} {} {} the {}. ",
                    rng.pick(VERBS),
                    rng.pick(DETERMINERS),
                    rng.pick(NOUNS),
                    rng.pick(PREPOSITIONS),
                    rng.pick(NOUNS)
                ));
            }
        }
        out.push('\n');
    }
    out.truncate(len);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_text_is_deterministic_per_seed() {
        assert_eq!(synthetic_text(3, 4096), synthetic_text(3, 4096));
        assert_ne!(synthetic_text(3, 4096), synthetic_text(4, 4096));
        let text = String::from_utf8(synthetic_text(0, 4096)).unwrap();
        assert!(text.contains(" = "), "holds arithmetic");
        assert!(text.contains(". "), "holds sentences");
    }

    #[test]
    fn addition_in_synthetic_text_is_correct() {
        let text = String::from_utf8(synthetic_text(11, 1 << 14)).unwrap();
        let mut checked = 0;
        for part in text.split(". ") {
            let Some((lhs, rhs)) = part.trim().split_once(" = ") else { continue };
            let Some((a, b)) = lhs.rsplit_once(" + ") else { continue };
            let (Ok(a), Ok(b), Ok(c)) = (a.trim().parse::<u32>(), b.parse::<u32>(), rhs.parse::<u32>()) else { continue };
            assert_eq!(a + b, c);
            checked += 1;
        }
        assert!(checked > 50);
    }

    #[test]
    fn batches_are_shifted_windows() {
        let corpus = Corpus { bytes: (0u8..200).collect() };
        let mut rng = SplitMix64::new(0);
        let (x, y) = corpus.batch(&mut rng, 4, 16, Device::Cpu);
        assert_eq!(x.size(), [4, 16]);
        let diff = (&y - &x).sum(tch::Kind::Int64).int64_value(&[]);
        assert_eq!(diff, 4 * 16, "every target is the next byte");
    }

    #[test]
    fn text_folder_is_read_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.txt"), "second").unwrap();
        std::fs::write(dir.path().join("a.txt"), "first").unwrap();
        std::fs::write(dir.path().join(".hidden"), "skip").unwrap();
        let c = Corpus::load(&DataSource::Text(dir.path().to_path_buf()), 0).unwrap();
        assert_eq!(c.bytes, b"first\nsecond\n");
        assert!(c.check_fits(64).is_err());
    }
}
