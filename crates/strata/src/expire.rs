//! Active expiry: a background cycle that walks the `expire` index in deadline order and deletes keys
//! whose time has come, so expired keys leave DBSIZE, KEYS and SCAN (and free their space) without
//! anyone touching them. Index entries are hints: an entry whose key has since changed its expiry is
//! simply dropped.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rocksdb::{ReadOptions, WriteBatch};

use crate::db::{now_ms, Db};
use crate::error::Result;
use crate::keys;
use crate::meta;
use crate::storage::{CF_EXPIRE, CF_META};

/// Entries handled per batch; the cycle re-checks its time budget between batches.
const BATCH: usize = 256;

/// Runs one expiry cycle of at most about `budget`; returns how many keys it deleted.
pub fn active_cycle(db: &Db, budget: Duration) -> Result<u64> {
    let started = Instant::now();
    let mut deleted = 0;
    loop {
        let now = now_ms();
        let due = due_entries(db, now)?;
        if due.is_empty() {
            return Ok(deleted);
        }
        let full = due.len() == BATCH;
        deleted += expire_entries(db, &due, now)?;
        if !full || started.elapsed() >= budget {
            return Ok(deleted);
        }
    }
}

/// Up to BATCH index entries with a deadline at or before `now`.
fn due_entries(db: &Db, now: u64) -> Result<Vec<Vec<u8>>> {
    let s = db.storage();
    let mut ro = ReadOptions::default();
    ro.set_iterate_upper_bound((now + 1).to_be_bytes().to_vec());
    let mut it = s.raw().raw_iterator_cf_opt(s.cf(CF_EXPIRE), ro);
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() && out.len() < BATCH {
        if let Some(k) = it.key() {
            out.push(k.to_vec());
        }
        it.next();
    }
    it.status()?;
    Ok(out)
}

fn expire_entries(db: &Db, entries: &[Vec<u8>], now: u64) -> Result<u64> {
    let s = db.storage();
    let mut batch = WriteBatch::default();
    let mut deleted = 0;
    let hook = db
        .inner
        .expired_hook
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    for entry in entries {
        let Some((at, phys, key)) = keys::split_expire_key(entry) else {
            batch.delete_cf(s.cf(CF_EXPIRE), entry);
            continue;
        };
        let Some(logical) = db.logical_of(phys) else {
            continue;
        };
        let _g = db.inner.locks.lock_one(logical, key);
        if db.logical_of(phys) != Some(logical) {
            continue; // SWAPDB moved it meanwhile; the key is looked at again next cycle.
        }
        batch.delete_cf(s.cf(CF_EXPIRE), entry);
        let mk = keys::meta_key(phys, key);
        if let Some(raw) = s.get(CF_META, &mk)? {
            let exp = meta::expire_of(&raw);
            if exp == at && exp <= now {
                let mut single = WriteBatch::default();
                db.inner.hot.remove(&mk);
                single.delete_cf(s.cf(CF_META), &mk);
                s.write(single)?;
                deleted += 1;
                if let Some(hook) = &hook {
                    hook(logical as u32, key);
                }
            }
        }
    }
    s.write(batch)?;
    db.inner
        .stats
        .expired_keys
        .fetch_add(deleted, Ordering::Relaxed);
    Ok(deleted)
}
