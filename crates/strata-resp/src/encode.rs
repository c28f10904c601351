use bytes::{BufMut, BytesMut};

use crate::{Frame, Protocol};

/// Appends the wire form of `frame` for protocol `proto` to `out`.
///
/// RESP3-only types are written as their RESP2 equivalents on a RESP2 connection, as Redis does:
/// maps become flat arrays, sets and pushes become arrays, doubles, verbatim strings and big
/// numbers become bulk strings, booleans become `:1`/`:0`, and both nulls keep their RESP2
/// forms (`$-1` / `*-1`). Simple strings and errors cannot contain line breaks on the wire, so
/// any `\r` or `\n` in them is written as a space (as Redis does for formatted errors).
pub fn encode(frame: &Frame, proto: Protocol, out: &mut BytesMut) {
    let resp3 = proto == Protocol::Resp3;
    match frame {
        Frame::Simple(s) => put_line(out, b'+', s),
        Frame::Error(e) => put_line(out, b'-', e),
        Frame::Integer(n) => {
            out.put_u8(b':');
            put_i64(out, *n);
            out.put_slice(b"\r\n");
        }
        Frame::Bulk(b) => put_bulk(out, b),
        Frame::Null if resp3 => out.put_slice(b"_\r\n"),
        Frame::Null => out.put_slice(b"$-1\r\n"),
        Frame::NullArray if resp3 => out.put_slice(b"_\r\n"),
        Frame::NullArray => out.put_slice(b"*-1\r\n"),
        Frame::Array(items) => put_aggregate(out, b'*', items, proto),
        Frame::Map(pairs) => {
            if resp3 {
                put_header(out, b'%', pairs.len() as u64);
            } else {
                put_header(out, b'*', pairs.len() as u64 * 2);
            }
            for (k, v) in pairs {
                encode(k, proto, out);
                encode(v, proto, out);
            }
        }
        Frame::Set(items) => put_aggregate(out, if resp3 { b'~' } else { b'*' }, items, proto),
        Frame::Push(items) => put_aggregate(out, if resp3 { b'>' } else { b'*' }, items, proto),
        Frame::Double(d) => {
            let text = format_double(*d);
            if resp3 {
                out.put_u8(b',');
                out.put_slice(text.as_bytes());
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, text.as_bytes());
            }
        }
        Frame::Boolean(b) if resp3 => out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Frame::Boolean(b) => out.put_slice(if *b { b":1\r\n" } else { b":0\r\n" }),
        Frame::Verbatim(text) if resp3 => {
            put_header(out, b'=', text.len() as u64 + 4);
            out.put_slice(b"txt:");
            out.put_slice(text);
            out.put_slice(b"\r\n");
        }
        Frame::Verbatim(text) => put_bulk(out, text),
        Frame::BigNumber(n) if resp3 => put_line(out, b'(', n),
        Frame::BigNumber(n) => put_bulk(out, n),
        Frame::HumanDouble(d) => {
            let text = format_human_double(*d);
            if resp3 {
                put_line(out, b',', text.as_bytes());
            } else {
                put_bulk(out, text.as_bytes());
            }
        }
    }
}

/// Formats a double as Redis's human-friendly replies do (`ld2string` in `LD_STR_HUMAN` mode:
/// `%.17Lf` of the value, trailing zeros and a trailing dot removed, `-0` as `0`; `inf`, `-inf`).
///
/// Examples: `13.361389338970184` → `13.36138933897018433`, `2.5` → `2.5`, `-0.0` → `0`,
/// `1e20` → `100000000000000000000`.
pub fn format_human_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    // Rust's fixed-precision formatting is exact and rounds ties to even, as glibc's printf.
    let mut s = format!("{d:.17}");
    let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
    s.truncate(trimmed);
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

/// The wire form of `frame` as a new vector (convenient in tests and for one-off replies).
pub fn encode_to_vec(frame: &Frame, proto: Protocol) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode(frame, proto, &mut out);
    out.to_vec()
}

/// Appends a client request (a multibulk array of bulk strings, what a client or a replication
/// stream sends) to `out`, e.g. `["SET", "k", "v"]` as `*3\r\n$3\r\nSET\r\n...`.
pub fn encode_request<A: AsRef<[u8]>>(args: &[A], out: &mut BytesMut) {
    put_header(out, b'*', args.len() as u64);
    for arg in args {
        put_bulk(out, arg.as_ref());
    }
}

/// Formats a double the way Redis 7.0 replies with it (`"%.17g"`): 17 significant digits, in
/// C's `%g` style (plain decimal when the exponent is in `-4..17`, otherwise `d.ddde±XX`),
/// trailing zeros removed; `inf`, `-inf` and `nan` for the special values.
///
/// Examples: `1.5` → `1.5`, `0.1` → `0.10000000000000001`, `3.0` → `3`, `1e20` → `1e+20`,
/// `1e-5` → `1.0000000000000001e-05`, `-0.0` → `-0`.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "nan".to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Rust's exponent formatting with an explicit precision is exact and correctly rounded
    // (ties to even, like glibc's printf), so it yields the same 17 significant digits as
    // "%.17e"; the rest is C's rule for choosing between the %e and %f layouts.
    let sci = format!("{:.16e}", d.abs());
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();

    let mut out = String::with_capacity(26);
    if d.is_sign_negative() {
        out.push('-');
    }
    const PRECISION: i32 = 17;
    if !(-4..PRECISION).contains(&exp) {
        let sig = digits.trim_end_matches('0');
        let sig = if sig.is_empty() { "0" } else { sig };
        out.push_str(&sig[..1]);
        if sig.len() > 1 {
            out.push('.');
            out.push_str(&sig[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let abs = exp.unsigned_abs();
        if abs < 10 {
            out.push('0');
        }
        out.push_str(&abs.to_string());
    } else if exp >= 0 {
        let int_len = exp as usize + 1;
        let (int_part, frac) = digits.split_at(int_len.min(digits.len()));
        out.push_str(int_part);
        let frac = frac.trim_end_matches('0');
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
    } else {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(digits.trim_end_matches('0'));
    }
    out
}

fn put_line(out: &mut BytesMut, prefix: u8, s: &[u8]) {
    out.reserve(s.len() + 3);
    out.put_u8(prefix);
    if s.iter().any(|&b| b == b'\r' || b == b'\n') {
        out.extend(
            s.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
    } else {
        out.put_slice(s);
    }
    out.put_slice(b"\r\n");
}

fn put_bulk(out: &mut BytesMut, data: &[u8]) {
    out.reserve(data.len() + 16);
    put_header(out, b'$', data.len() as u64);
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

fn put_aggregate(out: &mut BytesMut, prefix: u8, items: &[Frame], proto: Protocol) {
    put_header(out, prefix, items.len() as u64);
    for item in items {
        encode(item, proto, out);
    }
}

fn put_header(out: &mut BytesMut, prefix: u8, len: u64) {
    out.put_u8(prefix);
    put_u64(out, len);
    out.put_slice(b"\r\n");
}

fn put_i64(out: &mut BytesMut, n: i64) {
    if n < 0 {
        out.put_u8(b'-');
    }
    put_u64(out, n.unsigned_abs());
}

fn put_u64(out: &mut BytesMut, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.put_slice(&buf[i..]);
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::Protocol::{Resp2, Resp3};

    fn enc(frame: &Frame, proto: Protocol) -> Vec<u8> {
        encode_to_vec(frame, proto)
    }

    /// Asserts the RESP2 and RESP3 encodings of `frame`.
    fn check(frame: Frame, resp2: &[u8], resp3: &[u8]) {
        assert_eq!(
            enc(&frame, Resp2),
            resp2,
            "RESP2 encoding of {frame:?}: {:?}",
            String::from_utf8_lossy(&enc(&frame, Resp2))
        );
        assert_eq!(
            enc(&frame, Resp3),
            resp3,
            "RESP3 encoding of {frame:?}: {:?}",
            String::from_utf8_lossy(&enc(&frame, Resp3))
        );
    }

    #[test]
    fn human_doubles_print_like_redis_geopos() {
        check(
            Frame::HumanDouble(13.361389338970184),
            b"$20\r\n13.36138933897018433\r\n",
            b",13.36138933897018433\r\n",
        );
        assert_eq!(format_human_double(2.5), "2.5");
        assert_eq!(format_human_double(-0.0), "0");
        assert_eq!(format_human_double(-1e-20), "0");
        assert_eq!(format_human_double(180.0), "180");
        assert_eq!(format_human_double(1e20), "100000000000000000000");
        assert_eq!(format_human_double(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn simple_string_encodes_identically_in_both_protocols() {
        check(Frame::ok(), b"+OK\r\n", b"+OK\r\n");
        check(Frame::simple(""), b"+\r\n", b"+\r\n");
    }

    #[test]
    fn error_encodes_with_dash_prefix() {
        check(
            Frame::error("ERR unknown command"),
            b"-ERR unknown command\r\n",
            b"-ERR unknown command\r\n",
        );
        check(
            Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value"),
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        );
    }

    #[test]
    fn line_breaks_in_simple_strings_and_errors_become_spaces() {
        check(
            Frame::error("ERR a\r\nb"),
            b"-ERR a  b\r\n",
            b"-ERR a  b\r\n",
        );
        check(Frame::simple("x\ny"), b"+x y\r\n", b"+x y\r\n");
    }

    #[test]
    fn integers_encode_including_extremes() {
        check(Frame::Integer(0), b":0\r\n", b":0\r\n");
        check(Frame::Integer(42), b":42\r\n", b":42\r\n");
        check(Frame::Integer(-7), b":-7\r\n", b":-7\r\n");
        check(
            Frame::Integer(i64::MAX),
            b":9223372036854775807\r\n",
            b":9223372036854775807\r\n",
        );
        check(
            Frame::Integer(i64::MIN),
            b":-9223372036854775808\r\n",
            b":-9223372036854775808\r\n",
        );
    }

    #[test]
    fn bulk_strings_encode_binary_safe() {
        check(Frame::bulk("foo"), b"$3\r\nfoo\r\n", b"$3\r\nfoo\r\n");
        check(Frame::bulk(""), b"$0\r\n\r\n", b"$0\r\n\r\n");
        check(
            Frame::bulk(&b"a\r\n\0b"[..]),
            b"$5\r\na\r\n\0b\r\n",
            b"$5\r\na\r\n\0b\r\n",
        );
    }

    #[test]
    fn nulls_use_resp2_forms_or_resp3_underscore() {
        check(Frame::Null, b"$-1\r\n", b"_\r\n");
        check(Frame::NullArray, b"*-1\r\n", b"_\r\n");
    }

    #[test]
    fn arrays_encode_nested_elements() {
        check(Frame::Array(vec![]), b"*0\r\n", b"*0\r\n");
        check(
            Frame::Array(vec![
                Frame::bulk("a"),
                Frame::Integer(1),
                Frame::Null,
                Frame::Array(vec![Frame::ok()]),
            ]),
            b"*4\r\n$1\r\na\r\n:1\r\n$-1\r\n*1\r\n+OK\r\n",
            b"*4\r\n$1\r\na\r\n:1\r\n_\r\n*1\r\n+OK\r\n",
        );
    }

    #[test]
    fn maps_are_flat_arrays_in_resp2_and_percent_in_resp3() {
        check(
            Frame::Map(vec![
                (Frame::bulk("k1"), Frame::Integer(1)),
                (Frame::bulk("k2"), Frame::bulk("v")),
            ]),
            b"*4\r\n$2\r\nk1\r\n:1\r\n$2\r\nk2\r\n$1\r\nv\r\n",
            b"%2\r\n$2\r\nk1\r\n:1\r\n$2\r\nk2\r\n$1\r\nv\r\n",
        );
        check(Frame::Map(vec![]), b"*0\r\n", b"%0\r\n");
    }

    #[test]
    fn sets_are_arrays_in_resp2_and_tilde_in_resp3() {
        check(
            Frame::Set(vec![Frame::bulk("a"), Frame::bulk("b")]),
            b"*2\r\n$1\r\na\r\n$1\r\nb\r\n",
            b"~2\r\n$1\r\na\r\n$1\r\nb\r\n",
        );
    }

    #[test]
    fn pushes_are_arrays_in_resp2_and_angle_in_resp3() {
        check(
            Frame::Push(vec![
                Frame::bulk("message"),
                Frame::bulk("ch"),
                Frame::bulk("hi"),
            ]),
            b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
            b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
        );
    }

    #[test]
    fn doubles_are_bulk_in_resp2_and_comma_in_resp3() {
        check(Frame::Double(1.5), b"$3\r\n1.5\r\n", b",1.5\r\n");
        check(
            Frame::Double(0.1),
            b"$19\r\n0.10000000000000001\r\n",
            b",0.10000000000000001\r\n",
        );
        check(Frame::Double(3.0), b"$1\r\n3\r\n", b",3\r\n");
        check(Frame::Double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n");
        check(
            Frame::Double(f64::NEG_INFINITY),
            b"$4\r\n-inf\r\n",
            b",-inf\r\n",
        );
        check(Frame::Double(f64::NAN), b"$3\r\nnan\r\n", b",nan\r\n");
    }

    #[test]
    fn booleans_are_integers_in_resp2_and_hash_in_resp3() {
        check(Frame::Boolean(true), b":1\r\n", b"#t\r\n");
        check(Frame::Boolean(false), b":0\r\n", b"#f\r\n");
    }

    #[test]
    fn verbatim_is_bulk_in_resp2_and_txt_prefixed_in_resp3() {
        check(
            Frame::Verbatim(Bytes::from_static(b"Some string")),
            b"$11\r\nSome string\r\n",
            b"=15\r\ntxt:Some string\r\n",
        );
    }

    #[test]
    fn big_number_is_bulk_in_resp2_and_paren_in_resp3() {
        check(
            Frame::BigNumber(Bytes::from_static(
                b"3492890328409238509324850943850943825024385",
            )),
            b"$43\r\n3492890328409238509324850943850943825024385\r\n",
            b"(3492890328409238509324850943850943825024385\r\n",
        );
    }

    #[test]
    fn request_encoding_is_multibulk_of_bulks() {
        let mut out = BytesMut::new();
        encode_request(&["SET", "key", "value"], &mut out);
        assert_eq!(&out[..], b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");
        let mut out = BytesMut::new();
        encode_request::<&[u8]>(&[], &mut out);
        assert_eq!(&out[..], b"*0\r\n");
    }

    /// Expected strings were checked against C's `printf("%.17g")` and `redis-cli ZSCORE` on
    /// Redis 7.0.
    #[test]
    fn format_double_matches_c_printf_percent_17g() {
        let cases: &[(f64, &str)] = &[
            (0.1, "0.10000000000000001"),
            (1.1, "1.1000000000000001"),
            (1.5, "1.5"),
            (3.0, "3"),
            (1e20, "1e+20"),
            (1e-5, "1.0000000000000001e-05"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (-0.0, "-0"),
            (0.0, "0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (2.5e-310, "2.5000000000000171e-310"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (12345678901234567.0, "12345678901234568"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (5e-324, "4.9406564584124654e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (100.0, "100"),
            (-1.5, "-1.5"),
            (123456.789, "123456.789"),
            (1.0000000000000002, "1.0000000000000002"),
            (1e15, "1000000000000000"),
            (1e21, "1e+21"),
        ];
        for &(d, want) in cases {
            assert_eq!(format_double(d), want, "format_double({d:e})");
        }
    }

    #[test]
    fn format_double_rounds_exact_ties_to_even_like_glibc() {
        // 1 + 2^-17 = 1.00000762939453125 exactly: the 18th digit is a tie.
        assert_eq!(format_double(1.0 + 2f64.powi(-17)), "1.0000076293945312");
    }
}
