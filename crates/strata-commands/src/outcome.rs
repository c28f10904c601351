//! What running one command asks of the connection: send its reply, send several replies, wait
//! (a blocking command that found nothing), hand the socket over to replication (PSYNC), send
//! the reply and close (QUIT), close at once (SHUTDOWN), or send nothing (REPLCONF ACK). Handlers that do more than reply
//! once return it ([`crate::command::Handler::Outcome`]); the dispatcher returns it for every
//! command, and the server matches on it. Depends on nothing but the session's request types.

use strata_resp::Frame;

use crate::{BlockRequest, PsyncRequest};

/// What the connection does after a command.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Send the reply.
    Reply(Frame),
    /// Send these replies in order, then the last one (SUBSCRIBE a b c acknowledges each
    /// channel in a reply of its own).
    Replies(Vec<Frame>, Frame),
    /// Nothing to serve yet: wait for one of the keys (or the deadline), then run the same
    /// command again. There is no reply until then.
    Block(BlockRequest),
    /// Send the replies so far, then the connection becomes the stream to a replica.
    Handover(PsyncRequest),
    /// Send the reply, then close the connection.
    ReplyThenClose(Frame),
    /// Close the connection without a reply (SHUTDOWN: the server is going away).
    Close,
    /// Send nothing.
    Silent,
}

impl Outcome {
    /// The one reply a context that can carry only one makes of it (a script's `redis.call`, a
    /// container's subcommand, a transaction's queued command): the reply itself, the last of
    /// several, or a null for the outcomes such contexts never produce (their commands are
    /// refused there: `noscript`, `no-multi`, blocking answered at once).
    pub fn into_reply(self) -> Frame {
        match self {
            Outcome::Reply(f) | Outcome::ReplyThenClose(f) | Outcome::Replies(_, f) => f,
            Outcome::Block(_) => Frame::NullArray,
            Outcome::Handover(_) | Outcome::Silent | Outcome::Close => Frame::Null,
        }
    }

    /// Whether the command did what it was asked (what a write must do for WATCH and blocked
    /// clients to hear of it): not an error reply, not a wait.
    pub fn succeeded(&self) -> bool {
        match self {
            Outcome::Reply(f) | Outcome::ReplyThenClose(f) | Outcome::Replies(_, f) => {
                !matches!(f, Frame::Error(_))
            }
            Outcome::Block(_) => false,
            Outcome::Handover(_) | Outcome::Silent | Outcome::Close => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_reply_context_keeps_the_last_reply() {
        assert_eq!(Outcome::Reply(Frame::ok()).into_reply(), Frame::ok());
        assert_eq!(
            Outcome::Replies(vec![Frame::Integer(1)], Frame::Integer(2)).into_reply(),
            Frame::Integer(2)
        );
        assert_eq!(
            Outcome::ReplyThenClose(Frame::ok()).into_reply(),
            Frame::ok()
        );
        assert_eq!(Outcome::Silent.into_reply(), Frame::Null);
    }

    #[test]
    fn errors_and_waits_are_not_successes() {
        assert!(Outcome::Reply(Frame::ok()).succeeded());
        assert!(!Outcome::Reply(Frame::error("ERR no")).succeeded());
        let wait = BlockRequest {
            db: 0,
            keys: vec![bytes::Bytes::from_static(b"k")],
            deadline: None,
            other_type: false,
            rerun: None,
        };
        assert!(!Outcome::Block(wait).succeeded());
        assert!(Outcome::Silent.succeeded());
    }
}
