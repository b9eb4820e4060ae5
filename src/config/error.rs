//! Config errors with a location: `file:line:column: problem`, then the offending
//! line with a caret under the column.
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub path: PathBuf,
    /// 1-based line and column, when the problem has a place in the file.
    pub location: Option<(usize, usize)>,
    pub message: String,
    /// The source line the location points into.
    pub source_line: Option<String>,
}

impl ConfigError {
    pub fn at(path: &Path, text: &str, span: Option<Range<usize>>, message: impl Into<String>) -> Self {
        let (location, source_line) = match span {
            Some(span) => {
                let (line, col) = line_col(text, span.start);
                let src = text.lines().nth(line - 1).map(str::to_owned);
                (Some((line, col)), src)
            }
            None => (None, None),
        };
        ConfigError { path: path.to_path_buf(), location, message: message.into(), source_line }
    }

    pub(crate) fn from_toml(path: &Path, text: &str, err: &toml::de::Error) -> Self {
        // toml's message is already specific ("unknown field `foo`, expected one of ...").
        let message = err.message().trim().to_owned();
        Self::at(path, text, err.span(), message)
    }

    pub(crate) fn unreadable(path: &Path, err: &std::io::Error) -> Self {
        ConfigError {
            path: path.to_path_buf(),
            location: None,
            message: format!("cannot read config: {err}"),
            source_line: None,
        }
    }

    pub(crate) fn not_found(name: &Path, tried: &[String]) -> Self {
        ConfigError {
            path: name.to_path_buf(),
            location: None,
            message: format!("config file not found (looked for {})", tried.join(", ")),
            source_line: None,
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Some((line, col)) => write!(f, "{}:{line}:{col}: {}", self.path.display(), self.message)?,
            None => write!(f, "{}: {}", self.path.display(), self.message)?,
        }
        if let (Some(src), Some((line, col))) = (&self.source_line, self.location) {
            let gutter = line.to_string().len();
            write!(f, "\n{:gutter$} |\n{line} | {src}\n{:gutter$} | {:>col$}", "", "", "^")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 11), (2, 6));
    }

    #[test]
    fn display_points_at_the_column() {
        let text = "x = 1\nheads = 3\n";
        let err = ConfigError::at(Path::new("c.toml"), text, Some(14..15), "bad");
        assert_eq!(err.to_string(), "c.toml:2:9: bad\n  |\n2 | heads = 3\n  |         ^");
    }
}
