use bytes::Bytes;

use crate::Frame;

/// A malformed request or reply. The message is the exact text Redis 7 uses, for example
/// `Protocol error: invalid multibulk length`.
///
/// The stream cannot be resynchronised after a protocol error: a server replies with
/// [`ProtocolError::to_frame`] (`-ERR Protocol error: ...`) and then closes the connection.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

impl ProtocolError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        ProtocolError(msg.into())
    }

    /// The error reply Redis sends before closing the connection: `ERR ` followed by the message.
    pub fn to_frame(&self) -> Frame {
        Frame::Error(Bytes::from(format!("ERR {}", self.0)))
    }
}
