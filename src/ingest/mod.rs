//! Reading metrics written by other programs: JSONL logs (design.md, "JSONL input").
//! Pure parsing; the commands do the I/O.
pub mod jsonl;
