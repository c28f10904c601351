//! Redis's RDB value decoders (DUMP payload trailer, values of every type byte, listpacks,
//! ziplists, intsets, zipmaps), as RESTORE reads them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata::fuzzing::rdb_value(data);
});
