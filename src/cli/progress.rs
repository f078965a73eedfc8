//! The progress of a long step (`index`, `eval`) on stderr. On a terminal it is indicatif's bar.
//! Elsewhere (a CI log, the ECS indexer task's log, `2> file`) the bar would draw nothing, so a
//! build of a million columns would be silent for minutes. There it is plain lines instead: one
//! when a step begins, at most one every [`LINE_EVERY`] while it runs, and one when it ends.
//! Under `index --json` there is nothing at all.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a plain progress line is written while a step runs: often enough that a log shows
/// the build is alive, rarely enough that a 1M-column build (about 2.4 h of embedding on one
/// 2-core machine, docs/SCALING.md) writes about 900 lines for it.
const LINE_EVERY: Duration = Duration::from_secs(10);

/// What a step counts.
#[derive(Clone, Copy)]
pub(super) enum Unit {
    Items,
    Bytes,
}

/// A progress display on stderr for a long step.
pub(super) struct Bar {
    bar: Option<indicatif::ProgressBar>,
    lines: Option<Mutex<Lines>>,
}

impl Bar {
    /// A bar on a terminal, plain lines elsewhere; nothing when `quiet` (`index --json`).
    pub(super) fn new(unit: Unit, quiet: bool) -> Bar {
        let (bar, lines) = if quiet {
            (None, None)
        } else if std::io::stderr().is_terminal() {
            (Some(terminal_bar(unit)), None)
        } else {
            (None, Some(Mutex::new(Lines::new(unit, Instant::now()))))
        };
        Bar { bar, lines }
    }

    fn line(&self, write: impl FnOnce(&mut Lines, Instant) -> Option<String>) {
        if let Some(lines) = &self.lines {
            let mut lines = lines.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(line) = write(&mut lines, Instant::now()) {
                // A closed stderr must not end the build: the line is lost, nothing else.
                let _ = writeln!(std::io::stderr(), "{line}");
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

/// The plain-line form: the step under way and when its last line was written.
struct Lines {
    unit: Unit,
    what: String,
    total: u64,
    done: u64,
    started: Instant,
    last: Instant,
}

impl Lines {
    fn new(unit: Unit, now: Instant) -> Lines {
        Lines {
            unit,
            what: String::new(),
            total: 0,
            done: 0,
            started: now,
            last: now,
        }
    }

    fn start(&mut self, what: &str, total: u64, now: Instant) -> String {
        *self = Lines {
            what: what.to_string(),
            total,
            ..Lines::new(self.unit, now)
        };
        format!("govcat: {what}: {} to do", self.amount(total))
    }

    fn advance(&mut self, n: u64, now: Instant) -> Option<String> {
        self.done = self.done.saturating_add(n);
        if now.duration_since(self.last) < LINE_EVERY {
            return None;
        }
        self.last = now;
        let secs = now.duration_since(self.started).as_secs_f64();
        let rate = self.done as f64 / secs.max(f64::EPSILON);
        let left = self.total.saturating_sub(self.done) as f64 / rate.max(f64::EPSILON);
        let percent = 100.0 * self.done as f64 / self.total.max(1) as f64;
        Some(format!(
            "govcat: {}: {} of {} ({percent:.0} %), {}/s, about {left:.0} s left",
            self.what,
            self.amount(self.done),
            self.amount(self.total),
            self.amount(rate as u64),
        ))
    }

    fn finish(&mut self, now: Instant) -> Option<String> {
        if self.what.is_empty() {
            return None;
        }
        let line = format!(
            "govcat: {}: {} done in {:.1} s",
            self.what,
            self.amount(self.done),
            now.duration_since(self.started).as_secs_f64()
        );
        self.what.clear();
        Some(line)
    }

    fn amount(&self, n: u64) -> String {
        match self.unit {
            Unit::Items => n.to_string(),
            Unit::Bytes => format!("{n} bytes"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_step_writes_a_line_once_the_interval_has_passed_and_not_before() {
        let t0 = Instant::now();
        let mut lines = Lines::new(Unit::Items, t0);
        assert_eq!(
            lines.start("embedding texts", 1000, t0),
            "govcat: embedding texts: 1000 to do"
        );
        assert_eq!(lines.advance(100, t0 + LINE_EVERY / 2), None);
        assert_eq!(
            lines.advance(150, t0 + LINE_EVERY),
            Some("govcat: embedding texts: 250 of 1000 (25 %), 25/s, about 30 s left".into())
        );
        // The interval counts from the last line, not from the start.
        assert_eq!(lines.advance(1, t0 + LINE_EVERY + LINE_EVERY / 2), None);
    }

    #[test]
    fn a_step_ends_with_one_line_and_a_second_finish_writes_none() {
        let t0 = Instant::now();
        let mut lines = Lines::new(Unit::Bytes, t0);
        lines.start("uploading", 2048, t0);
        assert_eq!(lines.advance(2048, t0 + Duration::from_millis(1)), None);
        assert_eq!(
            lines.finish(t0 + Duration::from_millis(2500)),
            Some("govcat: uploading: 2048 bytes done in 2.5 s".into())
        );
        assert_eq!(lines.finish(t0 + Duration::from_secs(3)), None);
    }
}
