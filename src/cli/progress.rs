//! The progress of a long step (`index`, `eval`) on stderr. On a terminal it is indicatif's bar.
//! Elsewhere (a CI log, the ECS indexer task's log, `2> file`) the bar would draw nothing, so a
//! build of a million columns would be silent for hours. There it is plain lines instead
//! ([`crate::index::StepLines`]): one when a step begins, at most one every 10 s while it runs,
//! and one when it ends. Under `index --json` there is nothing at all.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Instant;

use crate::index::{StepLines, Unit};

/// A progress display on stderr for a long step.
pub(super) struct Bar {
    bar: Option<indicatif::ProgressBar>,
    lines: Option<Mutex<StepLines>>,
}

impl Bar {
    /// A bar on a terminal, plain lines elsewhere; nothing when `quiet` (`index --json`).
    pub(super) fn new(unit: Unit, quiet: bool) -> Bar {
        let (bar, lines) = if quiet {
            (None, None)
        } else if std::io::stderr().is_terminal() {
            (Some(terminal_bar(unit)), None)
        } else {
            (None, Some(Mutex::new(StepLines::new(unit, Instant::now()))))
        };
        Bar { bar, lines }
    }

    fn line(&self, line: impl FnOnce(&mut StepLines, Instant) -> Option<String>) {
        if let Some(lines) = &self.lines {
            let mut lines = lines.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(line) = line(&mut lines, Instant::now()) {
                // A closed stderr must not end the build: the line is lost, nothing else.
                let _ = writeln!(std::io::stderr(), "govcat: {line}");
            }
        }
    }
}

impl crate::index::Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        if let Some(bar) = &self.bar {
            bar.reset();
            bar.set_length(total);
            bar.set_message(what.to_string());
        }
        self.line(|lines, now| Some(lines.start(what, total, now)));
    }
    fn advance(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
        self.line(|lines, now| lines.advance(n, now));
    }
    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
        self.line(|lines, now| lines.finish(now));
    }
}

fn terminal_bar(unit: Unit) -> indicatif::ProgressBar {
    let template = match unit {
        Unit::Items => "{msg} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})",
        Unit::Bytes => "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
    };
    indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    )
}
