//! Every on-disk record decoder (meta values, keys of every column family, sub-keys, scores).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata::fuzzing::any_record(data);
});
