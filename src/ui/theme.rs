//! Themes: named semantic colour slots. The built-in themes (themes/*.toml) are
//! embedded in the binary; a user's theme file is layered over a built-in one
//! (`base = "light"`, default "default"), so it only needs the slots it changes.
//! NO_COLOR turns every colour off.
use std::path::Path;
use std::str::FromStr;

use ratatui::style::Color;
use serde::Deserialize;

use crate::config::ConfigError;
use crate::error::RlmonError;

pub const BUILT_IN: &[(&str, &str)] = &[
    ("default", include_str!("../../themes/default.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("high-contrast", include_str!("../../themes/high-contrast.toml")),
];

#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub text: Color,
    pub muted: Color,
    pub border: Color,
    pub focus: Color,
    pub accent: Color,
    pub ok: Color,
    pub warn: Color,
    pub critical: Color,
    pub marker: Color,
    /// Colours of chart series, used in order.
    pub series: Vec<Color>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTheme {
    /// Built-in theme this file is layered over.
    base: Option<String>,
    #[serde(default)]
    colors: RawColors,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawColors {
    text: Option<ColorValue>,
    muted: Option<ColorValue>,
    border: Option<ColorValue>,
    focus: Option<ColorValue>,
    accent: Option<ColorValue>,
    ok: Option<ColorValue>,
    warn: Option<ColorValue>,
    critical: Option<ColorValue>,
    marker: Option<ColorValue>,
    series: Option<Vec<ColorValue>>,
}

/// A colour as written in a theme file, checked while parsing so that toml reports
/// the line and column of a bad value.
#[derive(Debug, Clone, Copy)]
struct ColorValue(Color);

impl<'de> Deserialize<'de> for ColorValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Color::from_str(&s).map(ColorValue).map_err(|_| {
            serde::de::Error::custom(format!("`{s}` is not a colour: use a name (red, lightblue, darkgray), \"#rrggbb\" or 0-255"))
        })
    }
}

impl Theme {
    /// A built-in name or a theme file path, honouring NO_COLOR.
    pub fn resolve(name_or_path: &str) -> Result<Theme, RlmonError> {
        let theme = Self::load(name_or_path)?;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Ok(if no_color { theme.monochrome() } else { theme })
    }

    fn load(name_or_path: &str) -> Result<Theme, RlmonError> {
        if let Some(theme) = Self::built_in(name_or_path) {
            return Ok(theme);
        }
        let path = Path::new(name_or_path);
        if !path.is_file() {
            let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
            return Err(RlmonError::Usage(format!(
                "unknown theme `{name_or_path}`: not a built-in theme ({}) nor a file",
                names.join(", ")
            )));
        }
        // A theme file is the user's input: a file that cannot be read as text is bad usage.
        let text = std::fs::read_to_string(path).map_err(|e| RlmonError::Usage(format!("{}: cannot read the theme: {e}", path.display())))?;
        Ok(Self::parse_layered(&text, path)?)
    }

    pub fn built_in(name: &str) -> Option<Theme> {
        let (_, text) = BUILT_IN.iter().find(|(n, _)| *n == name)?;
        let raw: RawTheme = toml::from_str(text).expect("built-in themes are valid");
        Some(Theme::fallback().layer(raw.colors))
    }

    /// Parses a theme file over its base theme; errors name file, line and key.
    pub fn parse_layered(text: &str, path: &Path) -> Result<Theme, ConfigError> {
        let raw: RawTheme = toml::from_str(text).map_err(|e| ConfigError::from_toml(path, text, &e))?;
        let base_name = raw.base.as_deref().unwrap_or("default");
        let base = Self::built_in(base_name).ok_or_else(|| {
            let span = toml_edit::Document::parse(text).ok().and_then(|d| d.get("base").and_then(|b| b.span()));
            ConfigError::at(path, text, span, format!("unknown base theme `{base_name}`"))
        })?;
        Ok(base.layer(raw.colors))
    }

    fn layer(mut self, c: RawColors) -> Theme {
        let slots = [
            (&mut self.text, c.text),
            (&mut self.muted, c.muted),
            (&mut self.border, c.border),
            (&mut self.focus, c.focus),
            (&mut self.accent, c.accent),
            (&mut self.ok, c.ok),
            (&mut self.warn, c.warn),
            (&mut self.critical, c.critical),
            (&mut self.marker, c.marker),
        ];
        for (slot, value) in slots {
            if let Some(ColorValue(color)) = value {
                *slot = color;
            }
        }
        if let Some(series) = c.series.filter(|s| !s.is_empty()) {
            self.series = series.into_iter().map(|c| c.0).collect();
        }
        self
    }

    /// Terminal defaults everywhere: what NO_COLOR asks for.
    pub fn monochrome(self) -> Theme {
        let n = self.series.len().max(1);
        Theme { series: vec![Color::Reset; n], ..Theme::fallback() }
    }

    fn fallback() -> Theme {
        Theme {
            text: Color::Reset,
            muted: Color::Reset,
            border: Color::Reset,
            focus: Color::Reset,
            accent: Color::Reset,
            ok: Color::Reset,
            warn: Color::Reset,
            critical: Color::Reset,
            marker: Color::Reset,
            series: vec![Color::Reset],
        }
    }

    /// The colour of the `i`-th series, cycling.
    pub fn series_color(&self, i: usize) -> Color {
        self.series[i % self.series.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_fill_every_slot() {
        for (name, _) in BUILT_IN {
            let t = Theme::built_in(name).unwrap();
            assert_ne!(t.critical, Color::Reset, "{name}");
            assert!(t.series.len() >= 4, "{name}");
        }
        assert_ne!(Theme::built_in("default"), Theme::built_in("light"));
    }

    #[test]
    fn user_file_layers_over_its_base() {
        let t = Theme::parse_layered("base = \"light\"\n[colors]\nwarn = \"#ff8800\"\n", Path::new("t.toml")).unwrap();
        let light = Theme::built_in("light").unwrap();
        assert_eq!(t.warn, Color::Rgb(0xff, 0x88, 0x00));
        assert_eq!(t.text, light.text);
    }

    #[test]
    fn bad_colour_names_file_line_and_value() {
        let err = Theme::parse_layered("[colors]\ntext = \"white\"\nwarn = \"orangeish\"\n", Path::new("t.toml")).unwrap_err();
        assert_eq!(err.location.map(|l| l.0), Some(3));
        assert!(err.message.contains("orangeish"), "{}", err.message);
        let err = Theme::parse_layered("[colors]\nshiny = \"red\"\n", Path::new("t.toml")).unwrap_err();
        assert!(err.message.contains("shiny"), "{}", err.message);
    }

    #[test]
    fn unknown_theme_is_a_usage_error() {
        let err = Theme::resolve("no-such-theme").unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn monochrome_drops_every_colour() {
        let t = Theme::built_in("default").unwrap().monochrome();
        assert_eq!(t.critical, Color::Reset);
        assert!(t.series.iter().all(|c| *c == Color::Reset));
    }
}
