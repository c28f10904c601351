//! Tests of the configuration: defaults, the file lexer and its errors, every value kind's
//! validation and error text, CONFIG GET/SET semantics, and CONFIG REWRITE round trips.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::file::{split_args, REWRITE_SIGNATURE};
use super::kinds::{format_memory, parse_int, parse_memory, repr};
use super::*;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A fresh, empty directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!(
            "strata-config-test-{label}-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn file(&self, name: &str, content: &str) -> PathBuf {
        let path = self.0.join(name);
        fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn get1(config: &Config, name: &str) -> String {
    match config.get(&[name.as_bytes()]).as_slice() {
        [(_, value)] => value.clone(),
        other => panic!("CONFIG GET {name} gave {other:?}"),
    }
}

fn file_error(text: &str) -> String {
    Config::default().parse_file_text(text).unwrap_err()
}

fn set_error(name: &str, value: &str) -> String {
    Config::default().set(name, value).unwrap_err()
}

#[test]
fn defaults_are_as_documented() {
    let c = Config::default();
    assert_eq!(c.port, 6379);
    assert_eq!(c.bind, vec!["127.0.0.1".to_string()]);
    assert_eq!(c.dir, PathBuf::from("./data"));
    assert_eq!(c.requirepass.clone().map(String::into_bytes), None);
    assert_eq!(c.appendfsync, AppendFsync::EverySec);
    assert_eq!(c.databases, 16);
    assert_eq!(c.maxclients, 10000);
    assert_eq!(c.timeout, 0);
    assert_eq!(c.loglevel.name(), "notice");
    assert_eq!(c.logfile, None);
    assert_eq!(c.proto_max_bulk_len, 512 * 1024 * 1024);
    assert_eq!(c.client_query_buffer_limit, 1024 * 1024 * 1024);
    assert_eq!(c.hz, 10);
    assert_eq!(c.tcp_keepalive, 300);
    assert_eq!(c.busy_reply_threshold, 5000);
    assert_eq!(get1(&c, "notify-keyspace-events"), "");
    assert_eq!(c.block_cache_size, 256 * 1024 * 1024);
    assert_eq!(c.write_buffer_size, 16 * 1024 * 1024);
    assert_eq!(c.compression, Compression::Lz4);
    assert_eq!(c.bgsave_path(), PathBuf::from("./data/backup"));
    assert_eq!(c.config_file, None);
    assert_eq!(get1(&c, "save"), "3600 1 300 100 60 10000");
    assert_eq!(get1(&c, "daemonize"), "no");
    assert_eq!(get1(&c, "maxmemory-policy"), "noeviction");
}

#[test]
fn every_directive_default_parses_and_names_are_unique_lowercase() {
    let mut seen = Vec::new();
    for d in DIRECTIVES {
        d.kind
            .parse(&split_set_value(d.kind, d.default))
            .unwrap_or_else(|e| panic!("default of {}: {e}", d.name));
        for spelling in d.spellings() {
            assert_eq!(spelling, spelling.to_ascii_lowercase());
            assert!(!seen.contains(&spelling), "{spelling} twice");
            seen.push(spelling);
        }
    }
}

#[test]
fn file_text_sets_values_with_comments_blank_lines_and_any_case() {
    let mut c = Config::default();
    c.parse_file_text(
        "# a comment\n\n   \t\nPORT 7000\r\n  bind 10.0.0.1 ::1  \nappendfsync ALWAYS\n\
         requirepass \"s3cret pass\"\nloglevel warning\nlogfile /var/log/strata.log\n\
         databases 4\ntimeout 30\nhz 20\ntcp-keepalive 60\ncompression zstd\n\
         block-cache-size 1gb\nwrite-buffer-size 32mb\nbgsave-dir /backups\n\
         maxclients 50\nnotify-keyspace-events Ex\nlua-time-limit 100\n",
    )
    .unwrap();
    assert_eq!(c.port, 7000);
    assert_eq!(c.bind, vec!["10.0.0.1".to_string(), "::1".to_string()]);
    assert_eq!(c.appendfsync, AppendFsync::Always);
    assert_eq!(
        c.requirepass.clone().map(String::into_bytes),
        Some(b"s3cret pass".to_vec())
    );
    assert_eq!(c.loglevel.name(), "warning");
    assert_eq!(c.logfile, Some(PathBuf::from("/var/log/strata.log")));
    assert_eq!(c.databases, 4);
    assert_eq!(c.timeout, 30);
    assert_eq!(c.hz, 20);
    assert_eq!(c.tcp_keepalive, 60);
    assert_eq!(c.compression, Compression::Zstd);
    assert_eq!(c.block_cache_size, 1 << 30);
    assert_eq!(c.write_buffer_size, 32 << 20);
    assert_eq!(c.bgsave_path(), PathBuf::from("/backups"));
    assert_eq!(c.maxclients, 50);
    assert_eq!(get1(&c, "notify-keyspace-events"), "xE");
    assert_eq!(c.busy_reply_threshold, 100);
}

#[test]
fn later_lines_override_earlier_ones() {
    let mut c = Config::default();
    c.parse_file_text("port 1\nport 2\nbind 1.1.1.1 2.2.2.2\nbind 3.3.3.3\n")
        .unwrap();
    assert_eq!(c.port, 2);
    assert_eq!(c.bind, vec!["3.3.3.3".to_string()]);
}

#[test]
fn quoting_follows_redis_split_rules() {
    let split = |s: &str| {
        split_args(s.as_bytes()).map(|v| {
            v.into_iter()
                .map(|a| String::from_utf8_lossy(&a).into_owned())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(split("a  b\tc"), Some(args(&["a", "b", "c"])));
    assert_eq!(split(r#"x "a b" 'c d'"#), Some(args(&["x", "a b", "c d"])));
    assert_eq!(split(r#""\n\t\"\\\x41\q""#), Some(args(&["\n\t\"\\Aq"])));
    assert_eq!(split(r"'it\'s' '\n'"), Some(args(&["it's", "\\n"])));
    assert_eq!(split(r#"foo"bar" """#), Some(args(&["foobar", ""])));
    assert_eq!(split(r#""unterminated"#), None);
    assert_eq!(split("'unterminated"), None);
    assert_eq!(split(r#""closed"x"#), None);
    assert_eq!(split(""), Some(vec![]));
    let mut c = Config::default();
    c.parse_file_text("requirepass 'a \"b\" c'\nlogfile \"\"\n")
        .unwrap();
    assert_eq!(
        c.requirepass.clone().map(String::into_bytes),
        Some(b"a \"b\" c".to_vec())
    );
    assert_eq!(c.logfile, None);
}

#[test]
fn repr_round_trips_through_split() {
    let tricky = "q\"uo\\te\n\t\r\x07\x08 é\u{1}";
    let quoted = repr(tricky.as_bytes());
    assert_eq!(quoted, r#""q\"uo\\te\n\t\r\a\b \xc3\xa9\x01""#);
    assert_eq!(
        split_args(quoted.as_bytes()),
        Some(vec![tricky.as_bytes().to_vec()])
    );
}

#[test]
fn unknown_directive_is_reported_with_line_and_text() {
    assert_eq!(
        file_error("port 1\n# comment\n  foo bar  \n"),
        "\n*** FATAL CONFIG FILE ERROR (Strata) ***\nReading the configuration file, \
         at line 3\n>>> 'foo bar'\nBad directive or wrong number of arguments"
    );
}

#[test]
fn file_errors_say_why() {
    let reason = |text: &str| {
        file_error(text)
            .lines()
            .last()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(reason("port"), "wrong number of arguments");
    assert_eq!(reason("port 1 2"), "wrong number of arguments");
    assert_eq!(
        reason("port \"1"),
        "Unbalanced quotes in configuration line"
    );
    assert_eq!(
        reason("port abc"),
        "argument couldn't be parsed into an integer"
    );
    assert_eq!(
        reason("port 70000"),
        "argument must be between 0 and 65535 inclusive"
    );
    assert_eq!(reason("appendonly maybe"), "argument must be 'yes' or 'no'");
    assert_eq!(
        reason("appendfsync sometimes"),
        "argument(s) must be one of the following: everysec, always, no"
    );
    assert_eq!(
        reason("block-cache-size 1tb"),
        "argument must be a memory value"
    );
    assert_eq!(
        reason("requirepass \"\\xff\""),
        "argument must be valid UTF-8"
    );
    assert_eq!(
        reason("dbfilename a/b.rdb"),
        "dbfilename can't be a path, just a filename"
    );
    assert_eq!(
        reason("appendfilename \"\""),
        "appendfilename can't be empty"
    );
    assert_eq!(reason("dir \"\""), "argument can't be empty");
}

#[test]
fn failed_file_text_changes_nothing() {
    let mut c = Config::default();
    assert!(c.parse_file_text("port 1\nfoo bar\n").is_err());
    assert_eq!(c.port, 6379);
}

#[test]
fn integers_are_strict_like_redis() {
    assert_eq!(parse_int("0"), Some(0));
    assert_eq!(parse_int("-12"), Some(-12));
    assert_eq!(parse_int("9223372036854775807"), Some(i64::MAX));
    for bad in [
        "",
        "-",
        "-0",
        "007",
        "+5",
        " 5",
        "5 ",
        "1e3",
        "9223372036854775808",
        "0x10",
    ] {
        assert_eq!(parse_int(bad), None, "{bad:?}");
    }
    let reason = "argument couldn't be parsed into an integer";
    assert!(set_error("timeout", "007").ends_with(reason));
    assert!(set_error("timeout", "-1").ends_with("between 0 and 2147483647 inclusive"));
}

#[test]
fn memory_units_are_decimal_without_b_and_binary_with_b() {
    let cases = [
        ("123", 123),
        ("5b", 5),
        ("1k", 1000),
        ("1kb", 1024),
        ("1K", 1000),
        ("1KB", 1024),
        ("1m", 1_000_000),
        ("1mb", 1 << 20),
        ("1Mb", 1 << 20),
        ("2g", 2_000_000_000),
        ("2gb", 2 << 30),
        ("2GB", 2 << 30),
        ("", 0),
        ("18446744073709551615", u64::MAX),
    ];
    for (text, bytes) in cases {
        assert_eq!(parse_memory(text), Some(bytes), "{text}");
    }
    for bad in [
        "1tb",
        "-1",
        "1.5mb",
        " 1mb",
        "1 mb",
        "0x10",
        "18446744073709551616",
        "99999999999gb",
    ] {
        assert_eq!(parse_memory(bad), None, "{bad}");
    }
    let mut c = Config::default();
    c.parse_file_text("block-cache-size 2GB").unwrap();
    assert_eq!(c.block_cache_size, 2 << 30);
    assert_eq!(get1(&c, "block-cache-size"), "2147483648");
}

#[test]
fn memory_bounds_are_enforced() {
    assert_eq!(
        set_error("proto-max-bulk-len", "1000"),
        "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - \
         argument must be between 1048576 and 9223372036854775807 inclusive"
    );
    assert!(set_error("client-query-buffer-limit", "1k").contains("between 1048576"));
    assert!(set_error("maxmemory", "lots").ends_with("argument must be a memory value"));
    let mut c = Config::default();
    c.set("proto-max-bulk-len", "1mb").unwrap();
    assert_eq!(c.proto_max_bulk_len, 1 << 20);
}

#[test]
fn databases_fit_in_one_byte() {
    let mut c = Config::default();
    c.parse_file_text("databases 256").unwrap();
    assert_eq!(c.databases, 256);
    assert!(file_error("databases 257").ends_with("between 1 and 256 inclusive"));
    assert!(file_error("databases 0").ends_with("between 1 and 256 inclusive"));
}

#[test]
fn maxclients_must_be_positive() {
    assert!(file_error("maxclients 0").ends_with("between 1 and 4294967295 inclusive"));
    assert!(file_error("maxclients 4294967296").ends_with("between 1 and 4294967295 inclusive"));
}

#[test]
fn hz_is_clamped_like_redis() {
    let mut c = Config::default();
    c.set("hz", "1000").unwrap();
    assert_eq!(c.hz, 500);
    c.set("hz", "0").unwrap();
    assert_eq!(c.hz, 1);
    assert!(set_error("hz", "-1").ends_with("between 0 and 2147483647 inclusive"));
}

#[test]
fn daemonize_yes_is_rejected_and_no_accepted() {
    let mut c = Config::default();
    c.parse_file_text("daemonize no").unwrap();
    let err = file_error("daemonize yes");
    assert!(err.contains(">>> 'daemonize yes'"));
    assert!(err.contains("foreground"), "{err}");
    assert!(file_error("daemonize maybe").ends_with("argument must be 'yes' or 'no'"));
    assert!(set_error("daemonize", "no").ends_with("can't set immutable config"));
}

#[test]
fn ignored_redis_directives_are_stored_and_reported() {
    let mut c = Config::default();
    c.parse_file_text(
        "appendonly yes\nprotected-mode no\ntcp-backlog 128\nsupervised systemd\n\
         pidfile /run/x.pid\ndbfilename x.rdb\nappendfilename x.aof\nmaxmemory 1gb\n\
         maxmemory-policy allkeys-lru\nalways-show-logo yes\nset-proc-title no\n\
         slave-read-only no\nio-threads 4\nsave 900 1\n",
    )
    .unwrap();
    let expected = [
        ("appendonly", "yes"),
        ("protected-mode", "no"),
        ("tcp-backlog", "128"),
        ("supervised", "systemd"),
        ("pidfile", "/run/x.pid"),
        ("dbfilename", "x.rdb"),
        ("appendfilename", "x.aof"),
        ("maxmemory", "1073741824"),
        ("maxmemory-policy", "allkeys-lru"),
        ("always-show-logo", "yes"),
        ("set-proc-title", "no"),
        ("replica-read-only", "no"),
        ("io-threads", "4"),
        ("save", "900 1"),
    ];
    for (name, value) in expected {
        assert_eq!(get1(&c, name), value, "{name}");
    }
    assert!(file_error("io-threads 200").ends_with("between 1 and 128 inclusive"));
    assert!(file_error("supervised maybe")
        .ends_with("must be one of the following: upstart, systemd, auto, no"));
}

#[test]
fn save_lines_accumulate_in_a_file_and_replace_on_set() {
    let mut c = Config::default();
    c.parse_file_text("save 900 1\nsave \"300 10\"\n").unwrap();
    assert_eq!(get1(&c, "save"), "900 1 300 10");
    c.parse_file_text("save \"\"\n").unwrap();
    assert_eq!(get1(&c, "save"), "");
    c.set("save", "100 5 200 6").unwrap();
    assert_eq!(get1(&c, "save"), "100 5 200 6");
    c.set("save", "").unwrap();
    assert_eq!(get1(&c, "save"), "");
    for bad in ["100", "100 x", "0 1", "100  5", "100 -1", " 100 5"] {
        assert!(
            set_error("save", bad).ends_with("Invalid save parameters"),
            "{bad:?}"
        );
    }
}

#[test]
fn bind_takes_up_to_sixteen_addresses() {
    let mut c = Config::default();
    c.parse_file_text("bind \"127.0.0.1 ::1\"").unwrap();
    assert_eq!(c.bind, args(&["127.0.0.1", "::1"]));
    c.parse_file_text("bind * -::*").unwrap();
    assert_eq!(c.bind, args(&["*", "-::*"]));
    let many = (1..=17)
        .map(|i| format!("10.0.0.{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(file_error(&format!("bind {many}")).ends_with("Too many bind addresses specified."));
    assert!(file_error("bind \"\"").ends_with("would not listen anywhere"));
    assert!(file_error("bind").ends_with("would not listen anywhere"));
    assert!(file_error("bind 1.2.3.4 \"\"").ends_with("bind addresses can't be empty"));
}

#[test]
fn keyspace_events_are_normalized_like_redis() {
    let mut c = Config::default();
    c.set("notify-keyspace-events", "KEA").unwrap();
    assert_eq!(get1(&c, "notify-keyspace-events"), "AKE");
    c.set("notify-keyspace-events", "Kxmn").unwrap();
    assert_eq!(get1(&c, "notify-keyspace-events"), "xnKm");
    c.set("notify-keyspace-events", "g$lshzxetdE").unwrap();
    assert_eq!(get1(&c, "notify-keyspace-events"), "AE");
    c.set("notify-keyspace-events", "").unwrap();
    assert_eq!(get1(&c, "notify-keyspace-events"), "");
    assert_eq!(
        set_error("notify-keyspace-events", "Kq"),
        "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - \
         Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
    );
}

#[test]
fn enums_are_case_insensitive_and_list_choices() {
    let mut c = Config::default();
    c.set("appendfsync", "NO").unwrap();
    assert_eq!(c.appendfsync, AppendFsync::No);
    assert_eq!(get1(&c, "appendfsync"), "no");
    c.set("loglevel", "WARNING").unwrap();
    assert_eq!(c.loglevel.name(), "warning");
    assert_eq!(
        set_error("loglevel", "loud"),
        "ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) \
         must be one of the following: debug, verbose, notice, warning"
    );
    assert!(
        file_error("compression snappy").ends_with("must be one of the following: none, lz4, zstd")
    );
    c.parse_file_text("compression none").unwrap();
    assert_eq!(c.compression, Compression::None);
}

#[test]
fn args_override_the_file() {
    let dir = TempDir::new("args");
    let path = dir.file("strata.conf", "port 7000\nloglevel debug\ntimeout 5\n");
    let c = Config::from_args(&args(&[
        path.to_str().unwrap(),
        "--port",
        "7001",
        "--save",
        "900",
        "1",
        "--timeout 9",
        "--requirepass",
        "--not-an-option",
    ]))
    .unwrap();
    assert_eq!(c.port, 7001);
    assert_eq!(c.loglevel.name(), "debug");
    assert_eq!(get1(&c, "save"), "900 1");
    assert_eq!(c.timeout, 9);
    assert_eq!(
        c.requirepass.clone().map(String::into_bytes),
        Some(b"--not-an-option".to_vec())
    );
    assert_eq!(c.config_file.as_deref(), Some(path.as_path()));
}

#[test]
fn args_alone_work_without_a_file() {
    let c = Config::from_args(&args(&["--bind", "0.0.0.0", "::", "--databases", "2"])).unwrap();
    assert_eq!(c.bind, args(&["0.0.0.0", "::"]));
    assert_eq!(c.databases, 2);
    assert_eq!(c.config_file, None);
    assert_eq!(Config::from_args(&[]).unwrap().port, 6379);
}

#[test]
fn hot_cache_size_is_a_quarter_of_memory_unless_sized() {
    let c = Config::default();
    assert_eq!(get1(&c, "hot-cache-size"), "25%");
    assert_eq!(c.hot_cache_bytes(Some(24 << 30)), 6 << 30);
    // Memory unknown (not Linux): the old fixed default.
    assert_eq!(c.hot_cache_bytes(None), 256 << 20);
    let c = Config::from_args(&args(&["--hot-cache-size", "10%"])).unwrap();
    assert_eq!(c.hot_cache_bytes(Some(1000)), 100);
    let c = Config::from_args(&args(&["--hot-cache-size", "64mb"])).unwrap();
    assert_eq!(get1(&c, "hot-cache-size"), "67108864");
    assert_eq!(c.hot_cache_bytes(Some(1 << 30)), 64 << 20);
    let c = Config::from_args(&args(&["--hot-cache-size", "0"])).unwrap();
    assert_eq!(c.hot_cache_bytes(Some(1 << 30)), 0);
    assert!(Config::from_args(&args(&["--hot-cache-size", "101%"]))
        .unwrap_err()
        .contains("percentage argument must be less or equal to 100"));
}

#[test]
fn bare_save_arg_means_no_save_points() {
    let c = Config::from_args(&args(&["--save", "--port", "1"])).unwrap();
    assert_eq!(get1(&c, "save"), "");
    assert_eq!(c.port, 1);
    let c = Config::from_args(&args(&["--port", "1", "--save"])).unwrap();
    assert_eq!(get1(&c, "save"), "");
    let c = Config::from_args(&args(&["--save", ""])).unwrap();
    assert_eq!(get1(&c, "save"), "");
}

#[test]
fn arg_errors_are_reported_as_lines_after_the_file_like_redis() {
    assert_eq!(
        Config::from_args(&args(&["--foo", "bar"])).unwrap_err(),
        "\n*** FATAL CONFIG FILE ERROR (Strata) ***\nReading the configuration file, \
         at line 2\n>>> 'foo \"bar\"'\nBad directive or wrong number of arguments"
    );
    let err = Config::from_args(&args(&["--requirepass", "--x", "--port", "abc"])).unwrap_err();
    assert!(
        err.ends_with("at line 3\n>>> 'port \"abc\"'\nargument couldn't be parsed into an integer"),
        "{err}"
    );
    let err = Config::from_args(&args(&["--port"])).unwrap_err();
    assert!(
        err.ends_with(">>> 'port'\nwrong number of arguments"),
        "{err}"
    );
    let err = Config::from_args(&args(&["--port", "1", "2"])).unwrap_err();
    assert!(
        err.ends_with(">>> 'port \"1\" \"2\"'\nwrong number of arguments"),
        "{err}"
    );
    let err = Config::from_args(&args(&["-x"])).unwrap_err();
    assert!(
        err.ends_with(">>> '\"-x\"'\nBad directive or wrong number of arguments"),
        "{err}"
    );

    let dir = TempDir::new("argline");
    let path = dir.file("s.conf", "port 1\n");
    let err = Config::from_args(&args(&[path.to_str().unwrap(), "--foo", "bar"])).unwrap_err();
    assert!(
        err.contains("Reading the configuration file, at line 3\n"),
        "{err}"
    );
}

#[test]
fn file_errors_name_the_file() {
    let dir = TempDir::new("fileline");
    let path = dir.file("s.conf", "port 1\n\nport x\n");
    let err = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap_err();
    assert_eq!(
        err,
        format!(
            "\n*** FATAL CONFIG FILE ERROR (Strata) ***\nReading the configuration file \
             '{}', at line 3\n>>> 'port x'\nargument couldn't be parsed into an integer",
            path.display()
        )
    );
}

#[test]
fn missing_config_file_is_reported() {
    let dir = TempDir::new("missing");
    let path = dir.0.join("nope.conf");
    assert_eq!(
        Config::from_args(&args(&[path.to_str().unwrap()])).unwrap_err(),
        format!(
            "Fatal error, can't open config file '{}': No such file or directory",
            path.display()
        )
    );
}

#[test]
fn output_buffer_limit_values_set_only_the_classes_they_name() -> Result<(), String> {
    let mut c = Config::from_args(&args(&[
        "--client-output-buffer-limit",
        "normal 1mb 512kb 10",
        "--client-output-buffer-limit",
        "pubsub 0 0 0",
    ]))?;
    assert_eq!(
        c.client_output_buffer_limit.normal,
        [1 << 20, 512 << 10, 10]
    );
    c.set_many(&[(
        "client-output-buffer-limit".to_string(),
        "replica 1gb 0 0".to_string(),
    )])?;
    assert_eq!(
        c.get(&[b"client-output-buffer-limit"])[0].1,
        "normal 1048576 524288 10 slave 1073741824 0 0 pubsub 0 0 0"
    );
    let (row, _) = lookup("client-output-buffer-limit").ok_or("no row")?;
    assert_eq!(
        c.file_lines(row),
        args(&[
            "client-output-buffer-limit normal 1mb 512kb 10",
            "client-output-buffer-limit slave 1gb 0 0",
            "client-output-buffer-limit pubsub 0 0 0",
        ])
    );
    Ok(())
}

#[test]
fn config_get_matches_names_and_aliases_by_glob_ignoring_case() {
    let c = Config::default();
    let names =
        |pattern: &[u8]| -> Vec<String> { c.get(&[pattern]).into_iter().map(|(n, _)| n).collect() };
    assert_eq!(
        names(b"*limit*"),
        args(&[
            "client-query-buffer-limit",
            "client-output-buffer-limit",
            "lua-time-limit",
            "compaction-rate-limit",
            "cluster-link-sendbuf-limit",
        ])
    );
    assert_eq!(
        c.get(&[b"client-*-limit"]),
        vec![
            (
                "client-query-buffer-limit".to_string(),
                "1073741824".to_string()
            ),
            (
                "client-output-buffer-limit".to_string(),
                "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".to_string()
            ),
        ]
    );
    assert_eq!(
        names(b"*THRESHOLD"),
        args(&["busy-reply-threshold", "latency-monitor-threshold"])
    );
    assert_eq!(
        names(b"*read-only"),
        args(&["replica-read-only", "slave-read-only"])
    );
    // Every name and every alias once, hidden directives left out.
    let shown: usize = DIRECTIVES
        .iter()
        .filter(|d| d.access != Access::Hidden)
        .map(|d| d.spellings().count())
        .sum();
    assert_eq!(c.get(&[b"*"]).len(), shown);
    assert_eq!(
        c.get(&[b"p?rt"]),
        vec![("port".to_string(), "6379".to_string())]
    );
    assert!(c.get(&[b"nothing-like-this*"]).is_empty());
    assert_eq!(get1(&c, "protected-mode"), "yes");
    assert_eq!(get1(&c, "proto-max-bulk-len"), "536870912");
}

/// The names `CONFIG GET *` lists on Redis 7.0.15 (built with TLS).
const REDIS_7_0_NAMES: &[&str] = &[
    "acl-pubsub-default",
    "aclfile",
    "acllog-max-len",
    "active-defrag-cycle-max",
    "active-defrag-cycle-min",
    "active-defrag-ignore-bytes",
    "active-defrag-max-scan-fields",
    "active-defrag-threshold-lower",
    "active-defrag-threshold-upper",
    "active-expire-effort",
    "activedefrag",
    "activerehashing",
    "always-show-logo",
    "aof-disable-auto-gc",
    "aof-load-truncated",
    "aof-rewrite-incremental-fsync",
    "aof-timestamp-enabled",
    "aof-use-rdb-preamble",
    "aof_rewrite_cpulist",
    "appenddirname",
    "appendfilename",
    "appendfsync",
    "appendonly",
    "auto-aof-rewrite-min-size",
    "auto-aof-rewrite-percentage",
    "bgsave_cpulist",
    "bind",
    "bind-source-addr",
    "bio_cpulist",
    "busy-reply-threshold",
    "client-output-buffer-limit",
    "client-query-buffer-limit",
    "cluster-allow-pubsubshard-when-down",
    "cluster-allow-reads-when-down",
    "cluster-allow-replica-migration",
    "cluster-announce-bus-port",
    "cluster-announce-hostname",
    "cluster-announce-ip",
    "cluster-announce-port",
    "cluster-announce-tls-port",
    "cluster-config-file",
    "cluster-enabled",
    "cluster-link-sendbuf-limit",
    "cluster-migration-barrier",
    "cluster-node-timeout",
    "cluster-port",
    "cluster-preferred-endpoint-type",
    "cluster-replica-no-failover",
    "cluster-replica-validity-factor",
    "cluster-require-full-coverage",
    "cluster-slave-no-failover",
    "cluster-slave-validity-factor",
    "crash-log-enabled",
    "crash-memcheck-enabled",
    "daemonize",
    "databases",
    "dbfilename",
    "dir",
    "disable-thp",
    "dynamic-hz",
    "enable-debug-command",
    "enable-module-command",
    "enable-protected-configs",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "hash-max-ziplist-entries",
    "hash-max-ziplist-value",
    "hll-sparse-max-bytes",
    "hz",
    "ignore-warnings",
    "io-threads",
    "io-threads-do-reads",
    "jemalloc-bg-thread",
    "latency-monitor-threshold",
    "latency-tracking",
    "latency-tracking-info-percentiles",
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "lfu-decay-time",
    "lfu-log-factor",
    "list-compress-depth",
    "list-max-listpack-size",
    "list-max-ziplist-size",
    "logfile",
    "loglevel",
    "lua-time-limit",
    "masterauth",
    "masteruser",
    "maxclients",
    "maxmemory",
    "maxmemory-clients",
    "maxmemory-eviction-tenacity",
    "maxmemory-policy",
    "maxmemory-samples",
    "min-replicas-max-lag",
    "min-replicas-to-write",
    "min-slaves-max-lag",
    "min-slaves-to-write",
    "no-appendfsync-on-rewrite",
    "notify-keyspace-events",
    "oom-score-adj",
    "oom-score-adj-values",
    "pidfile",
    "port",
    "proc-title-template",
    "propagation-error-behavior",
    "protected-mode",
    "proto-max-bulk-len",
    "rdb-del-sync-files",
    "rdb-save-incremental-fsync",
    "rdbchecksum",
    "rdbcompression",
    "repl-backlog-size",
    "repl-backlog-ttl",
    "repl-disable-tcp-nodelay",
    "repl-diskless-load",
    "repl-diskless-sync",
    "repl-diskless-sync-delay",
    "repl-diskless-sync-max-replicas",
    "repl-ping-replica-period",
    "repl-ping-slave-period",
    "repl-timeout",
    "replica-announce-ip",
    "replica-announce-port",
    "replica-announced",
    "replica-ignore-disk-write-errors",
    "replica-ignore-maxmemory",
    "replica-lazy-flush",
    "replica-priority",
    "replica-read-only",
    "replica-serve-stale-data",
    "replicaof",
    "requirepass",
    "sanitize-dump-payload",
    "save",
    "server_cpulist",
    "set-max-intset-entries",
    "set-proc-title",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
    "shutdown-timeout",
    "slave-announce-ip",
    "slave-announce-port",
    "slave-ignore-maxmemory",
    "slave-lazy-flush",
    "slave-priority",
    "slave-read-only",
    "slave-serve-stale-data",
    "slaveof",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "socket-mark-id",
    "stop-writes-on-bgsave-error",
    "stream-node-max-bytes",
    "stream-node-max-entries",
    "supervised",
    "syslog-enabled",
    "syslog-facility",
    "syslog-ident",
    "tcp-backlog",
    "tcp-keepalive",
    "timeout",
    "tls-auth-clients",
    "tls-ca-cert-dir",
    "tls-ca-cert-file",
    "tls-cert-file",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-cluster",
    "tls-dh-params-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-port",
    "tls-prefer-server-ciphers",
    "tls-protocols",
    "tls-replication",
    "tls-session-cache-size",
    "tls-session-cache-timeout",
    "tls-session-caching",
    "tracking-table-max-keys",
    "unixsocket",
    "unixsocketperm",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "zset-max-ziplist-entries",
    "zset-max-ziplist-value",
];

/// Directives Redis does not list for `*` (HIDDEN_CONFIG) but answers by exact name.
const REDIS_7_0_HIDDEN: &[&str] = &[
    "use-exit-on-panic",
    "rdb-key-save-delay",
    "key-load-delay",
    "watchdog-period",
    "loading-process-events-interval-bytes",
];

#[test]
fn every_redis_7_0_parameter_is_known_and_only_strata_adds_others() {
    let c = Config::default();
    let mut listed: Vec<String> = c.get(&[b"*"]).into_iter().map(|(n, _)| n).collect();
    for name in REDIS_7_0_NAMES {
        assert!(
            listed.iter().any(|n| n == name),
            "{name} missing from CONFIG GET *"
        );
    }
    for name in REDIS_7_0_HIDDEN {
        assert!(
            !listed.iter().any(|n| n == name),
            "{name} is hidden in Redis"
        );
        assert_eq!(c.get(&[name.as_bytes()]).len(), 1, "{name} by exact name");
    }
    listed.retain(|n| !REDIS_7_0_NAMES.contains(&n.as_str()));
    listed.sort();
    assert_eq!(
        listed,
        args(&[
            "background-jobs",
            "bgsave-dir",
            "blob-min-size",
            "block-cache-size",
            "compaction-rate-limit",
            "compression",
            "direct-io-background",
            "direct-io-reads",
            "hot-cache-size",
            "index-high-priority",
            "l0-slowdown-writes-trigger",
            "l0-stop-writes-trigger",
            "memory-tier",
            "memory-tier-dirty-size",
            "metrics-bind",
            "metrics-port",
            "min-free-disk",
            "partitioned-index",
            "uncompressed-levels",
            "write-buffer-size",
            "zstd-dictionary-size",
        ])
    );
}

#[test]
fn config_get_without_wildcards_echoes_the_name_as_given() {
    let c = Config::default();
    assert_eq!(
        c.get(&[b"MaxClients"]),
        vec![("MaxClients".to_string(), "10000".to_string())]
    );
    assert_eq!(
        c.get(&[b"LUA-TIME-LIMIT"]),
        vec![("LUA-TIME-LIMIT".to_string(), "5000".to_string())]
    );
    assert!(c.get(&[b"nope"]).is_empty());
    assert!(c.get(&[b""]).is_empty());
}

#[test]
fn config_get_many_reports_each_name_once() {
    let c = Config::default();
    let found = c.get(&[b"port", b"PORT", b"p?rt", b"hz"]);
    assert_eq!(
        found,
        vec![
            ("port".to_string(), "6379".to_string()),
            ("hz".to_string(), "10".to_string())
        ]
    );
}

#[test]
fn config_set_changes_mutable_values_by_any_spelling() {
    let mut c = Config::default();
    c.set("MAXCLIENTS", "5").unwrap();
    assert_eq!(c.maxclients, 5);
    c.set("lua-time-limit", "10").unwrap();
    assert_eq!(c.busy_reply_threshold, 10);
    assert_eq!(get1(&c, "busy-reply-threshold"), "10");
    c.set("requirepass", "pw").unwrap();
    assert_eq!(
        c.requirepass.clone().map(String::into_bytes),
        Some(b"pw".to_vec())
    );
    c.set("requirepass", "").unwrap();
    assert_eq!(c.requirepass.clone().map(String::into_bytes), None);
    c.set("bgsave-dir", "snapshots").unwrap();
    assert_eq!(c.bgsave_path(), PathBuf::from("./data/snapshots"));
    c.set("protected-mode", "YES").unwrap();
    assert_eq!(get1(&c, "protected-mode"), "yes");
}

#[test]
fn config_set_errors_match_redis() {
    assert_eq!(
        set_error("foo", "1"),
        "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
    );
    assert_eq!(
        set_error("maxclients", "abc"),
        "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument \
         couldn't be parsed into an integer"
    );
    // Value errors name the directive as spelled in the table, immutability as typed.
    assert_eq!(
        set_error("MaxClients", "abc"),
        "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument \
         couldn't be parsed into an integer"
    );
    assert!(set_error("Lua-Time-Limit", "x").contains("argument 'lua-time-limit'"));
    assert_eq!(
        set_error("port", "7000"),
        "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable \
         config"
    );
    assert!(set_error("PORT", "1").contains("argument 'port'"));
    assert!(set_error("TCP-BACKLOG", "1").contains("argument 'TCP-BACKLOG'"));
    // What Redis may change but Strata can't is accepted unchanged, as Redis accepts it.
    let mut c = Config::default();
    c.set("port", "6379").unwrap();
    c.set("bind", "127.0.0.1").unwrap();
    c.set("repl-backlog-size", "256mb").unwrap();
    c.set("compression", "LZ4").unwrap();
    assert!(c.set("repl-backlog-ttl", "1").is_err());
    assert_eq!(
        set_error("dir", "/tmp"),
        "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"
    );
    for (name, value) in [
        ("bind", "1"),
        ("databases", "1"),
        ("logfile", "1"),
        ("block-cache-size", "1"),
        ("compression", "zstd"),
    ] {
        assert!(
            set_error(name, value).ends_with("can't set immutable config"),
            "{name}"
        );
    }
    assert_eq!(
        set_error("protected-mode", "maybe"),
        "ERR CONFIG SET failed (possibly related to argument 'protected-mode') - argument \
         must be 'yes' or 'no'"
    );
}

#[test]
fn config_set_many_is_all_or_nothing() {
    let mut c = Config::default();
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    };
    let err = c
        .set_many(&pairs(&[("maxclients", "5"), ("hz", "abc")]))
        .unwrap_err();
    assert!(err.contains("argument 'hz'"), "{err}");
    assert_eq!(c.maxclients, 10000);
    c.set_many(&pairs(&[("maxclients", "5"), ("hz", "20")]))
        .unwrap();
    assert_eq!((c.maxclients, c.hz), (5, 20));
    // The first bad name wins, in order.
    let err = c
        .set_many(&pairs(&[
            ("maxclients", "6"),
            ("foo", "1"),
            ("databases", "3"),
        ]))
        .unwrap_err();
    assert_eq!(
        err,
        "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
    );
    let err = c
        .set_many(&pairs(&[("databases", "3"), ("foo", "1")]))
        .unwrap_err();
    assert!(
        err.ends_with("'databases') - can't set immutable config"),
        "{err}"
    );
    let err = c
        .set_many(&pairs(&[("maxclients", "6"), ("MAXCLIENTS", "7")]))
        .unwrap_err();
    assert_eq!(
        err,
        "ERR CONFIG SET failed (possibly related to argument 'MAXCLIENTS') - duplicate \
         parameter"
    );
    assert_eq!(c.maxclients, 5);
    // Like Redis, a name and its alias are distinct parameters; the later one wins.
    c.set_many(&pairs(&[
        ("lua-time-limit", "1"),
        ("busy-reply-threshold", "2"),
    ]))
    .unwrap();
    assert_eq!(c.busy_reply_threshold, 2);
    c.set_many(&[]).unwrap();
}

#[test]
fn debug_output_redacts_the_password() {
    let mut c = Config::default();
    c.set("requirepass", "hunter2").unwrap();
    let shown = format!("{c:?}");
    assert!(!shown.contains("hunter2"));
    assert!(shown.contains("requirepass: \"<redacted>\""), "{shown}");
    assert!(shown.contains("port: \"6379\""), "{shown}");
}

#[test]
fn rewrite_without_a_config_file_fails() {
    assert_eq!(
        Config::default().rewrite().unwrap_err(),
        "ERR The server is running without a config file"
    );
}

#[test]
fn rewrite_updates_in_place_keeps_comments_and_round_trips() {
    let dir = TempDir::new("rewrite");
    let original = "# Strata test config\nport 7000\nmaxclients 10\n\n# scripts\n\
                    lua-time-limit 100\nmaxclients 20\n  # indented comment\n\
                    save 900 1\nsave 300 10\nlogfile \"\"\n";
    let path = dir.file("strata.conf", original);
    let mut c = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
    assert_eq!(c.maxclients, 20);
    c.set("maxclients", "77").unwrap();
    c.set("requirepass", "p\"q\\x y").unwrap();
    c.set("notify-keyspace-events", "KEA").unwrap();
    c.set("proto-max-bulk-len", "2mb").unwrap();
    c.set("loglevel", "warning").unwrap();
    c.set("save", "").unwrap();
    c.rewrite().unwrap();
    let written = fs::read_to_string(&path).unwrap();
    assert_eq!(
        written,
        "# Strata test config\nport 7000\nmaxclients 77\n\n# scripts\n\
         busy-reply-threshold 100\n  # indented comment\nsave \"\"\nlogfile \"\"\n\n\
         # Generated by CONFIG REWRITE\nrequirepass \"p\\\"q\\\\x y\"\nloglevel warning\n\
         proto-max-bulk-len 2mb\nnotify-keyspace-events \"AKE\"\n"
    );
    let reread = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
    assert_eq!(
        format!("{:?}", reread.get(&[b"*"])),
        format!("{:?}", c.get(&[b"*"]))
    );

    // A second rewrite reuses the lines and the signature.
    let mut c = reread;
    c.set("maxclients", "10000").unwrap();
    c.set("save", "60 5 120 6").unwrap();
    c.set("timeout", "3").unwrap();
    c.rewrite().unwrap();
    let written = fs::read_to_string(&path).unwrap();
    assert_eq!(written.matches(REWRITE_SIGNATURE).count(), 1);
    assert!(written.contains("\nmaxclients 10000\n"));
    assert!(written.contains("\nsave 60 5\nsave 120 6\nlogfile"));
    assert!(written.ends_with("\ntimeout 3\n"), "{written}");
    let reread = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
    assert_eq!(
        format!("{:?}", reread.get(&[b"*"])),
        format!("{:?}", c.get(&[b"*"]))
    );
}

#[test]
fn rewrite_of_defaults_leaves_the_file_alone() {
    let dir = TempDir::new("noop");
    let original = "# only comments\n\n# here\n";
    let path = dir.file("strata.conf", original);
    let c = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
    c.rewrite().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), original);
}

#[test]
fn rewrite_keeps_lines_it_does_not_understand() {
    let dir = TempDir::new("unknown");
    let path = dir.file("strata.conf", "port 1\n");
    let mut c = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
    // Edited behind the server's back.
    fs::write(&path, "include other.conf\nport 1\r\nbroken \"quote\n").unwrap();
    c.set("hz", "50").unwrap();
    c.rewrite().unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "include other.conf\nport 1\nbroken \"quote\n\n# Generated by CONFIG REWRITE\nhz 50\n"
    );
}

#[test]
fn rewrite_creates_a_missing_file_and_formats_memory() {
    let dir = TempDir::new("create");
    let path = dir.file("strata.conf", "");
    let mut c = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
    fs::remove_file(&path).unwrap();
    c.set("maxmemory", "3000000").unwrap();
    c.set("proto-max-bulk-len", "3gb").unwrap();
    c.set("client-query-buffer-limit", "1025kb").unwrap();
    c.rewrite().unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "# Generated by CONFIG REWRITE\nproto-max-bulk-len 3gb\n\
         client-query-buffer-limit 1025kb\nmaxmemory 3000000\n"
    );
    assert_eq!(format_memory(0), "0");
    assert_eq!(format_memory(1023), "1023");
}

#[test]
fn rewrite_reports_io_errors_like_redis() {
    let dir = TempDir::new("ioerr");
    let mut c = Config {
        config_file: Some(dir.0.join("no-such-dir").join("strata.conf")),
        ..Config::default()
    };
    c.set("hz", "11").unwrap();
    assert_eq!(
        c.rewrite().unwrap_err(),
        "ERR Rewriting config file: No such file or directory"
    );
}

#[test]
fn differences_md_lists_exactly_the_directives_that_change_nothing() {
    let doc = include_str!("../../../../docs/differences.md");
    let section = doc
        .split("<!-- inert-config:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- inert-config:end -->").next())
        .expect("docs/differences.md has the inert-config list");
    let mut listed: Vec<&str> = section.split('`').skip(1).step_by(2).collect();
    listed.sort_unstable();
    let mut inert: Vec<&str> = DIRECTIVES
        .iter()
        .filter(|d| matches!(d.home, Home::Inert))
        .map(|d| d.name)
        .collect();
    inert.sort_unstable();
    assert_eq!(listed, inert);
}

#[test]
fn every_default_reads_back_through_its_field() {
    // A row bound to a field of another type would drop its value: the default must survive
    // the trip through the field and show as the table writes it.
    let c = Config::default();
    for (row, d) in DIRECTIVES.iter().enumerate() {
        let parsed = d
            .kind
            .parse(&split_set_value(d.kind, d.default))
            .unwrap_or_else(|e| panic!("default of {}: {e}", d.name));
        assert_eq!(c.value(row), parsed, "{}", d.name);
        if let Home::Field(field) = d.home {
            let mut settings = Settings::default();
            assert!(
                (field.set)(&mut settings, parsed),
                "{} fits its field",
                d.name
            );
        }
    }
}

#[test]
fn ziplist_names_are_aliases_of_the_listpack_ones() {
    let mut c = Config::default();
    c.set("zset-max-ziplist-entries", "7").unwrap();
    assert_eq!(get1(&c, "zset-max-listpack-entries"), "7");
    c.set("hash-max-listpack-value", "1kb").unwrap();
    assert_eq!(get1(&c, "hash-max-ziplist-value"), "1024");
    c.set("list-max-ziplist-size", "-3").unwrap();
    assert_eq!(get1(&c, "list-max-listpack-size"), "-3");
    assert_eq!(
        set_error("ZSET-MAX-ZIPLIST-ENTRIES", "x"),
        "ERR CONFIG SET failed (possibly related to argument 'zset-max-ziplist-entries') - \
         argument couldn't be parsed into an integer"
    );
    assert!(set_error("hash-max-listpack-entries", "-1")
        .ends_with("argument must be between 0 and 9223372036854775807 inclusive"));
}

#[test]
fn percentages_and_octal_numbers_read_and_show_like_redis() {
    let mut c = Config::default();
    c.set("maxmemory-clients", "10%").unwrap();
    assert_eq!(get1(&c, "maxmemory-clients"), "10%");
    c.set("maxmemory-clients", "1mb").unwrap();
    assert_eq!(get1(&c, "maxmemory-clients"), "1048576");
    assert!(set_error("maxmemory-clients", "101%")
        .ends_with("percentage argument must be less or equal to 100"));
    assert!(set_error("maxmemory-clients", "-5%")
        .ends_with("argument must be a memory or percent value"));
    c.parse_file_text("unixsocketperm 700").unwrap();
    assert_eq!(get1(&c, "unixsocketperm"), "700");
    assert!(file_error("unixsocketperm 1000").ends_with("between 0 and 777 inclusive"));
    assert!(
        file_error("unixsocketperm 9").ends_with("argument couldn't be parsed as an octal number")
    );
}

#[test]
fn multi_word_enumerations_and_lists_read_like_redis() {
    let mut c = Config::default();
    assert_eq!(get1(&c, "shutdown-on-sigint"), "default");
    c.set("shutdown-on-sigint", "NOW save").unwrap();
    assert_eq!(get1(&c, "shutdown-on-sigint"), "save now");
    assert!(set_error("shutdown-on-sigint", "save nosave")
        .ends_with("shutdown options SAVE and NOSAVE can't be used simultaneously"));
    assert!(set_error("shutdown-on-sigterm", "")
        .ends_with("argument(s) must be one of the following: default, save, nosave, now, force"));
    c.set("oom-score-adj", "relative").unwrap();
    assert_eq!(get1(&c, "oom-score-adj"), "yes");
    c.set("oom-score-adj-values", "-1 +2 3").unwrap();
    assert_eq!(get1(&c, "oom-score-adj-values"), "-1 2 3");
    assert!(set_error("oom-score-adj-values", "1 2").ends_with("wrong number of arguments"));
    c.set("latency-tracking-info-percentiles", "50 99.900 100")
        .unwrap();
    assert_eq!(get1(&c, "latency-tracking-info-percentiles"), "50 99.9 100");
    c.set("latency-tracking-info-percentiles", "").unwrap();
    assert_eq!(get1(&c, "latency-tracking-info-percentiles"), "");
    assert!(set_error("latency-tracking-info-percentiles", "nan")
        .ends_with("Invalid latency-tracking-info-percentiles parameters"));
}

#[test]
fn protected_and_hidden_directives_behave_like_redis() {
    assert!(set_error("dbfilename", "x.rdb").ends_with("can't set protected config"));
    let mut c = Config::default();
    c.parse_file_text("enable-protected-configs yes").unwrap();
    c.set("dbfilename", "x.rdb").unwrap();
    assert_eq!(get1(&c, "dbfilename"), "x.rdb");
    // Strata can't move its data directory, protected or not.
    assert!(c
        .set("dir", "/tmp")
        .unwrap_err()
        .ends_with("can't set immutable config"));
    c.set("key-load-delay", "5").unwrap();
    assert_eq!(get1(&c, "key-load-delay"), "5");
    assert!(c.get(&[b"key-load-*"]).is_empty());
}

#[test]
fn text_checks_and_deprecated_directives_follow_redis() {
    assert!(set_error("cluster-announce-hostname", "a_b")
        .ends_with("Hostnames may only contain alphanumeric characters, hyphens or dots"));
    for bad in ["{title}", "{nope}", "{title", "x {"] {
        assert!(
            set_error("proc-title-template", bad)
                .ends_with("template format is invalid or contains unknown variables"),
            "{bad}"
        );
    }
    let mut c = Config::default();
    c.set("proc-title-template", "{{ {title} {port}").unwrap();
    c.parse_file_text("list-max-ziplist-entries 5\nlua-replicate-commands yes\n")
        .unwrap();
    assert!(file_error("list-max-ziplist-entries 5 6")
        .ends_with("Bad directive or wrong number of arguments"));
    assert!(set_error("list-max-ziplist-entries", "5").contains("Unknown option"));
}
