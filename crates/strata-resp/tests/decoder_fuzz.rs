//! Seeded fuzzing of the protocol decoders, bounded for CI (the long runs are the cargo-fuzz
//! targets in `fuzz/`, see docs/reliability.md). Random and mutated input, fed whole and in
//! random chunks: decoders must never panic, must agree with themselves however the input is
//! split, and must never report more bytes consumed than they were given.
//! `STRATA_FUZZ_ITERS` sets the number of inputs per test (default 100,000).

use bytes::BytesMut;
use strata_resp::{
    encode_request, encode_to_vec, parse_frame, DecoderLimits, Frame, Protocol, RequestDecoder,
};

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn iterations() -> usize {
    std::env::var("STRATA_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
}

/// Bytes that look like protocol: valid requests, fragments, and the bytes parsers branch on.
const TOKENS: &[&[u8]] = &[
    b"*",
    b"$",
    b"\r\n",
    b"\r",
    b"\n",
    b"-1",
    b"0",
    b"1",
    b"2",
    b"3",
    b"-",
    b"+",
    b":",
    b"9223372036854775807",
    b"4294967296",
    b"2147483648",
    b"\"",
    b"'",
    b"\\x41",
    b" ",
    b"\t",
    b"PING",
    b"SET",
    b"%",
    b"~",
    b"_",
    b",",
    b"#",
    b"=",
    b"(",
    b"!",
    b">",
    b"|",
    b"\x00",
];

fn mutate(rng: &mut Rng, mut v: Vec<u8>) -> Vec<u8> {
    for _ in 0..=rng.below(4) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.truncate(i);
            }
            2 => {
                let i = rng.below(v.len() + 1);
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(i..i, t.iter().copied());
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                let j = (i + rng.below(8)).min(v.len());
                v.drain(i..j);
            }
            4 => {
                let extra = rng.below(16);
                let b = rng.bytes(extra);
                v.extend(b);
            }
            _ => {}
        }
    }
    v
}

fn request_input(rng: &mut Rng) -> Vec<u8> {
    match rng.below(4) {
        0 => {
            let n = rng.below(64);
            rng.bytes(n)
        }
        1 => (0..rng.below(12))
            .flat_map(|_| TOKENS[rng.below(TOKENS.len())].to_vec())
            .collect(),
        _ => {
            let mut out = BytesMut::new();
            for _ in 0..=rng.below(3) {
                if rng.below(3) == 0 {
                    out.extend_from_slice(b"SET key \"va\\x41lue\" 'x y'\r\n");
                } else {
                    let args: Vec<Vec<u8>> = (0..=rng.below(4))
                        .map(|_| {
                            let n = rng.below(20);
                            rng.bytes(n)
                        })
                        .collect();
                    encode_request(&args, &mut out);
                }
            }
            mutate(rng, out.to_vec())
        }
    }
}

/// Decodes everything in `input`, fed in chunks of the given sizes (cycled); returns the
/// requests and whether it ended in an error.
fn decode_all(input: &[u8], chunks: &[usize], limits: DecoderLimits) -> (Vec<Vec<Vec<u8>>>, bool) {
    let mut decoder = RequestDecoder::new(limits);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut fed = 0;
    let mut c = 0;
    while fed < input.len() {
        let n = chunks[c % chunks.len()].max(1).min(input.len() - fed);
        c += 1;
        buf.extend_from_slice(&input[fed..fed + n]);
        fed += n;
        loop {
            let before = buf.len();
            match decoder.decode(&mut buf) {
                Ok(Some(argv)) => {
                    assert!(buf.len() < before, "a request was decoded from no bytes");
                    out.push(argv.iter().map(|a| a.to_vec()).collect());
                }
                Ok(None) => break,
                Err(e) => {
                    assert!(e.to_frame() != Frame::Null);
                    return (out, true);
                }
            }
        }
    }
    (out, false)
}

#[test]
fn request_decoder_survives_random_and_mutated_input_however_it_is_split() {
    let mut rng = Rng(0x5EED_0001);
    let limits = DecoderLimits {
        proto_max_bulk_len: 1 << 20,
        max_inline_len: 256,
        max_multibulk_len: 1 << 16,
    };
    let mut errors = 0;
    for i in 0..iterations() {
        let input = request_input(&mut rng);
        let whole = decode_all(&input, &[input.len().max(1)], limits);
        let chunks: Vec<usize> = (0..4).map(|_| 1 + rng.below(7)).collect();
        let split = decode_all(&input, &chunks, limits);
        // An error ends the stream; before it, the requests must be the same however the bytes
        // arrived. (A stream ending mid-request without error is simply incomplete.) The one
        // error that depends on the arrival is a line longer than max_inline_len checked before
        // its terminator arrived (Redis's rule too; found by cargo fuzz).
        if !whole.1 && !split.1 {
            assert_eq!(
                whole, split,
                "input #{i} {input:?} decodes differently in chunks {chunks:?}"
            );
        } else {
            let (a, b) = (&whole.0, &split.0);
            assert!(
                a.starts_with(b) || b.starts_with(a),
                "input #{i} {input:?} in chunks {chunks:?}"
            );
        }
        errors += whole.1 as usize;
    }
    assert!(
        errors > 0,
        "the mutations never produced a protocol error: they are too tame"
    );
}

#[test]
fn reply_parser_survives_random_and_mutated_replies() {
    let mut rng = Rng(0x5EED_0002);
    let samples: Vec<Vec<u8>> = [
        Frame::ok(),
        Frame::error("ERR x"),
        Frame::Integer(-42),
        Frame::bulk(&b"hello"[..]),
        Frame::Null,
        Frame::Array(vec![
            Frame::Integer(1),
            Frame::bulk(&b"a"[..]),
            Frame::Array(vec![Frame::Null]),
        ]),
        Frame::Double(1.5),
        Frame::Boolean(true),
        Frame::Map(vec![(Frame::bulk(&b"k"[..]), Frame::Integer(2))]),
    ]
    .iter()
    .flat_map(|f| {
        [
            encode_to_vec(f, Protocol::Resp2),
            encode_to_vec(f, Protocol::Resp3),
        ]
    })
    .collect();
    for _ in 0..iterations() {
        let input = match rng.below(3) {
            0 => {
                let n = rng.below(48);
                rng.bytes(n)
            }
            _ => {
                let s = samples[rng.below(samples.len())].clone();
                mutate(&mut rng, s)
            }
        };
        if let Ok(Some((_, used))) = parse_frame(&input) {
            assert!(
                used <= input.len(),
                "parser consumed {used} of {} bytes",
                input.len()
            );
        }
    }
    // Deep nesting is refused, not a stack overflow.
    let deep = b"*1\r\n".repeat(100_000);
    assert!(parse_frame(&deep).is_err());
}

#[test]
fn inline_line_longer_than_the_limit_is_refused_only_while_unterminated() {
    // Found by `cargo fuzz run resp_request`: whether an over-long inline line is refused depends
    // on whether its terminator had arrived when the limit was checked, as in Redis
    // (PROTO_INLINE_MAX_SIZE is checked only while no newline is in the buffer).
    let limits = DecoderLimits {
        max_inline_len: 16,
        ..DecoderLimits::default()
    };
    let line = b"ECHO aaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let (whole, whole_err) = decode_all(line, &[line.len()], limits);
    assert!(!whole_err);
    assert_eq!(whole, vec![vec![b"ECHO".to_vec(), b"a".repeat(24)]]);
    let (split, split_err) = decode_all(line, &[4], limits);
    assert!(split_err && split.is_empty());
}
