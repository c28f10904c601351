//! Keyspace notification classes (the bits of `notify-keyspace-events`, as Redis's `NOTIFY_*`)
//! and the key-miss events raised for read commands. Handlers raise events with
//! [`crate::Ctx::notify`] right where they change a key, in Redis's order; the server decides
//! whether anyone hears them. Nothing here does I/O.

use bytes::Bytes;

use strata::ListEnd;

use crate::Ctx;

/// `K`: publish on `__keyspace@<db>__:<key>`.
pub const KEYSPACE: u32 = 1;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted-set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: keys deleted because their time passed.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: keys evicted for maxmemory (Strata never evicts).
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: reads of missing keys.
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module key types.
pub const MODULE: u32 = 1 << 12;
/// `n`: keys created.
pub const NEW: u32 = 1 << 13;

/// What `A` stands for: every class but `m` (key misses) and `n` (new keys), as Redis's
/// `NOTIFY_ALL`.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The letter of each class, in the order Redis prints them after the classes `A` does not
/// cover.
const CLASS_LETTERS: [(char, u32); 11] = [
    ('g', GENERIC),
    ('$', STRING),
    ('l', LIST),
    ('s', SET),
    ('h', HASH),
    ('z', ZSET),
    ('x', EXPIRED),
    ('e', EVICTED),
    ('t', STREAM),
    ('d', MODULE),
    ('n', NEW),
];

/// The letters printed after the classes, in Redis's order.
const TARGET_LETTERS: [(char, u32); 3] = [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEY_MISS)];

/// Reads a `notify-keyspace-events` value into bits like Redis's
/// `keyspaceEventsStringToFlags`; `None` for a character that names no class.
pub fn from_letters(s: &str) -> Option<u32> {
    s.chars().try_fold(0, |flags, c| {
        let bits = match c {
            'A' => ALL,
            _ => {
                CLASS_LETTERS
                    .iter()
                    .chain(&TARGET_LETTERS)
                    .find(|(letter, _)| *letter == c)?
                    .1
            }
        };
        Some(flags | bits)
    })
}

/// Prints bits as `CONFIG GET notify-keyspace-events` shows them, like Redis's
/// `keyspaceEventsFlagsToString`: `A` or the single classes (`A` hides `n`, as in Redis), then
/// `K`, `E`, `m`.
pub fn to_letters(flags: u32) -> String {
    let classes: Vec<(char, u32)> = if flags & ALL == ALL {
        vec![('A', ALL)]
    } else {
        CLASS_LETTERS.to_vec()
    };
    classes
        .iter()
        .chain(&TARGET_LETTERS)
        .filter(|(_, bits)| flags & bits != 0)
        .map(|(letter, _)| *letter)
        .collect()
}

/// The classes that are actually published: as in Redis, nothing is unless `K` or `E` is set,
/// so then the result is 0.
pub fn published(flags: u32) -> u32 {
    if flags & (KEYSPACE | KEYEVENT) == 0 {
        0
    } else {
        flags
    }
}

/// The argv indexes of the command's keys in database `db`, each once, from the dispatcher's
/// key list (`(database, argv index)` pairs).
fn keys_in(db: u32, keys: &[(u32, usize)]) -> impl Iterator<Item = usize> + '_ {
    keys.iter()
        .enumerate()
        .filter(move |&(n, &(d, i))| d == db && !keys[..n].contains(&(d, i)))
        .map(|(_, &(_, i))| i)
}

/// Raises `keymiss` for each key of a read-only command that does not exist, before the
/// command runs (Redis raises it from the lookup, before replying). OBJECT, which Redis looks
/// up without events, is a container whose row has no keys.
pub(crate) fn key_misses(ctx: &Ctx<'_>, argv: &[Bytes], keys: &[(u32, usize)]) {
    for i in keys_in(ctx.session.db.index(), keys) {
        if matches!(ctx.session.db.exists(&argv[i]), Ok(false)) {
            ctx.notify(KEY_MISS, "keymiss", &argv[i]);
        }
    }
}

/// Raises `del` for `key` when it no longer exists (a pop or removal emptied it), as Redis
/// does after removing an emptied collection.
pub(crate) fn del_if_gone(ctx: &Ctx<'_>, key: &[u8]) {
    if ctx.notifies(GENERIC) && matches!(ctx.session.db.exists(key), Ok(false)) {
        ctx.notify(GENERIC, "del", key);
    }
}

/// Whether `key` exists, asked only when events of `class` are published (else `false`).
pub(crate) fn existed(ctx: &Ctx<'_>, class: u32, key: &[u8]) -> bool {
    ctx.notifies(class) && matches!(ctx.session.db.exists(key), Ok(true))
}

/// The event name of a pop from / push to one end of a list.
pub(crate) fn list_event(end: strata::ListEnd, push: bool) -> &'static str {
    match (end, push) {
        (strata::ListEnd::Left, true) => "lpush",
        (strata::ListEnd::Right, true) => "rpush",
        (strata::ListEnd::Left, false) => "lpop",
        (strata::ListEnd::Right, false) => "rpop",
    }
}

/// The events of a `*STORE` command: `event` on `dst` when it stored a non-empty result, else
/// `del` when `dst` existed before (`existed`, from [`existed`]), as Redis raises them.
pub(crate) fn stored(ctx: &Ctx<'_>, class: u32, event: &str, dst: &[u8], n: u64, existed: bool) {
    if n > 0 {
        ctx.notify(class, event, dst);
    } else if existed {
        ctx.notify(GENERIC, "del", dst);
    }
}

/// LMOVE's events, in Redis's order: the push on the destination, the pop on the source, and
/// `del` when the source was emptied.
pub(crate) fn list_moved(
    ctx: &Ctx<'_>,
    argv: &[Bytes],
    moved: &Option<Vec<u8>>,
    from: ListEnd,
    to: ListEnd,
) {
    if moved.is_some() {
        ctx.notify(LIST, list_event(to, true), &argv[2]);
        ctx.notify(LIST, list_event(from, false), &argv[1]);
        del_if_gone(ctx, &argv[1]);
    }
}

/// Deletes the command's keys whose time has passed, raising `expired` for each (through the
/// server's expiry hook), before the command looks at them, as Redis's lazy expiry does.
pub(crate) fn expire_due_keys(ctx: &Ctx<'_>, argv: &[Bytes], keys: &[(u32, usize)]) {
    for i in keys_in(ctx.session.db.index(), keys) {
        let _ = ctx.session.db.expire_if_due(&argv[i]);
    }
}

thread_local! {
    /// Keys (database, key) that did not exist when the running write command started: the
    /// first event raised on one that exists by then is preceded by `new`.
    static ABSENT: std::cell::RefCell<Vec<(u32, Bytes)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Before a write command runs with `n` events on: remembers which of its keys are absent.
pub(crate) fn note_absent_keys(ctx: &Ctx<'_>, argv: &[Bytes], keys: &[(u32, usize)]) {
    let db = ctx.session.db.index();
    let absent: Vec<(u32, Bytes)> = keys_in(db, keys)
        .filter(|&i| matches!(ctx.session.db.exists(&argv[i]), Ok(false)))
        .map(|i| (db, argv[i].clone()))
        .collect();
    ABSENT.with(|a| *a.borrow_mut() = absent);
}

/// After the command: forgets the absent keys.
pub(crate) fn clear_absent_keys() {
    ABSENT.with(|a| a.borrow_mut().clear());
}

/// Raises `new` for `key` if the running command created it (it was absent when the command
/// started and exists now); at most once per key and command. Called before each event.
pub(crate) fn new_key(ctx: &Ctx<'_>, db: u32, key: &[u8]) {
    let was_absent = ABSENT.with(|a| {
        let mut a = a.borrow_mut();
        match a.iter().position(|(d, k)| *d == db && k.as_ref() == key) {
            Some(i) => {
                a.swap_remove(i);
                true
            }
            None => false,
        }
    });
    if was_absent && db == ctx.session.db.index() && matches!(ctx.session.db.exists(key), Ok(true))
    {
        ctx.server.notify(db, NEW, "new", key);
    }
}

/// Raises `new` for a key a command re-created whether or not it existed (RENAME, COPY and
/// MOVE delete and re-add their destination in Redis).
pub(crate) fn new_key_always(ctx: &Ctx<'_>, db: u32, key: &[u8]) {
    if ctx.notifies(NEW) {
        ABSENT.with(|a| {
            a.borrow_mut()
                .retain(|(d, k)| !(*d == db && k.as_ref() == key))
        });
        ctx.server.notify(db, NEW, "new", key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_need_a_target() -> Result<(), String> {
        let read = |s: &str| from_letters(s).ok_or(format!("{s} was refused"));
        assert_eq!(published(read("A")?), 0);
        assert_eq!(published(read("")?), 0);
        let all = published(read("AKE")?);
        assert_ne!(all & GENERIC, 0);
        assert_eq!(all & (KEY_MISS | NEW), 0);
        assert_eq!(published(read("Ex")?), KEYEVENT | EXPIRED);
        Ok(())
    }

    #[test]
    fn letters_read_and_print_like_redis() {
        assert_eq!(from_letters("Kq"), None);
        let shown = |s: &str| from_letters(s).map(to_letters);
        assert_eq!(shown("KEA").as_deref(), Some("AKE"));
        assert_eq!(shown("Eg$lshzxetd").as_deref(), Some("AE"));
        assert_eq!(shown("nmKg").as_deref(), Some("gnKm"));
        // As in Redis, `A` hides `n` when printed (the bit stays set).
        assert_eq!(shown("AnE").as_deref(), Some("AE"));
        assert_ne!(from_letters("An").unwrap_or_default() & NEW, 0);
    }
}
