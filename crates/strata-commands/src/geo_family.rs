//! Geo commands (Redis's "geo" group): GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH,
//! GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and their `_RO` variants. A geo set is a sorted
//! set scored by 52-bit geohashes ([`strata::geo`] owns the arithmetic and the search); the
//! handlers here read the arguments in the order Redis 7.0's `geo.c` reads them, so the same
//! error wins, call `strata::Db`, and format the replies as Redis does: distances with four
//! decimals (`fixedpoint_d2string`), coordinates in the human-friendly `%.17Lf` form
//! ([`Frame::HumanDouble`]), hashes as integers.

use bytes::Bytes;
use strata::geo::{self, GeoOrder, GeoPoint, GeoQuery, Shape};
use strata::{KeyType, ZAddCondition, ZAddOptions};
use strata_resp::Frame;

use crate::args::{is, parse_double};
use crate::command::*;
use crate::cursor::{syntax, Args, Failure, Reply};
use crate::errors;
use crate::notify;
use crate::Ctx;

const SEARCH_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape";
const RADIUS_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.";
/// GEOSEARCH's and GEOSEARCHSTORE's arguments after the keys (a literal for `concat!`).
macro_rules! search_syntax {
    () => {
        "<from: FROMMEMBER member | FROMLONLAT longitude:double latitude:double> <by: <circle: BYRADIUS radius:double <unit: M | KM | FT | MI>> | <box: BYBOX width:double <height:double> <unit: M | KM | FT | MI>>> [order: ASC | DESC] [count: COUNT count [ANY]]"
    };
}

/// The options of the GEORADIUS commands, STORE aside.
macro_rules! radius_options {
    () => {
        "[WITHCOORD] [WITHDIST] [WITHHASH] [count: COUNT count [ANY]] [order: ASC | DESC]"
    };
}

/// The geo family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "geoadd",
        arity: Arity::AtLeast(5),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RW | UPDATE, 1, 0, 1, 0)],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(geoadd),
        docs: Docs {
            group: "geo",
            since: "3.2.0",
            complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
            summary: "Adds members with their positions to a geo set (a sorted set scored by geohash), or moves them.",
            syntax: "key [condition: NX | XX] [change: CH] longitude:double latitude:double member [longitude:double latitude:double member ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "geodist",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 1, 0, 1, 0)],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(geodist),
        docs: Docs {
            group: "geo",
            since: "3.2.0",
            complexity: "O(log(N))",
            summary: "Gives the distance between two members of a geo set.",
            syntax: "key member1 member2 [unit: M | KM | FT | MI]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "geohash",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 1, 0, 1, 0)],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(geohash),
        docs: Docs {
            group: "geo",
            since: "3.2.0",
            complexity: "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
            summary: "Gives the standard 11-character geohash of members of a geo set.",
            syntax: "key member [member ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "geopos",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 1, 0, 1, 0)],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(geopos),
        docs: Docs {
            group: "geo",
            since: "3.2.0",
            complexity: "O(N) where N is the number of members requested.",
            summary: "Gives the longitude and latitude of members of a geo set.",
            syntax: "key member [member ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "geosearch",
        arity: Arity::AtLeast(7),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 1, 0, 1, 0)],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(geosearch),
        docs: Docs {
            group: "geo",
            since: "6.2.0",
            complexity: SEARCH_COMPLEXITY,
            summary: "Gives the members of a geo set inside a circle or a box.",
            syntax: concat!("key ", search_syntax!(), " [WITHCOORD] [WITHDIST] [WITHHASH]"),
            tips: &[],
        },
    },
    CommandSpec {
        name: "geosearchstore",
        arity: Arity::AtLeast(8),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
            KeySpec::range(RO | ACCESS, 2, 0, 1, 0),
        ],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(geosearchstore),
        docs: Docs {
            group: "geo",
            since: "6.2.0",
            complexity: SEARCH_COMPLEXITY,
            summary: "Saves the members of a geo set inside a circle or a box under a destination key.",
            syntax: concat!("destination source ", search_syntax!(), " [STOREDIST]"),
            tips: &[],
        },
    },
    CommandSpec {
        name: "georadius",
        arity: Arity::AtLeast(6),
        flags: Flags(WRITE | DENYOOM | MOVABLEKEYS),
        keys: Keys::Custom(Range::new(1, 1, 1), radius_store_key),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
            KeySpec::keyword(OW | UPDATE, "STORE", 6, 0, 1, 0),
            KeySpec::keyword(OW | UPDATE, "STOREDIST", 6, 0, 1, 0),
        ],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(georadius),
        docs: Docs {
            group: "geo",
            since: "3.2.0",
            complexity: RADIUS_COMPLEXITY,
            summary: "Gives (or saves) the members of a geo set within a distance of a position (deprecated: GEOSEARCH).",
            syntax: concat!(
                "key longitude:double latitude:double radius:double <unit: M | KM | FT | MI> ",
                radius_options!(),
                " [STORE key] [STOREDIST key]"
            ),
            tips: &[],
        },
    },
    CommandSpec {
        name: "georadiusbymember",
        arity: Arity::AtLeast(5),
        flags: Flags(WRITE | DENYOOM | MOVABLEKEYS),
        keys: Keys::Custom(Range::new(1, 1, 1), radius_store_key),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
            KeySpec::keyword(OW | UPDATE, "STORE", 5, 0, 1, 0),
            KeySpec::keyword(OW | UPDATE, "STOREDIST", 5, 0, 1, 0),
        ],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(georadiusbymember),
        docs: Docs {
            group: "geo",
            since: "3.2.0",
            complexity: RADIUS_COMPLEXITY,
            summary: "Gives (or saves) the members of a geo set within a distance of one of its members (deprecated: GEOSEARCH).",
            syntax: concat!(
                "key member radius:double <unit: M | KM | FT | MI> ",
                radius_options!(),
                " [STORE key] [STOREDIST key]"
            ),
            tips: &[],
        },
    },
    CommandSpec {
        name: "georadius_ro",
        arity: Arity::AtLeast(6),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 1, 0, 1, 0)],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(georadius_ro),
        docs: Docs {
            group: "geo",
            since: "3.2.10",
            complexity: RADIUS_COMPLEXITY,
            summary: "Gives the members of a geo set within a distance of a position: GEORADIUS without STORE.",
            syntax: concat!(
                "key longitude:double latitude:double radius:double <unit: M | KM | FT | MI> ",
                radius_options!()
            ),
            tips: &[],
        },
    },
    CommandSpec {
        name: "georadiusbymember_ro",
        arity: Arity::AtLeast(5),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 1, 0, 1, 0)],
        acl: Acl(acl::GEO),
        handler: Handler::Reply(georadiusbymember_ro),
        docs: Docs {
            group: "geo",
            since: "3.2.10",
            complexity: RADIUS_COMPLEXITY,
            summary: "Gives the members of a geo set within a distance of one of its members: GEORADIUSBYMEMBER without STORE.",
            syntax: concat!("key member radius:double <unit: M | KM | FT | MI> ", radius_options!()),
            tips: &[],
        },
    },
];

/// GEORADIUS[BYMEMBER] ... STORE key / STOREDIST key: the destination. COMMAND GETKEYS reports
/// what the key specifications find (the key after the first STORE, then after the first
/// STOREDIST, searching from the options on); the command writes the key after the last of
/// them (Redis's `georadiusGetKeys`), which is added when it differs, so it is locked too.
fn radius_store_key(argv: &[Bytes], db: u32, out: &mut Vec<(u32, usize)>) {
    let from = if is(&argv[0], "georadius") { 6 } else { 5 };
    let argc = argv.len();
    let mut found = Vec::with_capacity(3);
    for word in ["store", "storedist"] {
        if let Some(i) = (from..argc.saturating_sub(1)).find(|&i| is(&argv[i], word)) {
            found.push(i + 1);
        }
    }
    let mut written = None;
    let mut i = 5;
    while i < argc {
        if (is(&argv[i], "store") || is(&argv[i], "storedist")) && i + 1 < argc {
            written = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    if let Some(w) = written.filter(|w| !found.contains(w)) {
        found.push(w);
    }
    out.extend(found.into_iter().map(|i| (db, i)));
}

// ----- argument readers (Redis's extract*OrReply) -----

/// A double argument, or the error `text`.
fn double(a: &[u8], text: &str) -> Result<f64, Failure> {
    parse_double(a).ok_or_else(|| Failure::text(text))
}

/// A longitude and a latitude (`extractLongLatOrReply`).
fn position(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Failure> {
    let lon = double(lon, errors::NOT_FLOAT)?;
    let lat = double(lat, errors::NOT_FLOAT)?;
    if !geo::valid(lon, lat) {
        return Err(Failure::text(errors::geo_invalid_position(lon, lat)));
    }
    Ok((lon, lat))
}

/// A unit's size in metres (`extractUnitOrReply`).
fn unit(a: &[u8]) -> Result<f64, Failure> {
    [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)]
        .iter()
        .find(|(name, _)| is(a, name))
        .map(|&(_, metres)| metres)
        .ok_or_else(|| Failure::text(errors::GEO_UNIT))
}

/// `radius unit` (`extractDistanceOrReply`): the radius and the unit's size.
fn radius(r: &[u8], u: &[u8]) -> Result<(Shape, f64), Failure> {
    let r = double(r, errors::GEO_NEED_RADIUS)?;
    if r < 0.0 {
        return Err(Failure::text(errors::GEO_RADIUS_NEGATIVE));
    }
    Ok((Shape::Radius(r), unit(u)?))
}

/// `width height unit` (`extractBoxOrReply`).
fn boxed(w: &[u8], h: &[u8], u: &[u8]) -> Result<(Shape, f64), Failure> {
    let width = double(w, errors::GEO_NEED_WIDTH)?;
    let height = double(h, errors::GEO_NEED_HEIGHT)?;
    if height < 0.0 || width < 0.0 {
        return Err(Failure::text(errors::GEO_BOX_NEGATIVE));
    }
    Ok((Shape::Box { width, height }, unit(u)?))
}

// ----- replies -----

/// A distance as Redis replies with it (`addReplyDoubleDistance`): rounded to four decimals
/// (ties to even, as `llrint`), always four digits after the dot.
fn distance_text(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_string();
    }
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let scaled = (d * 10000.0).round_ties_even();
    // llrint gives LLONG_MIN for what a long long cannot hold.
    let v = if (-LIMIT..LIMIT).contains(&scaled) {
        scaled as i64
    } else {
        i64::MIN
    };
    let sign = if v < 0 { "-" } else { "" };
    let v = v.unsigned_abs();
    format!("{sign}{}.{:04}", v / 10000, v % 10000)
}

fn coordinates(lon: f64, lat: f64) -> Frame {
    Frame::Array(vec![Frame::HumanDouble(lon), Frame::HumanDouble(lat)])
}

// ----- handlers -----

fn geoadd(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let (mut nx, mut xx, mut ch) = (false, false, false);
    loop {
        if a.opt("NX") {
            nx = true;
        } else if a.opt("XX") {
            xx = true;
        } else if a.opt("CH") {
            ch = true;
        } else {
            break;
        }
    }
    let triples = a.rest();
    // GEOADD hands its arguments to ZADD, which refuses an empty list with the same error.
    if !triples.len().is_multiple_of(3) || (nx && xx) || triples.is_empty() {
        return Err(syntax());
    }
    let mut pairs = Vec::with_capacity(triples.len() / 3);
    for t in triples.chunks_exact(3) {
        let (lon, lat) = position(&t[0], &t[1])?;
        let score = geo::score(lon, lat)
            .ok_or_else(|| Failure::text(errors::geo_invalid_position(lon, lat)))?;
        pairs.push((score, &t[2][..]));
    }
    let opts = ZAddOptions {
        condition: if nx {
            ZAddCondition::IfAbsent
        } else if xx {
            ZAddCondition::IfPresent
        } else {
            ZAddCondition::Always
        },
        ..Default::default()
    };
    let out = ctx.session.db.zadd(key, &pairs, opts)?;
    if out.added + out.updated > 0 {
        ctx.notify(notify::ZSET, "zadd", key);
    } else {
        ctx.session.unchanged.push(key.clone());
    }
    let n = if ch {
        out.added + out.updated
    } else {
        out.added
    };
    Ok(Frame::Integer(n as i64))
}

fn geodist(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, m1, m2) = (a.key()?, a.value()?, a.value()?);
    let metres = match a.remaining() {
        0 => 1.0,
        1 => unit(a.value()?)?,
        _ => return Err(syntax()),
    };
    let scores = ctx.session.db.zmscore(key, &[&m1[..], &m2[..]])?;
    let (Some(s1), Some(s2)) = (scores[0], scores[1]) else {
        return Ok(Frame::Null);
    };
    let ((lon1, lat1), (lon2, lat2)) = (geo::position(s1), geo::position(s2));
    let d = geo::distance(lon1, lat1, lon2, lat2) / metres;
    Ok(Frame::bulk(distance_text(d)))
}

fn geohash(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let scores = ctx.session.db.zmscore(key, &a.rest_slices())?;
    Ok(Frame::Array(
        scores
            .into_iter()
            .map(|s| s.map_or(Frame::Null, |s| Frame::bulk(geo::geohash(s).to_vec())))
            .collect(),
    ))
}

fn geopos(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let scores = ctx.session.db.zmscore(key, &a.rest_slices())?;
    Ok(Frame::Array(
        scores
            .into_iter()
            .map(|s| {
                s.map_or(Frame::NullArray, |s| {
                    let (lon, lat) = geo::position(s);
                    coordinates(lon, lat)
                })
            })
            .collect(),
    ))
}

/// Which search command runs (Redis's `georadiusGeneric` flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Search {
    /// GEORADIUS: `key longitude latitude radius unit ...`.
    Radius { store: bool },
    /// GEORADIUSBYMEMBER: `key member radius unit ...`.
    RadiusByMember { store: bool },
    /// GEOSEARCH: `key` then FROM... and BY... options.
    Geosearch,
    /// GEOSEARCHSTORE: `destination source` then as GEOSEARCH.
    GeosearchStore,
}

impl Search {
    fn is_geosearch(self) -> bool {
        matches!(self, Search::Geosearch | Search::GeosearchStore)
    }

    fn may_store(self) -> bool {
        matches!(
            self,
            Search::Radius { store: true } | Search::RadiusByMember { store: true }
        )
    }
}

/// What a search's arguments say.
struct Request<'a> {
    query: GeoQuery,
    store: Option<&'a Bytes>,
    storedist: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
}

/// The position of `member` in the geo set `key`, or Redis's error for a missing member.
fn member_position(ctx: &Ctx<'_>, key: &[u8], member: &[u8]) -> Result<(f64, f64), Failure> {
    match ctx.session.db.zscore(key, member)? {
        Some(s) => Ok(geo::position(s)),
        None => Err(Failure::text(errors::GEO_MEMBER_UNKNOWN)),
    }
}

/// Reads a search's arguments in the order of Redis's `georadiusGeneric`; `exists` tells
/// whether the source key exists (a missing one skips what needs its members). Returns the
/// request, or None when the source is missing (the caller answers without searching).
fn read_search<'a>(
    ctx: &Ctx<'_>,
    argv: &'a [Bytes],
    kind: Search,
    src: &[u8],
    exists: bool,
) -> Result<Request<'a>, Failure> {
    let mut req = Request {
        query: GeoQuery {
            longitude: 0.0,
            latitude: 0.0,
            shape: Shape::Radius(0.0),
            unit: 1.0,
            order: GeoOrder::Unsorted,
            count: 0,
            any: false,
        },
        store: None,
        storedist: false,
        withdist: false,
        withhash: false,
        withcoord: false,
    };
    let q = &mut req.query;
    let base = match kind {
        Search::Radius { .. } => {
            (q.longitude, q.latitude) = position(&argv[2], &argv[3])?;
            (q.shape, q.unit) = radius(&argv[4], &argv[5])?;
            6
        }
        Search::RadiusByMember { .. } => {
            // A missing key is not even asked for the radius.
            if exists {
                (q.longitude, q.latitude) = member_position(ctx, src, &argv[2])?;
                (q.shape, q.unit) = radius(&argv[3], &argv[4])?;
            }
            5
        }
        Search::Geosearch => 2,
        Search::GeosearchStore => {
            req.store = Some(&argv[1]);
            3
        }
    };
    let geosearch = kind.is_geosearch();
    let (mut from_member, mut from_position, mut by_radius, mut by_box) =
        (false, false, false, false);
    let mut i = base;
    while i < argv.len() {
        let arg = &argv[i][..];
        let left = argv.len() - i - 1;
        if is(arg, "withdist") {
            req.withdist = true;
        } else if is(arg, "withhash") {
            req.withhash = true;
        } else if is(arg, "withcoord") {
            req.withcoord = true;
        } else if is(arg, "any") {
            q.any = true;
        } else if is(arg, "asc") {
            q.order = GeoOrder::Asc;
        } else if is(arg, "desc") {
            q.order = GeoOrder::Desc;
        } else if is(arg, "count") && left >= 1 {
            let n = crate::args::int(&argv[i + 1])?;
            if n <= 0 {
                return Err(Failure::text(errors::GEO_COUNT_NOT_POSITIVE));
            }
            q.count = n as u64;
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && left >= 1 && kind.may_store() {
            req.store = Some(&argv[i + 1]);
            req.storedist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && kind == Search::GeosearchStore {
            req.storedist = true;
        } else if is(arg, "frommember") && left >= 1 && geosearch && !from_position {
            if exists {
                (q.longitude, q.latitude) = member_position(ctx, src, &argv[i + 1])?;
            }
            from_member = true;
            i += 1;
        } else if is(arg, "fromlonlat") && left >= 2 && geosearch && !from_member {
            (q.longitude, q.latitude) = position(&argv[i + 1], &argv[i + 2])?;
            from_position = true;
            i += 2;
        } else if is(arg, "byradius") && left >= 2 && geosearch && !by_box {
            (q.shape, q.unit) = radius(&argv[i + 1], &argv[i + 2])?;
            by_radius = true;
            i += 2;
        } else if is(arg, "bybox") && left >= 3 && geosearch && !by_radius {
            (q.shape, q.unit) = boxed(&argv[i + 1], &argv[i + 2], &argv[i + 3])?;
            by_box = true;
            i += 3;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    if req.store.is_some() && (req.withdist || req.withhash || req.withcoord) {
        return Err(Failure::text(errors::geo_store_with_options(
            kind == Search::GeosearchStore,
        )));
    }
    if geosearch && !(from_member || from_position) {
        return Err(Failure::text(errors::geo_exactly_one_from(&argv[0])));
    }
    if geosearch && !(by_radius || by_box) {
        return Err(Failure::text(errors::geo_exactly_one_by(&argv[0])));
    }
    if req.query.any && req.query.count == 0 {
        return Err(Failure::text(errors::GEO_ANY_NEEDS_COUNT));
    }
    Ok(req)
}

/// Redis's `georadiusGeneric`: every search command.
fn search_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: Search) -> Reply {
    let src = if kind == Search::GeosearchStore {
        &argv[2]
    } else {
        &argv[1]
    };
    let exists = match ctx.session.db.key_type(src)? {
        None => false,
        Some(KeyType::ZSet) => true,
        Some(_) => return Err(Failure::text(errors::WRONGTYPE)),
    };
    let req = read_search(ctx, argv, kind, src, exists)?;
    if req.store != Some(src) {
        // The source is only read, even by a write command (GEORADIUS, GEOSEARCHSTORE).
        ctx.session.unchanged.push(src.clone());
    }
    let Some(dst) = req.store else {
        let found = ctx.session.db.geosearch(src, &req.query)?;
        return Ok(search_reply(found, &req));
    };
    let existed = ctx.session.db.exists(dst)?;
    let n = ctx
        .session
        .db
        .geosearch_store(dst, src, &req.query, req.storedist)?;
    let event = if kind.is_geosearch() {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    notify::stored(ctx, notify::ZSET, event, dst, n, existed);
    if n == 0 && !existed {
        ctx.session.unchanged.push(dst.clone());
    }
    Ok(Frame::Integer(n as i64))
}

/// The points found: members alone, or each as an array of the member, then its distance,
/// hash and coordinates as asked.
fn search_reply(found: Vec<GeoPoint>, req: &Request<'_>) -> Frame {
    let plain = !(req.withdist || req.withhash || req.withcoord);
    Frame::Array(
        found
            .into_iter()
            .map(|p| {
                if plain {
                    return Frame::bulk(p.member);
                }
                let mut item = vec![Frame::bulk(p.member)];
                if req.withdist {
                    item.push(Frame::bulk(distance_text(p.distance)));
                }
                if req.withhash {
                    item.push(Frame::Integer(p.score as i64));
                }
                if req.withcoord {
                    item.push(coordinates(p.longitude, p.latitude));
                }
                Frame::Array(item)
            })
            .collect(),
    )
}

fn georadius(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    search_generic(ctx, argv, Search::Radius { store: true })
}

fn georadiusbymember(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    search_generic(ctx, argv, Search::RadiusByMember { store: true })
}

fn georadius_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    search_generic(ctx, argv, Search::Radius { store: false })
}

fn georadiusbymember_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    search_generic(ctx, argv, Search::RadiusByMember { store: false })
}

fn geosearch(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    search_generic(ctx, argv, Search::Geosearch)
}

fn geosearchstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    search_generic(ctx, argv, Search::GeosearchStore)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Harness;

    fn sicily() -> Harness {
        let mut h = Harness::new();
        let added = h.run(&[
            "GEOADD",
            "Sicily",
            "13.361389",
            "38.115556",
            "Palermo",
            "15.087269",
            "37.502669",
            "Catania",
        ]);
        assert_eq!(added, Frame::Integer(2));
        h
    }

    fn bulk(s: &str) -> Frame {
        Frame::bulk(s.to_string())
    }

    #[test]
    fn geoadd_scores_are_redis_geohashes() {
        let mut h = sicily();
        assert_eq!(
            h.run(&["ZSCORE", "Sicily", "Palermo"]),
            Frame::Double(3479099956230698.0)
        );
        assert_eq!(
            h.run(&["GEOHASH", "Sicily", "Palermo", "Catania", "nobody"]),
            Frame::Array(vec![bulk("sqc8b49rny0"), bulk("sqdtr74hyu0"), Frame::Null])
        );
        let pos = h.run(&["GEOPOS", "Sicily", "Palermo", "nobody"]);
        let wire = |p: strata_resp::Protocol| {
            String::from_utf8_lossy(&strata_resp::encode_to_vec(&pos, p)).into_owned()
        };
        assert_eq!(
            wire(strata_resp::Protocol::Resp2),
            "*2\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n*-1\r\n"
        );
        assert_eq!(
            wire(strata_resp::Protocol::Resp3),
            "*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n"
        );
    }

    #[test]
    fn geoadd_options_follow_zadd() {
        let mut h = sicily();
        assert_eq!(
            h.run(&["GEOADD", "Sicily", "XX", "CH", "13", "38", "Palermo", "1", "1", "new"]),
            Frame::Integer(1)
        );
        assert_eq!(h.run(&["ZCARD", "Sicily"]), Frame::Integer(2));
        assert_eq!(
            h.run(&["GEOADD", "Sicily", "NX", "1", "1", "Palermo", "1", "1", "new"]),
            Frame::Integer(1)
        );
        assert_eq!(
            h.error(&["GEOADD", "Sicily", "NX", "XX", "1", "1", "a"]),
            errors::SYNTAX
        );
        assert_eq!(
            h.error(&["GEOADD", "Sicily", "1", "1", "a", "2"]),
            errors::SYNTAX
        );
        assert_eq!(
            h.error(&["GEOADD", "Sicily", "GT", "1", "1", "a"]),
            errors::SYNTAX
        );
        assert_eq!(
            h.error(&["GEOADD", "Sicily", "200", "100", "a"]),
            "ERR invalid longitude,latitude pair 200.000000,100.000000"
        );
        assert_eq!(
            h.error(&["GEOADD", "Sicily", "x", "100", "a"]),
            errors::NOT_FLOAT
        );
    }

    #[test]
    fn geodist_prints_four_decimals_in_the_unit() {
        let mut h = sicily();
        assert_eq!(
            h.run(&["GEODIST", "Sicily", "Palermo", "Catania"]),
            bulk("166274.1516")
        );
        assert_eq!(
            h.run(&["GEODIST", "Sicily", "Palermo", "Catania", "km"]),
            bulk("166.2742")
        );
        assert_eq!(
            h.run(&["GEODIST", "Sicily", "Palermo", "Catania", "MI"]),
            bulk("103.3182")
        );
        assert_eq!(
            h.run(&["GEODIST", "Sicily", "Palermo", "Palermo"]),
            bulk("0.0000")
        );
        assert_eq!(
            h.run(&["GEODIST", "Sicily", "Palermo", "nobody"]),
            Frame::Null
        );
        assert_eq!(
            h.error(&["GEODIST", "Sicily", "Palermo", "Catania", "yd"]),
            errors::GEO_UNIT
        );
        assert_eq!(
            h.error(&["GEODIST", "Sicily", "Palermo", "Catania", "km", "x"]),
            errors::SYNTAX
        );
    }

    #[test]
    fn searches_order_count_and_decorate_like_redis() {
        let mut h = sicily();
        assert_eq!(
            h.run(&[
                "GEORADIUS",
                "Sicily",
                "15",
                "37",
                "200",
                "km",
                "WITHDIST",
                "ASC"
            ]),
            Frame::Array(vec![
                Frame::Array(vec![bulk("Catania"), bulk("56.4413")]),
                Frame::Array(vec![bulk("Palermo"), bulk("190.4424")]),
            ])
        );
        assert_eq!(
            h.run(&[
                "GEOSEARCH",
                "Sicily",
                "FROMLONLAT",
                "15",
                "37",
                "BYBOX",
                "400",
                "400",
                "km",
                "DESC",
                "COUNT",
                "1",
                "WITHHASH"
            ]),
            Frame::Array(vec![Frame::Array(vec![
                bulk("Palermo"),
                Frame::Integer(3479099956230698)
            ])])
        );
        assert_eq!(
            h.run(&[
                "GEOSEARCH",
                "Sicily",
                "FROMMEMBER",
                "Palermo",
                "BYRADIUS",
                "0",
                "m"
            ]),
            Frame::Array(vec![bulk("Palermo")])
        );
        assert_eq!(
            h.run(&["GEORADIUSBYMEMBER_RO", "nokey", "x", "bad", "units"]),
            Frame::Array(vec![])
        );
    }

    #[test]
    fn search_errors_come_in_redis_order() {
        let mut h = sicily();
        let cases: &[(&[&str], &str)] = &[
            (
                &["GEOSEARCH", "Sicily", "BYRADIUS", "1", "km", "ASC", "WITHDIST"],
                "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH",
            ),
            (
                &["geosearch", "Sicily", "FROMLONLAT", "1", "2", "ASC", "WITHHASH"],
                "ERR exactly one of BYRADIUS and BYBOX can be specified for geosearch",
            ),
            (
                &["GEOSEARCH", "Sicily", "FROMMEMBER", "x", "BYRADIUS", "1", "km"],
                errors::GEO_MEMBER_UNKNOWN,
            ),
            (
                &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "-1", "km"],
                errors::GEO_RADIUS_NEGATIVE,
            ),
            (
                &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "BYBOX", "1", "x", "km"],
                errors::GEO_NEED_HEIGHT,
            ),
            (
                &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "ANY"],
                errors::GEO_ANY_NEEDS_COUNT,
            ),
            (
                &["GEORADIUS", "Sicily", "1", "2", "3", "km", "COUNT", "0"],
                errors::GEO_COUNT_NOT_POSITIVE,
            ),
            (
                &["GEORADIUS", "Sicily", "1", "2", "3", "km", "STORE", "d", "WITHDIST"],
                "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            ),
            (
                &["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "WITHCOORD"],
                "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            ),
            (
                &["GEORADIUS_RO", "Sicily", "1", "2", "3", "km", "STORE", "d"],
                errors::SYNTAX,
            ),
            (
                &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STOREDIST"],
                errors::SYNTAX,
            ),
            (
                &["GEORADIUS", "Sicily", "181", "2", "3", "km"],
                "ERR invalid longitude,latitude pair 181.000000,2.000000",
            ),
        ];
        for (cmd, want) in cases {
            assert_eq!(h.error(cmd), *want, "{cmd:?}");
        }
        h.run(&["SET", "str", "x"]);
        assert_eq!(
            h.error(&[
                "GEOSEARCH",
                "str",
                "FROMLONLAT",
                "1",
                "x",
                "BYRADIUS",
                "1",
                "km"
            ]),
            errors::WRONGTYPE
        );
    }

    #[test]
    fn stores_replace_the_destination_and_delete_it_when_empty() {
        let mut h = sicily();
        h.run(&["SET", "dst", "old"]);
        assert_eq!(
            h.run(&[
                "GEOSEARCHSTORE",
                "dst",
                "Sicily",
                "FROMLONLAT",
                "15",
                "37",
                "BYRADIUS",
                "200",
                "km",
                "ASC",
                "COUNT",
                "1",
                "STOREDIST"
            ]),
            Frame::Integer(1)
        );
        assert_eq!(h.run(&["ZCARD", "dst"]), Frame::Integer(1));
        match h.run(&["ZSCORE", "dst", "Catania"]) {
            Frame::Double(d) => assert_eq!(distance_text(d), "56.4413"),
            other => panic!("ZSCORE answered {other:?}"),
        }
        assert_eq!(
            h.run(&[
                "GEORADIUS",
                "Sicily",
                "15",
                "37",
                "200",
                "km",
                "STORE",
                "dst"
            ]),
            Frame::Integer(2)
        );
        assert_eq!(
            h.run(&["ZSCORE", "dst", "Palermo"]),
            Frame::Double(3479099956230698.0)
        );
        assert_eq!(
            h.run(&["GEORADIUS", "Sicily", "0", "0", "1", "m", "STORE", "dst"]),
            Frame::Integer(0)
        );
        assert_eq!(h.run(&["EXISTS", "dst"]), Frame::Integer(0));
    }

    #[test]
    fn distances_round_like_fixedpoint_d2string() {
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(-0.0), "0.0000");
        assert_eq!(distance_text(0.00004), "0.0000");
        assert_eq!(distance_text(1.23456), "1.2346");
        assert_eq!(distance_text(0.7750), "0.7750");
        assert_eq!(distance_text(12345.67891), "12345.6789");
        assert_eq!(distance_text(-1.5), "-1.5000");
    }

    #[test]
    fn store_keys_are_found_after_the_keyword() {
        let find = |words: &[&str]| {
            let argv: Vec<Bytes> = words.iter().map(|w| Bytes::from(w.to_string())).collect();
            let mut out = Vec::new();
            radius_store_key(&argv, 0, &mut out);
            out.into_iter().map(|(_, i)| i).collect::<Vec<_>>()
        };
        assert_eq!(
            find(&["georadius", "k", "1", "2", "3", "km", "STORE", "a"]),
            [7]
        );
        assert_eq!(
            find(&[
                "georadius",
                "k",
                "1",
                "2",
                "3",
                "km",
                "store",
                "a",
                "STOREDIST",
                "b"
            ]),
            [7, 9]
        );
        assert_eq!(
            find(&["georadius", "k", "1", "2", "3", "km", "STORE"]),
            Vec::<usize>::new()
        );
        assert_eq!(
            find(&["georadiusbymember", "k", "m", "3", "km", "STORE", "a"]),
            [6]
        );
        assert_eq!(
            find(&[
                "georadius",
                "k",
                "1",
                "2",
                "3",
                "km",
                "STORE",
                "a",
                "STORE",
                "b"
            ]),
            [7, 9]
        );
    }
}
