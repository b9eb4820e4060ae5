//! Commands: each subcommand's orchestration, wiring config, producers, the hub and
//! an output together.
pub mod check;
pub mod doctor;
pub mod live;
pub mod signals;
pub mod watch;
