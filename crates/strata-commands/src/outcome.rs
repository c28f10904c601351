//! What running one command asks of the connection: send its reply, send several replies, wait
//! (a blocking command that found nothing), hand the socket over to replication (PSYNC), send
//! the reply and close (QUIT), or send nothing (REPLCONF ACK). Handlers still say so through
//! fields of [`Session`] (`blocked`, `psync`, `suppress_reply`, `extra_replies`,
//! `close_after_reply`); [`Outcome::take`] is the one place that reads and clears them, so the
//! server matches on one value instead of testing five flags. Depends on nothing but the session.

use strata_resp::Frame;

use crate::{BlockRequest, PsyncRequest, Session};

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
    /// Send nothing.
    Silent,
}

impl Outcome {
    /// The outcome of the command that returned `reply`, read from (and clearing) what its
    /// handler set in `session`. A handful of branches on fields: free on the hot path.
    #[inline]
    pub fn take(session: &mut Session, reply: Frame) -> Outcome {
        if let Some(req) = session.blocked.take() {
            return Outcome::Block(req);
        }
        if session.suppress_reply {
            session.suppress_reply = false;
            return match session.psync.take() {
                Some(req) => Outcome::Handover(req),
                None => Outcome::Silent,
            };
        }
        if !session.extra_replies.is_empty() {
            return Outcome::Replies(std::mem::take(&mut session.extra_replies), reply);
        }
        if session.close_after_reply {
            session.close_after_reply = false;
            return Outcome::ReplyThenClose(reply);
        }
        Outcome::Reply(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Result<(tempfile::TempDir, Session), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = strata::Db::open(dir.path())?;
        Ok((dir, Session::new(1, db, false)))
    }

    #[test]
    fn outcome_reads_and_clears_the_handler_flags() -> Result<(), Box<dyn std::error::Error>> {
        let (_dir, mut s) = session()?;
        assert_eq!(
            Outcome::take(&mut s, Frame::ok()),
            Outcome::Reply(Frame::ok())
        );

        s.close_after_reply = true;
        assert_eq!(
            Outcome::take(&mut s, Frame::ok()),
            Outcome::ReplyThenClose(Frame::ok())
        );
        assert!(!s.close_after_reply);

        s.extra_replies.push(Frame::Integer(1));
        assert_eq!(
            Outcome::take(&mut s, Frame::Integer(2)),
            Outcome::Replies(vec![Frame::Integer(1)], Frame::Integer(2))
        );
        assert!(s.extra_replies.is_empty());

        s.suppress_reply = true;
        assert_eq!(Outcome::take(&mut s, Frame::ok()), Outcome::Silent);
        assert!(!s.suppress_reply);

        let req = PsyncRequest {
            replid: "?".into(),
            offset: -1,
            listening_port: 0,
        };
        s.psync = Some(req.clone());
        s.suppress_reply = true;
        assert_eq!(Outcome::take(&mut s, Frame::ok()), Outcome::Handover(req));
        assert!(s.psync.is_none());

        let block = BlockRequest {
            db: 0,
            keys: vec![bytes::Bytes::from_static(b"k")],
            deadline: None,
        };
        s.blocked = Some(block.clone());
        assert_eq!(
            Outcome::take(&mut s, Frame::NullArray),
            Outcome::Block(block)
        );
        assert!(s.blocked.is_none());
        Ok(())
    }
}
