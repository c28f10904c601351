//! Client-side caching (CLIENT TRACKING) bookkeeping, as Redis 7.0's `tracking.c`: the tracking
//! table (key → the clients that read it), the BCAST prefix table (prefix → its clients and the
//! keys changed since the last broadcast), and each tracking client's mode. The server owns one
//! [`Tracking`]; the dispatcher remembers the keys of read-only commands ([`Tracking::remember`])
//! and reports the keys every write changed through the same point that touches WATCH
//! ([`Tracking::invalidate`]), FLUSHDB/FLUSHALL call [`Tracking::invalidate_all`], and the
//! server reports expired keys. Each of these returns the invalidation [`Message`]s to send;
//! the server delivers them (to the client, or to its REDIRECT connection, as Redis's
//! `sendTrackingMessage`). BCAST keys wait until the server asks for
//! [`Tracking::take_broadcasts`] (after each batch of commands a connection ran, and from its
//! cron), as Redis sends them once per event-loop round. Nothing here does I/O, and a write
//! costs one atomic load while nobody tracks anything.
//!
//! As in Redis, keys are tracked by name whatever their database, and a key's entry is dropped
//! once it has been invalidated (a client that reads it again is added again). The ids of
//! clients that turned tracking off stay in the table until their keys are invalidated or
//! evicted (Redis cleans them lazily too, and counts them in `tracking_total_items`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use bytes::Bytes;

/// Redis's default `tracking-table-max-keys`.
pub const DEFAULT_MAX_KEYS: u64 = 1_000_000;

/// The channel RESP2 REDIRECT clients receive invalidations on.
pub const CHANNEL: &str = "__redis__:invalidate";

/// The options CLIENT TRACKING ON set for a client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mode {
    /// REDIRECT: the client that receives the invalidations (0: the client itself).
    pub redirect: u64,
    /// BCAST: invalidations for every key matching a prefix, no read tracking.
    pub bcast: bool,
    /// OPTIN: only the keys of commands after CLIENT CACHING YES are tracked.
    pub optin: bool,
    /// OPTOUT: the keys of commands after CLIENT CACHING NO are not tracked.
    pub optout: bool,
    /// NOLOOP: no invalidations for the client's own writes.
    pub noloop: bool,
}

/// What an invalidation message says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// These keys: one in default mode, a prefix's batch in BCAST mode.
    Keys(Vec<Bytes>),
    /// Every key (FLUSHDB, FLUSHALL): sent as a null.
    All,
}

/// One invalidation for tracking client `client`, to deliver to it or to `redirect`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The tracking client.
    pub client: u64,
    /// Its REDIRECT client (0: none).
    pub redirect: u64,
    /// The keys.
    pub payload: Payload,
    /// An eviction from the table (nothing changed): it may go ahead of the reply of a command
    /// its receiver is running. Other invalidations a tracking client gets itself follow that
    /// reply, which may hold the value they invalidate.
    pub evicted: bool,
}

/// A BCAST prefix: its clients, and the keys changed since the last broadcast, each with the
/// client that changed it last (`None`: expiry), for NOLOOP.
#[derive(Default)]
struct Prefix {
    clients: BTreeSet<u64>,
    keys: BTreeMap<Bytes, Option<u64>>,
}

/// A tracking client.
struct Client {
    mode: Mode,
    prefixes: BTreeSet<Bytes>,
}

#[derive(Default)]
struct Inner {
    /// Key → the clients that may have it cached.
    table: HashMap<Bytes, HashSet<u64>>,
    /// Entries of `table` over all keys (`tracking_total_items`).
    items: u64,
    /// BCAST prefixes.
    prefixes: BTreeMap<Bytes, Prefix>,
    /// The clients with tracking on.
    clients: HashMap<u64, Client>,
    /// Eviction rounds in a row that left the table over its bound: each round tries harder
    /// (Redis's `timeout_counter`).
    eviction_rounds: u64,
}

impl Inner {
    /// Removes `key` from the table and returns the messages its clients get (Redis's
    /// `trackingInvalidateKey` without the broadcast part): clients in default mode, but a
    /// NOLOOP client for its own write.
    fn invalidate_key(
        &mut self,
        key: &[u8],
        writer: Option<u64>,
        evicted: bool,
        out: &mut Vec<Message>,
    ) {
        let Some(ids) = self.table.remove(key) else {
            return;
        };
        self.items -= ids.len() as u64;
        let mut ids: Vec<u64> = ids.into_iter().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(c) = self.clients.get(&id) else {
                continue;
            };
            if c.mode.bcast || (c.mode.noloop && writer == Some(id)) {
                continue;
            }
            out.push(Message {
                client: id,
                redirect: c.mode.redirect,
                payload: Payload::Keys(vec![Bytes::copy_from_slice(key)]),
                evicted,
            });
        }
    }

    /// Removes `client` from its BCAST prefixes (and a prefix left without clients).
    fn leave_prefixes(&mut self, client: u64, prefixes: &BTreeSet<Bytes>) {
        for p in prefixes {
            if let Some(entry) = self.prefixes.get_mut(p) {
                entry.clients.remove(&client);
                if entry.clients.is_empty() {
                    self.prefixes.remove(p);
                }
            }
        }
    }
}

/// Every tracking client and tracked key of the server.
pub struct Tracking {
    inner: Mutex<Inner>,
    /// Clients with tracking on (`tracking_clients`).
    clients: AtomicUsize,
    /// Keys in the table (`tracking_total_keys`).
    keys: AtomicUsize,
    /// BCAST prefixes (`tracking_total_prefixes`).
    prefixes: AtomicUsize,
    /// Some prefix has keys waiting to be broadcast.
    pending: AtomicBool,
    /// `tracking-table-max-keys` (0: no bound).
    max_keys: AtomicU64,
}

impl Default for Tracking {
    fn default() -> Tracking {
        Tracking {
            inner: Mutex::default(),
            clients: AtomicUsize::new(0),
            keys: AtomicUsize::new(0),
            prefixes: AtomicUsize::new(0),
            pending: AtomicBool::new(false),
            max_keys: AtomicU64::new(DEFAULT_MAX_KEYS),
        }
    }
}

/// Whether two prefixes would both match some key (one starts the other).
fn overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

impl Tracking {
    /// Nobody tracking.
    pub fn new() -> Tracking {
        Tracking::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes the counts after a change made under the lock.
    fn publish_counts(&self, inner: &Inner) {
        self.keys.store(inner.table.len(), Ordering::Release);
        self.prefixes.store(inner.prefixes.len(), Ordering::Release);
        self.clients.store(inner.clients.len(), Ordering::Release);
    }

    /// Sets `tracking-table-max-keys` (0: no bound).
    pub fn set_max_keys(&self, n: u64) {
        self.max_keys.store(n, Ordering::Relaxed);
    }

    /// INFO `tracking_clients`.
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Acquire)
    }

    /// INFO `tracking_total_keys`.
    pub fn total_keys(&self) -> usize {
        self.keys.load(Ordering::Acquire)
    }

    /// INFO `tracking_total_items`.
    pub fn total_items(&self) -> u64 {
        self.lock().items
    }

    /// INFO `tracking_total_prefixes`.
    pub fn total_prefixes(&self) -> usize {
        self.prefixes.load(Ordering::Acquire)
    }

    /// Whether a write may have someone to tell (a tracked key or a BCAST prefix exists): one
    /// atomic load each, asked for every write.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.keys.load(Ordering::Acquire) > 0 || self.prefixes.load(Ordering::Acquire) > 0
    }

    /// Redis's `checkPrefixCollisionsOrReply`: the error text when a new prefix of `client`
    /// overlaps one it already has, or another new one.
    pub fn prefix_collision(&self, client: u64, new: &[Bytes]) -> Option<String> {
        let inner = self.lock();
        let existing = inner.clients.get(&client).map(|c| &c.prefixes);
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        for (i, p) in new.iter().enumerate() {
            if let Some(old) = existing.and_then(|e| e.iter().find(|o| overlap(o, p))) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(old)
                ));
            }
            if let Some(other) = new[i + 1..].iter().find(|o| overlap(p, o)) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(other)
                ));
            }
        }
        None
    }

    /// CLIENT TRACKING ON (Redis's `enableTracking`): sets `client`'s mode (replacing the one it
    /// had) and, in BCAST mode, adds `prefixes` to the ones it has (the empty prefix when none
    /// is given). The caller has checked the options.
    pub fn enable(&self, client: u64, mode: Mode, prefixes: &[Bytes]) {
        let mut inner = self.lock();
        let state = inner.clients.entry(client).or_insert_with(|| Client {
            mode,
            prefixes: BTreeSet::new(),
        });
        state.mode = mode;
        if mode.bcast {
            let added: Vec<Bytes> = if prefixes.is_empty() {
                vec![Bytes::new()]
            } else {
                prefixes.to_vec()
            };
            state.prefixes.extend(added.iter().cloned());
            for p in added {
                inner.prefixes.entry(p).or_default().clients.insert(client);
            }
        }
        self.publish_counts(&inner);
    }

    /// CLIENT TRACKING OFF, RESET, or a client that went away (Redis's `disableTracking`). Its
    /// keys stay in the table until they are invalidated, as in Redis.
    pub fn disable(&self, client: u64) {
        if self.clients() == 0 {
            return;
        }
        let mut inner = self.lock();
        if let Some(c) = inner.clients.remove(&client) {
            inner.leave_prefixes(client, &c.prefixes);
            self.publish_counts(&inner);
        }
    }

    /// The prefixes of a BCAST client, in order (CLIENT TRACKINGINFO).
    pub fn prefixes_of(&self, client: u64) -> Vec<Bytes> {
        self.lock()
            .clients
            .get(&client)
            .map(|c| c.prefixes.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Remembers that `client` read `keys` (Redis's `trackingRememberKeys`).
    pub fn remember<'k>(&self, client: u64, keys: impl IntoIterator<Item = &'k [u8]>) {
        let mut inner = self.lock();
        let mut added = 0;
        for k in keys {
            let ids = match inner.table.get_mut(k) {
                Some(ids) => ids,
                None => inner.table.entry(Bytes::copy_from_slice(k)).or_default(),
            };
            if ids.insert(client) {
                added += 1;
            }
        }
        inner.items += added;
        self.keys.store(inner.table.len(), Ordering::Release);
    }

    /// Keys were changed by `writer` (`None`: expiry, the leader of a replica): their tracking
    /// clients are told, each key in a message of its own and in order, and the keys are
    /// noted for the BCAST prefixes they match (sent by [`Tracking::take_broadcasts`]).
    pub fn invalidate<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        writer: Option<u64>,
    ) -> Vec<Message> {
        let mut out = Vec::new();
        if !self.is_active() {
            return out;
        }
        let mut inner = self.lock();
        let mut noted = false;
        for key in keys {
            for (p, entry) in inner.prefixes.iter_mut() {
                if key.starts_with(p) {
                    entry.keys.insert(Bytes::copy_from_slice(key), writer);
                    noted = true;
                }
            }
            if !inner.table.is_empty() {
                inner.invalidate_key(key, writer, false, &mut out);
            }
        }
        if noted {
            self.pending.store(true, Ordering::Release);
        }
        self.keys.store(inner.table.len(), Ordering::Release);
        out
    }

    /// FLUSHDB / FLUSHALL (Redis's `trackingInvalidateKeysOnFlush`): every tracking client is
    /// told that every key changed, and the table is emptied.
    pub fn invalidate_all(&self) -> Vec<Message> {
        if self.clients() == 0 && self.total_keys() == 0 {
            return Vec::new();
        }
        let mut inner = self.lock();
        let mut ids: Vec<(u64, u64)> = inner
            .clients
            .iter()
            .map(|(&id, c)| (id, c.mode.redirect))
            .collect();
        ids.sort_unstable();
        inner.table = HashMap::new();
        inner.items = 0;
        self.keys.store(0, Ordering::Release);
        ids.into_iter()
            .map(|(client, redirect)| Message {
                client,
                redirect,
                payload: Payload::All,
                evicted: false,
            })
            .collect()
    }

    /// Whether some BCAST prefix has keys waiting (one atomic load).
    #[inline]
    pub fn has_broadcasts(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// The BCAST invalidations due (Redis's `trackingBroadcastInvalidationMessages`): for each
    /// prefix with changed keys, one message with them (in key order) per client of the prefix,
    /// less the keys a NOLOOP client changed itself.
    pub fn take_broadcasts(&self) -> Vec<Message> {
        if !self.pending.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        let mut inner = self.lock();
        let Inner {
            prefixes, clients, ..
        } = &mut *inner;
        let mut out = Vec::new();
        for entry in prefixes.values_mut() {
            if entry.keys.is_empty() {
                continue;
            }
            let keys = std::mem::take(&mut entry.keys);
            for id in &entry.clients {
                let Some(c) = clients.get(id) else { continue };
                let list: Vec<Bytes> = keys
                    .iter()
                    .filter(|(_, w)| !(c.mode.noloop && **w == Some(*id)))
                    .map(|(k, _)| k.clone())
                    .collect();
                if !list.is_empty() {
                    out.push(Message {
                        client: *id,
                        redirect: c.mode.redirect,
                        payload: Payload::Keys(list),
                        evicted: false,
                    });
                }
            }
        }
        out
    }

    /// Whether the table holds more keys than `tracking-table-max-keys` allows while someone
    /// tracks (two atomic loads: asked before every command).
    #[inline]
    pub fn over_limit(&self) -> bool {
        let max = self.max_keys.load(Ordering::Relaxed);
        self.clients.load(Ordering::Relaxed) > 0
            && max > 0
            && self.keys.load(Ordering::Acquire) as u64 > max
    }

    /// Brings the table back under `tracking-table-max-keys` (Redis's
    /// `trackingLimitUsedSlots`): evicts keys, telling their clients as if the keys had
    /// changed, at most 100 per round for each round in a row that ended over the bound.
    pub fn evict_over_limit(&self) -> Vec<Message> {
        let mut out = Vec::new();
        let max = self.max_keys.load(Ordering::Relaxed) as usize;
        let mut inner = self.lock();
        if max == 0 || inner.table.len() <= max {
            inner.eviction_rounds = 0;
            return out;
        }
        let effort = 100 * (inner.eviction_rounds as usize + 1);
        let excess = inner.table.len() - max;
        let victims: Vec<Bytes> = inner
            .table
            .keys()
            .take(effort.min(excess))
            .cloned()
            .collect();
        for key in victims {
            inner.invalidate_key(&key, None, true, &mut out);
        }
        if inner.table.len() <= max {
            inner.eviction_rounds = 0;
        } else {
            inner.eviction_rounds += 1;
        }
        self.keys.store(inner.table.len(), Ordering::Release);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(m: &Message) -> Vec<&[u8]> {
        match &m.payload {
            Payload::Keys(k) => k.iter().map(|k| &k[..]).collect(),
            Payload::All => vec![],
        }
    }

    #[test]
    fn a_read_key_is_invalidated_once_then_forgotten() {
        let t = Tracking::new();
        assert!(!t.is_active());
        t.enable(7, Mode::default(), &[]);
        t.remember(7, [&b"a"[..], b"b"]);
        assert_eq!((t.total_keys(), t.total_items()), (2, 2));
        let m = t.invalidate([&b"a"[..], b"c"], Some(9));
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].client, keys(&m[0])), (7, vec![&b"a"[..]]));
        assert!(t.invalidate([&b"a"[..]], Some(9)).is_empty());
        assert_eq!((t.total_keys(), t.total_items()), (1, 1));
    }

    #[test]
    fn noloop_skips_own_writes_and_off_clients_are_skipped() {
        let t = Tracking::new();
        let noloop = Mode {
            noloop: true,
            redirect: 5,
            ..Mode::default()
        };
        t.enable(1, noloop, &[]);
        t.enable(2, Mode::default(), &[]);
        t.remember(1, [&b"k"[..]]);
        t.remember(2, [&b"k"[..]]);
        let m = t.invalidate([&b"k"[..]], Some(1));
        assert_eq!(m.iter().map(|m| m.client).collect::<Vec<_>>(), [2]);
        t.remember(1, [&b"k"[..]]);
        let m = t.invalidate([&b"k"[..]], Some(2));
        assert_eq!((m[0].client, m[0].redirect), (1, 5));
        t.remember(2, [&b"x"[..]]);
        t.disable(2);
        assert!(t.invalidate([&b"x"[..]], None).is_empty());
        assert_eq!(t.clients(), 1);
    }

    #[test]
    fn bcast_batches_keys_per_prefix() {
        let t = Tracking::new();
        let bcast = Mode {
            bcast: true,
            noloop: true,
            ..Mode::default()
        };
        t.enable(3, bcast, &[Bytes::from("a:"), Bytes::from("b:")]);
        assert_eq!(t.total_prefixes(), 2);
        let none = t.invalidate([&b"a:1"[..], b"a:2", b"b:1", b"c:1"], Some(4));
        assert!(none.is_empty());
        assert!(t.has_broadcasts());
        let m = t.take_broadcasts();
        assert_eq!(m.len(), 2);
        assert_eq!(keys(&m[0]), [&b"a:1"[..], b"a:2"]);
        assert_eq!(keys(&m[1]), [&b"b:1"[..]]);
        assert!(t.take_broadcasts().is_empty());
        // NOLOOP: its own changes are left out.
        t.invalidate([&b"a:1"[..]], Some(3));
        assert!(t.take_broadcasts().is_empty());
        t.disable(3);
        assert_eq!(t.total_prefixes(), 0);
    }

    #[test]
    fn prefixes_must_not_overlap() {
        let t = Tracking::new();
        let b = |s: &str| Bytes::from(s.to_string());
        assert!(t
            .prefix_collision(1, &[b("FOOBAR"), b("FOO")])
            .is_some_and(|e| e
                .starts_with("ERR Prefix 'FOOBAR' overlaps with another provided prefix 'FOO'")));
        let bcast = Mode {
            bcast: true,
            ..Mode::default()
        };
        t.enable(1, bcast, &[b("FOO"), b("BAR")]);
        assert!(t.prefix_collision(1, &[b("FO")]).is_some_and(
            |e| e.starts_with("ERR Prefix 'FO' overlaps with an existing prefix 'FOO'")
        ));
        assert_eq!(t.prefix_collision(1, &[b("X")]), None);
        assert_eq!(t.prefixes_of(1), [b("BAR"), b("FOO")]);
    }

    #[test]
    fn the_table_is_bounded_with_growing_effort() {
        let t = Tracking::new();
        t.enable(1, Mode::default(), &[]);
        let names: Vec<String> = (0..250).map(|i| format!("k{i}")).collect();
        t.remember(1, names.iter().map(|n| n.as_bytes()));
        assert!(!t.over_limit());
        t.set_max_keys(1);
        assert!(t.over_limit());
        assert_eq!(t.evict_over_limit().len(), 100);
        assert_eq!(t.evict_over_limit().len(), 149);
        assert!(!t.over_limit());
        assert_eq!(t.total_keys(), 1);
    }

    #[test]
    fn a_flush_tells_every_tracking_client() {
        let t = Tracking::new();
        t.enable(2, Mode::default(), &[]);
        t.enable(
            1,
            Mode {
                bcast: true,
                ..Mode::default()
            },
            &[],
        );
        t.remember(2, [&b"a"[..]]);
        let m = t.invalidate_all();
        assert_eq!(m.iter().map(|m| m.client).collect::<Vec<_>>(), [1, 2]);
        assert!(m.iter().all(|m| m.payload == Payload::All));
        assert_eq!(t.total_keys(), 0);
    }
}
