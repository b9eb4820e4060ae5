//! Commands: each subcommand's orchestration, wiring config, producers, the hub and
//! an output together.
pub mod attach;
pub mod check;
pub mod compare;
pub mod doctor;
pub mod export;
pub mod live;
pub mod replay;
pub mod signals;
pub mod stalls;
pub mod watch;
