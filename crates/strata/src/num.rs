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

fn starts_with_ci(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word)
}

/// C's `strtod` (glibc) on `s`: `(value, bytes consumed, range error)`. Consumed 0 means no
/// conversion. Accepts leading white space, a sign, `inf`/`infinity`/`nan`, decimal and hex
/// floats.
pub fn strtod(s: &[u8]) -> (f64, usize, bool) {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let num_start = i;
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let rest = &s[i..];
    let sign = if neg { -1.0 } else { 1.0 };
    if starts_with_ci(rest, b"inf") {
        let n = if starts_with_ci(rest, b"infinity") {
            8
        } else {
            3
        };
        return (sign * f64::INFINITY, i + n, false);
    }
    if starts_with_ci(rest, b"nan") {
        let mut n = 3;
        if rest.get(3) == Some(&b'(') {
            if let Some(close) = rest[4..]
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
            {
                if rest[4 + close] == b')' {
                    n = 4 + close + 1;
                }
            }
        }
        return (f64::NAN, i + n, false);
    }
    if rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        if let Some((v, n)) = hex_float(&rest[2..]) {
            return (sign * v, i + 2 + n, v.is_infinite());
        }
        // "0x" without hex digits: only the "0" converts.
        return (sign * 0.0, i + 1, false);
    }
    let mut j = i;
    let mut digits = 0;
    let mut nonzero = false;
    while j < s.len() && s[j].is_ascii_digit() {
        nonzero |= s[j] != b'0';
        j += 1;
        digits += 1;
    }
    if j < s.len() && s[j] == b'.' {
        j += 1;
        while j < s.len() && s[j].is_ascii_digit() {
            nonzero |= s[j] != b'0';
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return (0.0, 0, false);
    }
    if j < s.len() && (s[j] | 0x20) == b'e' {
        let mut k = j + 1;
        if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
            k += 1;
        }
        if k < s.len() && s[k].is_ascii_digit() {
            while k < s.len() && s[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
        }
    }
    let text = std::str::from_utf8(&s[num_start..j]).unwrap_or("0");
    let v: f64 = text.parse().unwrap_or(0.0);
    let erange = v.is_infinite() || (v == 0.0 && nonzero);
    (v, j, erange)
}

/// Hex float digits after "0x": `(value, bytes consumed)`, None without any hex digit.
fn hex_float(s: &[u8]) -> Option<(f64, usize)> {
    let mut j = 0;
    let mut v = 0.0f64;
    let mut digits = 0;
    while j < s.len() && s[j].is_ascii_hexdigit() {
        v = v * 16.0 + (s[j] as char).to_digit(16).unwrap_or(0) as f64;
        j += 1;
        digits += 1;
    }
    if j < s.len() && s[j] == b'.' {
        let mut scale = 1.0 / 16.0;
        let mut k = j + 1;
        while k < s.len() && s[k].is_ascii_hexdigit() {
            v += (s[k] as char).to_digit(16).unwrap_or(0) as f64 * scale;
            scale /= 16.0;
            k += 1;
            digits += 1;
        }
        if digits > 0 {
            j = k;
        }
    }
    if digits == 0 {
        return None;
    }
    if j < s.len() && (s[j] | 0x20) == b'p' {
        let mut k = j + 1;
        let mut eneg = false;
        if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
            eneg = s[k] == b'-';
            k += 1;
        }
        if k < s.len() && s[k].is_ascii_digit() {
            let mut e: i32 = 0;
            while k < s.len() && s[k].is_ascii_digit() {
                e = e.saturating_mul(10).saturating_add((s[k] - b'0') as i32);
                k += 1;
            }
            v *= 2f64.powi(if eneg { -e } else { e });
            j = k;
        }
    }
    Some((v, j))
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
    fn strtod_reads_like_c() {
        assert_eq!(strtod(b"1.5"), (1.5, 3, false));
        assert_eq!(strtod(b"  -2e3x"), (-2000.0, 6, false));
        assert_eq!(strtod(b"0x10"), (16.0, 4, false));
        assert_eq!(strtod(b"0x"), (0.0, 1, false));
        assert_eq!(strtod(b"1e"), (1.0, 1, false));
        assert_eq!(strtod(b"-Infinity").0, f64::NEG_INFINITY);
        assert!(strtod(b"nan").0.is_nan());
        assert_eq!(strtod(b"abc").1, 0);
        assert!(strtod(b"1e400").2);
        assert_eq!(strtod(b"1e-400"), (0.0, 6, true));
        assert_eq!(strtod(b"0e-400"), (0.0, 6, false));
    }

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
