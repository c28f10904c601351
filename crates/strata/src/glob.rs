//! Glob-style pattern matching with exactly the semantics of Redis's `stringmatchlen`, the
//! matcher behind `KEYS`, `SCAN ... MATCH`, `PSUBSCRIBE` and `CONFIG GET`.
//!
//! Supported syntax: `*` (any run of bytes), `?` (any one byte), `[abc]` (a set), `[^abc]` (a
//! negated set), `[a-z]` (a range, also written backwards as `[z-a]`) and `\x` (the byte `x`
//! taken literally, outside or inside a set). Matching is binary safe: both pattern and subject
//! are arbitrary bytes. Redis's corner cases are kept on purpose so that clients see the same
//! answers as from Redis, among them: a lone `*` does not match the empty string (every pattern
//! but the empty one fails against it), an unterminated set such as `[abc` runs to the end of the
//! pattern, `[^` at the end matches any byte, `\` escapes inside a set compare case-sensitively
//! even in `nocase` mode, and range bounds are compared as C `char`s, which are signed on the
//! x86-64 and Linux builds this mirrors (so `[a-\xff]` means `\xff..=a`, i.e. -1..=97).
//!
//! Unlike the recursive C original this is a loop with a single backtrack point (the most recent
//! `*`), which is exactly what Redis's `skipLongerMatches` shortcut reduces its recursion to: when
//! the rest of the pattern after a `*` matches at no later position, no earlier `*` can help
//! either. The cost is therefore at most proportional to `pattern.len() * string.len()` for any
//! pattern (no exponential blow-up on `a*a*a*...b`), and there is no recursion to overflow the
//! stack, so the nesting limit newer Redis versions impose (1000 levels of `*`) is not needed.

/// Returns whether `string` matches the glob `pattern`, like Redis's
/// `stringmatchlen(pattern, string, nocase)`. With `nocase`, ASCII letters compare without
/// regard to case (as C's `tolower` in the "C" locale); other bytes compare exactly.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let (p, s) = (pattern, string);
    // Redis's main loop only runs while both pattern and string are non-empty, so against the
    // empty string nothing but the empty pattern matches, not even "*".
    if s.is_empty() {
        return p.is_empty();
    }
    let (mut pi, mut si) = (0usize, 0usize);
    // After a `*`: where the rest of the pattern starts and the string position it was last
    // tried at. Only the most recent star is ever retried (see the module docs).
    let mut backtrack: Option<(usize, usize)> = None;
    loop {
        // Invariant: si < s.len().
        let consumed = match p.get(pi).copied() {
            None => false, // pattern used up with string left over
            Some(b'*') => {
                while p.get(pi + 1) == Some(&b'*') {
                    pi += 1;
                }
                if pi + 1 == p.len() {
                    return true; // a trailing star matches whatever (non-empty) rest remains
                }
                pi += 1;
                backtrack = Some((pi, si));
                continue;
            }
            Some(b'?') => {
                pi += 1;
                true
            }
            Some(b'[') => {
                let (matched, next) = match_set(p, pi + 1, s[si], nocase);
                pi = next;
                matched
            }
            Some(b'\\') if pi + 1 < p.len() => {
                pi += 2;
                same_byte(p[pi - 1], s[si], nocase)
            }
            Some(c) => {
                pi += 1;
                same_byte(c, s[si], nocase)
            }
        };
        if consumed {
            si += 1;
            if si < s.len() {
                continue;
            }
            // String used up: trailing stars may match nothing, anything else fails.
            while p.get(pi) == Some(&b'*') {
                pi += 1;
            }
            if pi == p.len() {
                return true;
            }
        }
        // Mismatch: let the last star swallow one more byte, if one is left for the rest.
        match backtrack {
            Some((star_pi, star_si)) if star_si + 1 < s.len() => {
                backtrack = Some((star_pi, star_si + 1));
                pi = star_pi;
                si = star_si + 1;
            }
            _ => return false,
        }
    }
}

/// Byte equality, ignoring ASCII case when `nocase`.
fn same_byte(a: u8, b: u8, nocase: bool) -> bool {
    a == b || (nocase && a.eq_ignore_ascii_case(&b))
}

/// Matches byte `c` against the set whose body starts at `p[i]` (just after the `[`). Returns
/// whether it matched and the index just past the set (past the `]`, or the pattern's end when
/// the set is unterminated).
fn match_set(p: &[u8], mut i: usize, c: u8, nocase: bool) -> (bool, usize) {
    let negate = p.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    loop {
        let left = p.len() - i; // i never passes p.len()
        if left >= 2 && p[i] == b'\\' {
            // Escaped byte: compared exactly, even in nocase mode (as Redis does).
            i += 1;
            matched |= p[i] == c;
        } else if left >= 1 && p[i] == b']' {
            break;
        } else if left == 0 {
            // Unterminated set: stop on the last byte so the step below lands on the end.
            i -= 1;
            break;
        } else if left >= 3 && p[i + 1] == b'-' {
            matched |= in_range(p[i], p[i + 2], c, nocase);
            i += 2;
        } else {
            matched |= same_byte(p[i], c, nocase);
        }
        i += 1;
    }
    (matched != negate, i + 1)
}

/// Redis's range test: bounds and byte are C `char`s (signed), the bounds are swapped if
/// reversed, and then, with `nocase`, all three are lower-cased (after the swap, so `[Z-a]`
/// matches nothing in nocase mode, exactly as in Redis).
fn in_range(start: u8, end: u8, c: u8, nocase: bool) -> bool {
    let as_char = |b: u8| {
        let b = if nocase { b.to_ascii_lowercase() } else { b };
        i32::from(b as i8)
    };
    let (lo, hi) = if (start as i8) > (end as i8) {
        (end, start)
    } else {
        (start, end)
    };
    (as_char(lo)..=as_char(hi)).contains(&as_char(c))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    fn m(pattern: &str, string: &str) -> bool {
        glob_match(pattern.as_bytes(), string.as_bytes(), false)
    }

    fn mi(pattern: &str, string: &str) -> bool {
        glob_match(pattern.as_bytes(), string.as_bytes(), true)
    }

    #[test]
    fn literal_patterns_match_only_themselves() {
        assert!(m("hello", "hello"));
        assert!(!m("hello", "hell"));
        assert!(!m("hell", "hello"));
        assert!(!m("hello", "Hello"));
        assert!(m("", ""));
        assert!(!m("", "a"));
    }

    #[test]
    fn star_matches_any_run_of_bytes() {
        assert!(m("*", "anything"));
        assert!(m("h*o", "hello"));
        assert!(m("h*o", "ho"));
        assert!(m("h*", "h"));
        assert!(m("*llo", "hello"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(m("a**b", "ab"));
        assert!(m("*a*", "a"));
        assert!(m("a*b", "abab"));
        assert!(!m("a*b", "abac"));
    }

    #[test]
    fn star_alone_does_not_match_the_empty_string_like_redis() {
        assert!(!m("*", ""));
        assert!(!m("**", ""));
        assert!(!m("?", ""));
        assert!(m("a*", "a"));
        assert!(m("a**", "a"));
    }

    #[test]
    fn question_mark_matches_exactly_one_byte() {
        assert!(m("h?llo", "hello"));
        assert!(m("h?llo", "hallo"));
        assert!(!m("h?llo", "hllo"));
        assert!(!m("h?llo", "heello"));
        assert!(m("???", "abc"));
    }

    #[test]
    fn sets_match_listed_bytes() {
        assert!(m("h[ae]llo", "hello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(!m("h[]llo", "hllo"));
    }

    #[test]
    fn negated_sets_match_other_bytes() {
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(!m("h[^e]llo", "hllo"));
    }

    #[test]
    fn ranges_match_inclusive_and_reversed() {
        assert!(m("[a-c]", "a"));
        assert!(m("[a-c]", "b"));
        assert!(m("[a-c]", "c"));
        assert!(!m("[a-c]", "d"));
        assert!(m("[c-a]", "b"));
        assert!(m("[0-9x]", "x"));
        assert!(m("[^0-9]", "x"));
        assert!(!m("[^0-9]", "5"));
    }

    #[test]
    fn range_bounds_compare_as_signed_chars_like_redis_on_x86() {
        // 0xff is -1 as a C char, so [a-\xff] is the range -1..=97.
        assert!(glob_match(b"[a-\xff]", b"\x00", false));
        assert!(glob_match(b"[a-\xff]", b"a", false));
        assert!(!glob_match(b"[a-\xff]", b"b", false));
        assert!(!glob_match(b"[a-\xff]", b"\x90", false));
        assert!(glob_match(b"[\x80-\xff]", b"\x90", false));
        assert!(!glob_match(b"[\x80-\xff]", b"a", false));
    }

    #[test]
    fn trailing_dash_is_a_range_up_to_the_closing_bracket() {
        // "[a-]" is the range a..=']' and leaves the set unterminated.
        assert!(!m("[a-]", "-"));
        assert!(m("[a-]", "a"));
        assert!(m("[-a]", "-"));
        // "[]" is an empty set, which matches nothing.
        assert!(!m("[]-a]", "]"));
        assert!(!m("[]", "]"));
    }

    #[test]
    fn unterminated_sets_run_to_the_end_of_the_pattern() {
        assert!(m("[abc", "b"));
        assert!(!m("[abc", "bc"));
        assert!(!m("[", "a"));
        assert!(m("[^", "a"));
        assert!(!m("[^", "ab"));
        assert!(!m("a[", "a"));
    }

    #[test]
    fn backslash_escapes_special_bytes() {
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("\\?", "?"));
        assert!(m("\\[a]", "[a]"));
        assert!(m("a\\\\b", "a\\b"));
        assert!(m("[\\]]", "]"));
        assert!(m("[\\^a]", "^"));
        // A trailing lone backslash is literal.
        assert!(m("a\\", "a\\"));
        assert!(m("[\\", "\\"));
    }

    #[test]
    fn nocase_ignores_ascii_case() {
        assert!(mi("HeLLo", "hello"));
        assert!(mi("h*O", "HELLO"));
        assert!(mi("[A-C]", "b"));
        assert!(mi("[abc]", "B"));
        assert!(mi("[^abc]", "d"));
        assert!(!mi("[^abc]", "B"));
        assert!(!m("[A-C]", "b"));
    }

    #[test]
    fn nocase_keeps_redis_quirks() {
        // Escapes inside sets stay case-sensitive.
        assert!(!mi("[\\A]", "a"));
        assert!(mi("\\A", "a"));
        // Ranges are swapped before lower-casing: Z-a becomes z..=a, which is empty.
        assert!(!mi("[Z-a]", "z"));
        assert!(m("[Z-a]", "_"));
        // Non-ASCII bytes are never folded.
        assert!(!glob_match("É".as_bytes(), "é".as_bytes(), true));
    }

    #[test]
    fn matching_is_binary_safe() {
        assert!(glob_match(b"a\x00*", b"a\x00b\xff", false));
        assert!(!glob_match(b"a\x00", b"a", false));
        assert!(glob_match(b"?", b"\x00", false));
        assert!(glob_match(b"[\x00-\x05]", b"\x03", false));
        assert!(glob_match(b"\xff*\xfe", b"\xff\x00\xfe", false));
    }

    #[test]
    fn pathological_patterns_finish_quickly() {
        let string = vec![b'a'; 10_000];
        let mut pattern = b"a*".repeat(2_000);
        pattern.push(b'b');
        let started = std::time::Instant::now();
        assert!(!glob_match(&pattern, &string, false));
        let mut pattern = b"*a".repeat(2_000);
        pattern.push(b'*');
        assert!(glob_match(&pattern, &string, false));
        assert!(!glob_match(&b"*?".repeat(20_000), &string, false));
        assert!(glob_match(&b"*?".repeat(5_000), &string, false));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn deep_star_nesting_does_not_overflow_the_stack() {
        let pattern = b"*x".repeat(200_000);
        assert!(glob_match(&pattern, &b"x".repeat(200_000), false));
        assert!(!glob_match(&pattern, &b"x".repeat(199_999), false));
    }
}
