//! Reading machinery shared by hashes and sets (any collection whose members are plain `data`
//! sub-keys): paged scans that resume from the cursor table (HSCAN, SSCAN), and random picks
//! (HRANDFIELD, SRANDMEMBER, SPOP). Small collections, and requests for a large share of a
//! collection, are sampled exactly (uniformly, by streaming the members once); a few members of a
//! big collection are picked by seeking to random positions in its sub-key range, which costs a
//! handful of seeks instead of a pass over millions of members but favours members that follow
//! gaps in the key space (see docs/differences.md). Knows nothing of commands or RESP.

use std::collections::HashSet;

use smallvec::SmallVec;

use crate::collection::CollectionMeta;
use crate::db::Db;
use crate::error::Result;
use crate::keys;
use crate::keyspace::prefix_successor;
use crate::meta::KeyType;
use crate::storage::{IterOptions, CF_DATA};
use crate::zset::Rng;

/// Collections up to this size are always sampled exactly.
const EXACT_SAMPLE_MAX: u64 = 1024;

/// A sub-key (hash field, set member) with its value (empty for sets).
pub(crate) type Entry = (Vec<u8>, Vec<u8>);

/// The `data` keys of a command's sub-keys: most commands name one (SADD, HSET, SREM of one
/// member), kept without a second allocation.
pub(crate) type SubKeys = SmallVec<[Vec<u8>; 1]>;

impl Db {
    /// HDEL / SREM: deletes the given members of the hash or set at `key` in one batch and returns
    /// how many existed (repeats count once); the key goes away with its last member.
    pub(crate) fn remove_members(&self, key: &[u8], kind: KeyType, subs: &[&[u8]]) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut c) = self.load_collection(key, kind)? else {
            return Ok(0);
        };
        let mut batch = crate::storage::new_batch();
        let cf = self.storage().cf(CF_DATA);
        let (sub_keys, existed) = self.sub_keys_existing(key, &c, subs)?;
        // One sub-key (the usual HDEL or SREM) cannot repeat: no set of those seen.
        let mut gone: HashSet<&[u8]> = HashSet::new();
        let mut removed = 0;
        for ((sub, sub_key), existed) in subs.iter().zip(&sub_keys).zip(existed) {
            if existed && (subs.len() == 1 || gone.insert(*sub)) {
                batch.delete_cf(cf, sub_key);
                removed += 1;
            }
        }
        if removed > 0 {
            c.len = c.len.saturating_sub(removed);
            self.put_collection(&mut batch, key, &c);
            self.write(batch)?;
        }
        Ok(removed)
    }

    /// Every entry of collection `c` in storage (bytewise) order.
    pub(crate) fn all_entries(&self, key: &[u8], c: &CollectionMeta) -> Result<Vec<Entry>> {
        let mut out = Vec::with_capacity(c.len.min(1 << 20) as usize);
        self.for_each_sub(CF_DATA, key, c, None, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            true
        })?;
        Ok(out)
    }

    /// Which of `subs` exist in collection `c`, in one batched lookup (all false for a fresh,
    /// empty collection, without reading).
    pub(crate) fn subs_exist(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        subs: &[&[u8]],
    ) -> Result<Vec<bool>> {
        Ok(self.sub_keys_existing(key, c, subs)?.1)
    }

    /// The `data` keys of `subs` in collection `c`, and which of them exist (as
    /// [`Db::subs_exist`]), so that a writer puts or deletes the keys it looked up without
    /// building them again.
    pub(crate) fn sub_keys_existing(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        subs: &[&[u8]],
    ) -> Result<(SubKeys, Vec<bool>)> {
        let sub_keys: SubKeys = subs.iter().map(|m| self.sub_key(key, c, m)).collect();
        if c.len == 0 {
            return Ok((sub_keys, vec![false; subs.len()]));
        }
        let existed = self.storage().multi_exists(CF_DATA, &sub_keys)?;
        Ok((sub_keys, existed))
    }

    /// One page of a collection scan: visits up to `count` sub-keys after the position cursor
    /// `cursor` stands for (0, or an unknown cursor, starts at the beginning), calling `f` on each,
    /// and returns the cursor of the next page (0 when the scan is complete).
    pub(crate) fn scan_entries(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&[u8], &[u8]),
    ) -> Result<u64> {
        let after = if cursor == 0 {
            None
        } else {
            self.scan_cursor_position(cursor, key)
        };
        let count = count.max(1);
        let (mut visited, mut first, mut more) = (0usize, true, false);
        let mut last: Option<Vec<u8>> = None;
        self.for_each_sub(CF_DATA, key, c, after.as_deref(), |sub, v| {
            if first {
                first = false;
                if after.as_deref() == Some(sub) {
                    return true; // returned by the previous page
                }
            }
            if visited == count {
                more = true;
                return false;
            }
            visited += 1;
            f(sub, v);
            if visited == count {
                last = Some(sub.to_vec());
            }
            true
        })?;
        Ok(match (more, last) {
            (true, Some(last)) => self.scan_cursor_remember(key, last),
            _ => 0,
        })
    }

    /// Random entries of collection `c`. With `distinct`, `min(count, len)` different entries
    /// (all of them, in storage order, when `count >= len`); otherwise exactly `count` entries
    /// that may repeat. Apart from the all-of-them case the order is random.
    pub(crate) fn random_entries(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        count: u64,
        distinct: bool,
    ) -> Result<Vec<Entry>> {
        let n = c.len;
        if n == 0 || count == 0 {
            return Ok(Vec::new());
        }
        if distinct && count >= n {
            return self.all_entries(key, c);
        }
        let mut rng = Rng::new();
        let exact = n <= EXACT_SAMPLE_MAX
            || (distinct && count.saturating_mul(8) >= n)
            || (!distinct && count.saturating_mul(4) >= n);
        if exact {
            self.sample_exact(key, c, count, distinct, &mut rng)
        } else {
            self.sample_by_seeking(key, c, count, distinct, &mut rng)
        }
    }

    /// Uniform sampling in one pass over the members: selection sampling (Knuth's algorithm S)
    /// for distinct picks, sorted random ranks for picks with repetition.
    fn sample_exact(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        count: u64,
        distinct: bool,
        rng: &mut Rng,
    ) -> Result<Vec<Entry>> {
        let n = c.len;
        let mut out = Vec::with_capacity(count.min(1 << 20) as usize);
        if distinct {
            let (mut needed, mut remaining) = (count, n);
            self.for_each_sub(CF_DATA, key, c, None, |k, v| {
                if remaining == 0 || rng.below(remaining) < needed {
                    out.push((k.to_vec(), v.to_vec()));
                    needed -= 1;
                }
                remaining = remaining.saturating_sub(1);
                needed > 0
            })?;
        } else {
            let mut ranks: Vec<u64> = (0..count).map(|_| rng.below(n)).collect();
            ranks.sort_unstable();
            let (mut rank, mut next) = (0u64, 0usize);
            self.for_each_sub(CF_DATA, key, c, None, |k, v| {
                while next < ranks.len() && ranks[next] == rank {
                    out.push((k.to_vec(), v.to_vec()));
                    next += 1;
                }
                rank += 1;
                next < ranks.len()
            })?;
        }
        rng.shuffle(&mut out);
        Ok(out)
    }

    /// Picks by random walks down the sub-keys' implicit trie: wherever the members under the
    /// current prefix branch (on their next byte, or by one of them ending there), one branch is
    /// drawn uniformly and the walk goes on inside it, until one member is left. A pick costs a
    /// few seeks per branching point on its path (dozens at most) instead of a pass over the
    /// collection, but branches are drawn alike whatever their size, so members in small
    /// branches come up more often than in a uniform draw. Distinct picks that land on a member
    /// already taken move on to the next free one; this is only used when `count` is small next
    /// to the collection's size.
    fn sample_by_seeking(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        count: u64,
        distinct: bool,
        rng: &mut Rng,
    ) -> Result<Vec<Entry>> {
        let base = keys::data_prefix(self.phys(), key, c.version);
        let s = self.storage();
        let ro = IterOptions {
            lower: Some(base.clone()),
            upper: Some(prefix_successor(&base)),
            ..IterOptions::default()
        };
        let mut it = s.iter(CF_DATA, ro);
        let skip = base.len();
        let mut out = Vec::with_capacity(count.min(1 << 20) as usize);
        let mut taken: HashSet<Vec<u8>> = HashSet::new();
        let mut probe = base.clone();
        for _ in 0..count {
            // The walk: `prefix` is the sub-key prefix every candidate shares.
            it.seek(&base);
            let mut prefix: Vec<u8> = Vec::new();
            for _ in 0..1024 {
                let Some(first) = sub_of(&it, skip) else {
                    break;
                };
                probe.truncate(skip);
                probe.extend_from_slice(&prefix);
                // The last member under the prefix: SeekForPrev lands on the successor itself
                // when that is a member, so step back from it.
                it.seek_for_prev(prefix_successor(&probe));
                if sub_of(&it, skip).is_some_and(|k| !k.starts_with(&prefix)) {
                    it.prev();
                }
                let Some(last) = sub_of(&it, skip) else { break };
                if first == last {
                    break; // one member left; the iterator stands on it
                }
                let common = first.iter().zip(&last).take_while(|(a, b)| a == b).count();
                prefix.clear();
                prefix.extend_from_slice(&first[..common]);
                // Branches at byte `common`: the member equal to the prefix, if any (it sorts
                // first), then one per next byte from the smallest branch's to the largest's.
                let hi = last[common] as i64;
                let terminal = first.len() == common;
                let lo = if terminal {
                    probe.truncate(skip);
                    probe.extend_from_slice(&prefix);
                    it.seek(&probe);
                    it.next();
                    match sub_of(&it, skip) {
                        Some(k) if k.len() > common => k[common] as i64,
                        _ => break,
                    }
                } else {
                    first[common] as i64
                };
                // Draw a branch: a byte in lo..=hi, kept only if a branch starts with it (so
                // every branch is equally likely however sparse the bytes are), with lo - 1
                // standing for the member equal to the prefix. After a few misses, list the
                // branches instead.
                let mut chosen: Option<i64> = None;
                for _ in 0..16 {
                    let r = lo - terminal as i64
                        + rng.below((hi - lo + 1 + terminal as i64) as u64) as i64;
                    if r < lo {
                        chosen = Some(r);
                        break;
                    }
                    seek_to(&mut it, &mut probe, skip, &prefix, Some(r as u8));
                    if sub_of(&it, skip).is_some_and(|k| k.get(common) == Some(&(r as u8))) {
                        chosen = Some(r);
                        break;
                    }
                }
                let chosen = match chosen {
                    Some(r) => r,
                    None => {
                        let mut branches: Vec<i64> =
                            if terminal { vec![lo - 1] } else { Vec::new() };
                        let mut b = lo;
                        while b <= hi {
                            seek_to(&mut it, &mut probe, skip, &prefix, Some(b as u8));
                            match sub_of(&it, skip) {
                                Some(k) if k.len() > common && k.starts_with(&prefix) => {
                                    branches.push(k[common] as i64);
                                    b = k[common] as i64 + 1;
                                }
                                _ => break,
                            }
                        }
                        branches[rng.below(branches.len() as u64) as usize]
                    }
                };
                if chosen < lo {
                    seek_to(&mut it, &mut probe, skip, &prefix, None);
                    break; // the member equal to the prefix
                }
                seek_to(&mut it, &mut probe, skip, &prefix, Some(chosen as u8));
                prefix.push(chosen as u8);
            }
            // Land on a member (wrapping past the end), skipping ones already taken.
            let mut steps = 0u64;
            loop {
                if !it.valid() {
                    it.status()?;
                    it.seek_to_first();
                    if !it.valid() {
                        it.status()?;
                        return Ok(out);
                    }
                }
                let (Some(k), Some(v)) = (it.key(), it.value()) else {
                    break;
                };
                let sub = &k[skip..];
                if !distinct || !taken.contains(sub) || steps > c.len {
                    if distinct {
                        taken.insert(sub.to_vec());
                    }
                    out.push((sub.to_vec(), v.to_vec()));
                    break;
                }
                steps += 1;
                it.next();
            }
        }
        it.status()?;
        Ok(out)
    }
}

/// The sub-key the iterator stands on (its key without the first `skip` bytes), if valid.
fn sub_of(it: &crate::pending::StorageIter<'_>, skip: usize) -> Option<Vec<u8>> {
    if it.valid() {
        it.key().map(|k| k[skip..].to_vec())
    } else {
        None
    }
}

/// Seeks `it` to the first member at or after `prefix` (followed by `next`, if given); `probe`
/// holds the collection's key prefix in its first `skip` bytes.
fn seek_to(
    it: &mut crate::pending::StorageIter<'_>,
    probe: &mut Vec<u8>,
    skip: usize,
    prefix: &[u8],
    next: Option<u8>,
) {
    probe.truncate(skip);
    probe.extend_from_slice(prefix);
    if let Some(b) = next {
        probe.push(b);
    }
    it.seek(&probe[..]);
}
