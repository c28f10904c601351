//! Prometheus's text exposition format, version 0.0.4: one `# HELP` and one `# TYPE` line per
//! family, then its samples (`name{label="value"} number`), label values escaped as the format
//! says (`\\`, `\"`, `\n`). Knows nothing of the server: `series.rs` says what to write.

use std::fmt::Write as _;

/// A metric family's type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Type {
    /// Only goes up (resets at restart or CONFIG RESETSTAT); its name ends in `_total`.
    Counter,
    /// Goes up and down.
    Gauge,
    /// `_bucket{le=...}`, `_sum` and `_count` samples.
    Histogram,
    /// `{quantile=...}`, `_sum` and `_count` samples.
    Summary,
}

impl Type {
    fn name(self) -> &'static str {
        match self {
            Type::Counter => "counter",
            Type::Gauge => "gauge",
            Type::Histogram => "histogram",
            Type::Summary => "summary",
        }
    }
}

/// The text being written.
#[derive(Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// Starts a family: its HELP and TYPE lines.
    pub fn family(&mut self, name: &str, kind: Type, help: &str) {
        debug_assert!(kind != Type::Counter || name.ends_with("_total"), "{name}");
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {}", kind.name());
    }

    /// A family of one unlabelled sample.
    pub fn single(&mut self, name: &str, kind: Type, help: &str, value: impl Into<f64>) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// One sample of the current family.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Into<f64>) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
            }
            self.out.push('}');
        }
        self.out.push(' ');
        push_number(&mut self.out, value.into());
        self.out.push('\n');
    }

    /// The finished text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// Numbers as the format spells them: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
fn push_number(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        let _ = write!(out, "{}", v as i64);
    } else {
        let _ = write!(out, "{v}");
    }
}

fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_have_help_type_and_escaped_labels() {
        let mut e = Exposition::default();
        e.family("redis_commands_total", Type::Counter, "Calls.");
        e.sample("redis_commands_total", &[("cmd", "a\"b\\c\nd")], 3u32);
        e.single("redis_up", Type::Gauge, "Up.", 1u8);
        e.single("x_seconds", Type::Gauge, "Float.", 0.25);
        assert_eq!(
            e.finish(),
            "# HELP redis_commands_total Calls.\n# TYPE redis_commands_total counter\n\
             redis_commands_total{cmd=\"a\\\"b\\\\c\\nd\"} 3\n\
             # HELP redis_up Up.\n# TYPE redis_up gauge\nredis_up 1\n\
             # HELP x_seconds Float.\n# TYPE x_seconds gauge\nx_seconds 0.25\n"
        );
    }

    #[test]
    fn infinities_are_spelled_as_the_format_says() {
        let mut s = String::new();
        push_number(&mut s, f64::INFINITY);
        assert_eq!(s, "+Inf");
    }
}
