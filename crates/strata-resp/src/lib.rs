//! The Redis wire protocol (RESP2 and RESP3) for Strata: the [`Frame`] reply model, the
//! [`encode`]r that writes frames for either protocol version, the incremental
//! [`RequestDecoder`] that turns client bytes (multibulk or inline) into argument vectors, and
//! [`parse_frame`], a full reply parser for the client side. This crate only transforms bytes
//! into values and back: it must not depend on storage, networking, or an async runtime, so the
//! server, the CLI, tests and replication can all share it.

mod decode;
mod encode;
mod error;
mod frame;
mod parse;

pub use decode::{parse_int, repr_into, split_inline_args, trim, DecoderLimits, RequestDecoder};
pub use encode::{encode, encode_request, encode_to_vec, format_double, format_human_double};
pub use error::ProtocolError;
pub use frame::{Frame, Protocol};
pub use parse::parse_frame;
