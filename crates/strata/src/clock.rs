//! The wall clock, in Unix milliseconds: the lowest layer, below storage (which reads it for
//! compaction-time expiry) and everything above it.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The current time in whole Unix seconds from the kernel's coarse clock (updated once per tick,
/// a few milliseconds; no hardware counter read), for clocks of second resolution read on every
/// command (the access clock). Falls back to [`now_ms`] where the coarse clock is missing.
pub fn now_secs_coarse() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec the call writes into; nothing else is touched.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } == 0 {
            return u64::try_from(ts.tv_sec).unwrap_or(0);
        }
    }
    now_ms() / 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coarse_clock_agrees_with_the_wall_clock_to_the_second() {
        let before = now_ms() / 1000;
        let coarse = now_secs_coarse();
        let after = now_ms() / 1000;
        // The coarse clock may lag by a tick: it can read the second before `before`.
        assert!(
            coarse + 1 >= before && coarse <= after,
            "{before} {coarse} {after}"
        );
    }
}
