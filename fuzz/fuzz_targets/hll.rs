//! HyperLogLog values a client could SET and then use with PFADD/PFCOUNT/PFMERGE/PFDEBUG.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata::fuzzing::hll_value(data);
});
