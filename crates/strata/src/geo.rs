//! Geospatial indexes, as Redis keeps them: a geo set *is* a sorted set whose scores are 52-bit
//! interleaved geohashes (26 bits of longitude and 26 of latitude, latitude limited to
//! ±85.05112878 as in Web Mercator), so ZRANGE, ZSCORE and ZREM work on it and a geo set copied
//! member by member from Redis with ZADD reads the same.
//!
//! This module owns the arithmetic of Redis's `geohash.c` and `geohash_helper.c`, reproduced
//! operation for operation so that every score, decoded position, distance and search result is
//! the same double Redis computes: [`score`] encodes a position, [`position`] decodes a score to
//! the centre of its cell, [`distance`] is Redis's haversine on a sphere of
//! [`EARTH_RADIUS_M`], [`geohash`] the standard 11-character geohash string. A search
//! ([`Db::geosearch`]) estimates a geohash precision from the radius, reads the score ranges of
//! the cell holding the centre and of its 8 neighbours (skipping those the shape cannot reach),
//! keeps the points inside the circle or box, then orders and cuts them as Redis does (a stable
//! sort, or Redis's partial quicksort when COUNT cuts the result, so even ties come out in
//! Redis's order). [`Db::geosearch_store`] stores such a result as a sorted set.
//!
//! Adding points is [`Db::zadd`] with scores from [`score`]. This module knows nothing of RESP,
//! units' names or reply formats.

use std::cmp::Ordering;
use std::f64::consts::PI;

use crate::collection::CollectionMeta;
use crate::db::Db;
use crate::error::Result;
use crate::keys;
use crate::meta::KeyType;
use crate::storage::{IterOptions, CF_ZSCORE};
use crate::zset::{split_zscore_sub, ScoreRange, ScoredMember, ZRangeBy};

/// Smallest longitude.
pub const LONG_MIN: f64 = -180.0;
/// Largest longitude.
pub const LONG_MAX: f64 = 180.0;
/// Smallest latitude (Web Mercator's limit).
pub const LAT_MIN: f64 = -85.05112878;
/// Largest latitude.
pub const LAT_MAX: f64 = 85.05112878;
/// Bits of precision per coordinate in a stored score (26 × 2 = 52 bits).
pub const STEP_MAX: u8 = 26;
/// The earth's radius Redis's distances use, in metres.
pub const EARTH_RADIUS_M: f64 = 6372797.560856;

const MERCATOR_MAX: f64 = 20037726.37;
/// Degrees to radians, as Redis's `D_R`.
const D_R: f64 = PI / 180.0;

fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// A geohash of `step` bits per coordinate, interleaved (longitude bits in the odd positions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hash {
    bits: u64,
    step: u8,
}

#[derive(Clone, Copy, Debug)]
struct Span {
    min: f64,
    max: f64,
}

const LONG_SPAN: Span = Span {
    min: LONG_MIN,
    max: LONG_MAX,
};
const LAT_SPAN: Span = Span {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// The cell a hash stands for.
#[derive(Clone, Copy, Debug)]
struct Area {
    longitude: Span,
    latitude: Span,
}

/// Interleaves the low 32 bits of `x` (even positions) and `y` (odd positions).
fn interleave64(x: u32, y: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (x as u64, y as u64);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// The inverse of [`interleave64`]: the even bits in the low half, the odd bits in the high half.
fn deinterleave64(v: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let (mut x, mut y) = (v, v >> 1);
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// Whether a position is inside the limits Redis accepts.
pub fn valid(longitude: f64, latitude: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&longitude) && (LAT_MIN..=LAT_MAX).contains(&latitude)
}

/// Redis's `geohashEncode`: None outside the geo limits or the given spans.
fn encode(lon_span: Span, lat_span: Span, longitude: f64, latitude: f64, step: u8) -> Option<Hash> {
    if step == 0 || step > 32 || !valid(longitude, latitude) {
        return None;
    }
    if latitude < lat_span.min
        || latitude > lat_span.max
        || longitude < lon_span.min
        || longitude > lon_span.max
    {
        return None;
    }
    let mut lat_offset = (latitude - lat_span.min) / (lat_span.max - lat_span.min);
    let mut long_offset = (longitude - lon_span.min) / (lon_span.max - lon_span.min);
    lat_offset *= (1u64 << step) as f64;
    long_offset *= (1u64 << step) as f64;
    // C converts the offsets to uint32_t by truncation; they are in 0..=2^step.
    Some(Hash {
        bits: interleave64(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// Redis's `geohashDecode`: the cell of `hash`.
fn decode(lon_span: Span, lat_span: Span, hash: Hash) -> Area {
    let sep = deinterleave64(hash.bits);
    let lat_scale = lat_span.max - lat_span.min;
    let long_scale = lon_span.max - lon_span.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    let cells = (1u64 << hash.step) as f64;
    Area {
        latitude: Span {
            min: lat_span.min + (ilato as f64 / cells) * lat_scale,
            max: lat_span.min + (ilato.wrapping_add(1) as f64 / cells) * lat_scale,
        },
        longitude: Span {
            min: lon_span.min + (ilono as f64 / cells) * long_scale,
            max: lon_span.min + (ilono.wrapping_add(1) as f64 / cells) * long_scale,
        },
    }
}

/// The centre of a cell, clamped to the limits (`geohashDecodeAreaToLongLat`).
fn centre(area: &Area) -> (f64, f64) {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// A score as C converts a double to `uint64_t` on x86-64 (Redis's `(uint64_t)bits`): exact for
/// the scores GEOADD writes; what other scores become is what Redis makes of them.
fn score_bits(score: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    // cvttsd2si: truncation, or 0x8000000000000000 when out of range or NaN.
    let cvt = |x: f64| -> u64 {
        if x.is_nan() || !(-TWO_63..TWO_63).contains(&x) {
            1 << 63
        } else {
            x as i64 as u64
        }
    };
    if score < TWO_63 {
        cvt(score)
    } else {
        cvt(score - TWO_63) ^ (1 << 63)
    }
}

/// The score GEOADD gives a position: its 52-bit geohash as a double. None outside the limits
/// ([`valid`]).
///
/// ```
/// // Palermo, from Redis's documentation.
/// assert_eq!(strata::geo::score(13.361389, 38.115556), Some(3479099956230698.0));
/// assert_eq!(strata::geo::score(200.0, 100.0), None);
/// ```
pub fn score(longitude: f64, latitude: f64) -> Option<f64> {
    let h = encode(LONG_SPAN, LAT_SPAN, longitude, latitude, STEP_MAX)?;
    Some(align52(h) as f64)
}

/// The position a score stands for: the centre of its cell, `(longitude, latitude)`.
pub fn position(score: f64) -> (f64, f64) {
    let hash = Hash {
        bits: score_bits(score),
        step: STEP_MAX,
    };
    centre(&decode(LONG_SPAN, LAT_SPAN, hash))
}

/// The great-circle distance in metres between two positions, by Redis's haversine formula.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    distance_from(lon1, lat1, deg_rad(lat1).cos(), lon2, lat2)
}

/// [`distance`] with the cosine of the first latitude (in radians) worked out by the caller,
/// once for a search's centre instead of once per candidate; the same operations in the same
/// order, so the same bits.
fn distance_from(lon1: f64, lat1: f64, cos_lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    // Same longitude: the distance along the meridian, without the costly terms.
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + cos_lat1 * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// The distance along a meridian between two latitudes.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The standard 11-character geohash (latitudes from -90 to 90) of a score, as GEOHASH prints it.
///
/// ```
/// let palermo = strata::geo::score(13.361389, 38.115556).unwrap();
/// assert_eq!(&strata::geo::geohash(palermo), b"sqc8b49rny0");
/// ```
pub fn geohash(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = position(score);
    let bits = encode(
        LONG_SPAN,
        Span {
            min: -90.0,
            max: 90.0,
        },
        lon,
        lat,
        STEP_MAX,
    )
    .map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    // 52 bits make 10 characters; the 11th is the zero Redis pads with.
    for (i, c) in out.iter_mut().take(10).enumerate() {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

/// The hash's bits shifted to 52 bits (`geohashAlign52Bits`).
fn align52(h: Hash) -> u64 {
    h.bits << (52 - h.step as u32 * 2)
}

/// The scores of a cell's points: `[min, max)`, as Redis reads the cell.
fn score_range(cell: Hash) -> (f64, f64) {
    let next = Hash {
        bits: cell.bits.wrapping_add(1),
        step: cell.step,
    };
    (align52(cell) as f64, align52(next) as f64)
}

/// How many steps finer than its cells a search looks for the parts of each cell its shape
/// can reach ([`GeoQuery::reach`], [`cover`]): a cell is cut into up to 4^`SUB_STEPS` parts.
const SUB_STEPS: u8 = 3;

/// Appends to `out` the score ranges (`[from, to)`, as 52-bit hashes) of the parts of `cell`,
/// down to `depth` steps finer, whose area meets the box `reach` (`[min lon, min lat, max lon,
/// max lat]`), in score order, joining ranges that touch. A part wholly inside the box is taken
/// whole. Every point of the cell whose position (the centre of its 52-bit cell, which lies in
/// every coarser cell holding it, bounds included, as [`decode`] rounds) is in the box is in
/// one of the ranges.
fn cover(cell: Hash, depth: u8, reach: &[f64; 4], out: &mut Vec<(u64, u64)>) {
    let area = decode(LONG_SPAN, LAT_SPAN, cell);
    let [min_lon, min_lat, max_lon, max_lat] = *reach;
    let (lon, lat) = (area.longitude, area.latitude);
    if lon.max < min_lon || lon.min > max_lon || lat.max < min_lat || lat.min > max_lat {
        return;
    }
    let inside =
        lon.min >= min_lon && lon.max <= max_lon && lat.min >= min_lat && lat.max <= max_lat;
    if depth == 0 || inside || cell.step >= STEP_MAX {
        let from = align52(cell);
        let to = align52(Hash {
            bits: cell.bits + 1,
            step: cell.step,
        });
        match out.last_mut() {
            Some(last) if last.1 == from => last.1 = to,
            _ => out.push((from, to)),
        }
        return;
    }
    for part in 0..4 {
        let sub = Hash {
            bits: cell.bits << 2 | part,
            step: cell.step + 1,
        };
        cover(sub, depth - 1, reach, out);
    }
}

fn move_x(h: &mut Hash, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - h.step as u32 * 2;
    let mut x = h.bits & 0xaaaaaaaaaaaaaaaa;
    let y = h.bits & 0x5555555555555555;
    let zz = 0x5555555555555555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaaaaaaaaaaaaaa >> shift;
    h.bits = x | y;
}

fn move_y(h: &mut Hash, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - h.step as u32 * 2;
    let x = h.bits & 0xaaaaaaaaaaaaaaaa;
    let mut y = h.bits & 0x5555555555555555;
    let zz = 0xaaaaaaaaaaaaaaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555555555555555 >> shift;
    h.bits = x | y;
}

/// The neighbour of `h` `dx` cells east and `dy` cells north.
fn neighbour(h: Hash, dx: i8, dy: i8) -> Hash {
    let mut n = h;
    move_x(&mut n, dx);
    move_y(&mut n, dy);
    n
}

/// The geohash precision (bits per coordinate) whose cells are about as large as a radius
/// (`geohashEstimateStepsByRadius`).
fn estimate_step(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    // Cells narrow towards the poles.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The area a search covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// A circle of this radius (in the query's unit).
    Radius(f64),
    /// An axis-aligned box of this width and height (in the query's unit).
    Box {
        /// East-west extent.
        width: f64,
        /// North-south extent.
        height: f64,
    },
}

/// How a search orders its results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GeoOrder {
    /// In the order found (by cell, then score), unless a count asks for the nearest.
    #[default]
    Unsorted,
    /// Nearest first.
    Asc,
    /// Farthest first.
    Desc,
}

/// A search of a geo set (GEOSEARCH, GEORADIUS and their variants).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeoQuery {
    /// The centre's longitude.
    pub longitude: f64,
    /// The centre's latitude.
    pub latitude: f64,
    /// The area, in units of `unit`.
    pub shape: Shape,
    /// Metres per unit of the shape and of the distances returned (1 for metres, 1000 for km).
    pub unit: f64,
    /// The order of the results.
    pub order: GeoOrder,
    /// At most this many results (0: all). Without `any` and an order, the nearest ones.
    pub count: u64,
    /// Stop searching as soon as `count` points are found (any of them, not the nearest).
    pub any: bool,
}

/// One point a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct GeoPoint {
    /// The member.
    pub member: Vec<u8>,
    /// Its score (the 52-bit geohash).
    pub score: f64,
    /// Its longitude (the centre of its cell).
    pub longitude: f64,
    /// Its latitude.
    pub latitude: f64,
    /// Its distance from the query's centre, in the query's unit.
    pub distance: f64,
}

impl GeoQuery {
    /// The bounding box of the shape: `[min lon, min lat, max lon, max lat]`
    /// (`geohashBoundingBox`).
    fn bounds(&self) -> [f64; 4] {
        let (height, width) = match self.shape {
            Shape::Radius(r) => (self.unit * r, self.unit * r),
            Shape::Box { width, height } => (self.unit * (height / 2.0), self.unit * (width / 2.0)),
        };
        let (lon, lat) = (self.longitude, self.latitude);
        let lat_delta = rad_deg(height / EARTH_RADIUS_M);
        let long_delta_top = rad_deg(width / EARTH_RADIUS_M / deg_rad(lat + lat_delta).cos());
        let long_delta_bottom = rad_deg(width / EARTH_RADIUS_M / deg_rad(lat - lat_delta).cos());
        let delta = if lat < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [lon - delta, lat - lat_delta, lon + delta, lat + lat_delta]
    }

    /// The cells to read, in Redis's order (centre, N, S, E, W, NE, NW, SE, SW); None for those
    /// the shape cannot reach (`geohashCalculateAreasByShapeWGS84`).
    fn cells(&self) -> [Option<Hash>; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let radius_meters = match self.shape {
            Shape::Radius(r) => r,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.unit;
        let mut step = estimate_step(radius_meters, self.latitude);
        let at = |step| {
            encode(LONG_SPAN, LAT_SPAN, self.longitude, self.latitude, step)
                .unwrap_or(Hash { bits: 0, step })
        };
        let mut hash = at(step);
        let cell = |h| decode(LONG_SPAN, LAT_SPAN, h);
        // Near a cell's edge the estimated step can be too fine for a neighbour to cover the
        // whole shape: one step coarser then.
        let too_small = cell(neighbour(hash, 0, 1)).latitude.max < max_lat
            || cell(neighbour(hash, 0, -1)).latitude.min > min_lat
            || cell(neighbour(hash, 1, 0)).longitude.max < max_lon
            || cell(neighbour(hash, -1, 0)).longitude.min > min_lon;
        if step > 1 && too_small {
            step -= 1;
            hash = at(step);
        }
        let area = cell(hash);
        // (dx, dy) of each cell, in Redis's order.
        const AROUND: [(i8, i8); 9] = [
            (0, 0),
            (0, 1),
            (0, -1),
            (1, 0),
            (-1, 0),
            (1, 1),
            (-1, 1),
            (1, -1),
            (-1, -1),
        ];
        let mut out = [None; 9];
        for (slot, &(dx, dy)) in out.iter_mut().zip(AROUND.iter()) {
            let useless = step >= 2
                && ((dy < 0 && area.latitude.min < min_lat)
                    || (dy > 0 && area.latitude.max > max_lat)
                    || (dx < 0 && area.longitude.min < min_lon)
                    || (dx > 0 && area.longitude.max > max_lon));
            if !useless {
                *slot = Some(neighbour(hash, dx, dy));
            }
        }
        out
    }

    /// A box, `[min lon, min lat, max lon, max lat]`, holding the position of every point the
    /// shape keeps ([`GeoQuery::within`]) with a margin far above the formulas' rounding; `None`
    /// when the shape is large (over about 1,000 km) or its box would reach the antimeridian,
    /// where a search reads its cells whole. Along a meridian a point's distance is at least
    /// its latitude's distance from the centre's. Across: the haversine's `a` is at least
    /// `cos φ1 · cos φ2 · sin²(Δλ/2)`, so a point at most `d` away has
    /// `|sin(Δλ/2)| ≤ sin(d/2R) / √(cos φ1 · cos φ2)`, and `cos φ2` is least at the box's
    /// latitude farthest from the equator; a box's width is measured along the point's own
    /// latitude (`a = cos² φ · sin²(Δλ/2)`).
    fn reach(&self) -> Option<[f64; 4]> {
        const SLACK: f64 = 1e-6;
        let (x1, y1) = (self.longitude, self.latitude);
        let (half_height, across) = match self.shape {
            Shape::Radius(r) => (r * self.unit, r * self.unit),
            Shape::Box { width, height } => (height / 2.0 * self.unit, width / 2.0 * self.unit),
        };
        // Far below a quarter of the globe, so the sines below grow with their angles and no
        // point of the cells is near the centre's antipode.
        if !(0.0..=1.0e6).contains(&half_height) || !(0.0..=1.0e6).contains(&across) {
            return None;
        }
        let dlat = rad_deg(half_height * (1.0 + SLACK) / EARTH_RADIUS_M) + SLACK;
        let (min_lat, max_lat) = (y1 - dlat, y1 + dlat);
        let far = min_lat.abs().max(max_lat.abs()).min(LAT_MAX);
        let cos_far = deg_rad(far).cos();
        let sin_half = (across / (2.0 * EARTH_RADIUS_M)).sin();
        let s = match self.shape {
            Shape::Radius(_) => sin_half / (deg_rad(y1).cos() * cos_far).sqrt(),
            Shape::Box { .. } => sin_half / cos_far,
        };
        if !(0.0..0.5).contains(&s) {
            return None;
        }
        let dlon = rad_deg(2.0 * s.asin()) * (1.0 + SLACK) + SLACK;
        let (min_lon, max_lon) = (x1 - dlon, x1 + dlon);
        if min_lon <= LONG_MIN + SLACK || max_lon >= LONG_MAX - SLACK {
            return None;
        }
        Some([min_lon, min_lat, max_lon, max_lat])
    }

    /// The cosine of the centre's latitude, which every candidate's distance uses: worked out
    /// once per search and passed to [`GeoQuery::point`].
    fn cos_latitude(&self) -> f64 {
        deg_rad(self.latitude).cos()
    }

    /// The point `member` at `score` when it lies inside the shape (its distance in metres);
    /// `cos_lat` is [`GeoQuery::cos_latitude`].
    fn point(&self, member: &[u8], score: f64, cos_lat: f64) -> Option<GeoPoint> {
        let (longitude, latitude, distance) = self.within(score, cos_lat)?;
        Some(GeoPoint {
            member: member.to_vec(),
            score,
            longitude,
            latitude,
            distance,
        })
    }

    /// The position and distance (in metres) of a point with this score, if it is inside the
    /// shape (`geoWithinShape`).
    fn within(&self, score: f64, cos_lat: f64) -> Option<(f64, f64, f64)> {
        let (lon, lat) = position(score);
        let (x1, y1) = (self.longitude, self.latitude);
        let dist = match self.shape {
            Shape::Radius(r) => {
                let limit = r * self.unit;
                // The great-circle distance is never shorter than the distance along the
                // meridian, so a point whose latitude alone puts it out of reach is left
                // without the haversine's sines and arcsine (most of the cells' points outside
                // the circle). The margin is far above either formula's rounding, so no point
                // Redis keeps is left out here.
                if lat_distance(y1, lat) > limit * (1.0 + 1e-9) + 1e-3 {
                    return None;
                }
                let d = distance_from(x1, y1, cos_lat, lon, lat);
                if d > limit {
                    return None;
                }
                d
            }
            Shape::Box { width, height } => {
                let (width_m, height_m) = (width * self.unit, height * self.unit);
                if lat_distance(lat, y1) > height_m / 2.0 {
                    return None;
                }
                if distance(lon, lat, x1, lat) > width_m / 2.0 {
                    return None;
                }
                distance_from(x1, y1, cos_lat, lon, lat)
            }
        };
        Some((lon, lat, dist))
    }
}

/// Redis's comparison of two points by distance (`sort_gp_asc`).
fn nearer(a: &GeoPoint, b: &GeoPoint) -> Ordering {
    if a.distance > b.distance {
        Ordering::Greater
    } else if a.distance == b.distance {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// Orders `points` so that `points[..keep]` holds the first `keep` of the full order, in order,
/// exactly as Redis's `pqsort` (Bentley and McIlroy's quicksort that skips the partitions
/// outside the wanted range) leaves them, ties included.
fn partial_sort<T>(v: &mut [T], keep: usize, cmp: &impl Fn(&T, &T) -> Ordering) {
    if keep == 0 || v.is_empty() {
        return;
    }
    pqsort(v, 0, v.len(), cmp, 0, keep - 1);
}

fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    if cmp(&v[a], &v[b]).is_lt() {
        if cmp(&v[b], &v[c]).is_lt() {
            b
        } else if cmp(&v[a], &v[c]).is_lt() {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]).is_gt() {
        b
    } else if cmp(&v[a], &v[c]).is_lt() {
        a
    } else {
        c
    }
}

fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// `_pqsort` on `v[a..a + n]`, wanting the elements `lo..=hi` in place.
fn pqsort<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> Ordering,
    lo: usize,
    hi: usize,
) {
    // Whether v[s..s + m] holds any of lo..=hi.
    let wanted = |s: usize, m: usize| !((lo < s && hi < s) || (lo >= s + m && hi >= s + m));
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]).is_gt() {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let r = cmp(&v[pb], &v[a]);
                if r.is_gt() {
                    break;
                }
                if r.is_eq() {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let r = cmp(&v[pc], &v[a]);
                if r.is_lt() {
                    break;
                }
                if r.is_eq() {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && wanted(a, r) {
            pqsort(v, a, r, cmp, lo, hi);
        }
        let r = pd - pc;
        if r <= 1 {
            return;
        }
        a = pn - r;
        n = r;
        if !wanted(a, n) {
            return;
        }
    }
}

impl Db {
    /// GEOSEARCH (and GEORADIUS...): the members of the geo set at `key` inside the query's
    /// shape, ordered and cut as Redis does. Nothing if the key is missing; `WrongType` if it
    /// is not a sorted set.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::geo::{self, GeoOrder, GeoQuery, Shape};
    /// let db = strata::Db::open(dir.path())?;
    /// let palermo = geo::score(13.361389, 38.115556).unwrap();
    /// let catania = geo::score(15.087269, 37.502669).unwrap();
    /// db.zadd(b"Sicily", &[(palermo, &b"Palermo"[..]), (catania, &b"Catania"[..])], Default::default())?;
    /// let q = GeoQuery { longitude: 15.0, latitude: 37.0, shape: Shape::Radius(200.0), unit: 1000.0,
    ///                    order: GeoOrder::Asc, count: 0, any: false };
    /// let found = db.geosearch(b"Sicily", &q)?;
    /// assert_eq!(found[0].member, b"Catania");
    /// assert_eq!(format!("{:.4}", found[1].distance), "190.4424");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn geosearch(&self, key: &[u8], q: &GeoQuery) -> Result<Vec<GeoPoint>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        self.geosearch_locked(key, q)
    }

    /// GEOSEARCHSTORE (and GEORADIUS ... STORE): stores the result of [`Db::geosearch`] on `src`
    /// as the sorted set `dst` — each member with its geohash score, or with `storedist` its
    /// distance in the query's unit — replacing any value (an empty result deletes `dst`), and
    /// returns how many points it stored.
    pub fn geosearch_store(
        &self,
        dst: &[u8],
        src: &[u8],
        q: &GeoQuery,
        storedist: bool,
    ) -> Result<u64> {
        let _g = self
            .inner
            .locks
            .lock([(self.index, dst), (self.index, src)]);
        let points = self.geosearch_locked(src, q)?;
        let mut seen = std::collections::HashSet::with_capacity(points.len());
        let mut items: Vec<ScoredMember> = Vec::with_capacity(points.len());
        for p in points {
            if seen.insert(p.member.clone()) {
                let s = if storedist { p.distance } else { p.score };
                items.push((p.member, s));
            }
        }
        self.zset_store(dst, &items)
    }

    fn geosearch_locked(&self, key: &[u8], q: &GeoQuery) -> Result<Vec<GeoPoint>> {
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(Vec::new());
        };
        let cells = q.cells();
        // The cells to read, in Redis's order.
        let mut visit: Vec<Hash> = Vec::with_capacity(cells.len());
        let mut last: Option<usize> = None;
        for (i, cell) in cells.iter().enumerate() {
            let Some(cell) = *cell else {
                continue;
            };
            // A huge radius can make neighbours equal; Redis skips a cell equal to the last one
            // it read (though never compares with the centre cell, its first).
            if let Some(l) = last.filter(|&l| l != 0) {
                if cells[l] == Some(cell) {
                    continue;
                }
            }
            visit.push(cell);
            last = Some(i);
        }
        let mut found = if q.any {
            self.geo_read_cells_in_turn(key, &c, q, &visit)?
        } else {
            self.geo_read_cells_at_once(key, &c, q, &visit)?
        };
        let order = match q.order {
            GeoOrder::Unsorted if q.count != 0 && !q.any => GeoOrder::Asc,
            o => o,
        };
        let keep = if q.count == 0 {
            found.len()
        } else {
            found.len().min(q.count as usize)
        };
        let cmp: fn(&GeoPoint, &GeoPoint) -> Ordering = match order {
            GeoOrder::Unsorted => |_, _| Ordering::Equal,
            GeoOrder::Asc => nearer,
            GeoOrder::Desc => |a, b| nearer(b, a),
        };
        if order != GeoOrder::Unsorted {
            if keep == found.len() {
                // glibc's qsort is a merge sort: stable.
                found.sort_by(cmp);
            } else {
                partial_sort(&mut found, keep, &cmp);
            }
        }
        found.truncate(keep);
        for p in &mut found {
            p.distance /= q.unit;
        }
        Ok(found)
    }

    /// The points of `visit`'s cells inside the query's shape, cell after cell as Redis reads
    /// them (each cell's whole score range), stopping once ANY's COUNT is reached.
    fn geo_read_cells_in_turn(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        q: &GeoQuery,
        visit: &[Hash],
    ) -> Result<Vec<GeoPoint>> {
        let limit = if q.any { q.count } else { 0 };
        let full = |found: &Vec<GeoPoint>| limit != 0 && found.len() as u64 >= limit;
        let mut found: Vec<GeoPoint> = Vec::new();
        let cos_lat = q.cos_latitude();
        for (min, max) in visit.iter().map(|&cell| score_range(cell)) {
            if full(&found) {
                break;
            }
            let range = ScoreRange {
                min,
                min_exclusive: false,
                max,
                max_exclusive: true,
            };
            self.zset_visit(key, c, &ZRangeBy::Score(range), false, |m, s| {
                if let Some(p) = q.point(m, s, cos_lat) {
                    found.push(p);
                }
                !full(&found)
            })?;
        }
        Ok(found)
    }

    /// What [`Db::geo_read_cells_in_turn`] finds without a limit, read with one iterator in
    /// score order, and only the parts of the cells the shape can reach: each cell cut down to
    /// [`SUB_STEPS`] steps finer where its parts meet the box around the shape
    /// ([`GeoQuery::reach`], [`cover`]; a 1 km circle's nine cells hold about four times the
    /// points of the parts it reaches). The parts' ranges are sorted, those that touch joined
    /// into one walk, and the iterator seeks to each walk's start unless it already stands
    /// there. Each point goes to the cell (or cells: Redis reads a repeated cell
    /// twice) holding its score, and the cells' points are put back in Redis's order; within a
    /// cell they come in score order, as Redis reads them.
    fn geo_read_cells_at_once(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        q: &GeoQuery,
        visit: &[Hash],
    ) -> Result<Vec<GeoPoint>> {
        let reach = q.reach();
        let mut walks: Vec<(u64, u64)> = Vec::new();
        for &cell in visit {
            match &reach {
                Some(reach) => {
                    let depth = SUB_STEPS.min(STEP_MAX.saturating_sub(cell.step));
                    cover(cell, depth, reach, &mut walks);
                }
                None => cover(cell, 0, &[LONG_MIN, LAT_MIN, LONG_MAX, LAT_MAX], &mut walks),
            }
        }
        walks.sort_unstable();
        let mut joined: Vec<(f64, f64)> = Vec::with_capacity(walks.len());
        for (min, max) in walks {
            let (min, max) = (min as f64, max as f64);
            match joined.last_mut() {
                Some(last) if min <= last.1 => last.1 = last.1.max(max),
                _ => joined.push((min, max)),
            }
        }
        let (Some(first), Some(end)) = (joined.first(), joined.last()) else {
            return Ok(Vec::new());
        };
        let ranges: Vec<(f64, f64)> = visit.iter().map(|&cell| score_range(cell)).collect();
        let prefix = keys::data_prefix(self.phys(), key, c.version);
        let at = |score: f64| [&prefix[..], &keys::encode_score(score)[..]].concat();
        let ro = IterOptions {
            lower: Some(at(first.0)),
            upper: Some(at(end.1)),
            ..IterOptions::default()
        };
        let mut it = self.storage().iter(CF_ZSCORE, ro);
        let mut per_range: Vec<Vec<GeoPoint>> = vec![Vec::new(); visit.len()];
        let cos_lat = q.cos_latitude();
        for (n, &(min, max)) in joined.iter().enumerate() {
            let start = at(min);
            // The previous walk stopped on the first sub-key at or past its end: at or past
            // this walk's start too when nothing lies between them. Otherwise a seek: stepping
            // over the keys between (up to 4 or 16, then seeking) cost more CPU per search in
            // measurements (docs/architecture.md, "GEOSEARCH reads the parts of its cells").
            if n == 0 || it.key().is_some_and(|k| k < &start[..]) {
                it.seek(&start);
            }
            while it.valid() {
                let Some(k) = it.key() else {
                    break;
                };
                let Some((s, m)) = k.get(prefix.len()..).and_then(split_zscore_sub) else {
                    it.next();
                    continue;
                };
                if s >= max {
                    break;
                }
                if let Some(p) = q.point(m, s, cos_lat) {
                    let mut holders = ranges
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| r.0 <= s && s < r.1);
                    if let Some((j, _)) = holders.next() {
                        for (more, _) in holders {
                            per_range[more].push(p.clone());
                        }
                        per_range[j].push(p);
                    }
                }
                it.next();
            }
            it.status()?;
            if !it.valid() {
                break;
            }
        }
        Ok(per_range.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PALERMO: (f64, f64) = (13.361389, 38.115556);
    const CATANIA: (f64, f64) = (15.087269, 37.502669);

    fn score_of(p: (f64, f64)) -> f64 {
        score(p.0, p.1).expect("valid position")
    }

    #[test]
    fn palermo_encodes_to_redis_score_and_geohash() {
        assert_eq!(score_of(PALERMO), 3479099956230698.0);
        assert_eq!(&geohash(score_of(PALERMO)), b"sqc8b49rny0");
        assert_eq!(&geohash(score_of(CATANIA)), b"sqdtr74hyu0");
    }

    #[test]
    fn decoding_gives_the_cell_centre_redis_prints() {
        let (lon, lat) = position(score_of(PALERMO));
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
    }

    #[test]
    fn encode_decode_round_trips_within_a_cell() {
        let cell_lon = 360.0 / (1u64 << 26) as f64;
        let cell_lat = (LAT_MAX - LAT_MIN) / (1u64 << 26) as f64;
        let mut x: u64 = 0x9E3779B97F4A7C15;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let lon = LONG_MIN + (x % 3_600_000) as f64 / 10_000.0;
            let lat = LAT_MIN + ((x >> 24) % 1_701_022) as f64 / 10_000.0;
            let s = score(lon, lat).expect("in range");
            assert!(s < (1u64 << 52) as f64);
            let (dlon, dlat) = position(s);
            assert!((dlon - lon).abs() <= cell_lon / 2.0 + 1e-12, "{lon} {dlon}");
            assert!((dlat - lat).abs() <= cell_lat / 2.0 + 1e-12, "{lat} {dlat}");
            assert_eq!(score(dlon, dlat), Some(s));
        }
    }

    #[test]
    fn the_limits_encode_and_decode_clamped() {
        // The very edges overflow into bit 52 and 53, as in Redis; they decode to the limits.
        let top = score(LONG_MAX, LAT_MAX).expect("edge is valid");
        assert_eq!(top, (3u64 << 52) as f64);
        assert_eq!(position(top), (LONG_MAX, LAT_MAX));
        let bottom = score(LONG_MIN, LAT_MIN).expect("edge is valid");
        assert_eq!(bottom, 0.0);
        let (lon, lat) = position(bottom);
        assert!(lon > LONG_MIN && lon < LONG_MIN + 1e-5);
        assert!(lat > LAT_MIN && lat < LAT_MIN + 1e-5);
        assert_eq!(score(180.000001, 0.0), None);
        assert_eq!(score(0.0, 85.05112879), None);
        assert_eq!(score(0.0, -85.05112879), None);
        assert_eq!(score(f64::NAN, 0.0), None);
    }

    #[test]
    fn antimeridian_neighbours_wrap_around() {
        let h = encode(LONG_SPAN, LAT_SPAN, 179.99, 0.0, 10).expect("valid");
        let east = decode(LONG_SPAN, LAT_SPAN, neighbour(h, 1, 0));
        assert!(east.longitude.min < -179.0, "{east:?}");
        let west = decode(LONG_SPAN, LAT_SPAN, neighbour(h, -1, 0));
        assert!(west.longitude.max <= 179.99 && west.longitude.max > 179.0);
    }

    #[test]
    fn distances_follow_redis_haversine() {
        let (p, c) = (position(score_of(PALERMO)), position(score_of(CATANIA)));
        let d = distance(p.0, p.1, c.0, c.1);
        assert_eq!(format!("{:.4}", d), "166274.1516");
        assert_eq!(distance(10.0, 20.0, 10.0, 20.0), 0.0);
        // Same longitude: the meridian arc.
        let arc = distance(10.0, 0.0, 10.0, 1.0);
        assert_eq!(arc, EARTH_RADIUS_M * deg_rad(1.0));
    }

    #[test]
    fn a_radius_search_keeps_exactly_the_points_the_haversine_keeps() {
        // The latitude check that spares the haversine, and the centre's cosine worked out
        // once, must keep and measure every point as Redis's formula alone does: points near
        // the circle's edge (north, south, and in between), radius 0, the poles' limits.
        let mut x: u64 = 7;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let centres = [(13.36, 38.11), (0.0, 0.0), (-179.9, -84.9), (179.9, 84.9)];
        for &(lon, lat) in &centres {
            for radius_km in [0.0, 0.001, 1.0, 5.0, 300.0] {
                let q = query(lon, lat, Shape::Radius(radius_km));
                let cos_lat = q.cos_latitude();
                let reach = (radius_km * 1000.0 / EARTH_RADIUS_M).to_degrees();
                for _ in 0..3000 {
                    let (dlon, dlat) = (rand() * 2.4 - 1.2, rand() * 2.4 - 1.2);
                    let (plon, plat) = (lon + dlon * reach, lat + dlat * reach);
                    let Some(s) = score(plon.clamp(-180.0, 180.0), plat.clamp(-85.0, 85.0)) else {
                        continue;
                    };
                    let (px, py) = position(s);
                    let d = distance(lon, lat, px, py);
                    let want = (d <= radius_km * 1000.0).then_some((px, py, d));
                    assert_eq!(q.within(s, cos_lat), want, "{lon} {lat} r={radius_km} {s}");
                }
                // The centre's own cell.
                let s = score(lon, lat).expect("valid");
                let (px, py) = position(s);
                let d = distance(lon, lat, px, py);
                let want = (d <= radius_km * 1000.0).then_some((px, py, d));
                assert_eq!(q.within(s, cos_lat), want);
            }
        }
    }

    #[test]
    fn step_estimation_follows_the_radius_and_latitude() {
        assert_eq!(estimate_step(0.0, 0.0), 26);
        assert_eq!(estimate_step(1000.0, 0.0), 14);
        assert_eq!(estimate_step(1000.0, 70.0), 13);
        assert_eq!(estimate_step(1000.0, -85.0), 12);
        assert_eq!(estimate_step(1e9, 0.0), 1);
        assert_eq!(estimate_step(f64::INFINITY, 0.0), 1);
        assert_eq!(estimate_step(1e-9, 0.0), 26);
    }

    fn query(lon: f64, lat: f64, shape: Shape) -> GeoQuery {
        GeoQuery {
            longitude: lon,
            latitude: lat,
            shape,
            unit: 1000.0,
            order: GeoOrder::Asc,
            count: 0,
            any: false,
        }
    }

    #[test]
    fn reading_all_cells_at_once_finds_what_reading_them_in_turn_finds_in_the_same_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = Db::open(dir.path()).expect("open");
        let mut x: u64 = 99;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut members: Vec<(f64, Vec<u8>)> = Vec::new();
        for i in 0..4000 {
            let (lon, lat) = if i % 10 == 0 {
                (rand() * 360.0 - 180.0, rand() * 170.0 - 85.0)
            } else {
                (13.0 + rand() * 2.0, 37.5 + rand() * 1.5)
            };
            members.push((
                score(lon, lat).expect("valid"),
                format!("p{i}").into_bytes(),
            ));
        }
        // Scores that are not geohashes of a cell's points (ZADD of any number) still fall
        // into the ranges.
        let raw = score(14.0, 38.0).expect("valid") + 0.5;
        members.push((raw, b"raw".to_vec()));
        let items: Vec<(f64, &[u8])> = members.iter().map(|(s, m)| (*s, &m[..])).collect();
        db.zadd(b"g", &items, Default::default()).expect("zadd");
        let c = db
            .load_collection(b"g", KeyType::ZSet)
            .expect("load")
            .expect("exists");
        let shapes = [
            Shape::Radius(0.0),
            Shape::Radius(1.0),
            Shape::Radius(7.0),
            Shape::Radius(60.0),
            Shape::Radius(900.0),
            Shape::Radius(12_000.0),
            Shape::Radius(20_000.0),
            Shape::Box {
                width: 40_000.0,
                height: 20_000.0,
            },
            Shape::Box {
                width: 30.0,
                height: 8.0,
            },
            Shape::Box {
                width: 3000.0,
                height: 5000.0,
            },
        ];
        let centres = [
            (14.0, 38.0),
            (13.37, 37.91),
            (179.99, 0.0),
            (0.0, 85.0),
            (-14.0, -38.0),
        ];
        for &(lon, lat) in &centres {
            for &shape in &shapes {
                let mut q = query(lon, lat, shape);
                q.order = GeoOrder::Unsorted;
                let cells = q.cells();
                // The ranges a search reads: Redis skips a cell equal to the one it read just
                // before (never comparing with the centre).
                let mut visit = Vec::new();
                let mut last: Option<usize> = None;
                for (i, cell) in cells.iter().enumerate() {
                    let Some(cell) = *cell else { continue };
                    if last.is_some_and(|l| l != 0 && cells[l] == Some(cell)) {
                        continue;
                    }
                    visit.push(cell);
                    last = Some(i);
                }
                let one_by_one = db
                    .geo_read_cells_in_turn(b"g", &c, &q, &visit)
                    .expect("turn");
                let at_once = db
                    .geo_read_cells_at_once(b"g", &c, &q, &visit)
                    .expect("once");
                assert_eq!(at_once, one_by_one, "centre {lon},{lat} shape {shape:?}");
                let searched = db.geosearch(b"g", &q).expect("search");
                let names = |v: &[GeoPoint]| -> Vec<(Vec<u8>, f64)> {
                    v.iter().map(|p| (p.member.clone(), p.score)).collect()
                };
                assert_eq!(names(&searched), names(&one_by_one));
            }
        }
        // A range read twice (Redis reads a repeated cell again unless it follows itself):
        // its points come twice, in their places.
        let q = query(14.0, 38.0, Shape::Radius(60.0));
        let cells: Vec<Hash> = q.cells().iter().flatten().copied().collect();
        let visit = [cells[0], cells[1], cells[0], cells[2], cells[1]];
        let one_by_one = db
            .geo_read_cells_in_turn(b"g", &c, &q, &visit)
            .expect("turn");
        assert!(!one_by_one.is_empty());
        assert_eq!(
            db.geo_read_cells_at_once(b"g", &c, &q, &visit)
                .expect("once"),
            one_by_one
        );
    }

    /// xorshift64: deterministic test randomness in `[0, 1)`.
    fn unit_rng(seed: u64) -> impl FnMut() -> f64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// The parts of its cells a search reads ([`cover`] of [`GeoQuery::reach`]) hold every
    /// point of the cells the shape keeps, wherever the centre (near the antimeridian, the
    /// poles, the equator) and whatever the shape (radius 0, tiny, large; boxes), and they are
    /// a small part of the cells for a 1 km circle.
    #[test]
    fn the_parts_of_the_cells_a_search_reads_hold_every_point_the_shape_keeps() {
        let mut rand = unit_rng(7);
        let centres = [
            (13.36, 38.11),
            (179.995, 10.0),
            (-179.995, -10.0),
            (0.0, 85.05),
            (45.0, -85.0),
            (0.0, 0.0),
            (-73.98, 40.75),
        ];
        let shapes = [
            Shape::Radius(0.0),
            Shape::Radius(0.001),
            Shape::Radius(0.2),
            Shape::Radius(1.0),
            Shape::Radius(25.0),
            Shape::Radius(900.0),
            Shape::Radius(5000.0),
            Shape::Box {
                width: 0.5,
                height: 3.0,
            },
            Shape::Box {
                width: 40.0,
                height: 2.0,
            },
            Shape::Box {
                width: 1500.0,
                height: 1900.0,
            },
        ];
        for &(lon, lat) in &centres {
            for &shape in &shapes {
                let q = query(lon, lat, shape);
                let cells: Vec<Hash> = q.cells().iter().flatten().copied().collect();
                let mut parts = Vec::new();
                if let Some(reach) = q.reach() {
                    for &cell in &cells {
                        let depth = SUB_STEPS.min(STEP_MAX - cell.step);
                        cover(cell, depth, &reach, &mut parts);
                    }
                } else {
                    continue;
                }
                let covered = |s: u64| parts.iter().any(|&(a, b)| a <= s && s < b);
                let in_cells = |s: f64| {
                    cells.iter().any(|&c| {
                        let (a, b) = score_range(c);
                        a <= s && s < b
                    })
                };
                let cos_lat = q.cos_latitude();
                let (extent_m, _) = match shape {
                    Shape::Radius(r) => (r * 1000.0, ()),
                    Shape::Box { width, height } => (width.max(height) * 1000.0, ()),
                };
                let spread = rad_deg(2.0 * extent_m.max(1.0) / EARTH_RADIUS_M);
                let mut kept = 0;
                for i in 0..20_000 {
                    // Points around the centre out to twice the shape, some on its very edge
                    // (the centre's own position, for radius 0).
                    let (plon, plat) = if i % 1000 == 0 {
                        (lon, lat)
                    } else {
                        (
                            lon + (rand() * 2.0 - 1.0) * spread / deg_rad(lat).cos().max(0.05),
                            lat + (rand() * 2.0 - 1.0) * spread,
                        )
                    };
                    let plon = if plon > 180.0 { plon - 360.0 } else { plon };
                    let plon = if plon < -180.0 { plon + 360.0 } else { plon };
                    let Some(s) = score(plon, plat.clamp(LAT_MIN, LAT_MAX)) else {
                        continue;
                    };
                    if q.within(s, cos_lat).is_some() && in_cells(s) {
                        kept += 1;
                        assert!(
                            covered(s as u64),
                            "centre {lon},{lat} {shape:?}: point {plon},{plat} is kept but not read"
                        );
                    }
                }
                assert!(kept > 0 || matches!(shape, Shape::Radius(r) if r < 0.01));
            }
        }
        // A 1 km circle: the parts read are well under half of the nine cells.
        let q = query(13.36, 38.11, Shape::Radius(1.0));
        let reach = q.reach().expect("a small circle is bounded");
        let (mut whole, mut read) = (0u64, 0u64);
        for cell in q.cells().iter().flatten() {
            let (a, b) = score_range(*cell);
            whole += (b - a) as u64;
            let mut parts = Vec::new();
            cover(*cell, SUB_STEPS, &reach, &mut parts);
            read += parts.iter().map(|(a, b)| b - a).sum::<u64>();
        }
        assert!(read * 2 < whole, "read {read} of {whole}");
    }

    /// Reading the parts of the cells the shape reaches finds what reading the whole cells
    /// finds, in the same order, among points dense enough that every part holds some.
    #[test]
    fn a_search_of_the_parts_finds_what_a_search_of_whole_cells_finds() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = Db::open(dir.path()).expect("open");
        let mut rand = unit_rng(31);
        let members: Vec<(f64, Vec<u8>)> = (0..30_000)
            .map(|i| {
                let (lon, lat) = (13.3 + rand() * 0.12, 38.05 + rand() * 0.12);
                (
                    score(lon, lat).expect("valid"),
                    format!("p{i}").into_bytes(),
                )
            })
            .collect();
        let items: Vec<(f64, &[u8])> = members.iter().map(|(s, m)| (*s, &m[..])).collect();
        db.zadd(b"g", &items, Default::default()).expect("zadd");
        let c = db
            .load_collection(b"g", KeyType::ZSet)
            .expect("load")
            .expect("exists");
        for _ in 0..200 {
            let (lon, lat) = (13.3 + rand() * 0.12, 38.05 + rand() * 0.12);
            let shape = if rand() < 0.5 {
                Shape::Radius(rand() * 3.0)
            } else {
                Shape::Box {
                    width: rand() * 4.0,
                    height: rand() * 4.0,
                }
            };
            let mut q = query(lon, lat, shape);
            q.order = GeoOrder::Unsorted;
            let cells: Vec<Hash> = q.cells().iter().flatten().copied().collect();
            let whole = db
                .geo_read_cells_in_turn(b"g", &c, &q, &cells)
                .expect("turn");
            let parts = db
                .geo_read_cells_at_once(b"g", &c, &q, &cells)
                .expect("once");
            assert_eq!(parts, whole, "centre {lon},{lat} {shape:?}");
        }
    }

    #[test]
    fn cells_cover_the_centre_and_skip_useless_neighbours() {
        let q = query(15.0, 37.0, Shape::Radius(200.0));
        let cells = q.cells();
        assert!(cells[0].is_some());
        // Radius 0 searches the centre's 26-bit cell (and the neighbours the check keeps).
        let zero = query(13.361389, 38.115556, Shape::Radius(0.0)).cells();
        let centre_cell = zero[0].expect("centre");
        assert_eq!(align52(centre_cell) as f64, score_of(PALERMO));
        assert!(zero.iter().flatten().all(|h| h.step >= 25));
    }

    #[test]
    fn partial_sort_orders_the_wanted_prefix() {
        let mut x: u64 = 7;
        for len in [0usize, 1, 5, 7, 8, 40, 41, 200] {
            for keep in [1usize, 3, 10, 100] {
                let mut v: Vec<u32> = (0..len)
                    .map(|_| {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        ((x >> 33) % 50) as u32
                    })
                    .collect();
                let mut sorted = v.clone();
                sorted.sort();
                let keep = keep.min(len);
                partial_sort(&mut v, keep, &|a: &u32, b: &u32| a.cmp(b));
                assert_eq!(v[..keep], sorted[..keep], "len {len} keep {keep}");
            }
        }
    }
}
