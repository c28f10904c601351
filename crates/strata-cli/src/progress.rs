//! Progress bars for long operations (export, import, check, backup, restore, compact), drawn on
//! stderr with `indicatif` and hidden when stderr is not a terminal, so scripts and pipes get
//! clean output.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// A spinner counting items of unknown total ("{n} keys").
pub fn counter(what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, target());
    let template = format!("{{spinner}} {{pos}} {what} ({{per_sec}}, {{elapsed}})");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// A bar over a known number of bytes.
pub fn bytes(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), target());
    let template =
        format!("{what} [{{bar:30}}] {{bytes}}/{{total_bytes}} ({{bytes_per_sec}}, eta {{eta}})");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A spinner with a message, for an operation without measurable steps.
pub fn spinner(message: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, target());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}
