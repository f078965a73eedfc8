//! `govcat eval`: retrieval and tag-suggestion quality measured on any catalog, each figure
//! next to a textbook baseline computed in the same run, so governance can review quality on
//! its own catalog (`eval queries` with a labelled query file, `eval tags` with no labels at
//! all). The metrics are defined once here; the `quality` bench and `scripts/perf-report.sh`
//! call the same code. Reports are JSON (exactly the structs below) and a self-contained HTML
//! page.
//!
//! Evaluation only reads the snapshot and the ontology; it never writes outside `--report`.

pub mod baseline;
pub mod calls;
pub mod queries;
pub mod report;
pub mod tags;

use serde::Serialize;

/// Which queries of a file with ids take part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    /// Queries whose id's digits are divisible by 3 (what defaults may be fitted on).
    Calibration,
    /// Every other query (what defaults are reported on).
    HeldOut,
    All,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Calibration => "calibration",
            Split::HeldOut => "held-out",
            Split::All => "all",
        }
    }
}

/// Whether a query id belongs to the calibration split: its digits (`q042` → 42) divisible
/// by 3. An id without digits is held out.
pub fn is_calibration(id: &str) -> bool {
    let digits: String = id.chars().filter(char::is_ascii_digit).collect();
    digits.parse::<u64>().is_ok_and(|n| n % 3 == 0)
}

pub use crate::index::{Progress, Quiet};

#[cfg(test)]
mod tests {
    use super::is_calibration;

    #[test]
    fn calibration_split_takes_ids_whose_digits_divide_by_three() {
        let ids = ["q003", "q004", "n030", "m0001", "x", "42"];
        let cal: Vec<bool> = ids.iter().map(|i| is_calibration(i)).collect();
        assert_eq!(cal, [true, false, true, false, false, true]);
    }
}
