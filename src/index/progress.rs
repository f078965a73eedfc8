//! The progress of a long step: embedding a snapshot, building its graph, calibrating,
//! uploading, the steps of `govcat eval`. The CLI shows it on stderr (`cli::progress`), a
//! serving rebuild logs it ([`Logged`]), tests show nothing ([`Quiet`]). [`StepLines`] is the
//! one wording of a step as lines, for both.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Progress of a long step.
pub trait Progress {
    /// A step named `what` of `total` units begins.
    fn start(&self, what: &str, total: u64);
    fn advance(&self, n: u64);
    fn finish(&self);
}

/// No progress output.
pub struct Quiet;
impl Progress for Quiet {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// How often a line is written while a step runs: often enough that a log shows the build is
/// alive, rarely enough that a 1M-column build (about 2.4 h of embedding on one 2-core
/// machine, docs/SCALING.md) writes about 900 lines for it.
pub const LINE_EVERY: Duration = Duration::from_secs(10);

/// What a step counts.
#[derive(Clone, Copy)]
pub enum Unit {
    Items,
    Bytes,
}

/// A step as lines: one when it begins, at most one every [`LINE_EVERY`] while it runs, one
/// when it ends. Each method is given the time, and returns the line to write, if any.
pub struct StepLines {
    unit: Unit,
    what: String,
    total: u64,
    done: u64,
    started: Instant,
    last: Instant,
}

impl StepLines {
    pub fn new(unit: Unit, now: Instant) -> StepLines {
        StepLines {
            unit,
            what: String::new(),
            total: 0,
            done: 0,
            started: now,
            last: now,
        }
    }

    pub fn start(&mut self, what: &str, total: u64, now: Instant) -> String {
        *self = StepLines {
            what: what.to_string(),
            total,
            ..StepLines::new(self.unit, now)
        };
        format!("{what}: {} to do", self.amount(total))
    }

    pub fn advance(&mut self, n: u64, now: Instant) -> Option<String> {
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
            "{}: {} of {} ({percent:.0} %), {}/s, about {left:.0} s left",
            self.what,
            self.amount(self.done),
            self.amount(self.total),
            self.amount(rate as u64),
        ))
    }

    /// The step's last line; `None` when no step is under way (a second finish).
    pub fn finish(&mut self, now: Instant) -> Option<String> {
        if self.what.is_empty() {
            return None;
        }
        let line = format!(
            "{}: {} done in {:.1} s",
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

/// Progress as `info` log events: what a serving rebuild (`serve --watch`, `--refresh`) is
/// doing, in the server's log.
pub struct Logged(Mutex<StepLines>);

impl Logged {
    pub fn new() -> Logged {
        Logged(Mutex::new(StepLines::new(Unit::Items, Instant::now())))
    }

    fn log(&self, line: impl FnOnce(&mut StepLines, Instant) -> Option<String>) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(line) = line(&mut lines, Instant::now()) {
            tracing::info!(progress = %line, "snapshot build");
        }
    }
}

impl Default for Logged {
    fn default() -> Logged {
        Logged::new()
    }
}

impl Progress for Logged {
    fn start(&self, what: &str, total: u64) {
        self.log(|lines, now| Some(lines.start(what, total, now)));
    }
    fn advance(&self, n: u64) {
        self.log(|lines, now| lines.advance(n, now));
    }
    fn finish(&self) {
        self.log(|lines, now| lines.finish(now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_running_step_writes_a_line_once_the_interval_has_passed_and_not_before() {
        let t0 = Instant::now();
        let mut lines = StepLines::new(Unit::Items, t0);
        assert_eq!(
            lines.start("embedding texts", 1000, t0),
            "embedding texts: 1000 to do"
        );
        assert_eq!(lines.advance(100, t0 + LINE_EVERY / 2), None);
        assert_eq!(
            lines.advance(150, t0 + LINE_EVERY),
            Some("embedding texts: 250 of 1000 (25 %), 25/s, about 30 s left".into())
        );
        // The interval counts from the last line, not from the start.
        assert_eq!(lines.advance(1, t0 + LINE_EVERY + LINE_EVERY / 2), None);
    }

    #[test]
    fn a_step_ends_with_one_line_and_a_second_finish_writes_none() {
        let t0 = Instant::now();
        let mut lines = StepLines::new(Unit::Bytes, t0);
        lines.start("uploading", 2048, t0);
        assert_eq!(lines.advance(2048, t0 + Duration::from_millis(1)), None);
        assert_eq!(
            lines.finish(t0 + Duration::from_millis(2500)),
            Some("uploading: 2048 bytes done in 2.5 s".into())
        );
        assert_eq!(lines.finish(t0 + Duration::from_secs(3)), None);
    }

    /// What a step logs through `progress`, as the server's log would hold it.
    fn logged(progress: &dyn Progress) -> String {
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            progress.start("embedding texts of columns and ontology values", 3);
            progress.advance(3);
            progress.finish();
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        text
    }

    #[test]
    fn a_logged_build_says_when_each_step_begins_and_ends_and_a_quiet_one_says_nothing() {
        let log = logged(&Logged::new());
        let events: Vec<&str> = log
            .lines()
            .filter_map(|l| l.split_once("progress=").map(|(_, p)| p))
            .collect();
        assert_eq!(events.len(), 2, "{log}");
        assert_eq!(
            events[0],
            "embedding texts of columns and ontology values: 3 to do"
        );
        assert!(
            events[1].starts_with("embedding texts of columns and ontology values: 3 done in "),
            "{log}"
        );
        assert_eq!(logged(&Quiet), "");
    }
}
