"""String commands, compared reply for reply with a real redis-server (the ``both`` fixture)."""

import time

import pytest

from harness import RespError

# --- GET / SET --------------------------------------------------------------------------------


def test_set_then_get_returns_value_and_missing_key_is_nil(both):
    both("SET", "k", "v")
    both("GET", "k")
    both("GET", "missing")
    both("SET", "k", "overwritten")
    both("GET", "k")
    both("SET", "empty", "")
    both("GET", "empty")


def test_set_nx_xx_only_write_when_key_absent_or_present(both):
    both("SET", "k", "1", "NX")
    both("SET", "k", "2", "NX")
    both("GET", "k")
    both("SET", "k", "3", "XX")
    both("SET", "other", "3", "XX")
    both("GET", "k")
    both("EXISTS", "other")


def test_set_get_option_returns_old_value(both):
    both("SET", "k", "new", "GET")
    both("SET", "k", "newer", "GET")
    both("SET", "k", "x", "NX", "GET")
    both("SET", "k", "y", "XX", "GET")
    both("SET", "absent", "y", "XX", "GET")
    both("GET", "k")


def test_set_with_ex_px_sets_ttl(both):
    both("SET", "a", "v", "EX", "100")
    both("TTL", "a")
    both("SET", "b", "v", "PX", "100000")
    both("TTL", "b")
    both("SET", "c", "v", "ex", "100")  # options are case-insensitive
    both("TTL", "c")


def test_set_exat_pxat_set_absolute_expiry(both):
    at = int(time.time()) + 1000
    both("SET", "a", "v", "EXAT", str(at))
    both("EXPIRETIME", "a")
    both("SET", "b", "v", "PXAT", str(at * 1000 + 123))
    both("PEXPIRETIME", "b")
    # An absolute time in the past: accepted, and the key is gone at once.
    both("SET", "c", "v", "PXAT", "1")
    both("GET", "c")
    both("EXISTS", "c")


def test_set_without_keepttl_clears_ttl_and_keepttl_keeps_it(both):
    both("SET", "k", "v", "EX", "100")
    both("SET", "k", "v2")
    both("TTL", "k")
    both("SET", "k", "v", "EX", "100")
    both("SET", "k", "v3", "KEEPTTL")
    both("TTL", "k")
    both("GET", "k")


@pytest.mark.parametrize("args", [
    ["NX", "XX"],
    ["XX", "NX"],
    ["EX", "10", "PX", "100"],
    ["EX", "10", "EXAT", "100"],
    ["PX", "10", "PXAT", "100"],
    ["KEEPTTL", "EX", "10"],
    ["PX", "10", "KEEPTTL"],
    ["EX"],
    ["FOO"],
    ["GET", "GET", "FOO"],
])
def test_set_bad_option_combinations_are_syntax_errors(both, args):
    both("SET", "k", "v", *args)
    both("EXISTS", "k")


@pytest.mark.parametrize("args", [
    ["EX", "0"],
    ["EX", "-1"],
    ["PX", "0"],
    ["EXAT", "0"],
    ["PXAT", "-5"],
    ["EX", "9999999999999999"],
    ["EX", "abc"],
    ["PX", "1.5"],
    ["EX", ""],
])
def test_set_invalid_expire_time_errors(both, args):
    both("SET", "k", "v", *args)
    both("EXISTS", "k")


def test_set_get_on_wrong_type_is_wrongtype_and_does_not_write(both):
    both("RPUSH", "l", "a")
    both("SET", "l", "v", "GET")
    both("TYPE", "l")
    both("SET", "l", "v")  # plain SET overwrites any type
    both("TYPE", "l")


# --- SETNX SETEX PSETEX MGET MSET MSETNX GETSET GETDEL -----------------------------------------


def test_setnx(both):
    both("SETNX", "k", "1")
    both("SETNX", "k", "2")
    both("GET", "k")


def test_setex_psetex_set_value_and_ttl(both):
    both("SETEX", "k", "100", "v")
    both("GET", "k")
    both("TTL", "k")
    both("PSETEX", "p", "100000", "v")
    both("TTL", "p")


@pytest.mark.parametrize("cmd", [
    ["SETEX", "k", "0", "v"],
    ["SETEX", "k", "-10", "v"],
    ["SETEX", "k", "abc", "v"],
    ["PSETEX", "k", "0", "v"],
    ["PSETEX", "k", "-5", "v"],
    ["SETEX", "k", "10"],
])
def test_setex_psetex_errors(both, cmd):
    both(*cmd)
    both("EXISTS", "k")


def test_mset_mget(both):
    both("MSET", "a", "1", "b", "2", "c", "3")
    both("MGET", "a", "b", "c", "missing", "a")
    both("MSET", "a", "x", "a", "y")  # last one wins
    both("GET", "a")
    both("RPUSH", "l", "x")
    both("MGET", "a", "l")  # non-strings read as nil
    both("MSET", "a", "1", "b")


def test_msetnx_is_all_or_nothing(both):
    both("MSETNX", "a", "1", "b", "2")
    both("MSETNX", "b", "9", "c", "3")
    both("MGET", "a", "b", "c")
    both("MSETNX", "a")


def test_getset_getdel(both):
    both("GETSET", "k", "1")
    both("GETSET", "k", "2")
    both("GET", "k")
    both("SET", "k", "v", "EX", "100")
    both("GETSET", "k", "w")
    both("TTL", "k")  # GETSET clears the TTL
    both("GETDEL", "k")
    both("GETDEL", "k")
    both("EXISTS", "k")


# --- GETEX ------------------------------------------------------------------------------------


def test_getex_sets_and_removes_ttl(both):
    both("GETEX", "missing", "EX", "10")
    both("SET", "k", "v")
    both("GETEX", "k")
    both("TTL", "k")
    both("GETEX", "k", "EX", "100")
    both("TTL", "k")
    both("GETEX", "k", "PX", "200000")
    both("TTL", "k")
    at = int(time.time()) + 1000
    both("GETEX", "k", "EXAT", str(at))
    both("EXPIRETIME", "k")
    both("GETEX", "k", "PXAT", str(at * 1000 + 5))
    both("PEXPIRETIME", "k")
    both("GETEX", "k", "PERSIST")
    both("TTL", "k")


def test_getex_past_time_deletes_key(both):
    both("SET", "k", "v")
    both("GETEX", "k", "PXAT", "1")
    both("EXISTS", "k")


@pytest.mark.parametrize("args", [
    ["EX", "10", "PX", "100"],
    ["PERSIST", "EX", "10"],
    ["EX", "0"],
    ["EX", "-1"],
    ["PX", "abc"],
    ["FOO"],
    ["EX"],
])
def test_getex_errors(both, args):
    both("SET", "k", "v")
    both("GETEX", "k", *args)
    both("TTL", "k")


# --- APPEND STRLEN ----------------------------------------------------------------------------


def test_append_and_strlen(both):
    both("APPEND", "k", "hello")
    both("APPEND", "k", " world")
    both("GET", "k")
    both("STRLEN", "k")
    both("STRLEN", "missing")
    both("SET", "n", "12")
    both("APPEND", "n", "34")
    both("GET", "n")
    both("APPEND", "k", "")
    both("STRLEN", "k")


def test_append_keeps_ttl(both):
    both("SET", "k", "v", "EX", "100")
    both("APPEND", "k", "w")
    both("TTL", "k")


# --- INCR DECR INCRBY DECRBY ------------------------------------------------------------------


def test_incr_decr_family(both):
    both("INCR", "n")
    both("INCR", "n")
    both("DECR", "n")
    both("INCRBY", "n", "10")
    both("DECRBY", "n", "3")
    both("INCRBY", "n", "-100")
    both("DECR", "new")
    both("GET", "n")
    both("SET", "m", "-5")
    both("INCR", "m")


def test_incr_keeps_ttl(both):
    both("SET", "n", "1", "EX", "100")
    both("INCR", "n")
    both("TTL", "n")


@pytest.mark.parametrize("value", [
    "abc", " 1", "1 ", "01", "+1", "1.5", "", "9223372036854775808", "-9223372036854775809",
    "1e3", "0x10", "1\x002",
])
def test_incr_on_non_integer_value_errors(both, value):
    both("SET", "n", value)
    both("INCR", "n")
    both("DECR", "n")
    both("INCRBY", "n", "2")
    both("GET", "n")


@pytest.mark.parametrize("incr", ["abc", "1.5", "", " 1", "99999999999999999999"])
def test_incrby_non_integer_increment_errors(both, incr):
    both("INCRBY", "n", incr)
    both("DECRBY", "n", incr)
    both("EXISTS", "n")


def test_incr_overflow_errors(both):
    both("SET", "n", "9223372036854775807")
    both("INCR", "n")
    both("INCRBY", "n", "1")
    both("SET", "n", "-9223372036854775808")
    both("DECR", "n")
    both("DECRBY", "n", "1")
    both("SET", "n", "0")
    both("DECRBY", "n", "-9223372036854775808")
    both("INCRBY", "n", "-9223372036854775808")
    both("GET", "n")


def test_incr_on_a_string_stored_in_fragments_is_not_an_integer_and_leaves_it_whole(both):
    # 70,000 digits: past the size at which Strata stores a string in fragments.
    both("SET", "big", "1" * 70000)
    both("INCR", "big")
    both("INCRBY", "big", "5")
    both("STRLEN", "big")
    both("GETRANGE", "big", "69990", "-1")


def test_incr_on_another_type_is_wrongtype_and_on_an_expired_counter_starts_at_zero(both):
    both("RPUSH", "l", "1")
    both("INCR", "l")
    both("HSET", "h", "f", "1")
    both("INCRBY", "h", "2")
    both("SET", "n", "41", "PX", "1")
    time.sleep(0.05)
    both("INCR", "n")
    both("TTL", "n")


def test_incr_leading_zero_and_negative_zero(both):
    both("SET", "n", "-0")
    both("INCR", "n")
    both("SET", "n", "0")
    both("INCR", "n")


# --- INCRBYFLOAT ------------------------------------------------------------------------------


def test_incrbyfloat_formats_like_redis(both):
    both("SET", "f", "10.5")
    both("INCRBYFLOAT", "f", "0.1")
    both("INCRBYFLOAT", "g", "3.0e3")
    both("INCRBYFLOAT", "h", "5.0e3")
    both("INCRBYFLOAT", "h", "2.0e2")
    both("INCRBYFLOAT", "i", "-1.5")
    both("INCRBYFLOAT", "i", "1.5")
    both("SET", "j", "7")
    both("INCRBYFLOAT", "j", "1")
    both("INCRBYFLOAT", "k", "1.25")
    both("GET", "k")


@pytest.mark.parametrize("value,incr", [
    ("1", "inf"), ("1", "-inf"), ("1", "nan"), ("1", "abc"), ("1", ""),
    ("abc", "1"), (" 1.5", "1"), ("1.5e", "1"), ("1.5 ", "1"),
])
def test_incrbyfloat_errors(both, value, incr):
    both("SET", "f", value)
    both("INCRBYFLOAT", "f", incr)
    both("GET", "f")


def test_incrbyfloat_on_wrong_type(both):
    both("RPUSH", "l", "a")
    both("INCRBYFLOAT", "l", "1")


# --- GETRANGE SUBSTR SETRANGE -----------------------------------------------------------------


@pytest.mark.parametrize("start,end", [
    (0, 3), (0, -1), (-3, -1), (5, 2), (-100, 100), (0, -100), (3, 3), (100, 200), (-1, -1),
    (0, 0), (-4, 2),
])
def test_getrange_substr_indexes(both, start, end):
    both("SET", "k", "Hello World")
    both("GETRANGE", "k", str(start), str(end))
    both("SUBSTR", "k", str(start), str(end))


def test_getrange_missing_key_and_errors(both):
    both("GETRANGE", "missing", "0", "-1")
    both("SET", "k", "v")
    both("GETRANGE", "k", "a", "1")
    both("GETRANGE", "k", "0")
    both("SET", "n", "12345")
    both("GETRANGE", "n", "1", "2")  # works on integer-encoded values too


def test_setrange_overwrites_and_pads_with_zero_bytes(both):
    both("SET", "k", "Hello World")
    both("SETRANGE", "k", "6", "Redis")
    both("GET", "k")
    both("SETRANGE", "p", "3", "abc")
    both("GET", "p")
    both("SETRANGE", "k", "20", "!")
    both("GET", "k")
    both("STRLEN", "k")


def test_setrange_empty_value_does_not_create_key(both):
    both("SETRANGE", "k", "5", "")
    both("EXISTS", "k")
    both("SET", "s", "abc")
    both("SETRANGE", "s", "10", "")
    both("GET", "s")


def test_setrange_offset_limits(both):
    both("SETRANGE", "k", "-1", "x")
    both("SETRANGE", "k", "536870912", "x")  # past proto-max-bulk-len (512 MB)
    both("SETRANGE", "k", "536870911", "xy")
    both("SETRANGE", "k", "abc", "x")
    both("EXISTS", "k")


# --- GETBIT SETBIT ----------------------------------------------------------------------------


def test_setbit_returns_the_old_bit_and_grows_the_string_with_zero_bytes(both):
    both("SETBIT", "k", "7", "1")
    both("GET", "k")
    both("SETBIT", "k", "7", "1")
    both("SETBIT", "k", "7", "0")
    both("SETBIT", "k", "20", "1")
    both("GET", "k")
    both("STRLEN", "k")
    both("OBJECT", "ENCODING", "k")
    both("SETBIT", "k", "1", "0")  # clearing a clear bit creates nothing new
    both("GET", "k")


def test_getbit_reads_bits_msb_first_and_zero_past_the_end(both):
    both("SET", "k", "`")  # 0x60: bits 1 and 2 set
    for offset in ["0", "1", "2", "3", "7", "8", "1000000"]:
        both("GETBIT", "k", offset)
    both("GETBIT", "missing", "3")
    both("SET", "n", "12345")  # an integer-looking value is still bytes
    both("GETBIT", "n", "2")
    both("SETBIT", "n", "6", "1")
    both("GET", "n")


def test_setbit_keeps_the_ttl(both):
    both("SET", "k", "a", "EX", "100")
    both("SETBIT", "k", "3", "1")
    both("TTL", "k")
    both("GET", "k")


@pytest.mark.parametrize("args", [
    ["SETBIT", "k", "-1", "1"], ["SETBIT", "k", "4294967296", "1"], ["SETBIT", "k", "x", "1"],
    ["SETBIT", "k", "1", "2"], ["SETBIT", "k", "1", "-1"], ["SETBIT", "k", "1", "x"],
    ["SETBIT", "k", "x", "x"], ["SETBIT", "l", "0", "2"], ["SETBIT", "l", "0", "1"],
    ["GETBIT", "k", "x"], ["GETBIT", "k", "-1"], ["GETBIT", "k", "4294967296"], ["GETBIT", "l", "0"],
    ["SETBIT", "k", "1"], ["GETBIT", "k"],
])
def test_bit_argument_errors_and_wrong_type(both, args):
    both("RPUSH", "l", "a")
    both(*args)
    both("EXISTS", "k")


def test_setbit_that_changes_nothing_leaves_a_watched_key_clean(both):
    both("SET", "k", "\x80")
    both("WATCH", "k")
    both("SETBIT", "k", "0", "1")
    both("MULTI")
    both("GET", "k")
    both("EXEC")
    both("WATCH", "k")
    both("SETBIT", "k", "0", "0")
    both("MULTI")
    both("GET", "k")
    both("EXEC")


# --- LCS --------------------------------------------------------------------------------------


def test_lcs(both):
    both("MSET", "key1", "ohmytext", "key2", "mynewtext")
    both("LCS", "key1", "key2")
    both("LCS", "key1", "key2", "LEN")
    both("LCS", "key1", "key2", "IDX")
    both("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4")
    both("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN")
    both("LCS", "key1", "key2", "IDX", "WITHMATCHLEN")
    both("LCS", "key1", "missing")
    both("LCS", "missing", "missing2", "LEN")


def test_lcs_errors(both):
    both("MSET", "a", "abc", "b", "abd")
    both("LCS", "a", "b", "LEN", "IDX")
    both("LCS", "a", "b", "FOO")
    both("LCS", "a", "b", "MINMATCHLEN")
    both("LCS", "a", "b", "IDX", "MINMATCHLEN", "x")
    both("RPUSH", "l", "x")
    both("LCS", "a", "l")


# --- WRONGTYPE --------------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", [
    ["GET", "l"], ["GETSET", "l", "v"], ["GETDEL", "l"], ["GETEX", "l"], ["APPEND", "l", "x"],
    ["STRLEN", "l"], ["INCR", "l"], ["DECR", "l"], ["INCRBY", "l", "1"], ["DECRBY", "l", "1"],
    ["INCRBYFLOAT", "l", "1"], ["GETRANGE", "l", "0", "1"], ["SETRANGE", "l", "0", "x"],
    ["SUBSTR", "l", "0", "1"],
])
def test_string_commands_on_a_list_are_wrongtype(both, cmd):
    both("RPUSH", "l", "a")
    both(*cmd)
    both("TYPE", "l")


# --- direct checks (redis-py) -----------------------------------------------------------------


def test_set_and_get_through_redis_py(strata):
    assert strata.set("k", "v") is True
    assert strata.get("k") == b"v"
    assert strata.set("k", "w", nx=True) is None
    assert strata.get("k") == b"v"


def test_set_px_expires_key(strata):
    strata.set("k", "v", px=100)
    deadline = time.monotonic() + 3
    while strata.exists("k") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert strata.get("k") is None
    assert strata.exists("k") == 0


def test_error_reply_is_an_error_for_redis_py(strata):
    strata.set("k", "abc")
    with pytest.raises(Exception) as e:
        strata.incr("k")
    assert "not an integer" in str(e.value)


def test_incrbyfloat_returns_exact_text(strata_server):
    c = strata_server.conn()
    assert c.call("INCRBYFLOAT", "k", "3.0e3") == b"3000"
    assert c.call("INCRBYFLOAT", "k", "0.5") == b"3000.5"
    assert isinstance(c.call("INCRBYFLOAT", "k", "inf"), RespError)


def test_incrbyfloat_integral_result_above_2_pow_53_prints_every_digit(both):
    # Found by the model-based test (test_model.py): Strata printed 9223372036854776000.
    both("SET", "k", "9223372036854775807")
    both("INCRBYFLOAT", "k", "1.5")
    both("GET", "k")
    both("HSET", "h", "f", "9223372036854775807")
    both("HINCRBYFLOAT", "h", "f", "1.5")
