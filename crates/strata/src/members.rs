//! Reading machinery shared by hashes and sets (any collection whose members are plain `data`
//! sub-keys): paged scans that resume from the cursor table (HSCAN, SSCAN), and random picks
//! (HRANDFIELD, SRANDMEMBER, SPOP). Small collections, and requests for a large share of a
//! collection, are sampled exactly (uniformly, by streaming the members once); a few members of a
//! big collection are picked by seeking to random positions in its sub-key range, which costs a
//! handful of seeks instead of a pass over millions of members but favours members that follow
//! gaps in the key space (see docs/differences.md). Knows nothing of commands or RESP.

use std::collections::HashSet;

use rocksdb::ReadOptions;

use crate::collection::CollectionMeta;
use crate::db::Db;
use crate::error::Result;
use crate::keys;
use crate::keyspace::prefix_successor;
use crate::storage::CF_DATA;
use crate::zset::Rng;

/// Collections up to this size are always sampled exactly.
const EXACT_SAMPLE_MAX: u64 = 1024;

/// A sub-key (hash field, set member) with its value (empty for sets).
pub(crate) type Entry = (Vec<u8>, Vec<u8>);

impl Db {
    /// Every entry of collection `c` in storage (bytewise) order.
    pub(crate) fn all_entries(&self, key: &[u8], c: &CollectionMeta) -> Result<Vec<Entry>> {
        let mut out = Vec::with_capacity(c.len.min(1 << 20) as usize);
        self.for_each_sub(CF_DATA, key, c, None, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            true
        })?;
        Ok(out)
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

    /// Picks by random walks down the sub-keys' implicit trie: at each point where the members
    /// under the current prefix branch, a byte between the smallest and the largest branch is
    /// drawn and the walk follows the first branch at or after it, until one member is left.
    /// Each pick costs two seeks per branching point on its path (a few dozen at most) instead
    /// of a pass over the collection; branches are picked alike whatever their size, so this is
    /// not exactly uniform. Distinct picks that land on a member already taken move on to the
    /// next free one; this is only used when `count` is small next to the collection's size.
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
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(base.clone());
        ro.set_iterate_upper_bound(prefix_successor(&base));
        let mut it = s.raw().raw_iterator_cf_opt(s.cf(CF_DATA), ro);
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
                it.seek_for_prev(prefix_successor(&probe));
                let Some(last) = sub_of(&it, skip) else { break };
                if first == last {
                    break; // one member left; the iterator stands on it
                }
                let common = first.iter().zip(&last).take_while(|(a, b)| a == b).count();
                prefix.clear();
                prefix.extend_from_slice(&first[..common]);
                // Branches at byte `common`: the member equal to the prefix (drawn as -1), if
                // any, then one per next byte between first's and last's.
                let lo = first.get(common).map_or(-1, |&b| b as i64);
                let hi = last.get(common).map_or(-1, |&b| b as i64);
                let r = lo + rng.below((hi - lo + 1).max(1) as u64) as i64;
                probe.truncate(skip);
                probe.extend_from_slice(&prefix);
                if r >= 0 {
                    probe.push(r as u8);
                }
                it.seek(&probe);
                if r < 0 {
                    break; // the member equal to the prefix
                }
                match sub_of(&it, skip) {
                    Some(k) if k.len() > common => prefix.push(k[common]),
                    _ => break,
                }
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
fn sub_of(
    it: &rocksdb::DBRawIteratorWithThreadMode<'_, rocksdb::DB>,
    skip: usize,
) -> Option<Vec<u8>> {
    if it.valid() {
        it.key().map(|k| k[skip..].to_vec())
    } else {
        None
    }
}
