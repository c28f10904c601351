//! Number parsing and formatting with Redis's exact rules, shared by the data model (INCR on a stored
//! value) and the command layer (integer and float arguments), so both accept the same inputs.

/// Parses a signed 64-bit integer the way Redis's `string2ll` does: optional `-`, no `+`, no spaces,
/// no leading zeros (except `0` itself), at most 20 characters, no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !(b'1'..=b'9').contains(&digits[0]) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// Parses a float the way Redis's `string2ld`/`strtod` based parsers do: no leading or trailing
/// space, the whole input consumed, `inf`/`-inf`/`+inf` accepted, NaN refused.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5000 {
        return None;
    }
    if s[0].is_ascii_whitespace() || s[s.len() - 1].is_ascii_whitespace() {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    let lower = text.to_ascii_lowercase();
    let v = match lower.as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => {
            // Rust's parser accepts "nan" and "inf" spellings handled above; C's strtod also accepts hex
            // floats, which no Redis client sends.
            if lower.contains("nan") || lower.contains("inf") {
                return None;
            }
            lower.parse::<f64>().ok()?
        }
    };
    if v.is_nan() {
        None
    } else {
        Some(v)
    }
}

/// Whether `b` is white space to C's `isspace` in the C locale (space, \t, \n, \v, \f, \r).
pub fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// C's `atoi`: optional leading white space and sign, then digits up to the first non-digit; 0
/// when there are none. Saturates instead of overflowing. Redis reads `numkeys` this way when it
/// finds a command's keys.
pub fn atoi(s: &[u8]) -> i64 {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let neg = i < s.len() && s[i] == b'-';
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        i += 1;
    }
    let mut n: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n.saturating_mul(10).saturating_add((s[i] - b'0') as i64);
        i += 1;
    }
    if neg {
        -n
    } else {
        n
    }
}

/// Formats the result of INCRBYFLOAT: the shortest decimal that reads back as the same double, never
/// in exponent form (Redis prints `%.17Lf` with trailing zeros removed; for values a double can hold
/// the two agree except for the last digits of long fractions).
pub fn format_incr_float(v: f64) -> String {
    // An integral value prints every digit of its exact decimal expansion, as `%.17Lf` does
    // (`{v}` would print the shortest round-trip digits padded with zeros: 2^63 as
    // 9223372036854776000 instead of 9223372036854775808).
    let s = if v.is_finite() && v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    };
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoi_reads_like_c() {
        assert_eq!(atoi(b" 12x"), 12);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b"-3"), -3);
        assert_eq!(atoi(b"+7"), 7);
        assert_eq!(atoi(b"99999999999999999999"), i64::MAX);
    }

    #[test]
    fn integers_follow_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"9223372036854775808"[..],
            b"-0",
            b"+1",
            b"01",
            b" 1",
            b"1 ",
            b"",
            b"-",
            b"1a",
            b"1.0",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn floats_refuse_spaces_and_nan() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        assert_eq!(parse_f64(b".5"), Some(0.5));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1 "), None);
        assert_eq!(parse_f64(b"abc"), None);
    }

    #[test]
    fn incr_float_results_print_like_redis() {
        assert_eq!(format_incr_float(10.5 + 0.1), "10.6");
        assert_eq!(format_incr_float(3000.0), "3000");
        assert_eq!(format_incr_float(-0.0), "0");
        assert_eq!(format_incr_float(5.0e3 + 200.0), "5200");
    }

    #[test]
    fn incr_float_integral_results_print_every_digit() {
        // Found by the model-based test: INCRBYFLOAT of 9223372036854775807 by 1.5.
        assert_eq!(
            format_incr_float(9_223_372_036_854_775_807.0 + 1.5),
            "9223372036854775808"
        );
        assert_eq!(
            format_incr_float(-(2f64.powi(70))),
            "-1180591620717411303424"
        );
        assert_eq!(format_incr_float(1e20), "100000000000000000000");
    }
}
