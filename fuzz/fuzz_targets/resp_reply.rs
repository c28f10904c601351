//! The client-side reply parser: arbitrary bytes must parse, be incomplete, or be refused.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((_, used))) = strata_resp::parse_frame(data) {
        assert!(used <= data.len());
    }
});
