//! Every error text a client can see, byte for byte as Redis 7 writes it (without the leading '-').
//! Handlers never spell an error inline; they use these, so a wording fix happens in one place.

use strata_resp::Frame;

/// An error reply with the given full text (prefix included, e.g. "ERR ..." or "WRONGTYPE ...").
pub fn err(text: impl Into<String>) -> Frame {
    Frame::Error(text.into().into())
}

pub const SYNTAX: &str = "ERR syntax error";
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const DB_INDEX: &str = "ERR DB index is out of range";
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
pub const OFFSET_OUT_OF_RANGE: &str = "ERR offset is out of range";
/// SETBIT/GETBIT offset that is not an integer, negative, or past proto-max-bulk-len bytes.
pub const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
/// SETBIT value other than 0 or 1.
pub const BIT_VALUE: &str = "ERR bit is not an integer or out of range";
/// BITPOS bit other than 0 or 1.
pub const BIT_ARGUMENT: &str = "ERR The bit argument must be 1 or 0.";
pub const BITOP_NOT_ONE_KEY: &str = "ERR BITOP NOT must be called with a single source key.";
/// A BITFIELD type other than i1..i64 or u1..u63.
pub const BITFIELD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
pub const BITFIELD_OVERFLOW: &str = "ERR Invalid OVERFLOW type specified";
pub const BITFIELD_RO_GET_ONLY: &str = "ERR BITFIELD_RO only supports the GET subcommand";
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";
pub const MULTI_NESTED: &str = "ERR MULTI calls can not be nested";
pub const EXEC_WITHOUT_MULTI: &str = "ERR EXEC without MULTI";
pub const DISCARD_WITHOUT_MULTI: &str = "ERR DISCARD without MULTI";
pub const WATCH_INSIDE_MULTI: &str = "ERR WATCH inside MULTI is not allowed";
/// A command with the `no_multi` flag (SHUTDOWN, PSYNC, SYNC) sent inside MULTI.
pub const NOT_IN_MULTI: &str = "ERR Command not allowed inside a transaction";
pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";
pub const NUMKEYS_NEGATIVE: &str = "ERR Number of keys can't be negative";
pub const NUMKEYS_TOO_MANY: &str = "ERR Number of keys can't be greater than number of args";
pub const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
pub const FUNCTION_NOT_FOUND: &str = "ERR Function not found";
pub const FCALL_RO_WRITE: &str = "ERR Can not execute a script with write flag using *_ro command.";
pub const FUNCTION_FLUSH_MODE: &str = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option";
pub const RESTORE_POLICY: &str =
    "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.";
pub const SCRIPT_KILLED: &str = "Script killed by user with SCRIPT KILL...";
/// A library whose top-level code ran past 500 ms (FUNCTION LOAD).
pub const FUNCTION_LOAD_TIMEOUT: &str = "FUNCTION LOAD timeout";
pub const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";
pub const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";
/// A command needs a key that an EVAL script running past `busy-reply-threshold` holds (and
/// SCRIPT KILL's answer while only a function could be killed).
pub const BUSY_SCRIPT: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// The same for a function (FCALL); FUNCTION KILL's answer while only a script could be killed.
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
pub const SHEBANG_INVALID: &str = "ERR Invalid script shebang";
pub const SHEBANG_INVALID_ENGINE: &str = "ERR Invalid engine in script shebang";

/// EVAL with a shebang naming another engine than `#!lua` (`engine` is the first word, `#!`
/// included).
pub fn shebang_unexpected_engine(engine: &str) -> String {
    format!("ERR Unexpected engine in script shebang: {engine}")
}

/// EVAL with a shebang flag Redis does not know.
pub fn shebang_unexpected_flag(flag: &str) -> String {
    format!("ERR Unexpected flag in script shebang: {flag}")
}

/// EVAL with a shebang option other than `flags=`.
pub fn shebang_unknown_option(option: &str) -> String {
    format!("ERR Unknown lua shebang option: {option}")
}

pub const LIBRARY_METADATA_MISSING: &str = "ERR Missing library metadata";
pub const LIBRARY_METADATA_INVALID: &str = "ERR Invalid library metadata";
pub const LIBRARY_NAME_TWICE: &str =
    "ERR Invalid metadata value, name argument was given multiple times";
pub const LIBRARY_NAME_MISSING: &str = "ERR Library name was not given";
pub const REGISTER_ARG_COUNT: &str = "ERR wrong number of arguments to redis.register_function";
pub const REGISTER_SINGLE_ARG: &str = "ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).";
pub const REGISTER_FIRST_ARG: &str =
    "ERR first argument to redis.register_function must be a string";
pub const REGISTER_SECOND_ARG: &str =
    "ERR second argument to redis.register_function must be a function";
pub const REGISTER_KEY_NOT_STRING: &str =
    "ERR named argument key given to redis.register_function is not a string";
pub const REGISTER_NAME_TYPE: &str =
    "ERR function_name argument given to redis.register_function must be a string";
pub const REGISTER_DESCRIPTION_TYPE: &str =
    "ERR description argument given to redis.register_function must be a string";
pub const REGISTER_CALLBACK_TYPE: &str =
    "ERR callback argument given to redis.register_function must be a function";
pub const REGISTER_FLAGS_TYPE: &str =
    "ERR flags argument to redis.register_function must be a table representing function flags";
pub const REGISTER_UNKNOWN_FLAG: &str = "ERR unknown flag given";
pub const REGISTER_UNKNOWN_ARG: &str = "ERR unknown argument given to redis.register_function";
pub const REGISTER_NO_NAME: &str = "ERR redis.register_function must get a function name argument";
pub const REGISTER_NO_CALLBACK: &str = "ERR redis.register_function must get a callback argument";

/// FUNCTION LOAD with a metadata word other than `name=...`.
pub fn library_metadata_value(value: &str) -> String {
    format!("ERR Invalid metadata value given: {value}")
}

/// FUNCTION LOAD naming an engine other than Lua (`#!<engine> name=...`).
pub fn engine_not_found(engine: &str) -> String {
    format!("ERR Engine '{engine}' not found")
}

/// EXEC refused as a whole: the transaction is discarded and `reason` (an error text) says why.
pub fn exec_abort_because(reason: &str) -> String {
    format!("EXECABORT Transaction discarded because of: {reason}")
}
pub const SCRIPT_FLUSH_MODE: &str = "ERR SCRIPT FLUSH only support SYNC|ASYNC option";
pub const SCRIPT_NO_ARGS: &str = "ERR Please specify at least one argument for this redis lib call";
/// `redis.call` and its kin reached when no script runs (kept by a script past its run).
pub const SCRIPT_NOT_RUNNING: &str =
    "ERR redis.call/pcall can only be called inside a script invocation";
/// A library registering two functions of one name.
pub const FUNCTION_EXISTS_IN_LIBRARY: &str = "ERR Function already exists in the library";
/// redis.register_function called by a function, after its library was loaded.
pub const REGISTER_AFTER_LOAD: &str =
    "ERR redis.register_function can only be called on FUNCTION LOAD command";
/// FCALL / FCALL_RO whose numkeys is not a number.
pub const FCALL_BAD_NUMKEYS: &str = "ERR Bad number of keys provided";
/// redis.sha1hex given other than one argument.
pub const SCRIPT_SHA1HEX_ARGS: &str = "ERR wrong number of arguments";
/// redis.error_reply / redis.status_reply given anything but one string.
pub const SCRIPT_REPLY_ARGS: &str = "ERR wrong number or type of arguments";
pub const SCRIPT_BAD_ARG: &str = "ERR Lua redis lib command arguments must be strings or integers";
/// `redis.acl_check_cmd` of a command that does not exist.
pub const SCRIPT_ACL_CHECK_INVALID: &str = "ERR Invalid command passed to redis.acl_check_cmd()";
pub const SCRIPT_UNKNOWN_COMMAND: &str = "ERR Unknown Redis command called from script";
pub const SCRIPT_WRONG_ARITY: &str = "ERR Wrong number of args calling Redis command from script";
pub const SCRIPT_NOT_ALLOWED: &str = "ERR This Redis command is not allowed from script";
pub const SCRIPT_WRITE_IN_RO: &str = "ERR Write commands are not allowed from read-only scripts.";
pub const NOAUTH: &str = "NOAUTH Authentication required.";
/// ACL: the user may not access a key of the command (Redis's processCommand).
pub const NOPERM_KEY: &str =
    "NOPERM this user has no permissions to access one of the keys used as arguments";
/// ACL: the user may not access a channel of the command.
pub const NOPERM_CHANNEL: &str =
    "NOPERM this user has no permissions to access one of the channels used as arguments";

/// ACL: the user may not run the command (its full name, `container|sub` for a subcommand).
pub fn noperm_command(name: &str) -> String {
    format!("NOPERM this user has no permissions to run the '{name}' command")
}

/// ACL: a queued command refused at EXEC, the rules having changed since it was queued.
pub fn noperm_at_exec(reason: &str) -> String {
    format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}")
}

/// SORT BY with a pattern, for a user who may not read every key.
pub const SORT_BY_DENIED: &str =
    "ERR BY option of SORT denied due to insufficient ACL permissions.";
/// SORT GET, for a user who may not read every key.
pub const SORT_GET_DENIED: &str =
    "ERR GET option of SORT denied due to insufficient ACL permissions.";
/// ACL SETUSER with a user name holding spaces.
pub const ACL_USERNAME_SPACES: &str = "ERR Usernames can't contain spaces or null characters";
/// ACL DELUSER default.
pub const ACL_DELETE_DEFAULT: &str = "ERR The 'default' user cannot be removed";
/// ACL LOAD / SAVE without `aclfile`.
pub const ACL_NO_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";
/// ACL SAVE that could not write the file.
pub const ACL_SAVE_FAILED: &str = "ERR There was an error trying to save the ACLs. Please check the server logs for more information";
/// ACL GENPASS with a bit count out of range.
pub const ACL_GENPASS_BITS: &str = "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096";

pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
pub const AUTH_NOT_CONFIGURED: &str = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
pub const NOPROTO: &str = "NOPROTO unsupported protocol version";
pub const PROTOCOL_VERSION_NOT_INTEGER: &str =
    "ERR Protocol version is not an integer or out of range";
pub const INVALID_CURSOR: &str = "ERR invalid cursor";
pub const TIMEOUT_NOT_FLOAT: &str = "ERR timeout is not a float or out of range";
pub const NX_XX_GT_LT: &str = "ERR NX and XX, GT or LT options at the same time are not compatible";
pub const GT_AND_LT: &str = "ERR GT and LT options at the same time are not compatible";
pub const LFU_NOT_SELECTED: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
pub const LCS_TOO_BIG: &str =
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
pub const DECREMENT_OVERFLOW: &str = "ERR decrement would overflow";
pub const LCS_NOT_STRINGS: &str = "ERR The specified keys must contain string values";
pub const LCS_LEN_AND_IDX: &str =
    "ERR If you want both the length and indexes, please just use IDX.";
pub const CLIENT_NAME_SPACES: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";
pub const INVALID_CLIENT_ID: &str = "ERR client-id should be greater than 0";
pub const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time";
pub const INVALID_FIRST_DB: &str = "ERR invalid first DB index";
pub const INVALID_SECOND_DB: &str = "ERR invalid second DB index";
pub const NO_SHUTDOWN_IN_PROGRESS: &str = "ERR No shutdown in progress.";
pub const GETKEYS_INVALID_COMMAND: &str = "ERR Invalid command specified";
pub const GETKEYS_BAD_ARITY: &str = "ERR Invalid number of arguments specified for command";
pub const GETKEYS_NO_KEYS: &str = "ERR The command has no key arguments";
pub const GETKEYS_INVALID_ARGS: &str = "ERR Invalid arguments specified for command";
pub const NO_SUCH_CLIENT: &str = "ERR No such client";
/// A write refused because the disk is full: Redis's reply when its AOF cannot be written
/// (`-MISCONF Errors writing to the AOF file: <strerror>`). Reads keep working meanwhile, and
/// writes succeed again once RocksDB has resumed by itself (see docs/reliability.md).
pub const DISK_FULL: &str = "MISCONF Errors writing to the AOF file: No space left on device";

/// "ERR wrong number of arguments for 'get' command".
pub fn wrong_arity(name: &str) -> Frame {
    err(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// "ERR unknown command 'foo', with args beginning with: 'a' 'b' ": the name up to 128 bytes, then
/// arguments while the argument text is shorter than 128 bytes, each cut to what is left of those 128.
pub fn unknown_command(argv: &[bytes::Bytes]) -> Frame {
    let mut args = String::new();
    for a in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push_str(&format!("'{}' ", sanitize(a, room)));
    }
    err(format!(
        "ERR unknown command '{}', with args beginning with: {args}",
        sanitize(&argv[0], 128)
    ))
}

/// "ERR unknown subcommand 'foo'. Try CONFIG HELP.".
pub fn unknown_subcommand(container: &str, sub: &[u8]) -> Frame {
    err(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        sanitize(sub, 128),
        container.to_ascii_uppercase()
    ))
}

/// "ERR invalid expire time in 'set' command".
pub fn invalid_expire(cmd: &str) -> Frame {
    err(format!("ERR invalid expire time in '{cmd}' command"))
}

/// Redis prints arguments in error messages with non-printable bytes replaced by spaces... it keeps
/// them verbatim up to a length; we replace CR/LF so the reply stays one line.
fn sanitize(b: &[u8], max: usize) -> String {
    let s: String = String::from_utf8_lossy(&b[..b.len().min(max)])
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    s
}

/// Maps a data-model error to its Redis reply.
pub fn from_db(e: strata::Error) -> Frame {
    match e {
        strata::Error::WrongType => err(WRONGTYPE),
        strata::Error::NotInteger => err(NOT_INTEGER),
        strata::Error::NotFloat => err(NOT_FLOAT),
        strata::Error::Overflow => err(OVERFLOW),
        strata::Error::NanOrInfinity => err(NAN_OR_INF),
        strata::Error::NoSuchKey => err(NO_SUCH_KEY),
        strata::Error::NotHll => err(HLL_NOT_VALID),
        strata::Error::CorruptHll => err(HLL_CORRUPT),
        strata::Error::DbIndexOutOfRange => err(DB_INDEX),
        strata::Error::StringTooLong => err(STRING_TOO_LONG),
        strata::Error::Locked(m) => err(format!("ERR {m}")),
        e @ (strata::Error::Missing(_)
        | strata::Error::NotStrata(_)
        | strata::Error::ReadOnly
        | strata::Error::Io(_)
        | strata::Error::BadDump(_)) => err(format!("ERR {e}")),
        strata::Error::BadRdb(_) => err(BAD_DATA_FORMAT),
        strata::Error::Corrupt(m) => err(format!("ERR corrupt data: {m}")),
        strata::Error::DiskFull => err(DISK_FULL),
        strata::Error::Storage(m) if m.contains("No space left on device") => err(DISK_FULL),
        strata::Error::Storage(m) => err(format!("ERR storage error: {m}")),
        strata::Error::Stream(e) => err(match e {
            strata::stream::StreamError::IdTooSmall => STREAM_ID_TOO_SMALL.to_string(),
            strata::stream::StreamError::Exhausted => STREAM_EXHAUSTED.to_string(),
            strata::stream::StreamError::SetIdTooSmall => XSETID_TOO_SMALL.to_string(),
            strata::stream::StreamError::EntriesAddedTooSmall => {
                XSETID_ENTRIES_ADDED_SMALL.to_string()
            }
            strata::stream::StreamError::MaxDeletedTooLarge => XSETID_MAX_DELETED.to_string(),
            strata::stream::StreamError::BusyGroup => BUSYGROUP.to_string(),
            strata::stream::StreamError::NoGroup => "NOGROUP No such key or consumer group".into(),
        }),
    }
}

// ----- DUMP / RESTORE -----

/// RESTORE onto an existing key without REPLACE.
pub const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
/// A RESTORE payload whose trailer (RDB version, CRC-64) is wrong.
pub const DUMP_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";
/// A RESTORE payload whose value does not decode.
pub const BAD_DATA_FORMAT: &str = "ERR Bad data format";
/// RESTORE with a negative TTL.
pub const INVALID_TTL: &str = "ERR Invalid TTL value, must be >= 0";
/// RESTORE with a negative IDLETIME.
pub const INVALID_IDLETIME: &str = "ERR Invalid IDLETIME value, must be >= 0";
/// RESTORE with a FREQ outside 0..=255.
pub const INVALID_FREQ: &str = "ERR Invalid FREQ value, must be >= 0 and <= 255";

// ----- HyperLogLog -----

/// A string used as a HyperLogLog that is not one (Redis sends it with a WRONGTYPE code).
pub const HLL_NOT_VALID: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
/// A HyperLogLog whose sparse registers don't add up.
pub const HLL_CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";
pub const PFDEBUG_NO_KEY: &str = "ERR The specified key does not exist";
pub const PFDEBUG_NOT_SPARSE: &str = "ERR HLL encoding is not sparse";

/// PFDEBUG with a subcommand other than GETREG, DECODE, ENCODING, TODENSE.
pub fn pfdebug_unknown(sub: &[u8]) -> String {
    format!(
        "ERR Unknown PFDEBUG subcommand '{}'",
        String::from_utf8_lossy(sub)
    )
}

// ----- sorted sets and lists -----

pub const ZADD_XX_AND_NX: &str = "ERR XX and NX options at the same time are not compatible";
pub const ZADD_GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
pub const ZADD_INCR_PAIR: &str = "ERR INCR option supports a single increment-element pair";
pub const SCORE_NAN: &str = "ERR resulting score is not a number (NaN)";
pub const MIN_MAX_NOT_FLOAT: &str = "ERR min or max is not a float";
pub const MIN_MAX_NOT_LEX: &str = "ERR min or max not valid string range item";
pub const LIMIT_NEEDS_BYSCORE_OR_BYLEX: &str =
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
pub const WITHSCORES_WITH_BYLEX: &str =
    "ERR syntax error, WITHSCORES not supported in combination with BYLEX";
pub const OUT_OF_RANGE_MUST_BE_POSITIVE: &str = "ERR value is out of range, must be positive";
pub const VALUE_OUT_OF_RANGE: &str = "ERR value is out of range";
pub const NUMKEYS_NOT_POSITIVE: &str = "ERR numkeys should be greater than 0";
pub const COUNT_NOT_POSITIVE: &str = "ERR count should be greater than 0";
pub const WEIGHT_NOT_FLOAT: &str = "ERR weight value is not a float";
pub const LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";
pub const INDEX_OUT_OF_RANGE: &str = "ERR index out of range";
pub const LPOS_RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list";
pub const LPOS_COUNT_NEGATIVE: &str = "ERR COUNT can't be negative";
pub const LPOS_MAXLEN_NEGATIVE: &str = "ERR MAXLEN can't be negative";

// ----- geo -----

pub const GEO_UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";
pub const GEO_NEED_RADIUS: &str = "ERR need numeric radius";
pub const GEO_NEED_WIDTH: &str = "ERR need numeric width";
pub const GEO_NEED_HEIGHT: &str = "ERR need numeric height";
pub const GEO_RADIUS_NEGATIVE: &str = "ERR radius cannot be negative";
pub const GEO_BOX_NEGATIVE: &str = "ERR height or width cannot be negative";
pub const GEO_COUNT_NOT_POSITIVE: &str = "ERR COUNT must be > 0";
pub const GEO_MEMBER_UNKNOWN: &str = "ERR could not decode requested zset member";
pub const GEO_ANY_NEEDS_COUNT: &str = "ERR the ANY argument requires COUNT argument";

/// A GEOADD/GEORADIUS/FROMLONLAT position outside the limits, printed with C's `%f`.
pub fn geo_invalid_position(longitude: f64, latitude: f64) -> String {
    format!("ERR invalid longitude,latitude pair {longitude:.6},{latitude:.6}")
}

/// STORE / STOREDIST (or GEOSEARCHSTORE) with WITHDIST, WITHHASH or WITHCOORD.
pub fn geo_store_with_options(geosearchstore: bool) -> String {
    let what = if geosearchstore {
        "GEOSEARCHSTORE"
    } else {
        "STORE option in GEORADIUS"
    };
    format!("ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
}

/// GEOSEARCH without (or with both) FROMMEMBER and FROMLONLAT; `cmd` as the client spelled it.
pub fn geo_exactly_one_from(cmd: &[u8]) -> String {
    format!(
        "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
        String::from_utf8_lossy(cmd)
    )
}

/// GEOSEARCH without BYRADIUS or BYBOX; `cmd` as the client spelled it.
pub fn geo_exactly_one_by(cmd: &[u8]) -> String {
    format!(
        "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
        String::from_utf8_lossy(cmd)
    )
}

/// "ERR at least 1 input key is needed for 'zunion' command".
pub fn at_least_one_input_key(cmd: &str) -> Frame {
    err(format!(
        "ERR at least 1 input key is needed for '{cmd}' command"
    ))
}

/// "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807".
pub fn value_out_of_range_between(min: i64, max: i64) -> Frame {
    err(format!(
        "ERR value is out of range, value must between {min} and {max}"
    ))
}

// ----- hashes and sets -----

pub const HASH_NOT_INTEGER: &str = "ERR hash value is not an integer";
pub const HASH_NOT_FLOAT: &str = "ERR hash value is not a float";
pub const VALUE_NAN_OR_INF: &str = "ERR value is NaN or Infinity";
pub const NUMKEYS_GREATER_THAN_ARGS: &str =
    "ERR Number of keys can't be greater than number of args";

// ----- sort -----

pub const SORT_SCORE_NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

// ----- pub/sub -----

/// "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are
/// allowed in this context" (a RESP2 client in the subscribed state).
pub fn only_pubsub_allowed(cmd: &str) -> String {
    format!(
        "ERR Can't execute '{cmd}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )
}

/// "ERR unknown subcommand or wrong number of arguments for 'channels'. Try PUBSUB HELP.".
pub fn unknown_subcommand_or_arity(container: &str, sub: &[u8]) -> Frame {
    err(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        sanitize(sub, 128),
        container.to_ascii_uppercase()
    ))
}

// Replication.
pub const INVALID_MASTER_PORT: &str = "ERR Invalid master port";
pub const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
pub const READONLY_REPLICA: &str = "READONLY You can't write against a read only replica.";
pub const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
pub const LOADING: &str = "LOADING Redis is loading the dataset in memory";
pub const WAIT_ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.";
pub const MIGRATE_KEYS_WITH_KEY: &str =
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";
pub const MIGRATE_CONNECT: &str = "IOERR error or timeout connecting to the client";
pub const MIGRATE_WRITING: &str = "IOERR error or timeout writing to target instance";
pub const MIGRATE_READING: &str = "IOERR error or timeout reading to target instance";
/// Followed by the target's error line without its `-`.
pub const MIGRATE_TARGET_ERROR: &str = "ERR Target instance replied with error: ";

// ----- streams -----

pub const STREAM_INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
pub const STREAM_ID_TOO_SMALL: &str =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";
pub const STREAM_ID_ZERO: &str = "ERR The ID specified in XADD must be greater than 0-0";
pub const STREAM_EXHAUSTED: &str =
    "ERR The stream has exhausted the last possible ID, unable to add more items";
pub const STREAM_BAD_START: &str = "ERR invalid start ID for the interval";
pub const STREAM_BAD_END: &str = "ERR invalid end ID for the interval";
pub const STREAM_MAXLEN_AND_MINID: &str =
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
pub const STREAM_MAXLEN_NEGATIVE: &str = "ERR The MAXLEN argument must be >= 0.";
pub const STREAM_LIMIT_NEGATIVE: &str = "ERR The LIMIT argument must be >= 0.";
pub const STREAM_LIMIT_WITHOUT_STRATEGY: &str =
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy";
pub const STREAM_XTRIM_WITHOUT_STRATEGY: &str =
    "ERR syntax error, XTRIM must be called with a trimming strategy";
pub const STREAM_LIMIT_WITHOUT_APPROX: &str =
    "ERR syntax error, LIMIT cannot be used without the special ~ option";
pub const XSETID_TOO_SMALL: &str =
    "ERR The ID specified in XSETID is smaller than the target stream top item";
pub const XSETID_ENTRIES_ADDED_SMALL: &str =
    "ERR The entries_added specified in XSETID is smaller than the target stream length";
pub const XSETID_MAX_DELETED: &str =
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id";
pub const XSETID_ENTRIES_ADDED_NEGATIVE: &str = "ERR entries_added must be positive";
pub const BUSYGROUP: &str = "BUSYGROUP Consumer Group name already exists";
pub const ENTRIESREAD_NEGATIVE: &str = "ERR value for ENTRIESREAD must be positive or -1";
pub const XGROUP_NEEDS_KEY: &str = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";
pub const TIMEOUT_NOT_INTEGER: &str = "ERR timeout is not an integer or out of range";
pub const STREAM_UNBALANCED: &str =
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.";
pub const STREAM_GROUP_ONLY_XREADGROUP: &str =
    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.";
pub const STREAM_NOACK_ONLY_XREADGROUP: &str =
    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.";
pub const STREAM_MISSING_GROUP: &str = "ERR Missing GROUP option for XREADGROUP";
pub const STREAM_DOLLAR_IN_XREADGROUP: &str = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.";
pub const STREAM_GT_ONLY_XREADGROUP: &str = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.";
/// A blocked XREADGROUP whose group was destroyed.
pub const STREAM_GROUP_GONE: &str =
    "NOGROUP the consumer group this client was blocked on no longer exists";
/// A blocked XREADGROUP whose stream was deleted.
pub const STREAM_KEY_GONE: &str = "UNBLOCKED the stream key no longer exists";
pub const XCLAIM_MIN_IDLE: &str = "ERR Invalid min-idle-time argument for XCLAIM";
pub const XCLAIM_IDLE: &str = "ERR Invalid IDLE option argument for XCLAIM";
pub const XCLAIM_TIME: &str = "ERR Invalid TIME option argument for XCLAIM";
pub const XCLAIM_RETRYCOUNT: &str = "ERR Invalid RETRYCOUNT option argument for XCLAIM";
pub const XAUTOCLAIM_MIN_IDLE: &str = "ERR Invalid min-idle-time argument for XAUTOCLAIM";
pub const XAUTOCLAIM_COUNT: &str = "ERR COUNT must be > 0";

/// "ERR xread command is not allowed with BLOCK option from scripts" (the name as called).
pub fn stream_block_in_script(name: &[u8]) -> String {
    format!(
        "ERR {} command is not allowed with BLOCK option from scripts",
        String::from_utf8_lossy(name)
    )
}

/// "ERR Unrecognized XCLAIM option 'foo'".
pub fn xclaim_unknown_option(opt: &[u8]) -> String {
    format!(
        "ERR Unrecognized XCLAIM option '{}'",
        String::from_utf8_lossy(opt)
    )
}

// Introspection and client control.
pub const REPLICA_KEYSPACE: &str = "ERR Replica can't interact with the keyspace";
pub const PAUSE_MODE: &str = "ERR CLIENT PAUSE mode must be WRITE or ALL";
pub const UNBLOCK_REASON: &str = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR";

/// Sent (then the connection is closed) to a client not on the loopback interface while
/// protected mode is on and the default user has no password (Redis's `clientAcceptHandler`).
pub const PROTECTED_MODE_DENIED: &str = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.";
/// CLIENT TRACKING ... REDIRECT given twice.
pub const TRACKING_ONE_REDIRECT: &str = "ERR A client can only redirect to a single other client";
/// CLIENT TRACKING ... REDIRECT to a client that is not connected.
pub const TRACKING_NO_REDIRECT_CLIENT: &str =
    "ERR The client ID you want redirect to does not exist";
pub const TRACKING_PREFIX_NEEDS_BCAST: &str = "ERR PREFIX option requires BCAST mode to be enabled";
pub const TRACKING_BCAST_SWITCH: &str = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.";
pub const TRACKING_OPT_WITH_BCAST: &str = "ERR OPTIN and OPTOUT are not compatible with BCAST";
pub const TRACKING_OPTIN_AND_OPTOUT: &str = "ERR You can't specify both OPTIN mode and OPTOUT mode";
pub const TRACKING_OPT_SWITCH: &str = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.";
/// CLIENT CACHING without tracking on.
pub const CACHING_NOT_TRACKING: &str = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled";
pub const CACHING_YES_NEEDS_OPTIN: &str =
    "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.";
pub const CACHING_NO_NEEDS_OPTOUT: &str =
    "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.";
