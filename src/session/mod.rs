//! The session: events from producers (workloads, telemetry), and the in-memory state
//! they build. One `Hub` applies events in order; views (headless reporter, the live
//! display) read its state and never mutate it. The hub also holds the runs against
//! a baseline session (`baseline`) when there is one.
pub mod baseline;
pub mod event;
pub mod hub;
pub mod state;

pub use event::{is_torch_device, Event, ATTACHED_DEVICE, GpuInfo, GpuStatus, LogLevel, RunId, RunOutcome};
pub use hub::Hub;
pub use state::{RunRecord, RunState, SessionState};
