//! Active expiry: a background cycle that walks the `expire` index in deadline order and deletes keys
//! whose time has come, so expired keys leave DBSIZE, KEYS and SCAN (and free their space) without
//! anyone touching them. Index entries are hints: an entry whose key has since changed its expiry is
//! simply dropped.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::db::{now_ms, Db};
use crate::error::Result;
use crate::keys;
use crate::meta;
use crate::storage::{IterOptions, CF_EXPIRE, CF_META};

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
    let ro = IterOptions {
        upper: Some((now + 1).to_be_bytes().to_vec()),
        ..IterOptions::default()
    };
    let mut it = s.iter(CF_EXPIRE, ro);
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
    let mut batch = crate::storage::new_batch();
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
                let mut single = crate::storage::new_batch();
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

impl Db {
    /// Lazy expiry made visible: deletes `key` if its time has passed, counts it in
    /// `expired_keys` and reports it to the hook registered with [`Db::on_expired`], as the
    /// active cycle would; returns whether it did. Reads already treat such a key as missing, so
    /// a server calls this only when someone listens for `expired` events (Redis raises them
    /// when a command touches an expired key).
    pub fn expire_if_due(&self, key: &[u8]) -> Result<bool> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let s = self.storage();
        let phys = self.phys();
        let Some(raw) = s.get(CF_META, &keys::meta_key(phys, key))? else {
            return Ok(false);
        };
        let exp = meta::expire_of(&raw);
        if exp == 0 || exp > now_ms() {
            return Ok(false);
        }
        let mut batch = crate::storage::new_batch();
        self.delete_meta(&mut batch, phys, key);
        self.write(batch)?;
        self.inner
            .stats
            .expired_keys
            .fetch_add(1, Ordering::Relaxed);
        let hook = self
            .inner
            .expired_hook
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(hook) = hook {
            hook(self.index as u32, key);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use crate::db::{Db, Options};
    use crate::string::{Expiry, SetOptions};

    #[test]
    fn expire_if_due_deletes_and_reports_only_due_keys() -> crate::Result<()> {
        let dir = tempfile::tempdir().map_err(|e| crate::Error::Storage(e.to_string()))?;
        let opts = Options {
            active_expire: false,
            ..Options::default()
        };
        let db = Db::open_with(dir.path(), opts)?.select(2)?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        db.on_expired(Arc::new(move |d, k| {
            s.lock().expect("lock").push((d, k.to_vec()))
        }));
        let soon = SetOptions {
            expiry: Expiry::At(crate::now_ms() + 20),
            ..SetOptions::default()
        };
        db.set(b"old", b"v", soon)?;
        assert!(!db.expire_if_due(b"old")?);
        std::thread::sleep(std::time::Duration::from_millis(40));
        db.set(b"live", b"v", SetOptions::default())?;
        assert!(!db.expire_if_due(b"live")?);
        assert!(!db.expire_if_due(b"missing")?);
        assert!(db.expire_if_due(b"old")?);
        assert!(!db.expire_if_due(b"old")?);
        assert_eq!(*seen.lock().expect("lock"), vec![(2, b"old".to_vec())]);
        Ok(())
    }
}
