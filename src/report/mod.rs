//! Non-interactive outputs: headless progress lines, the end-of-session summary as
//! text and as JSON. Pure functions of the session state.
pub mod format;
pub mod progress;
pub mod summary;
