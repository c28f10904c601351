//! The server's request decoder: arbitrary bytes, fed whole and in chunks, must decode the same
//! requests and never panic (a line too long before its terminator arrives is the one error that
//! depends on how the bytes arrive, as in Redis).
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use strata_resp::{DecoderLimits, RequestDecoder};

fn decode(input: &[u8], chunk: usize) -> (Vec<Vec<bytes::Bytes>>, bool) {
    let limits = DecoderLimits {
        proto_max_bulk_len: 1 << 20,
        max_inline_len: 1024,
        max_multibulk_len: 1 << 16,
    };
    let mut decoder = RequestDecoder::new(limits);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in input.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(argv)) => out.push(argv),
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, input)) = data.split_first() else {
        return;
    };
    let whole = decode(input, input.len());
    let split = decode(input, 1 + (chunk as usize % 16));
    if !whole.1 && !split.1 {
        assert_eq!(whole, split);
    } else {
        // A line checked against max_inline_len before its terminator arrived (as Redis does)
        // is refused only if it arrived in pieces: up to the first error, the requests agree.
        let (a, b) = (&whole.0, &split.0);
        assert!(a.starts_with(b) || b.starts_with(a));
    }
});
