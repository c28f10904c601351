//! The HELP reply of container commands (CONFIG HELP, OBJECT HELP...), in Redis's shape.
//! Knows no family.

use strata_resp::Frame;

/// A HELP reply in Redis's shape: a header line, the given lines, and the trailing HELP line.
pub fn reply(container: &str, lines: &[&str]) -> Frame {
    let mut out = vec![Frame::simple(format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ))];
    out.extend(lines.iter().map(|l| Frame::simple(l.to_string())));
    out.push(Frame::simple("HELP"));
    out.push(Frame::simple("    Prints this help."));
    Frame::Array(out)
}
