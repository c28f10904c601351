//! LZF decompression, for the compressed strings of RDB payloads (Redis compresses strings longer
//! than 20 bytes with `lzf_compress` when `rdbcompression` is on). Every back reference and
//! literal run is checked against the input and the announced output size, so damaged input is
//! an error, never a read or write out of bounds. Strata writes strings uncompressed, so there is
//! no compressor here.

/// Decompresses `input` into exactly `out_len` bytes; `None` if the input is malformed or does
/// not produce exactly `out_len` bytes.
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            // A literal run of ctrl + 1 bytes.
            let n = ctrl + 1;
            let run = input.get(i..i.checked_add(n)?)?;
            if out.len() + n > out_len {
                return None;
            }
            out.extend_from_slice(run);
            i += n;
        } else {
            // A back reference: length (ctrl >> 5) + 2, possibly extended by one byte.
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(i)?);
                i += 1;
            }
            let low = usize::from(*input.get(i)?);
            i += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            let len = len + 2;
            if back > out.len() || out.len() + len > out_len {
                return None;
            }
            let start = out.len() - back;
            // Byte by byte: the reference may overlap the bytes it produces.
            for k in 0..len {
                let b = out[start + k];
                out.push(b);
            }
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::decompress;

    #[test]
    fn literal_and_overlapping_back_reference() {
        // "abc" then a reference 3 back of length 6: "abcabcabc".
        let input = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(decompress(&input, 9).as_deref(), Some(&b"abcabcabc"[..]));
    }

    #[test]
    fn refuses_bad_references_and_sizes() {
        assert_eq!(
            decompress(&[0x20, 5], 2),
            None,
            "reference before the start"
        );
        assert_eq!(decompress(&[2, b'a', b'b'], 3), None, "truncated literal");
        assert_eq!(decompress(&[0, b'a'], 2), None, "short output");
        assert_eq!(decompress(&[1, b'a', b'b'], 1), None, "long output");
    }
}
