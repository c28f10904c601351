//! The process's memory allocator: mimalloc as the global allocator, the one option Strata sets
//! on it, and the two things the server asks of it (its committed bytes for INFO and the metrics,
//! and returning free memory to the system for MEMORY PURGE).

/// mimalloc instead of glibc malloc: the hot path allocates small buffers per command, and glibc's
/// malloc/free/consolidate were ~14% of SET in profiles.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long memory freed inside the process stays committed before mimalloc gives it back to the
/// system, in milliseconds. mimalloc's default (10 ms, 100 ms for whole arenas) returned the
/// memory of every retired write-back layer and log buffer at once, and the next ones faulted it
/// back in, zeroing a 2 MB huge page per fault: ~8% of an LPUSH's CPU (0.011 page faults per
/// command; with 10 s, 0.0003). Ten seconds is also jemalloc's default decay, which Redis uses.
/// MEMORY PURGE still returns everything at once.
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// mimalloc's `mi_option_purge_delay` (its option enum, the same in mimalloc 2 and 3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    /// Frees what mimalloc holds unused (`force`: also what other threads abandoned).
    fn mi_collect(force: bool);
    /// mimalloc's process figures.
    fn mi_process_info(
        elapsed_msecs: *mut usize,
        user_msecs: *mut usize,
        system_msecs: *mut usize,
        current_rss: *mut usize,
        peak_rss: *mut usize,
        current_commit: *mut usize,
        peak_commit: *mut usize,
        page_faults: *mut usize,
    );
}

/// Sets the allocator's options; call once, first thing in `main`. An option given in mimalloc's
/// own environment variable (`MIMALLOC_PURGE_DELAY`) is left as given.
pub fn configure() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set only stores an option value; 15 is purge_delay in mimalloc's enum.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
}

/// Asks the allocator to return the memory it holds free to the system (MEMORY PURGE).
pub fn purge() {
    // SAFETY: mi_collect only walks and frees mimalloc's own free pages.
    unsafe { mi_collect(true) };
}

/// The allocator's committed bytes now.
pub fn committed() -> u64 {
    let mut v = [0usize; 8];
    let [a, b, c, d, e, f, g, h] = &mut v;
    // SAFETY: mi_process_info writes one usize through each pointer, all valid for the call.
    unsafe { mi_process_info(a, b, c, d, e, f, g, h) };
    v[5] as u64
}
