//! # strata-commands
//!
//! Redis commands on the `strata` data model: the command rows (typed in [`command`], gathered
//! in [`registry`]), the dispatcher ([`dispatch`]) and execution context ([`context`]),
//! per-family handlers that parse arguments into typed values, call `strata::Db`, and
//! map the result to a RESP [`Frame`], and [`errors`], the one file holding every error text.
//! This crate does no I/O: the server owns sockets, the client registry and configuration, and
//! offers them to handlers through the [`ServerApi`] trait.

pub mod acl;
pub mod acl_family;
pub mod args;
pub mod bitmap_family;
pub mod blocking_family;
pub mod command;
pub mod command_stats;
pub mod connection_family;
pub mod context;
pub mod cursor;
pub mod dispatch;
pub mod errors;
pub mod geo_family;
pub mod hash_family;
pub mod help;
pub mod histogram;
pub mod hll_family;
pub mod introspection_family;
pub mod isolation;
pub mod keys_family;
pub mod latency;
pub mod list_family;
pub mod memory_overhead;
pub mod migration;
pub mod monitor;
pub mod notify;
pub mod outcome;
pub mod pause;
pub mod pubsub_family;
pub mod redact;
pub mod registry;
pub mod replication_family;
pub mod scan;
pub mod script_family;
pub mod scripting;
pub mod server_family;
pub mod set_family;
pub mod slowlog;
pub mod sort_family;
pub mod stream_family;
pub mod string_family;
pub mod syntax;
#[doc(hidden)]
pub mod testing;
pub mod tracking;
pub mod transaction_family;
pub mod watch;
pub mod zset_family;

pub use context::*;
pub use dispatch::{execute, run};
pub use outcome::Outcome;

/// The Redis version Strata reports (HELLO, INFO), so clients enable the features it implements.
pub const REDIS_VERSION: &str = "7.0.15";
pub use strata_resp::{Frame, Protocol};
