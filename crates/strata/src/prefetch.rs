//! A hint to the CPU to start loading a memory line that code is about to read: for loops over
//! records scattered in the heap (a checkpoint's keys and values in key order), where each
//! record is a cache miss and the loop knows the next ones in advance. Nothing is read or
//! written, and nothing can fault: a pointer that is dangling or null is as harmless as a
//! valid one.

/// Starts loading the line holding `p` into the CPU's caches (no effect off x86-64).
#[inline(always)]
pub(crate) fn prefetch<T: ?Sized>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch has no architectural effect and cannot fault, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
