//! CRC-64 as Redis computes it for DUMP payloads and RDB files (`crc64.c`): the Jones polynomial
//! (0xad93d23594c935a9), reflected input and output, initial value 0, no final xor. Pure
//! arithmetic over bytes; knows nothing of the formats that carry it.

/// The reflected form of the Jones polynomial.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const fn table() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u64;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ POLY_REFLECTED
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u64; 256] = table();

/// Continues the CRC `crc` (0 to start) over `bytes`, as Redis's `crc64(crc, p, len)`.
pub fn crc64(mut crc: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::crc64;

    #[test]
    fn matches_redis_check_vectors() {
        // The vectors of Redis's crc64.c self-test.
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        let lorem = concat!(
            "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed ",
            "do eiusmod tempor incididunt ut labore et dolore magna ",
            "aliqua. Ut enim ad minim veniam, quis nostrud exercitation ",
            "ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis ",
            "aute irure dolor in reprehenderit in voluptate velit esse ",
            "cillum dolore eu fugiat nulla pariatur. Excepteur sint ",
            "occaecat cupidatat non proident, sunt in culpa qui officia ",
            "deserunt mollit anim id est laborum.\0"
        );
        assert_eq!(crc64(0, lorem.as_bytes()), 0xc779_4709_e696_83b3);
    }

    #[test]
    fn continues_over_pieces() {
        assert_eq!(crc64(crc64(0, b"1234"), b"56789"), crc64(0, b"123456789"));
    }
}
