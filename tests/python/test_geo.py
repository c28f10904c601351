"""Geo commands, compared byte for byte with a real redis-server (the ``both`` fixture): GEOADD
and its options, GEOPOS/GEOHASH/GEODIST, every search (GEOSEARCH, GEOSEARCHSTORE, GEORADIUS,
GEORADIUSBYMEMBER and the _RO forms) over random points, near the poles and across the
antimeridian, with radius 0, BYBOX, COUNT with and without ANY, ASC/DESC and every WITH*
combination, in RESP2 and RESP3; STORE/STOREDIST; every error; MULTI and Lua; and a seeded
random-operation model test mixing GEOADD, ZADD, ZREM and searches.

Reproduce a model failure with ``STRATA_GEO_SEED=<seed> pytest -k geo_model``.
"""

from __future__ import annotations

import itertools
import os
import random
import time

import pytest

from harness import RespError

SICILY = ["13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"]
UNITS = ["m", "km", "ft", "mi", "M", "KM", "Ft", "mI"]
WITHS = ["WITHCOORD", "WITHDIST", "WITHHASH"]
SEED = int(os.environ.get("STRATA_GEO_SEED", str(int(time.time()))))


def resp3(both):
    """Switch both connections to RESP3 (HELLO's own reply differs between servers)."""
    s, r = both.each("HELLO", "3")
    assert not isinstance(s, RespError) and not isinstance(r, RespError)


def coord(rng: random.Random, lo: float, hi: float) -> str:
    """A coordinate in [lo, hi] written as a client might: few or many decimals."""
    v = rng.uniform(lo, hi)
    return rng.choice([f"{v:.6f}", repr(v), f"{v:.2f}", f"{v:.0f}"])


def region_points(rng, n, lon, lat, spread, prefix="p"):
    """``n`` random points around (lon, lat), clipped to the valid ranges, some sharing one
    position (so distances tie)."""
    out = []
    for i in range(n):
        if out and rng.random() < 0.1:
            x, y = out[-3], out[-2]  # same position as the previous point
        else:
            x = coord(rng, max(-180, lon - spread), min(180, lon + spread))
            y = coord(rng, max(-85.05112878, lat - spread), min(85.05112878, lat + spread))
        out += [x, y, f"{prefix}{i}"]
    return out


def load(both, key, triples):
    for i in range(0, len(triples), 300):
        both("GEOADD", key, *triples[i:i + 300])


# --- GEOADD / GEOPOS / GEOHASH / GEODIST ---------------------------------------------------------


def test_sicily_example_from_the_redis_docs(both):
    both("GEOADD", "Sicily", *SICILY)
    both("GEODIST", "Sicily", "Palermo", "Catania")
    both("GEORADIUS", "Sicily", "15", "37", "100", "km")
    both("GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "WITHCOORD", "WITHHASH")
    both("GEOHASH", "Sicily", "Palermo", "Catania")
    both("GEOPOS", "Sicily", "Palermo", "Catania", "NonExisting")
    both("ZRANGE", "Sicily", "0", "-1", "WITHSCORES")
    both("GEOADD", "Sicily", "13.583333", "37.316667", "Agrigento")
    both("GEORADIUSBYMEMBER", "Sicily", "Agrigento", "100", "km")
    both("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "ASC",
         "WITHCOORD", "WITHDIST")


def test_geoadd_scores_read_back_with_every_reader(both):
    rng = random.Random(SEED)
    pts = region_points(rng, 200, 0, 0, 180)
    load(both, "g", pts)
    both("ZRANGE", "g", "0", "-1", "WITHSCORES")
    members = pts[2::3]
    both("GEOPOS", "g", *members, "missing")
    both("GEOHASH", "g", *members, "missing")
    for _ in range(100):
        a, b = rng.choice(members), rng.choice(members)
        both("GEODIST", "g", a, b, rng.choice(UNITS))
    both("GEODIST", "g", members[0], members[1])


@pytest.mark.parametrize("flags", [
    [], ["NX"], ["XX"], ["CH"], ["NX", "CH"], ["XX", "CH"], ["ch", "nx"], ["CH", "CH"],
])
def test_geoadd_condition_flags(both, flags):
    both("GEOADD", "g", "1", "1", "a", "2", "2", "b")
    both("GEOADD", "g", *flags, "1", "1", "a", "3", "3", "b", "4", "4", "c")
    both("ZRANGE", "g", "0", "-1", "WITHSCORES")
    both("GEOADD", "missing", *flags, "1", "1", "a")
    both("EXISTS", "missing")


def test_positions_at_the_limits_and_on_the_antimeridian(both):
    edges = ["180", "85.05112878", "ne", "-180", "-85.05112878", "sw", "180", "-85.05112878", "se",
             "-180", "85.05112878", "nw", "0", "0", "origin", "179.9999999", "0", "east",
             "-179.9999999", "0", "west", "-0", "-0", "negzero", "1e-300", "-1e-300", "tiny",
             "180.0", "85.051128779", "almost"]
    both("GEOADD", "g", *edges)
    members = edges[2::3]
    both("ZRANGE", "g", "0", "-1", "WITHSCORES")
    both("GEOPOS", "g", *members)
    both("GEOHASH", "g", *members)
    for a, b in itertools.combinations(members, 2):
        both("GEODIST", "g", a, b, "km")
    for m in members:
        both("GEOSEARCH", "g", "FROMMEMBER", m, "BYRADIUS", "500", "km", "ASC", "WITHCOORD",
             "WITHDIST", "WITHHASH")
        both("GEOSEARCH", "g", "FROMMEMBER", m, "BYBOX", "1000", "200", "km", "DESC", "WITHDIST")
        both("GEORADIUSBYMEMBER", "g", m, "0", "m", "WITHCOORD")


@pytest.mark.parametrize("cmd", [
    ["GEOADD", "g", "200", "100", "a"],
    ["GEOADD", "g", "180.0000001", "0", "a"],
    ["GEOADD", "g", "0", "85.05112879", "a"],
    ["GEOADD", "g", "0", "-85.05112879", "a"],
    ["GEOADD", "g", "-inf", "0", "a"],
    ["GEOADD", "g", "0", "inf", "a"],
    ["GEOADD", "g", "1e300", "0", "a"],
    ["GEOADD", "g", "nan", "0", "a"],
    ["GEOADD", "g", "x", "0", "a"],
    ["GEOADD", "g", "0", "", "a"],
    ["GEOADD", "g", " 1", "0", "a"],
    ["GEOADD", "g", "1e400", "0", "a"],
    ["GEOADD", "g", "1", "1", "a", "2", "2"],
    ["GEOADD", "g", "1", "1", "a", "500", "2", "b"],
    ["GEOADD", "g", "NX", "XX", "1", "1", "a"],
    ["GEOADD", "g", "GT", "1", "1", "a"],
    ["GEOADD", "g", "INCR", "1", "1", "a"],
    ["GEOADD", "g", "NX", "CH", "XX"],
    ["GEOADD", "g", "CH", "CH", "CH"],
    ["GEOADD", "g", "1", "1"],
    ["GEOADD", "g", "1"],
    ["GEODIST", "g", "a", "b", "yards"],
    ["GEODIST", "g", "a", "b", "km", "extra"],
    ["GEODIST", "g", "a"],
    ["GEOHASH"],
    ["GEOPOS"],
])
def test_geoadd_and_reader_errors(both, cmd):
    both("GEOADD", "g", "1", "1", "x")
    both(*cmd)
    both("ZRANGE", "g", "0", "-1", "WITHSCORES")


@pytest.mark.parametrize("cmd", [
    ["GEOADD", "s", "1", "1", "a"],
    ["GEOPOS", "s", "a"],
    ["GEOHASH", "s", "a"],
    ["GEODIST", "s", "a", "b"],
    ["GEODIST", "s", "a", "b", "parsec"],
    ["GEORADIUS", "s", "1", "1", "1", "km"],
    ["GEORADIUS", "s", "1", "x", "1", "km"],
    ["GEORADIUS_RO", "s", "1", "1", "1", "km"],
    ["GEORADIUSBYMEMBER", "s", "a", "1", "km"],
    ["GEORADIUSBYMEMBER_RO", "s", "a", "1", "km"],
    ["GEOSEARCH", "s", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "s", "BYRADIUS", "1", "km"],
    ["GEOSEARCHSTORE", "d", "s", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"],
    ["GEOSEARCHSTORE", "s", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1000", "km"],
])
def test_commands_on_a_key_of_another_type(both, cmd):
    both("SET", "s", "x")
    both("GEOADD", "g", "1", "1", "a")
    both(*cmd)
    both("TYPE", "s")


def test_missing_keys(both):
    both("GEOPOS", "nokey", "a", "b")
    both("GEOHASH", "nokey", "a")
    both("GEODIST", "nokey", "a", "b")
    both("GEODIST", "nokey", "a", "b", "km")
    both("GEORADIUS", "nokey", "1", "1", "1", "km")
    both("GEORADIUSBYMEMBER", "nokey", "a", "notanumber", "nounit")
    both("GEORADIUSBYMEMBER", "nokey", "a", "1", "km", "STORE", "d")
    both("GEOSEARCH", "nokey", "FROMMEMBER", "a", "BYRADIUS", "1", "km")
    both("SET", "d", "x")
    both("GEOSEARCHSTORE", "d", "nokey", "FROMMEMBER", "a", "BYRADIUS", "1", "km")
    both("EXISTS", "d")


def test_geoset_copied_from_redis_with_zadd_reads_the_same(strata_server, redis_server):
    """A geo set written by Redis, copied member by member with ZADD, answers identically."""
    rng = random.Random(SEED + 1)
    r, s = redis_server.conn(), strata_server.conn()
    r.call("GEOADD", "g", *region_points(rng, 150, 2.35, 48.85, 2))
    pairs = r.call("ZRANGE", "g", "0", "-1", "WITHSCORES")
    for member, score in zip(pairs[::2], pairs[1::2]):
        s.call("ZADD", "g", score, member)
    for cmd in [("GEOPOS", "g", *pairs[::2]), ("GEOHASH", "g", *pairs[::2]),
                ("GEOSEARCH", "g", "FROMLONLAT", "2.35", "48.85", "BYRADIUS", "50", "km", "ASC",
                 "WITHDIST", "WITHCOORD", "WITHHASH"),
                ("ZRANGE", "g", "0", "-1", "WITHSCORES")]:
        assert s.call_raw(*cmd) == r.call_raw(*cmd), cmd


# --- searches ---------------------------------------------------------------------------------


def search_variants(rng, center_member, lon, lat):
    """GEOSEARCH / GEORADIUS calls around a point, with random shapes and options."""
    unit = rng.choice(UNITS)
    scale = {"m": 1, "km": 1000, "ft": 0.3048, "mi": 1609.34}[unit.lower()]
    size = rng.choice([0, 1, 50, 500, 5000, 50_000, 500_000, 3_000_000, 15_000_000]) / scale
    size = rng.choice([f"{size:.3f}", str(int(size))])
    groups = [[w] for w in rng.sample(WITHS, rng.randint(0, 3))]
    if rng.random() < 0.7:
        groups.append([rng.choice(["ASC", "DESC", "asc", "desc"])])
    if rng.random() < 0.5:
        count = ["COUNT", str(rng.choice([1, 2, 3, 5, 10, 50]))]
        groups.append(count + (["ANY"] if rng.random() < 0.4 else []))
    rng.shuffle(groups)
    options = [word for group in groups for word in group]
    frm = (["FROMMEMBER", center_member] if center_member and rng.random() < 0.5
           else ["FROMLONLAT", lon, lat])
    if rng.random() < 0.5:
        by = ["BYRADIUS", size, unit]
    else:
        other = rng.choice([size, "0", "1", str(float(size) * 2)])
        by = ["BYBOX", size, other, unit] if rng.random() < 0.5 else ["BYBOX", other, size, unit]
    calls = [["GEOSEARCH", "g", *frm, *by, *options]]
    if by[0] == "BYRADIUS":
        if frm[0] == "FROMMEMBER":
            calls.append(["GEORADIUSBYMEMBER", "g", center_member, size, unit, *options])
            calls.append(["GEORADIUSBYMEMBER_RO", "g", center_member, size, unit, *options])
        else:
            calls.append(["GEORADIUS", "g", lon, lat, size, unit, *options])
            calls.append(["GEORADIUS_RO", "g", lon, lat, size, unit, *options])
    return calls


REGIONS = {
    "equator": (0, 0, 3),
    "sicily": (14, 37.5, 2),
    "north_pole": (0, 84.5, 8),
    "south_pole": (100, -84.9, 30),
    "antimeridian": (179.5, 10, 2),
    "antimeridian_south": (-179.9, -60, 1),
    "whole_world": (0, 0, 180),
}


@pytest.mark.parametrize("region", sorted(REGIONS))
@pytest.mark.parametrize("protocol", [2, 3])
def test_random_searches_match_redis(both, region, protocol):
    lon, lat, spread = REGIONS[region]
    rng = random.Random(f"{SEED}-{region}-{protocol}")
    pts = region_points(rng, 400, lon, lat, spread)
    load(both, "g", pts)
    if protocol == 3:
        resp3(both)
    members = pts[2::3]
    for _ in range(60):
        c_lon = coord(rng, max(-180, lon - spread), min(180, lon + spread))
        c_lat = coord(rng, max(-85.05112878, lat - spread), min(85.05112878, lat + spread))
        for call in search_variants(rng, rng.choice(members), c_lon, c_lat):
            both(*call)


@pytest.mark.parametrize("order", [[], ["ASC"], ["DESC"]])
@pytest.mark.parametrize("count", [[], ["COUNT", "1"], ["COUNT", "7"], ["COUNT", "7", "ANY"],
                                   ["COUNT", "1000"], ["COUNT", "1000", "ANY"]])
def test_every_option_combination_with_ties(both, order, count):
    """Many points at equal distances (a ring and duplicates) make the partial sort's order
    of ties visible."""
    pts = []
    for i in range(60):
        pts += ["10", "10", f"same{i}"]
    for i, (dx, dy) in enumerate(itertools.product([-0.01, 0, 0.01], repeat=2)):
        pts += [str(10 + dx), str(10 + dy), f"ring{i}"]
    load(both, "g", pts)
    for withs in itertools.chain.from_iterable(
            itertools.permutations(WITHS, n) for n in range(4)):
        both("GEOSEARCH", "g", "FROMLONLAT", "10", "10", "BYRADIUS", "5", "km", *order, *count,
             *withs)
        both("GEORADIUS", "g", "10.005", "10", "3", "km", *withs, *count, *order)
        both("GEOSEARCH", "g", "FROMMEMBER", "same3", "BYBOX", "3", "3", "km", *order, *count,
             *withs)


def test_radius_zero_finds_only_the_same_cell(both):
    both("GEOADD", "g", *SICILY, "13.361389", "38.115556", "Palermo2", "13.3613891", "38.115556",
         "near")
    for unit in ["m", "km"]:
        both("GEORADIUS", "g", "13.361389", "38.115556", "0", unit, "WITHDIST", "WITHHASH")
        both("GEORADIUSBYMEMBER", "g", "Palermo", "0", unit, "WITHCOORD")
        both("GEOSEARCH", "g", "FROMMEMBER", "Catania", "BYBOX", "0", "0", unit)
        both("GEOSEARCH", "g", "FROMLONLAT", "15.087269", "37.502669", "BYRADIUS", "0", unit,
             "WITHDIST")


def test_huge_and_infinite_radius(both):
    rng = random.Random(SEED + 2)
    load(both, "g", region_points(rng, 300, 0, 0, 180))
    for radius in ["20000", "40000", "1e10", "inf", "+inf"]:
        both("GEORADIUS", "g", "0", "0", radius, "km", "COUNT", "20", "ASC", "WITHDIST")
        both("GEOSEARCH", "g", "FROMLONLAT", "179", "80", "BYRADIUS", radius, "km", "DESC",
             "COUNT", "25")
        both("GEOSEARCH", "g", "FROMLONLAT", "-179", "-80", "BYBOX", radius, radius, "km",
             "COUNT", "10", "ANY")


@pytest.mark.parametrize("cmd", [
    ["GEOSEARCH", "g", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1"],
    ["GEOSEARCH", "g", "FROMMEMBER", "a", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "FROMMEMBER", "a", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "g", "FROMMEMBER", "a", "FROMMEMBER", "b", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "g", "FROMMEMBER", "nobody", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYBOX", "1", "1", "km", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "BYRADIUS", "2", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "x", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "-1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "lightyears"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "nan", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYBOX", "x", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYBOX", "1", "x", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYBOX", "-1", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYBOX", "1", "-1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYBOX", "1", "1", "parsec"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYBOX", "1", "1"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "x", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "200", "1", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "-90", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "ANY"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "COUNT", "0"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "COUNT", "-1"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "COUNT", "x"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "COUNT"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "STORE", "d"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "STOREDIST"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "WITHSCORES"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "ASC", "FOO"],
    ["GEOSEARCH", "g", "FROMLONLAT", "1"],
    ["GEOSEARCH", "g", "FROMMEMBER", "a", "BYRADIUS", "1", "km", "COUNT", "1", "ANY", "WITHDIST",
     "x"],
    ["GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "WITHDIST"],
    ["GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "WITHHASH"],
    ["GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km", "STORE", "x"],
    ["GEOSEARCHSTORE", "d", "g", "BYRADIUS", "1", "km", "STOREDIST"],
    ["GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "1", "1", "STOREDIST", "ASC"],
    ["GEORADIUS", "g", "1", "1", "1", "km", "STORE", "d", "WITHDIST"],
    ["GEORADIUS", "g", "1", "1", "1", "km", "WITHCOORD", "STOREDIST", "d"],
    ["GEORADIUS", "g", "1", "1", "1", "km", "STORE"],
    ["GEORADIUS", "g", "1", "1", "1", "km", "FROMMEMBER", "a"],
    ["GEORADIUS", "g", "1", "1", "1", "km", "BYBOX", "1", "1", "km"],
    ["GEORADIUS", "g", "1", "1", "-1", "km"],
    ["GEORADIUS", "g", "1", "1", "x", "km"],
    ["GEORADIUS", "g", "1", "1", "1", "furlong"],
    ["GEORADIUS", "g", "1", "100", "1", "km"],
    ["GEORADIUS", "g", "x", "1", "1", "km"],
    ["GEORADIUS", "g", "1", "1", "1", "km", "ANY", "ASC"],
    ["GEORADIUS", "g", "1", "1", "1", "km", "COUNT", "0"],
    ["GEORADIUS", "g", "1", "1", "1"],
    ["GEORADIUS_RO", "g", "1", "1", "1", "km", "STORE", "d"],
    ["GEORADIUS_RO", "g", "1", "1", "1", "km", "STOREDIST", "d"],
    ["GEORADIUSBYMEMBER", "g", "nobody", "1", "km"],
    ["GEORADIUSBYMEMBER", "g", "nobody", "x", "km"],
    ["GEORADIUSBYMEMBER", "g", "a", "x", "km"],
    ["GEORADIUSBYMEMBER", "g", "a", "1", "km", "STORE", "d", "WITHHASH"],
    ["GEORADIUSBYMEMBER", "g", "a", "1", "km", "COUNT", "2", "ANY", "ANY", "DESC", "ASC"],
    ["GEORADIUSBYMEMBER_RO", "g", "a", "1", "km", "STORE", "d"],
    ["GEORADIUSBYMEMBER", "g", "a", "1"],
])
def test_search_errors_match_redis(both, cmd):
    both("GEOADD", "g", "1", "1", "a", "1.001", "1.001", "b")
    both(*cmd)
    both(*[c.lower() for c in cmd])
    both("EXISTS", "d")


# --- STORE / STOREDIST ------------------------------------------------------------------------


@pytest.mark.parametrize("count", [[], ["COUNT", "2"], ["COUNT", "2", "ANY"]])
@pytest.mark.parametrize("dist", [False, True])
def test_stores_write_a_sorted_set(both, count, dist):
    rng = random.Random(SEED + 3)
    load(both, "g", region_points(rng, 200, 14, 37.5, 1))
    both("RPUSH", "d", "old")
    both("EXPIRE", "d", "1000")
    store = ["STOREDIST" if dist else "STORE", "d"]
    both("GEORADIUS", "g", "14", "37.5", "50", "km", *count, "ASC", *store)
    both("ZRANGE", "d", "0", "-1", "WITHSCORES")
    both("TTL", "d")
    both("GEORADIUSBYMEMBER", "g", "p5", "30", "mi", *store, *count)
    both("ZRANGE", "d", "0", "-1", "WITHSCORES")
    both("GEOSEARCHSTORE", "d2", "g", "FROMMEMBER", "p7", "BYBOX", "40", "20", "km", *count,
         "DESC", *(["STOREDIST"] if dist else []))
    both("ZRANGE", "d2", "0", "-1", "WITHSCORES")
    both("GEOSEARCH", "d2", "FROMLONLAT", "14", "37.5", "BYRADIUS", "100", "km", "ASC")
    # The source as its own destination.
    both("GEOSEARCHSTORE", "g", "g", "FROMMEMBER", "p7", "BYRADIUS", "20", "km")
    both("ZRANGE", "g", "0", "-1", "WITHSCORES")
    # Nothing found: the destination goes away.
    both("GEORADIUS", "g", "-100", "0", "1", "m", *store)
    both("EXISTS", "d")
    both("GEOSEARCHSTORE", "d2", "g", "FROMLONLAT", "-100", "0", "BYRADIUS", "1", "m")
    both("EXISTS", "d2")


def test_store_keyword_positions(both):
    both("GEOADD", "g", *SICILY)
    both("GEORADIUS", "g", "15", "37", "200", "km", "STORE", "a", "STOREDIST", "b")
    both("EXISTS", "a", "b")
    both("ZRANGE", "b", "0", "-1", "WITHSCORES")
    both("GEORADIUS", "g", "15", "37", "200", "km", "STOREDIST", "c", "STORE", "e")
    both("ZRANGE", "e", "0", "-1", "WITHSCORES")
    both("GEORADIUSBYMEMBER", "g", "Palermo", "200", "km", "store", "f", "COUNT", "1")
    both("ZRANGE", "f", "0", "-1", "WITHSCORES")


@pytest.mark.parametrize("argv", [
    ["GEORADIUS", "k", "1", "2", "3", "km", "STORE", "a", "STOREDIST", "b"],
    ["GEORADIUS", "k", "1", "2", "3", "km", "store", "a"],
    ["GEORADIUS", "k", "1", "2", "3", "km"],
    ["GEORADIUS", "k", "1", "2", "3", "km", "STORE"],
    ["GEORADIUS", "k", "1", "2", "store", "x"],
    ["GEORADIUSBYMEMBER", "k", "m", "3", "km", "STOREDIST", "d"],
    ["GEORADIUSBYMEMBER", "k", "m", "3", "km", "COUNT", "1", "STORE", "d"],
    ["GEORADIUS_RO", "k", "1", "2", "3", "km"],
    ["GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "km"],
    ["GEOADD", "k", "1", "2", "m"],
])
@pytest.mark.parametrize("sub", ["GETKEYS", "GETKEYSANDFLAGS"])
def test_getkeys_matches_redis(both, argv, sub):
    both("COMMAND", sub, *argv)


@pytest.mark.parametrize("cmd", ["geoadd", "geodist", "geohash", "geopos", "geosearch",
                                 "geosearchstore", "georadius", "georadiusbymember",
                                 "georadius_ro", "georadiusbymember_ro"])
def test_command_info_and_docs_arguments_match_redis(both, strata_server, redis_server, cmd):
    from test_command_docs import _arguments

    both("COMMAND", "INFO", cmd)
    assert _arguments(strata_server, cmd) == _arguments(redis_server, cmd)


# --- transactions, scripts, events ------------------------------------------------------------


def test_geo_in_multi_exec(both):
    both("MULTI")
    both("GEOADD", "g", *SICILY)
    both("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC", "WITHDIST")
    both("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
         "STOREDIST")
    both("GEORADIUS", "g", "15", "37", "200", "km", "STORE", "e")
    both("GEOPOS", "g", "Palermo")
    both("GEOADD", "g", "500", "0", "bad")
    both("EXEC")
    both("ZRANGE", "d", "0", "-1", "WITHSCORES")
    both("MULTI")
    both("GEORADIUS", "g", "15", "37")
    both("EXEC")


def test_geo_in_lua(both):
    both("EVAL", "return redis.call('GEOADD', KEYS[1], 13.361389, 38.115556, 'Palermo', "
         "15.087269, 37.502669, 'Catania')", "1", "g")
    both("EVAL", "return redis.call('GEOPOS', KEYS[1], 'Palermo', 'x')", "1", "g")
    both("EVAL", "return redis.call('GEOSEARCH', KEYS[1], 'FROMLONLAT', 15, 37, 'BYRADIUS', 200, "
         "'km', 'WITHCOORD', 'WITHDIST', 'WITHHASH')", "1", "g")
    both("EVAL", "redis.setresp(3); local p = redis.call('GEOPOS', KEYS[1], 'Palermo')[1]; "
         "return {tostring(p[1].double), tostring(p[2].double)}", "1", "g")
    both("EVAL", "return redis.pcall('GEOADD', KEYS[1], 200, 100, 'x')", "1", "g")
    both("EVAL", "return redis.call('GEORADIUS', KEYS[1], 15, 37, 200, 'km', 'STORE', KEYS[2])",
         "2", "g", "d")
    both("EVAL_RO", "return redis.call('GEORADIUS_RO', KEYS[1], 15, 37, 200, 'km')", "1", "g")
    both("EVAL_RO", "return redis.pcall('GEORADIUS', KEYS[1], 15, 37, 200, 'km')", "1", "g")


def test_coordinates_in_resp3(both):
    both("GEOADD", "g", *SICILY, "-179.5", "-85", "far", "0.000001", "-0.000001", "tiny")
    resp3(both)
    both("GEOPOS", "g", "Palermo", "far", "tiny", "none")
    both("GEODIST", "g", "Palermo", "far")
    both("GEODIST", "g", "Palermo", "none")
    both("GEOHASH", "g", "far", "none")
    both("GEOSEARCH", "g", "FROMMEMBER", "tiny", "BYRADIUS", "20000", "km", "WITHCOORD",
         "WITHDIST", "WITHHASH", "ASC")


# --- a random-operation model -------------------------------------------------------------


GEO_MEMBERS = [f"m{i}" for i in range(12)]


def _geo_op(rng: random.Random):
    m = rng.choice(GEO_MEMBERS)
    k = rng.choice(["g", "g", "h"])
    lon = coord(rng, 10, 10.5) if rng.random() < 0.8 else coord(rng, -180, 180)
    lat = coord(rng, 45, 45.5) if rng.random() < 0.8 else coord(rng, -85.05, 85.05)
    radius = rng.choice(["0", "1", "10", "30", "100", "5000"])
    opts = rng.sample(["ASC", "DESC", "WITHDIST", "WITHCOORD", "WITHHASH"], rng.randint(0, 3))
    if rng.random() < 0.4:
        opts += ["COUNT", str(rng.randint(1, 5))] + (["ANY"] if rng.random() < 0.3 else [])
    return rng.choice([
        lambda: ("GEOADD", k, lon, lat, m),
        lambda: ("GEOADD", k, rng.choice(["NX", "XX", "CH"]), lon, lat, m, lon, lat,
                 rng.choice(GEO_MEMBERS)),
        lambda: ("ZREM", k, m, rng.choice(GEO_MEMBERS)),
        lambda: ("ZADD", k, str(rng.randint(0, 1 << 52)), m),
        lambda: ("GEOPOS", k, m, rng.choice(GEO_MEMBERS)),
        lambda: ("GEOHASH", k, m),
        lambda: ("GEODIST", k, m, rng.choice(GEO_MEMBERS), rng.choice(UNITS)),
        lambda: ("GEOSEARCH", k, "FROMMEMBER", m, "BYRADIUS", radius, "km", *opts),
        lambda: ("GEOSEARCH", k, "FROMLONLAT", lon, lat, "BYBOX", radius, radius, "km", *opts),
        lambda: ("GEORADIUS", k, lon, lat, radius, "km", *opts),
        lambda: ("GEORADIUSBYMEMBER", k, m, radius, "km", *opts),
        lambda: ("GEOSEARCHSTORE", "h", k, "FROMLONLAT", lon, lat, "BYRADIUS", radius, "km",
                 *[o for o in opts if not o.startswith("WITH")],
                 *(["STOREDIST"] if rng.random() < 0.5 else [])),
        lambda: ("ZRANGE", k, "0", "-1", "WITHSCORES"),
        lambda: ("ZCARD", k),
        lambda: ("DEL", k),
    ])()


def test_geo_model_random_operations_match_redis(both):
    rng = random.Random(SEED)
    for step in range(3000):
        cmd = _geo_op(rng)
        try:
            both(*cmd)
        except AssertionError as e:
            raise AssertionError(f"seed {SEED}, step {step}: {e}") from None
