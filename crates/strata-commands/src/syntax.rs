//! A command's argument grammar, written in the notation of the Redis documentation, and its
//! translation into the `arguments` array of COMMAND DOCS.
//!
//! The notation, with two small additions so that every argument can be named as Redis names it:
//!
//! - `name` (starts with a lowercase letter): an argument; its type follows from the name (`key`,
//!   `destination` are keys, `count` an integer, `score` a double...), or is given after a colon:
//!   `min:double`. Types: `key`, `string`, `integer`, `double`, `unix-time`, `pattern`.
//! - `TOKEN` (anything else): a literal word. Followed by one argument it is that argument's token
//!   (`EX seconds`); by several, a block of them introduced by the token (`LIMIT offset count`);
//!   followed by `<...>`, the token of that group (`TYPE <NORMAL | PUBSUB>`); alone, a pure token.
//! - `[ ... ]` optional, `< ... >` required; alternatives separated by `|` make a oneof, several
//!   items without `|` a block.
//! - `x [x ...]` repeats `x` (an item or several): the bracket that ends in `...` marks what
//!   precedes it as multiple.
//! - Naming: a bracket may begin with `name:` to name what it makes (`[condition: NX | XX]`,
//!   `[change: CH]`). Without it, a block is named after its parts joined with `_` (`key_value`),
//!   a oneof after its alternatives, a pure token after its lowercased token.

use strata_resp::Frame;

/// The type of one argument, as COMMAND DOCS names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    Key,
    String,
    Integer,
    Double,
    UnixTime,
    Pattern,
    PureToken,
    OneOf,
    Block,
}

impl ArgType {
    /// The name COMMAND DOCS uses.
    pub fn as_str(self) -> &'static str {
        match self {
            ArgType::Key => "key",
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::UnixTime => "unix-time",
            ArgType::Pattern => "pattern",
            ArgType::PureToken => "pure-token",
            ArgType::OneOf => "oneof",
            ArgType::Block => "block",
        }
    }

    fn from_annotation(s: &str) -> Option<ArgType> {
        Some(match s {
            "key" => ArgType::Key,
            "string" => ArgType::String,
            "integer" => ArgType::Integer,
            "double" => ArgType::Double,
            "unix-time" => ArgType::UnixTime,
            "pattern" => ArgType::Pattern,
            _ => return None,
        })
    }

    /// The type an argument named `name` has unless the syntax says otherwise.
    pub fn infer(name: &str) -> ArgType {
        match name {
            "key" | "destination" | "source" | "newkey" => ArgType::Key,
            "count" | "numkeys" | "seconds" | "milliseconds" | "index" | "start" | "stop"
            | "end" | "offset" | "increment" | "decrement" | "rank" | "num-matches" | "len"
            | "cursor" | "db" | "destination-db" | "index1" | "index2" | "protover" | "weight"
            | "client-id" => ArgType::Integer,
            "score" | "min" | "max" | "timeout" => ArgType::Double,
            "pattern" => ArgType::Pattern,
            n if n.starts_with("unix-time") => ArgType::UnixTime,
            _ => ArgType::String,
        }
    }
}

/// One argument of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    pub kind: ArgType,
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
    /// The token is repeated with every repetition (`[GET pattern [GET pattern ...]]`).
    pub multiple_token: bool,
    /// The parts of a oneof or a block.
    pub children: Vec<Arg>,
}

impl Arg {
    fn new(name: String, kind: ArgType) -> Arg {
        Arg {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
            multiple_token: false,
            children: Vec::new(),
        }
    }

    fn block(children: Vec<Arg>) -> Arg {
        let name = joined(&children);
        Arg {
            children,
            ..Arg::new(name, ArgType::Block)
        }
    }
}

fn joined(args: &[Arg]) -> String {
    args.iter()
        .map(|a| a.name.as_str())
        .collect::<Vec<_>>()
        .join("_")
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok<'a> {
    Open(char),
    Close(char),
    Bar,
    Ellipsis,
    Word(&'a str),
}

fn lex(s: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b'[' | b'<' => {
                out.push(Tok::Open(b[i] as char));
                i += 1;
            }
            b']' | b'>' => {
                out.push(Tok::Close(b[i] as char));
                i += 1;
            }
            b'|' => {
                out.push(Tok::Bar);
                i += 1;
            }
            _ if s[i..].starts_with("...") => {
                out.push(Tok::Ellipsis);
                i += 3;
            }
            _ => {
                let start = i;
                while i < b.len()
                    && !b[i].is_ascii_whitespace()
                    && !matches!(b[i], b'[' | b']' | b'<' | b'>' | b'|')
                    && !s[i..].starts_with("...")
                {
                    i += 1;
                }
                out.push(Tok::Word(&s[start..i]));
            }
        }
    }
    out
}

struct Parser<'a> {
    toks: Vec<Tok<'a>>,
    pos: usize,
}

fn is_placeholder(w: &str) -> bool {
    w.as_bytes()[0].is_ascii_lowercase()
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&Tok<'a>> {
        self.toks.get(self.pos)
    }

    /// A sequence of items, up to `|`, a closing bracket or the end.
    fn seq(&mut self) -> Result<Vec<Arg>, String> {
        let mut items: Vec<Arg> = Vec::new();
        while let Some(t) = self.peek().cloned() {
            match t {
                Tok::Bar | Tok::Close(_) | Tok::Ellipsis => break,
                Tok::Word(w) if is_placeholder(w) => {
                    self.pos += 1;
                    items.push(placeholder(w));
                }
                Tok::Word(w) => {
                    self.pos += 1;
                    let mut bound = Vec::new();
                    while let Some(Tok::Word(p)) = self.peek() {
                        if !is_placeholder(p) {
                            break;
                        }
                        bound.push(placeholder(p));
                        self.pos += 1;
                    }
                    if bound.is_empty() && self.peek() == Some(&Tok::Open('<')) {
                        // `TYPE <NORMAL | MASTER>`: the token introduces the required group.
                        self.pos += 1;
                        let mut inner = Vec::new();
                        self.group('<', &mut inner)?;
                        let mut arg = inner.pop().ok_or("empty group")?;
                        arg.token = Some(w.to_string());
                        items.push(arg);
                        continue;
                    }
                    let mut arg = match bound.len() {
                        0 => Arg::new(w.to_ascii_lowercase(), ArgType::PureToken),
                        1 => bound.pop().expect("one bound argument"),
                        _ => Arg::block(bound),
                    };
                    arg.token = Some(w.to_string());
                    items.push(arg);
                }
                Tok::Open(open) => {
                    self.pos += 1;
                    self.group(open, &mut items)?;
                }
            }
        }
        Ok(items)
    }

    /// A bracketed group (the opening bracket already read); pushes what it makes onto `items`.
    fn group(&mut self, open: char, items: &mut Vec<Arg>) -> Result<(), String> {
        let mut name = None;
        if let Some(Tok::Word(w)) = self.peek() {
            if let Some(n) = w.strip_suffix(':') {
                name = Some(n.to_string());
                self.pos += 1;
            }
        }
        let mut alts = vec![self.seq()?];
        while self.peek() == Some(&Tok::Bar) {
            self.pos += 1;
            alts.push(self.seq()?);
        }
        let repeat = self.peek() == Some(&Tok::Ellipsis);
        if repeat {
            self.pos += 1;
        }
        let close = if open == '[' { ']' } else { '>' };
        if self.peek() != Some(&Tok::Close(close)) {
            return Err(format!("expected '{close}' at token {}", self.pos));
        }
        self.pos += 1;
        if alts.iter().any(|a| a.is_empty()) {
            return Err("empty group or alternative".into());
        }
        if repeat && alts.len() == 1 {
            let inner = alts.pop().expect("one alternative");
            let n = inner.len();
            let same = items.len() >= n
                && items[items.len() - n..]
                    .iter()
                    .zip(&inner)
                    .all(|(a, b)| a.name == b.name);
            if same {
                let mut prev = items.split_off(items.len() - n);
                let mut arg = if n == 1 {
                    prev.pop().expect("one item")
                } else {
                    Arg::block(prev)
                };
                arg.multiple = true;
                arg.multiple_token = inner.iter().any(|a| a.token.is_some());
                if let Some(n) = name {
                    arg.name = n;
                }
                items.push(arg);
                return Ok(());
            }
            let mut arg = if n == 1 {
                inner.into_iter().next().expect("one item")
            } else {
                Arg::block(inner)
            };
            arg.multiple = true;
            arg.optional = open == '[';
            if let Some(n) = name {
                arg.name = n;
            }
            items.push(arg);
            return Ok(());
        }
        let mut arg = if alts.len() == 1 {
            let mut inner = alts.pop().expect("one alternative");
            if inner.len() == 1 {
                inner.pop().expect("one item")
            } else {
                Arg::block(inner)
            }
        } else {
            let children: Vec<Arg> = alts
                .into_iter()
                .map(|mut a| {
                    if a.len() == 1 {
                        a.pop().expect("one item")
                    } else {
                        Arg::block(a)
                    }
                })
                .collect();
            Arg {
                children,
                ..Arg::new(String::new(), ArgType::OneOf)
            }
        };
        if arg.kind == ArgType::OneOf {
            arg.name = joined(&arg.children);
        }
        if let Some(n) = name {
            arg.name = n;
        }
        if repeat {
            arg.multiple = true;
        }
        arg.optional = open == '[';
        items.push(arg);
        Ok(())
    }
}

fn placeholder(w: &str) -> Arg {
    if let Some((name, ty)) = w.rsplit_once(':') {
        if let Some(kind) = ArgType::from_annotation(ty) {
            return Arg::new(name.to_string(), kind);
        }
    }
    Arg::new(w.to_string(), ArgType::infer(w))
}

/// Parses a syntax string into its arguments.
pub fn parse(syntax: &str) -> Result<Vec<Arg>, String> {
    let mut p = Parser {
        toks: lex(syntax),
        pos: 0,
    };
    let items = p.seq()?;
    if p.pos != p.toks.len() {
        return Err(format!("unexpected {:?}", p.toks[p.pos]));
    }
    Ok(items)
}

/// The COMMAND DOCS `arguments` array for `syntax`. Keys are numbered in order of appearance, up
/// to the last of the command's `key_specs` key specifications.
pub fn arguments(syntax: &str, key_specs: usize) -> Vec<Frame> {
    let args = parse(syntax).unwrap_or_default();
    let mut next_key = 0;
    args.iter()
        .map(|a| arg_frame(a, key_specs, &mut next_key))
        .collect()
}

fn arg_frame(a: &Arg, key_specs: usize, next_key: &mut usize) -> Frame {
    let mut m = vec![
        (Frame::bulk("name"), Frame::bulk(a.name.clone())),
        (Frame::bulk("type"), Frame::bulk(a.kind.as_str())),
    ];
    if a.kind == ArgType::Key {
        let i = (*next_key).min(key_specs.saturating_sub(1));
        *next_key += 1;
        m.push((Frame::bulk("key_spec_index"), Frame::Integer(i as i64)));
    }
    if let Some(t) = &a.token {
        m.push((Frame::bulk("token"), Frame::bulk(t.clone())));
    }
    let mut flags = Vec::new();
    if a.optional {
        flags.push(Frame::simple("optional"));
    }
    if a.multiple {
        flags.push(Frame::simple("multiple"));
    }
    if a.multiple_token {
        flags.push(Frame::simple("multiple_token"));
    }
    if !flags.is_empty() {
        m.push((Frame::bulk("flags"), Frame::Set(flags)));
    }
    if !a.children.is_empty() {
        let children = a
            .children
            .iter()
            .map(|c| arg_frame(c, key_specs, next_key))
            .collect();
        m.push((Frame::bulk("arguments"), Frame::Array(children)));
    }
    Frame::Map(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(args: &[Arg]) -> Vec<(&str, ArgType)> {
        args.iter().map(|a| (a.name.as_str(), a.kind)).collect()
    }

    #[test]
    fn set() {
        let a = parse("key value [condition: NX | XX] [GET] [expiration: EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]").unwrap();
        assert_eq!(
            names(&a),
            vec![
                ("key", ArgType::Key),
                ("value", ArgType::String),
                ("condition", ArgType::OneOf),
                ("get", ArgType::PureToken),
                ("expiration", ArgType::OneOf),
            ]
        );
        assert!(a[2].optional && a[3].optional && !a[1].optional);
        assert_eq!(a[3].token.as_deref(), Some("GET"));
        let exp = &a[4].children;
        assert_eq!(exp[0].name, "seconds");
        assert_eq!(exp[0].kind, ArgType::Integer);
        assert_eq!(exp[0].token.as_deref(), Some("EX"));
        assert_eq!(exp[2].kind, ArgType::UnixTime);
        assert_eq!(exp[4].kind, ArgType::PureToken);
    }

    #[test]
    fn repetition_and_blocks() {
        let a = parse("key value [key value ...]").unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].name, "key_value");
        assert_eq!(a[0].kind, ArgType::Block);
        assert!(a[0].multiple && !a[0].optional);

        let a = parse("destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM | MIN | MAX]").unwrap();
        assert_eq!(a.len(), 5);
        assert!(a[2].multiple && a[2].kind == ArgType::Key);
        assert_eq!(a[3].token.as_deref(), Some("WEIGHTS"));
        assert!(a[3].multiple && a[3].optional);
        assert_eq!(a[4].kind, ArgType::OneOf);

        let a = parse("key start stop [LIMIT offset count] [withscores: WITHSCORES] [min:double]")
            .unwrap();
        assert_eq!(a[3].name, "offset_count");
        assert_eq!(a[3].kind, ArgType::Block);
        assert_eq!(a[3].token.as_deref(), Some("LIMIT"));
        assert_eq!(a[5].kind, ArgType::Double);

        let a =
            parse("source destination <wherefrom: LEFT | RIGHT> <whereto: LEFT | RIGHT>").unwrap();
        assert_eq!(a[2].name, "wherefrom");
        assert!(!a[2].optional);

        assert!(parse("key [NX").is_err());
        assert!(parse("key ]").is_err());
        assert_eq!(parse("").unwrap(), vec![]);
    }
}
