//! Points a problem at the key that caused it: a key path into the file
//! (`run[0].model.heads`) becomes a `file:line:column` error with the line shown.
use std::ops::Range;
use std::path::Path;

use super::error::ConfigError;

/// One step of a key path: a table key or an array index.
#[derive(Clone, Copy)]
pub(super) enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// Checks values against each other and the file system, with spans from the text.
pub(super) struct Checker<'a> {
    path: &'a Path,
    text: &'a str,
    doc: Option<toml_edit::Document<&'a str>>,
}

impl<'a> Checker<'a> {
    pub(super) fn new(path: &'a Path, text: &'a str) -> Self {
        Checker { path, text, doc: toml_edit::Document::parse(text).ok() }
    }

    /// The span of the deepest key of `segs` the file has.
    fn span(&self, segs: &[Seg]) -> Option<Range<usize>> {
        let doc = self.doc.as_ref()?;
        let mut item: &toml_edit::Item = doc.as_item();
        let mut best = None;
        for seg in segs {
            let next = match seg {
                Seg::Key(k) => item.get(k),
                Seg::Index(i) => match item {
                    toml_edit::Item::ArrayOfTables(a) => a.get(*i).map(|_| &item[*i]),
                    _ => item.get(*i),
                },
            };
            match next {
                Some(next) => {
                    item = next;
                    best = item.span().or(best);
                }
                None => break,
            }
        }
        best
    }

    pub(super) fn err(&self, segs: &[Seg], message: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.text, self.span(segs), message)
    }

    /// An error about the whole file, with no place in it.
    pub(super) fn err_file(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.text, None, message)
    }
}
