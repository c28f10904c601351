//! The process's memory allocators: mimalloc as the global allocator and the one option Strata
//! sets on it; the C library's malloc (RocksDB's allocator) bounded to a few arenas; transparent
//! huge pages off for the process as Redis's `disable-thp` does; and the two things the server
//! asks of mimalloc (its committed bytes for INFO and the metrics, and returning free memory to
//! the system for MEMORY PURGE).

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

/// The C library's malloc arenas (RocksDB's threads allocate there). glibc makes up to eight per
/// core; each keeps the space its thread freed, so under full-speed writes RocksDB's buffers
/// (table builders, compaction reads) left tens of MB in arenas that no setting names
/// (docs/architecture.md, "Cold data", "Memory under writes").
const MALLOC_ARENAS: std::ffi::c_int = 2;

/// Allocations of this many bytes or more get their own mapping from the C library, returned to
/// the system when freed. A fixed threshold: glibc's own rises to 32 MB after large frees, which
/// put RocksDB's 1-2 MB file and read-ahead buffers into the arenas, where they stay.
const MALLOC_MMAP_THRESHOLD: std::ffi::c_int = 128 << 10;

/// Sets the allocators' options; call once, first thing in `main`. An option given in the
/// allocator's own environment variable (`MIMALLOC_PURGE_DELAY`, `MALLOC_ARENA_MAX`,
/// `MALLOC_MMAP_THRESHOLD_`) is left as given.
pub fn configure() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mi_option_set only stores an option value; 15 is purge_delay in mimalloc's enum.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a malloc parameter; called before RocksDB's threads start.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS) };
    }
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: as above.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD) };
    }
}

/// Turns transparent huge pages off for the process (Redis's `disable-thp yes`, its default).
/// mimalloc asks for huge pages on its arenas, and a 2 MB page is resident whole once any of it
/// is touched: under full-speed writes in a memory group that was 20-100 MB more anonymous
/// memory than mimalloc's blocks in use, enough for the group's OOM killer (docs/architecture.md,
/// "Cold data", "Memory under writes").
pub fn disable_thp() {
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on the calling process's memory map.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
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
