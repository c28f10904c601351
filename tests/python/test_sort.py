"""SORT and SORT_RO, compared reply for reply with a real redis-server (the ``both`` fixture).

Lists and sorted sets keep their own order, and sorted results are deterministic, so nearly every
reply is compared byte for byte. Two places where Redis's order is unspecified are avoided or
compared order-free: a set of strings returned unsorted (BY nosort, hash-table order), and ALPHA
BY ties (Redis's qsort is not stable).
"""

import random

import pytest

from harness import RespError


def rpush(both, key, *items):
    both("DEL", key)
    both("RPUSH", key, *items)


def mset(both, **pairs):
    args = []
    for k, v in pairs.items():
        args += [k, v]
    both("MSET", *args)


# --- numeric and ALPHA order ----------------------------------------------------------------------


def test_numeric_sort_of_a_list(both):
    rpush(both, "l", "3", "-1", "10", "2.5", "0", "-0", "1e3", "-inf", "inf", "7")
    both("SORT", "l")
    both("SORT", "l", "DESC")
    both("SORT", "l", "ASC")
    both("SORT", "l", "desc", "asc")  # the last order word wins
    both("SORT_RO", "l")
    both("SORT_RO", "l", "DESC")


def test_numeric_ties_are_broken_bytewise(both):
    rpush(both, "l", "1.0", "1", "01", "1e0", "2", "1", "+1", "0x1")
    both("SORT", "l")
    both("SORT", "l", "DESC")


def test_numeric_parse_is_strtod(both):
    # Leading space, hex floats and the empty string (0) convert; trailing junk does not.
    rpush(both, "l", " 5", "0x10", "", "3", "\t2", ".5", "6.", "1E2", "-0x1p3")
    both("SORT", "l")
    both("SORT", "l", "DESC")


@pytest.mark.parametrize("bad", ["abc", "5 ", "1e400", "nan", "1e", "0x", " ", "inf5", "--1"])
def test_values_that_are_not_numbers_fail(both, bad):
    rpush(both, "l", "1", bad, "2")
    both("SORT", "l")
    both("SORT", "l", "LIMIT", "0", "1")
    both("SORT_RO", "l", "DESC")
    # ... but not when sorting ALPHA or not sorting at all.
    both("SORT", "l", "ALPHA")
    both("SORT", "l", "BY", "nosort")


def test_alpha_sort(both):
    rpush(both, "l", "banana", "Apple", "apple", "10", "9", "", "b\x00a", "b", "\xff", "_", "é")
    both("SORT", "l", "ALPHA")
    both("SORT", "l", "ALPHA", "DESC")
    both("sort", "l", "alpha", "limit", "2", "3")
    both("SORT_RO", "l", "ALPHA")


def test_sets_and_sorted_sets_are_sorted_by_member(both):
    both("SADD", "ints", "5", "-3", "100", "7", "0")
    both("SORT", "ints")
    both("SORT", "ints", "DESC")
    both("SORT", "ints", "ALPHA")
    both("SADD", "words", "pear", "fig", "apple", "kiwi", "date")
    both("SORT", "words", "ALPHA")
    both("SORT", "words", "ALPHA", "DESC", "LIMIT", "1", "2")
    both("SORT", "words")  # not numbers
    # A sorted set is sorted by its members, not its scores.
    both("ZADD", "z", "1", "10", "2", "9", "3", "-1", "4", "2.5")
    both("SORT", "z")
    both("SORT", "z", "DESC")
    both("SORT", "z", "ALPHA")
    both("ZADD", "zw", "1", "b", "2", "a", "3", "c")
    both("SORT", "zw", "ALPHA")
    both("SORT", "zw")


def test_big_collections(both):
    rng = random.Random(7)
    values = [str(rng.randint(-10**6, 10**6)) for _ in range(1500)] + [
        f"{rng.uniform(-1000, 1000):.6f}" for _ in range(500)]
    for i in range(0, len(values), 500):
        both("RPUSH", "big", *values[i:i + 500])
    both("SORT", "big")
    both("SORT", "big", "DESC", "LIMIT", "100", "50")
    both("SORT", "big", "ALPHA", "LIMIT", "0", "20")
    # 600 integers: a hashtable set in Redis, sorted the same.
    both("SADD", "bigset", *[str(i * 7 % 1000) for i in range(600)])
    both("SORT", "bigset", "LIMIT", "590", "20")
    both("ZADD", "bigz", *[x for i in range(300) for x in (str(i), f"m{i * 13 % 300}")])
    both("SORT", "bigz", "ALPHA", "LIMIT", "10", "10")


# --- LIMIT ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("offset,count", [
    ("0", "3"), ("2", "3"), ("5", "100"), ("7", "1"), ("8", "1"), ("100", "5"), ("0", "0"),
    ("3", "0"), ("-5", "2"), ("2", "-1"), ("-1", "-1"), ("0", "9223372036854775807"),
    ("9223372036854775807", "9223372036854775807"), ("-9223372036854775808", "2"),
])
def test_limit(both, offset, count):
    rpush(both, "l", "5", "3", "8", "1", "9", "2", "7", "4")
    both("SORT", "l", "LIMIT", offset, count)
    both("SORT", "l", "LIMIT", offset, count, "DESC")
    both("SORT", "l", "LIMIT", offset, count, "BY", "nosort")
    both("SORT", "l", "LIMIT", offset, count, "BY", "nosort", "DESC")
    both("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
    both("SORT", "z", "LIMIT", offset, count, "BY", "nosort")
    both("SORT", "z", "LIMIT", offset, count, "BY", "nosort", "DESC")
    both("SORT", "z", "LIMIT", offset, count, "ALPHA", "DESC")
    both("SORT", "missing", "LIMIT", offset, count)


def test_limit_errors(both):
    rpush(both, "l", "1", "2")
    both("SORT", "l", "LIMIT", "x", "1")
    both("SORT", "l", "LIMIT", "0", "1.5")
    both("SORT", "l", "LIMIT", "0", "99999999999999999999")
    both("SORT", "l", "LIMIT", "0")       # too few arguments: syntax error
    both("SORT", "l", "LIMIT")
    both("SORT", "l", "LIMIT", "0", "1", "LIMIT", "1", "1")  # the last LIMIT wins


# --- BY ------------------------------------------------------------------------------------------


def test_by_string_keys(both):
    rpush(both, "ids", "1", "2", "3", "4", "5")
    mset(both, w_1="50", w_2="10", w_3="40", w_4="-2.5", w_5="10")
    both("SORT", "ids", "BY", "w_*")
    both("SORT", "ids", "BY", "w_*", "DESC")
    both("SORT", "ids", "BY", "w_*", "LIMIT", "1", "3")
    both("SORT", "ids", "BY", "*_w")     # every weight missing: 0, ties by element
    both("SORT", "ids", "BY", "pre*post")
    both("SORT_RO", "ids", "BY", "w_*", "DESC", "LIMIT", "0", "2")


def test_by_missing_and_wrong_type_keys_count_as_zero(both):
    rpush(both, "ids", "a", "b", "c", "d")
    mset(both, w_a="3", w_c="-1")
    both("RPUSH", "w_b", "100")  # a list: reads as missing
    both("SORT", "ids", "BY", "w_*")
    both("SORT", "ids", "BY", "w_*", "DESC")


def test_by_values_that_are_not_numbers_fail(both):
    rpush(both, "ids", "1", "2")
    mset(both, w_1="5", w_2="five")
    both("SORT", "ids", "BY", "w_*")
    both("SORT", "ids", "BY", "w_*", "ALPHA")


def test_by_alpha(both):
    rpush(both, "ids", "1", "2", "3", "4")
    mset(both, n_1="delta", n_2="alpha", n_3="Charlie")
    # n_4 is missing: it sorts first (a single missing value, so no tie).
    both("SORT", "ids", "BY", "n_*", "ALPHA")
    both("SORT", "ids", "BY", "n_*", "ALPHA", "DESC")
    both("SORT", "ids", "BY", "n_*", "ALPHA", "LIMIT", "1", "2")


def test_by_hash_fields(both):
    rpush(both, "ids", "1", "2", "3")
    both("HSET", "h_1", "age", "30", "name", "zed")
    both("HSET", "h_2", "age", "20", "name", "amy")
    both("HSET", "h_3", "age", "25", "name", "bob")
    both("SORT", "ids", "BY", "h_*->age")
    both("SORT", "ids", "BY", "h_*->age", "DESC")
    both("SORT", "ids", "BY", "h_*->name", "ALPHA")
    both("SORT", "ids", "BY", "h_*->missing")
    both("SET", "h_1", "str")  # a string where a hash is expected: missing
    both("SORT", "ids", "BY", "h_*->age")
    # "->" with nothing after it is part of the key name.
    mset(both, **{"k_1->": "3", "k_2->": "1", "k_3->": "2"})
    both("SORT", "ids", "BY", "k_*->")
    # "->" before the star is part of the key name too.
    mset(both, **{"a->1": "9", "a->2": "8", "a->3": "7"})
    both("SORT", "ids", "BY", "a->*")


def test_by_without_star_skips_sorting(both):
    rpush(both, "l", "c", "a", "b", "10", "x y")
    both("SORT", "l", "BY", "nosort")
    both("SORT", "l", "BY", "nosort", "DESC")
    both("SORT", "l", "BY", "constant", "ALPHA")
    both("SORT", "l", "BY", "nosort", "LIMIT", "1", "2")
    both("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "2")
    both("SORT", "l", "BY", "w_*", "BY", "nosort")  # the last BY wins
    both("ZADD", "z", "3", "c", "1", "a", "2", "b", "2", "bb")
    both("SORT", "z", "BY", "nosort")
    both("SORT", "z", "BY", "nosort", "DESC")
    both("SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2")
    # An intset lists in numeric order in both servers; a set of strings in hash order in Redis.
    both("SADD", "ints", "30", "-2", "7")
    both("SORT", "ints", "BY", "nosort")
    both("SORT", "ints", "BY", "nosort", "DESC")
    both("SADD", "words", "pear", "fig", "apple")
    both.unordered("SORT", "words", "BY", "nosort")


# --- GET -----------------------------------------------------------------------------------------


def test_get_patterns(both):
    rpush(both, "ids", "2", "1", "3")
    mset(both, name_1="one", name_2="two", w_1="3", w_2="2", w_3="1")
    both("HSET", "h_1", "f", "h1")
    both("HSET", "h_3", "f", "h3")
    both("SORT", "ids", "GET", "name_*")
    both("SORT", "ids", "GET", "#")
    both("SORT", "ids", "GET", "#", "GET", "name_*", "GET", "h_*->f")
    both("SORT", "ids", "BY", "w_*", "GET", "name_*", "GET", "#")
    both("SORT", "ids", "GET", "nostar")          # no star: nil
    both("SORT", "ids", "GET", "h_*->f", "DESC", "LIMIT", "0", "2")
    both("SORT", "ids", "BY", "nosort", "GET", "name_*", "DESC")
    both("SORT", "ids", "GET", "ids")             # no star, even though the key exists
    both("SORT", "ids", "GET", "h_*")             # a hash where a string is expected: nil
    both("SORT", "ids", "GET", "##")
    both("SORT_RO", "ids", "GET", "#", "GET", "name_*")
    both("SORT", "missing", "GET", "#")


def test_get_in_resp3_gives_nulls(both):
    s, r = both.each("HELLO", "3")
    assert isinstance(s, dict) and isinstance(r, dict)
    rpush(both, "ids", "1", "2")
    both("SET", "v_1", "x")
    both("SORT", "ids", "GET", "v_*", "GET", "#")


# --- STORE ---------------------------------------------------------------------------------------


def test_store_writes_a_list(both):
    rpush(both, "l", "3", "1", "2")
    both("SORT", "l", "STORE", "dst")
    both("LRANGE", "dst", "0", "-1")
    both("TYPE", "dst")
    both("SORT", "l", "DESC", "LIMIT", "0", "2", "STORE", "dst")
    both("LRANGE", "dst", "0", "-1")
    both("SORT", "l", "STORE", "l")  # onto itself
    both("LRANGE", "l", "0", "-1")


def test_store_replaces_any_type_and_ttl(both):
    rpush(both, "l", "b", "a")
    both("HSET", "dst", "f", "v")
    both("EXPIRE", "dst", "100")
    both("SORT", "l", "ALPHA", "STORE", "dst")
    both("TYPE", "dst")
    both("TTL", "dst")
    both("LRANGE", "dst", "0", "-1")
    both("SET", "dst2", "x", "EX", "100")
    both("SORT", "l", "ALPHA", "STORE", "dst2")
    both("TTL", "dst2")
    both("LRANGE", "dst2", "0", "-1")


def test_store_with_get_stores_empty_strings_for_missing(both):
    rpush(both, "ids", "1", "2", "3")
    mset(both, v_1="a", v_3="c")
    both("SORT", "ids", "GET", "v_*", "GET", "#", "STORE", "dst")
    both("LRANGE", "dst", "0", "-1")
    both("LLEN", "dst")


def test_empty_result_deletes_the_destination(both):
    both("SET", "dst", "x")
    both("SORT", "missing", "STORE", "dst")
    both("EXISTS", "dst")
    rpush(both, "l", "1", "2")
    both("RPUSH", "dst", "old")
    both("SORT", "l", "LIMIT", "5", "1", "STORE", "dst")
    both("EXISTS", "dst")
    both("SORT", "l", "LIMIT", "0", "0", "STORE", "nothing")
    both("EXISTS", "nothing")


def test_store_of_a_set_without_sorting_is_sorted_alpha(both):
    both("SADD", "s", "pear", "fig", "apple", "10", "9")
    both("SORT", "s", "BY", "nosort", "STORE", "dst")
    both("LRANGE", "dst", "0", "-1")
    both("SORT", "s", "BY", "nosort", "DESC", "LIMIT", "1", "3", "STORE", "dst")
    both("LRANGE", "dst", "0", "-1")
    # Lists and sorted sets keep their order.
    rpush(both, "l", "c", "a", "b")
    both("SORT", "l", "BY", "nosort", "STORE", "dst")
    both("LRANGE", "dst", "0", "-1")
    both("ZADD", "z", "1", "y", "2", "x")
    both("SORT", "z", "BY", "nosort", "DESC", "STORE", "dst")
    both("LRANGE", "dst", "0", "-1")


def test_store_and_numeric_errors_store_nothing(both):
    rpush(both, "l", "1", "x")
    both("SET", "dst", "keep")
    both("SORT", "l", "STORE", "dst")
    both("GET", "dst")
    both("SORT", "l", "STORE")  # STORE without a destination: syntax error


def test_sort_ro_refuses_store(both):
    rpush(both, "l", "2", "1")
    both("SORT_RO", "l", "STORE", "dst")
    both("EXISTS", "dst")
    both("SORT_RO", "l", "store", "dst", "LIMIT", "0", "1")


# --- errors and edge cases -----------------------------------------------------------------------


def test_missing_key_is_an_empty_list(both):
    both("SORT", "missing")
    both("SORT", "missing", "BY", "nosort", "DESC", "ALPHA")
    both("SORT_RO", "missing", "LIMIT", "1", "2")


def test_wrongtype(both):
    both("SET", "str", "1")
    both("HSET", "h", "f", "1")
    both("SORT", "str")
    both("SORT", "h", "ALPHA")
    both("SORT_RO", "str")
    both("SORT", "str", "STORE", "dst")
    both("EXISTS", "dst")


def test_syntax_errors_win_over_wrongtype(both):
    both("SET", "str", "1")
    both("SORT", "str", "FOO")
    both("SORT", "str", "LIMIT", "a", "b")
    both("SORT", "str", "BY")
    both("SORT", "str", "GET")
    both("SORT_RO", "str", "STORE", "d")
    rpush(both, "l", "1")
    both("SORT", "l", "ASC", "nope")
    both("SORT", "l", "ALPHA", "DESC", "GET")


def test_arity(both):
    both("SORT")
    both("SORT_RO")


def test_binary_elements_and_patterns(both):
    rpush(both, "l", "a\x00b", "a", "a\r\nb")
    both("SORT", "l", "ALPHA")
    both("SET", "k_a\x00b", "2")
    both("SET", "k_a", "1")
    both("SET", "k_a\r\nb", "0")
    both("SORT", "l", "BY", "k_*")
    both("SORT", "l", "BY", "k_*", "GET", "k_*")


def test_command_info(strata_server, redis_server):
    for cmd in ("sort", "sort_ro"):
        s = strata_server.conn().call("COMMAND", "INFO", cmd)[0]
        r = redis_server.conn().call("COMMAND", "INFO", cmd)[0]
        assert isinstance(s, list), s
        assert s[:6] == r[:6] or (s[0], s[1], set(s[2]), s[3:6]) == (r[0], r[1], set(r[2]), r[3:6])
        assert set(s[6]) == set(r[6])
