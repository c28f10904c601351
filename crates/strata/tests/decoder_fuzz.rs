//! Seeded fuzzing of every on-disk record decoder (through `strata::fuzzing`), bounded for CI;
//! the long runs are the cargo-fuzz targets in `fuzz/` (docs/reliability.md). Inputs are random
//! bytes and mutations of valid records of every type; a decoder may refuse them but must not
//! panic. `STRATA_FUZZ_ITERS` sets the number of inputs (default 100,000).

use strata::fuzzing;
use strata::keys;
use strata::meta::{encode_flagged, KeyType};

mod common;
use common::Rng;

fn iterations() -> usize {
    std::env::var("STRATA_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
}

const KINDS: &[KeyType] = &[
    KeyType::String,
    KeyType::Hash,
    KeyType::List,
    KeyType::Set,
    KeyType::ZSet,
];

/// A valid record or key of some family.
fn valid(rng: &mut Rng) -> Vec<u8> {
    let key_len = rng.below(12);
    let key = rng.bytes(key_len);
    match rng.below(6) {
        0 => keys::meta_key(rng.next() as u8, &key),
        1 => {
            let sub_len = rng.below(12);
            let sub = rng.bytes(sub_len);
            keys::data_key(rng.next() as u8, &key, rng.next(), &sub)
        }
        2 => keys::expire_key(rng.next(), rng.next() as u8, &key),
        3 => rng.next().to_be_bytes().to_vec(),
        _ => {
            let kind = KINDS[rng.below(KINDS.len())];
            let mut body = Vec::new();
            // A string with a collection-like body is sometimes a fragmented one (encoding 2).
            let mut encoding = 0;
            if kind != KeyType::String || rng.below(2) == 0 {
                if kind == KeyType::String && rng.below(2) == 0 {
                    encoding = strata::meta::STRING_FRAGMENTED;
                }
                let len = rng.below(5) as u64;
                body.extend_from_slice(&rng.next().to_be_bytes());
                body.extend_from_slice(&len.to_be_bytes());
                if kind == KeyType::List {
                    let head = (1u64 << 63) - rng.below(3) as u64;
                    body.extend_from_slice(&head.to_be_bytes());
                    body.extend_from_slice(&(head + len).to_be_bytes());
                }
            } else {
                body = key;
            }
            encode_flagged(
                kind,
                (rng.below(16) as u8) << 4 | encoding,
                rng.next() % 3 * rng.next(),
                &body,
            )
        }
    }
}

fn mutate(rng: &mut Rng, mut v: Vec<u8>) -> Vec<u8> {
    for _ in 0..=rng.below(3) {
        match rng.below(5) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.truncate(i);
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = [0, 0xFF, 0x7F, 0x80][rng.below(4)];
            }
            3 => {
                let n = rng.below(9);
                let b = rng.bytes(n);
                v.extend(b);
            }
            _ => {}
        }
    }
    v
}

#[test]
fn record_decoders_survive_random_and_mutated_records() {
    let mut rng = Rng(0x5EED_0003);
    for _ in 0..iterations() {
        let input = match rng.below(4) {
            0 => {
                let n = rng.below(40);
                rng.bytes(n)
            }
            1 => valid(&mut rng),
            _ => {
                let v = valid(&mut rng);
                mutate(&mut rng, v)
            }
        };
        fuzzing::meta_value(&input);
        fuzzing::record_key(&input);
        fuzzing::data_value(&input);
        fuzzing::any_record(&input);
    }
}

#[test]
fn every_valid_metadata_record_round_trips() {
    let mut rng = Rng(0x5EED_0004);
    for _ in 0..10_000 {
        let v = valid(&mut rng);
        fuzzing::meta_value(&v); // asserts the round trip for whatever decodes
    }
}

/// A HyperLogLog as PFADD builds it from `n` random elements (sparse when small, dense past
/// about 1,000).
fn valid_hll(rng: &mut Rng) -> Vec<u8> {
    let mut v = strata::hll::new_sparse();
    let n = [0, 1, 5, 50, 300, 2000][rng.below(6)];
    for _ in 0..n {
        let e = rng.next().to_le_bytes();
        assert!(strata::hll::add(&mut v, &e, 3000).is_ok());
    }
    v
}

#[test]
fn hyperloglog_operations_survive_mutated_values() {
    let mut rng = Rng(0x5EED_0005);
    let bases: Vec<Vec<u8>> = (0..20).map(|_| valid_hll(&mut rng)).collect();
    for _ in 0..iterations() / 50 {
        let input = match rng.below(3) {
            0 => {
                let n = rng.below(40);
                rng.bytes(n)
            }
            _ => {
                let base = bases[rng.below(bases.len())].clone();
                mutate(&mut rng, base)
            }
        };
        fuzzing::hll_value(&input);
    }
}

/// A valid RDB value (type byte and body) or compact blob, as Redis or Strata writes them.
fn valid_rdb(rng: &mut Rng) -> Vec<u8> {
    use strata::rdb::compact::Listpack;
    use strata::rdb::encoding::{put_len, put_string};
    let mut lp = Listpack::new();
    let n = 1 + rng.below(6);
    let words: Vec<Vec<u8>> = (0..n)
        .map(|_| match rng.below(3) {
            0 => {
                let shift = rng.below(64);
                (rng.next() as i64 >> shift).to_string().into_bytes()
            }
            1 => {
                let len = rng.below(70);
                rng.bytes(len)
            }
            _ => b"1.5".to_vec(),
        })
        .collect();
    for w in &words {
        lp.push(w);
    }
    let blob = lp.finish();
    let mut out = Vec::new();
    match rng.below(5) {
        0 => return blob,
        1 => {
            out.push(0);
            put_string(&mut out, &words[0]);
        }
        2 => {
            out.push([16, 17][rng.below(2)]);
            put_len(&mut out, blob.len() as u64);
            out.extend_from_slice(&blob);
        }
        3 => {
            out.push(18);
            put_len(&mut out, 1);
            put_len(&mut out, 2);
            put_len(&mut out, blob.len() as u64);
            out.extend_from_slice(&blob);
        }
        _ => {
            out.push([1, 2, 4][rng.below(3)]);
            put_len(&mut out, words.len() as u64);
            for w in &words {
                put_string(&mut out, w);
            }
        }
    }
    out
}

/// DUMP values (trailer cut off) of streams as Strata writes them: entries in several nodes with
/// two field layouts, a deletion, groups with pending entries and consumers, an emptied stream.
fn stream_values() -> Vec<Vec<u8>> {
    use strata::stream::{AddId, GroupRead, GroupStart, StreamId};
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = strata::Db::open(dir.path()).expect("open");
    let mut out = Vec::new();
    let mut made = || -> strata::Result<()> {
        for i in 1..=130u64 {
            let n = i.to_string();
            let fields: [&[u8]; 4] = if i % 5 == 0 {
                [b"x", b"", b"n", n.as_bytes()]
            } else {
                [b"f", b"value", b"n", n.as_bytes()]
            };
            db.xadd(
                b"s",
                AddId::Exact(StreamId::new(i * 1000, i)),
                &fields,
                false,
                None,
            )?;
        }
        db.xdel(b"s", &[StreamId::new(3000, 3)])?;
        db.xgroup_create(b"s", b"g", GroupStart::Id(StreamId::MIN), false, None)?;
        db.xreadgroup(b"s", b"g", b"a", GroupRead::New, 3, false)?;
        db.xreadgroup(b"s", b"g", b"b", GroupRead::New, 2, false)?;
        db.xgroup_create(b"s", b"h", GroupStart::Last, false, Some(7))?;
        db.xadd(
            b"e",
            AddId::Exact(StreamId::new(1, 1)),
            &[b"f", b"v"],
            false,
            None,
        )?;
        db.xdel(b"e", &[StreamId::new(1, 1)])?;
        db.xadd(
            b"one",
            AddId::Exact(StreamId::new(9, 0)),
            &[b"k", b"12"],
            false,
            None,
        )?;
        for key in [&b"s"[..], b"e", b"one"] {
            let p = db.dump_payload(key)?.expect("a stream");
            out.push(p[..p.len() - 10].to_vec());
        }
        Ok(())
    };
    made().expect("streams made");
    out
}

#[test]
fn rdb_decoders_survive_random_and_mutated_values() {
    let mut rng = Rng(0x5EED_0005);
    let streams = stream_values();
    for _ in 0..iterations() / 4 {
        let input = match rng.below(6) {
            0 => {
                let n = rng.below(40);
                rng.bytes(n)
            }
            1 => valid_rdb(&mut rng),
            2 => {
                let v = streams[rng.below(streams.len())].clone();
                mutate(&mut rng, v)
            }
            _ => {
                let v = valid_rdb(&mut rng);
                mutate(&mut rng, v)
            }
        };
        fuzzing::rdb_value(&input);
    }
}
