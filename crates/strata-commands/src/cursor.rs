//! The argument cursor handlers read their arguments with, and the error type they return.
//!
//! A handler written with it is "parse, then act": read typed values off the cursor, call the
//! data model, build the reply, with `?` carrying every error — a bad argument, or a
//! `strata::Error` mapped to Redis's text in one place ([`From<strata::Error>`]) — to the client.
//!
//! ```ignore
//! fn getrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
//!     let mut a = Args::new(argv);
//!     let (key, start, end) = (a.key()?, a.int()?, a.int()?);  // typed values, in order
//!     a.finish()?;                                              // nothing may follow
//!     Ok(Frame::Bulk(ctx.session.db.getrange(key, start, end)?))
//! }
//! ```
//!
//! `a.value()` reads a plain argument. Optional tags: `a.opt("WITHSCORES")` consumes the next argument when it is that word (any
//! case); `a.word(&[("LEFT", End::Left), ("RIGHT", End::Right)])?` maps a word to a value;
//! `a.rest()` takes what is left. Reading past the end, or a word that is not one of those
//! offered, is Redis's `ERR syntax error`. Knows no family.

use bytes::Bytes;
use strata_resp::Frame;

use crate::errors::{self, err};

/// Why a command fails: the error reply to send.
#[derive(Debug)]
pub struct Failure(pub Frame);

/// What a handler returns.
pub type Reply = Result<Frame, Failure>;

impl From<strata::Error> for Failure {
    fn from(e: strata::Error) -> Failure {
        Failure(errors::from_db(e))
    }
}

impl From<Frame> for Failure {
    fn from(f: Frame) -> Failure {
        Failure(f)
    }
}

impl Failure {
    /// The failure whose reply is the error text `text` (from [`crate::errors`]).
    pub fn text(text: impl Into<String>) -> Failure {
        Failure(err(text))
    }
}

/// The reply a handler's result stands for.
#[inline]
pub fn into_frame(r: Reply) -> Frame {
    match r {
        Ok(f) => f,
        Err(Failure(f)) => f,
    }
}

/// The value the argument `a` names among `words` (any case); a syntax error when it is none
/// of them. [`Args::word`] for an argument read earlier.
pub fn word_of<T: Copy>(a: &[u8], words: &[(&str, T)]) -> Result<T, Failure> {
    words
        .iter()
        .find(|(w, _)| a.eq_ignore_ascii_case(w.as_bytes()))
        .map(|(_, v)| *v)
        .ok_or_else(syntax)
}

/// A cursor over a command's arguments (the command name skipped).
pub struct Args<'a> {
    argv: &'a [Bytes],
    at: usize,
}

impl<'a> Args<'a> {
    /// A cursor at the first argument after the command name.
    #[inline]
    pub fn new(argv: &'a [Bytes]) -> Args<'a> {
        Args { argv, at: 1 }
    }

    /// A cursor at the first argument after a subcommand's name (`OBJECT ENCODING key`).
    #[inline]
    pub fn after_subcommand(argv: &'a [Bytes]) -> Args<'a> {
        Args { argv, at: 2 }
    }

    /// The next argument, whatever it is (a value, a member, a field...).
    #[inline]
    pub fn value(&mut self) -> Result<&'a Bytes, Failure> {
        let a = self.argv.get(self.at).ok_or_else(syntax)?;
        self.at += 1;
        Ok(a)
    }

    /// The next argument, a key.
    #[inline]
    pub fn key(&mut self) -> Result<&'a Bytes, Failure> {
        self.value()
    }

    /// The next argument as a signed 64-bit integer (`ERR value is not an integer or out of
    /// range`).
    #[inline]
    pub fn int(&mut self) -> Result<i64, Failure> {
        Ok(crate::args::int(self.value()?)?)
    }

    /// The next argument as a float (`ERR value is not a valid float`).
    #[inline]
    pub fn float(&mut self) -> Result<f64, Failure> {
        Ok(crate::args::float(self.value()?)?)
    }

    /// The value the next argument names among `words` (compared case-insensitively); a syntax
    /// error when it is none of them.
    pub fn word<T: Copy>(&mut self, words: &[(&str, T)]) -> Result<T, Failure> {
        word_of(self.value()?, words)
    }

    /// Whether the next argument is the tag `word` (any case); consumes it if so.
    #[inline]
    pub fn opt(&mut self, word: &str) -> bool {
        match self.argv.get(self.at) {
            Some(a) if a.eq_ignore_ascii_case(word.as_bytes()) => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    /// The arguments not read yet; the cursor moves to the end.
    #[inline]
    pub fn rest(&mut self) -> &'a [Bytes] {
        let r = self.argv.get(self.at..).unwrap_or(&[]);
        self.at = self.argv.len();
        r
    }

    /// The arguments not read yet as byte slices (keys, members, fields); the cursor moves to
    /// the end.
    pub fn rest_slices(&mut self) -> Vec<&'a [u8]> {
        self.rest().iter().map(|a| &a[..]).collect()
    }

    /// How many arguments are left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.argv.len().saturating_sub(self.at)
    }

    /// Whether every argument was read.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.remaining() == 0
    }

    /// A syntax error unless every argument was read.
    #[inline]
    pub fn finish(&self) -> Result<(), Failure> {
        if self.is_done() {
            Ok(())
        } else {
            Err(syntax())
        }
    }
}

/// `ERR syntax error`.
pub fn syntax() -> Failure {
    Failure::text(errors::SYNTAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn reads_typed_values_in_order_then_finishes() {
        let v = argv(&["cmd", "k", "12", "1.5", "left", "WithScores", "a", "b"]);
        let mut a = Args::new(&v);
        assert_eq!(a.key().unwrap().as_ref(), b"k");
        assert_eq!(a.int().unwrap(), 12);
        assert_eq!(a.float().unwrap(), 1.5);
        assert_eq!(a.word(&[("LEFT", 0), ("RIGHT", 1)]).unwrap(), 0);
        assert!(!a.opt("LIMIT"));
        assert!(a.opt("WITHSCORES"));
        assert!(a.finish().is_err());
        assert_eq!(a.rest().len(), 2);
        assert!(a.finish().is_ok());
    }

    #[test]
    fn bad_input_is_redis_error_text() {
        let v = argv(&["cmd", "x", "up"]);
        let mut a = Args::new(&v);
        let e = a.int().unwrap_err();
        assert_eq!(e.0, err(errors::NOT_INTEGER));
        let e = a.word(&[("LEFT", 0)]).unwrap_err();
        assert_eq!(e.0, err(errors::SYNTAX));
        assert_eq!(a.value().unwrap_err().0, err(errors::SYNTAX));
        let from_db: Failure = strata::Error::WrongType.into();
        assert_eq!(from_db.0, err(errors::WRONGTYPE));
    }
}
