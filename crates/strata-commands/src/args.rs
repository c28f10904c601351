//! Argument parsing shared by the families: integers, floats, and case-insensitive option words,
//! each returning the exact Redis error reply on bad input so handlers stay a sequence of `?`.

use bytes::Bytes;
use strata_resp::Frame;

use crate::errors::{self, err};

/// Result of parsing: the value or the error reply to send.
pub type Parsed<T> = Result<T, Frame>;

/// A signed 64-bit integer argument ("ERR value is not an integer or out of range").
pub fn int(a: &[u8]) -> Parsed<i64> {
    strata::num::parse_i64(a).ok_or_else(|| err(errors::NOT_INTEGER))
}

/// A float argument ("ERR value is not a valid float").
pub fn float(a: &[u8]) -> Parsed<f64> {
    strata::num::parse_f64(a).ok_or_else(|| err(errors::NOT_FLOAT))
}

/// A double the way Redis's `getDoubleFromObject` reads a score, a coordinate or a radius: the
/// whole argument, no leading space, no overflow to infinity or underflow to zero, not NaN
/// (`inf` itself is accepted). None on any failure; each caller has its own error text.
pub fn parse_double(a: &[u8]) -> Option<f64> {
    if a.is_empty() || strata::num::is_c_space(a[0]) {
        return None;
    }
    let (v, n, erange) = strata::num::strtod(a);
    if n != a.len() || v.is_nan() || (erange && (v.is_infinite() || v == 0.0)) {
        return None;
    }
    Some(v)
}

/// Whether argument `a` equals the option word `word` (ASCII case-insensitive).
pub fn is(a: &[u8], word: &str) -> bool {
    a.eq_ignore_ascii_case(word.as_bytes())
}

/// A database index argument for SELECT/MOVE/COPY/SWAPDB.
pub fn db_index(a: &[u8], databases: u32, invalid_text: &str) -> Parsed<u32> {
    let n = strata::num::parse_i64(a).ok_or_else(|| err(invalid_text))?;
    if n < 0 || n >= databases as i64 {
        return Err(err(errors::DB_INDEX));
    }
    Ok(n as u32)
}

/// Views arguments as slices.
pub fn slices(args: &[Bytes]) -> Vec<&[u8]> {
    args.iter().map(|a| a.as_ref()).collect()
}

/// Unwraps a data-model result into the value or its Redis error reply.
pub fn db<T>(r: strata::Result<T>) -> Parsed<T> {
    r.map_err(errors::from_db)
}

/// Runs a parse-then-act body written with `?` and turns its `Err(frame)` into the reply.
pub fn reply(r: Parsed<Frame>) -> Frame {
    r.unwrap_or_else(|e| e)
}

/// A random-count argument of HRANDFIELD/SRANDMEMBER: any integer but i64::MIN (Redis reads it
/// with the range -LONG_MAX..LONG_MAX).
pub fn random_count(a: &[u8]) -> Parsed<i64> {
    match int(a)? {
        i64::MIN => Err(errors::value_out_of_range_between(-i64::MAX, i64::MAX)),
        n => Ok(n),
    }
}

/// LEFT / RIGHT: an end of a list.
pub fn end_arg(a: &[u8]) -> Parsed<strata::ListEnd> {
    if is(a, "left") {
        Ok(strata::ListEnd::Left)
    } else if is(a, "right") {
        Ok(strata::ListEnd::Right)
    } else {
        Err(err(errors::SYNTAX))
    }
}
