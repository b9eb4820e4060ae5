//! The terminal interface: themes (and, with the live display, layout, panes, keys).
pub mod theme;
