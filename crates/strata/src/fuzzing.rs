//! Entry points for fuzzing the on-disk record decoders (the `fuzz/` targets and the seeded
//! smoke test in `tests/decoder_fuzz.rs`). Not part of the library's API: every function takes
//! arbitrary bytes, runs the same decoding the engine runs on records read from disk, and
//! panics only if a decoder does (or breaks a round-trip invariant). Depends on nothing but the
//! decoders themselves.

use crate::collection::CollectionMeta;
use crate::keys;
use crate::list::{idx_of, ListState};
use crate::meta::{self, KeyType, Meta};
use crate::zset::{score_from_value, split_zscore_sub};

/// Decodes `value` as a `meta` record the way reads do: header, then collection metadata, then
/// list bounds. A record that decodes must encode back to the same bytes.
pub fn meta_value(value: &[u8]) {
    let _ = meta::expire_of(value);
    let header = meta::decode_header(value);
    let Ok(m) = Meta::decode(value) else {
        assert!(header.is_err(), "header decodes but record does not");
        return;
    };
    assert_eq!(m.encode(), value, "metadata record does not round-trip");
    let _ = m.version();
    let _ = m.collection_len();
    if m.kind == KeyType::String && !m.is_fragmented() {
        return;
    }
    let kind = m.kind;
    if let Ok(c) = CollectionMeta::from_meta(m) {
        if kind == KeyType::List {
            let _ = ListState::from_meta(c);
        }
    }
}

/// Splits `key` as a key of every column family, and its tail as every kind of sub-key.
pub fn record_key(key: &[u8]) {
    if let Some((db, user_key)) = keys::split_meta_key(key) {
        assert_eq!(keys::meta_key(db, user_key).len(), key.len());
    }
    if let Some((_, user_key, _, sub)) = keys::split_data_key(key) {
        assert_eq!(7 + user_key.len() + 8 + sub.len(), key.len());
        let _ = split_zscore_sub(sub);
        let _ = idx_of(sub);
    }
    if let Some((at, db, user_key)) = keys::split_expire_key(key) {
        assert_eq!(keys::expire_key(at, db, user_key).len(), key.len());
    }
    if let Some(b) = key.get(..8) {
        let mut s = [0u8; 8];
        s.copy_from_slice(b);
        let score = keys::decode_score(s);
        if !score.is_nan() {
            // -0 is stored as 0, so compare as numbers, not bits.
            assert_eq!(keys::decode_score(keys::encode_score(score)), score);
        }
    }
}

/// Decodes `value` as a `data` value (a zset member's score).
pub fn data_value(value: &[u8]) {
    let _ = score_from_value(value);
}

/// Runs every HyperLogLog operation on `value` as PFADD, PFCOUNT, PFMERGE and PFDEBUG run them
/// on a string a client SET (hostile input): they may refuse it but must not panic, and whatever
/// they produce from it is a valid HLL again. Arbitrary bytes are also tried as a sparse body.
pub fn hll_value(value: &[u8]) {
    use crate::hll;
    for v in [value.to_vec(), [&hll::new_sparse()[..16], value].concat()] {
        if hll::validate(&v).is_err() {
            continue;
        }
        let _ = hll::cached(&v);
        let _ = hll::count(&v);
        let _ = hll::decode_sparse(&v);
        let mut max = [0u8; hll::REGISTERS];
        let merged = hll::merge_into(&mut max, &v);
        let mut w = v.clone();
        for e in [&b"a"[..], b"b", b"foo", b"hello"] {
            if hll::add(&mut w, e, 3000).is_err() {
                break;
            }
        }
        assert!(hll::validate(&w).is_ok(), "PFADD broke the header");
        let mut w = v.clone();
        if hll::to_dense(&mut w).is_ok() {
            assert_eq!(w.len(), hll::DENSE_LEN);
        }
        if merged.is_ok() {
            let mut target = hll::new_sparse();
            hll::raise_all(&mut target, &max, 3000);
            assert_eq!(hll::registers(&target).ok(), Some(max.to_vec()));
        }
    }
}

/// Everything at once: `data` is split into a key and a value at its first byte's position.
pub fn any_record(data: &[u8]) {
    meta_value(data);
    record_key(data);
    data_value(data);
    if let Some((&at, rest)) = data.split_first() {
        let (k, v) = rest.split_at((at as usize).min(rest.len()));
        record_key(k);
        meta_value(v);
    }
}

/// Decodes `data` as a DUMP payload (trailer), as a value (type byte and body, read the way
/// RESTORE reads it, streams included) and as each compact blob (listpack, ziplist, intset, zipmap). Any of them
/// may refuse the bytes; none may panic. A value that decodes must encode back to a blob that
/// decodes to the same elements.
pub fn rdb_value(data: &[u8]) {
    use crate::rdb::{compact, encoding::Reader, payload, stream, value};
    let _ = payload::open(data);
    let mut r = Reader::new(data);
    if let Ok(t) = r.u8() {
        if value::is_stream_type(t) {
            let _ = stream::read_stream(t, &mut r, &mut |_| Ok(()));
        } else {
            let _ = value::read_value(t, &mut r, &mut |_| Ok(()));
        }
    }
    let mut entries: Vec<Vec<u8>> = Vec::new();
    let mut keep = |v: Vec<u8>| {
        entries.push(v);
        Ok(())
    };
    let decoded = compact::listpack_each(data, &mut keep).is_ok();
    if decoded {
        let mut lp = compact::Listpack::new();
        for e in &entries {
            lp.push(e);
        }
        let blob = lp.finish();
        let mut again = Vec::new();
        let ok = compact::listpack_each(&blob, &mut |v| {
            again.push(v);
            Ok(())
        });
        assert!(ok.is_ok(), "a re-encoded listpack does not decode");
        assert_eq!(again, entries, "a re-encoded listpack decodes differently");
    }
    let mut skip = |_v: Vec<u8>| Ok(());
    let _ = compact::ziplist_each(data, &mut skip);
    let _ = compact::intset_each(data, &mut skip);
    let _ = compact::zipmap_each(data, &mut skip);
}
