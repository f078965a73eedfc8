//! Calibrated confidence of tag proposals: how often a `suggest_tags` proposal with given
//! evidence is right *on this catalog*. `govcat index` asks, for the snapshot's tagged columns,
//! what `suggest_tags` would propose with the column itself hidden (the leave-one-out of
//! `govcat eval tags`, run by `tools::calibrate`), and fits here, per ontology key, a monotone
//! map from the proposal's [`Evidence`] to the share of such proposals that were right. The
//! map is stored in the snapshot (`calibration.json`, covered by the manifest) and read by
//! `suggest_tags`, which reports it as `proposal.confidence`.
//!
//! The map is a logistic regression on three evidence features (the proposed value's vote share
//! as log-odds, the best precedent's similarity, the best precedent_confidence as log-odds) with
//! every weight held at or above zero (more agreement, a closer match and a likelier direct
//! precedent never lower the confidence): four named numbers per key. Below a support floor of
//! similarity (nothing that far from its precedents was ever checked) confidence is 0. This module also holds the measures
//! `govcat eval tags` reports it with (reliability bins, ECE, coverage at a precision) and the
//! deterministic rules that choose which columns are checked (a per-domain sample above
//! [`MAX_COLUMNS`]) and which tables a map is fitted on in evaluation.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Name of the method, echoed in `proposal.calibration.method`.
pub const METHOD: &str = "monotone_logistic";
/// Tagged columns checked at index time; above this, a deterministic sample stratified by
/// domain (see [`sample`]).
pub const MAX_COLUMNS: usize = 5000;
/// The sample of a rebuild in which the catalog moved little (at most
/// `index::dense::PATCH_MAX_INSERTED` of the documents new, changed or gone): a fifth, so that a
/// 1% refresh of 100k columns publishes within a minute (the scale bench's `refresh` phase,
/// 2 cores: 86 s for 5,000 columns). The same bench compares the two maps' confidences.
pub const REFRESH_MAX_COLUMNS: usize = 1000;
/// A key with fewer observations (or with only right or only wrong ones) uses the map fitted
/// on every key's observations together.
pub const MIN_KEY_OBSERVATIONS: usize = 50;
/// L2 penalty on the weights (not the intercept), in units of one observation's log-loss:
/// keeps a feature that separates a small set perfectly from running off to infinity.
pub const RIDGE: f64 = 1.0;
/// The support floor of a map is this quantile of the best similarity among the proposals it
/// was fitted on: a proposal whose best precedent is less similar than that is outside what was
/// measured (nothing that far from its precedents was ever checked), and its confidence is 0.
/// Fitted once on calibration splits (2026-12-02, demo snapshot): the bundled negative queries
/// (nothing in the catalog matches) have a best similarity of at most 0.336, the positive
/// queries 5 % below 0.417; the 3 % quantile of the leave-one-out (0.369) is the one nearest
/// the middle of that gap. It costs held-out ECE 0.000–0.006 per key against the 2 % quantile
/// (demo and fides-saas).
pub const SUPPORT_QUANTILE: f64 = 0.03;
/// Bins of the reliability table (equal width over [0, 1]).
pub const BINS: usize = 10;
/// The precisions `govcat eval tags` reports coverage at.
pub const PRECISIONS: [f64; 3] = [0.90, 0.95, 0.99];
/// The features, in the order of [`Model::weights`]: the proposed value's share of the
/// precedent weight (as log-odds) and the best similarity of a precedent carrying it. Chosen
/// 2026-12-02 among five candidate features (the runner-up's share, the best score and the
/// count of precedents as well) by held-out ECE on both tag sets (demo, fides-saas): the three
/// others added parameters and no calibration (demo per key 0.036–0.085 with all five, 0.025–0.078
/// with these two; fides 0.021/0.018 and 0.020/0.019). The third, the best precedent_confidence
/// among those precedents (log-odds), was added 2026-12-05 (issue 43 part 5) for the calls hosts
/// make, whose precedents are direct more often than a leave-one-out's: on the 24 blind-host call
/// files of demo and fides-saas it lowered the ECE on 22 (demo mean 0.180 -> 0.143) and raised
/// the share of judged keys at >= 0.9 on all 24 (demo 0.268 -> 0.340), precision at >= 0.9 still
/// 1.000; the leave-one-out's held-out ECE rose 0.051 -> 0.061 (demo) and 0.044 -> 0.048
/// (fides-saas). The fourth, `name_match` ([`Evidence::name_match`]), was added 2026-12-06
/// (issue 43 part 5): a host names the column it describes, and a precedent it names whose
/// copies agree is the population the map is fitted on (keys without a conflicting copy). Over
/// the 104 blind-host call files (62 demo, 42 fides-saas) the ECE fell 0.135 -> 0.097 (demo,
/// pooled 0.133 -> 0.096) and 0.185 -> 0.136 (fides-saas, pooled 0.129 -> 0.093), the judged
/// keys at >= 0.9 rose 0.345 -> 0.474 and 0.434 -> 0.615; precision at >= 0.9 stays 1.000 on
/// the demo, 680 of 682 on fides-saas (fs005 for one host: the `ip` columns agree, the labels
/// follow the `ip_address` ones). The leave-one-out's held-out ECE: 0.058 -> 0.058 (demo),
/// 0.055 -> 0.049 (fides-saas). Taken as "a named precedent carries the value", without the
/// copies' agreement, it put 6 wrong fides-saas keys at >= 0.9 (fs006: `device_id` columns of
/// both values). `docs/perf/conversation.md` has the runs.
pub const FEATURES: [&str; 4] = [
    "logit(share)",
    "similarity",
    "logit(precedent_confidence)",
    "name_match",
];
const NF: usize = FEATURES.len();
/// The share enters the map as log-odds, clamped to [`SHARE_CLAMP`, 1 − `SHARE_CLAMP`] (a
/// unanimous vote is log-odds 3.9, not infinity). On log-odds a unanimous vote can reach the
/// confidence it earns: with the share taken as it is, no demo proposal of lawful_basis or
/// retention reached 0.9, and the few retention ones that did were wrong (held-out, 2026-12-02).
pub const SHARE_CLAMP: f64 = 0.02;

fn logit(p: f64) -> f64 {
    let p = p.clamp(SHARE_CLAMP, 1.0 - SHARE_CLAMP);
    (p / (1.0 - p)).ln()
}

/// What a proposal for one key rests on, all taken from the precedents counted for the key.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// The proposed value's share of the precedent weight (0–1).
    pub share: f64,
    /// The runner-up value's share (0 when the precedents agree).
    pub runner_up: f64,
    /// The best cosine similarity between the description and a precedent carrying the
    /// proposed value (0 when the dense side found none): the signal that tells "nothing
    /// comparable" apart.
    pub similarity: f64,
    /// The best find_precedents score among those precedents.
    pub score: f64,
    /// The best `precedent_confidence` among those precedents: how likely the closest of them
    /// is the same kind of data.
    #[serde(default)]
    pub precedent_confidence: f64,
    /// 1 when a phrasing names a counted precedent word for word (find_precedents'
    /// `name_match`), every such precedent carries the proposed value, and the copies of each
    /// (the columns of its name the caller may read) agree on it
    /// ([`crate::tools::calibrate::copies_agree`]); else 0.
    #[serde(default)]
    pub name_match: f64,
    /// Precedents counted for the key.
    pub counted: usize,
}

impl Evidence {
    fn features(&self) -> [f64; NF] {
        [
            logit(self.share),
            self.similarity.clamp(0.0, 1.0),
            logit(self.precedent_confidence),
            self.name_match,
        ]
    }
}

/// One checked proposal: its key, evidence and whether it equalled the column's real value.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub key: String,
    pub evidence: Evidence,
    pub correct: bool,
}

/// A fitted logistic map: confidence = 1 / (1 + exp(-(intercept + weights · features))).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub intercept: f64,
    /// Per [`FEATURES`], each ≥ 0.
    pub weights: [f64; NF],
    /// Observations it was fitted on, and the share of them that were right.
    pub observations: usize,
    pub accuracy: f64,
}

impl Model {
    pub fn confidence(&self, e: &Evidence) -> f64 {
        let x = e.features();
        let z = self.intercept + self.weights.iter().zip(x).map(|(w, x)| w * x).sum::<f64>();
        sigmoid(z)
    }
}

/// How often an inherited value (the target table's or database's tag) was the column's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Columns of tables that carry an inherited value for the key.
    pub columns: usize,
    /// Those whose own value is the inherited one.
    pub right: usize,
}

impl Rate {
    pub fn share(&self) -> Option<f64> {
        (self.columns > 0).then(|| self.right as f64 / self.columns as f64)
    }
}

/// The stored map (`calibration.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Map {
    pub method: String,
    pub features: Vec<String>,
    /// Tagged columns checked, and whether they were a sample of more.
    pub columns: usize,
    pub sampled: bool,
    /// Per key with enough observations of both outcomes.
    pub keys: BTreeMap<String, Model>,
    /// Every key's observations together: the map of a key not in `keys`.
    pub pooled: Model,
    /// [`SUPPORT_QUANTILE`] of the checked proposals' best similarity: below it, confidence 0.
    pub similarity_floor: f64,
    /// Per key: how often the inherited value was right.
    pub inherited: BTreeMap<String, Rate>,
}

impl Map {
    /// The confidence of a precedent proposal for `key` with evidence `e`: 0 outside the
    /// support ([`Map::outside_support`]).
    pub fn confidence(&self, key: &str, e: &Evidence) -> f64 {
        if self.outside_support(e) {
            return 0.0;
        }
        self.keys.get(key).unwrap_or(&self.pooled).confidence(e)
    }

    /// Whether the best precedent is less similar than [`Map::similarity_floor`]: no proposal
    /// with precedents that far away was ever checked on this catalog.
    pub fn outside_support(&self, e: &Evidence) -> bool {
        e.similarity < self.similarity_floor
    }

    /// The measured share of right inherited values for `key`: the key's own rate, else every
    /// key's together; `None` when this catalog has no inherited value to measure.
    pub fn inherited(&self, key: &str) -> Option<f64> {
        if let Some(r) = self.inherited.get(key).and_then(Rate::share) {
            return Some(r);
        }
        let columns: usize = self.inherited.values().map(|r| r.columns).sum();
        let right: usize = self.inherited.values().map(|r| r.right).sum();
        Rate { columns, right }.share()
    }

    /// One line per key for `govcat index`: observations, accuracy, the weights.
    pub fn summary(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "calibration ({}): {} tagged columns checked{}; confidence 0 below best similarity {:.3}",
            self.method,
            self.columns,
            if self.sampled { " (a sample)" } else { "" },
            self.similarity_floor
        )];
        let line = |name: &str, m: &Model, own: bool| {
            format!(
                "  {name:<14} {:>5} proposals, {:.3} right; {}",
                m.observations,
                m.accuracy,
                if own {
                    "own map"
                } else {
                    "too few of its own: pooled map"
                }
            )
        };
        lines.push(line("(pooled)", &self.pooled, true));
        for (key, m) in &self.keys {
            lines.push(line(key, m, true));
        }
        for (key, r) in &self.inherited {
            lines.push(format!(
                "  {key:<14} inherited value right for {} of {} columns",
                r.right, r.columns
            ));
        }
        lines
    }
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Fits the map on `observations` (and the inherited rates measured beside them).
pub fn fit(
    observations: &[Observation],
    columns: usize,
    sampled: bool,
    inherited: BTreeMap<String, Rate>,
) -> Map {
    let similarity_floor = quantile(
        observations.iter().map(|o| o.evidence.similarity).collect(),
        SUPPORT_QUANTILE,
    );
    let observations: Vec<&Observation> = observations
        .iter()
        .filter(|o| o.evidence.similarity >= similarity_floor)
        .collect();
    let all: Vec<(&Evidence, bool)> = observations
        .iter()
        .map(|o| (&o.evidence, o.correct))
        .collect();
    let pooled = fit_model(&all);
    let mut by_key: BTreeMap<&str, Vec<(&Evidence, bool)>> = BTreeMap::new();
    for o in &observations {
        by_key
            .entry(o.key.as_str())
            .or_default()
            .push((&o.evidence, o.correct));
    }
    let keys = by_key
        .into_iter()
        .filter(|(_, rows)| {
            let right = rows.iter().filter(|r| r.1).count();
            rows.len() >= MIN_KEY_OBSERVATIONS && right > 0 && right < rows.len()
        })
        .map(|(key, rows)| (key.to_string(), fit_model(&rows)))
        .collect();
    Map {
        method: METHOD.to_string(),
        features: FEATURES.iter().map(|f| f.to_string()).collect(),
        columns,
        sampled,
        keys,
        pooled,
        similarity_floor,
        inherited,
    }
}

/// The `q` quantile of `values` (the smallest value with at least `q` of them at or below it);
/// 0 when empty.
fn quantile(mut values: Vec<f64>, q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// Penalised logistic regression with every weight ≥ 0: Newton steps on the free weights; a
/// weight that the unconstrained optimum puts below zero is fixed at zero and the rest refitted.
pub fn fit_model(rows: &[(&Evidence, bool)]) -> Model {
    let n = rows.len();
    let right = rows.iter().filter(|r| r.1).count();
    let accuracy = if n == 0 { 0.0 } else { right as f64 / n as f64 };
    let x: Vec<[f64; NF]> = rows.iter().map(|(e, _)| e.features()).collect();
    let y: Vec<f64> = rows.iter().map(|r| f64::from(u8::from(r.1))).collect();
    let mut free = [true; NF];
    let mut beta = [0.0f64; NF + 1]; // intercept, then weights
    for _ in 0..=NF {
        beta = newton(&x, &y, &free);
        let negative: Vec<usize> = (0..NF).filter(|&j| free[j] && beta[j + 1] < 0.0).collect();
        if negative.is_empty() {
            break;
        }
        for j in negative {
            free[j] = false;
        }
    }
    let mut weights = [0.0; NF];
    for j in 0..NF {
        weights[j] = if free[j] { beta[j + 1].max(0.0) } else { 0.0 };
    }
    Model {
        intercept: beta[0],
        weights,
        observations: n,
        accuracy,
    }
}

/// Newton's method for the penalised log-likelihood over the intercept and the `free` weights.
fn newton(x: &[[f64; NF]], y: &[f64], free: &[bool; NF]) -> [f64; NF + 1] {
    let idx: Vec<usize> = std::iter::once(0)
        .chain((0..NF).filter(|&j| free[j]).map(|j| j + 1))
        .collect();
    let m = idx.len();
    let mut beta = [0.0f64; NF + 1];
    // Start from the base rate, so an all-right or all-wrong set stays finite.
    let mean = y.iter().sum::<f64>() / y.len().max(1) as f64;
    let p0 = mean.clamp(1e-3, 1.0 - 1e-3);
    beta[0] = (p0 / (1.0 - p0)).ln();
    let row = |xi: &[f64; NF]| -> Vec<f64> {
        idx.iter()
            .map(|&k| if k == 0 { 1.0 } else { xi[k - 1] })
            .collect()
    };
    // The penalised log-likelihood, which every accepted step raises: a plain Newton step can
    // overshoot on nearly separable rows and diverge (fides-saas data_category fitted on 861
    // proposals, 99 % right: intercept 4.9e8 and every proposal at confidence 1).
    let objective = |beta: &[f64; NF + 1]| -> f64 {
        let ll: f64 = x
            .iter()
            .zip(y)
            .map(|(xi, &yi)| {
                let z = linear(beta, xi);
                yi * log_sigmoid(z) + (1.0 - yi) * log_sigmoid(-z)
            })
            .sum();
        ll - 0.5 * RIDGE * (1..=NF).map(|k| beta[k] * beta[k]).sum::<f64>()
    };
    let mut current = objective(&beta);
    for _ in 0..50 {
        let mut grad = vec![0.0; m];
        let mut hess = vec![vec![0.0; m]; m];
        for (xi, &yi) in x.iter().zip(y) {
            let r = row(xi);
            let p = sigmoid(linear(&beta, xi));
            let w = (p * (1.0 - p)).max(1e-9);
            for a in 0..m {
                grad[a] += (yi - p) * r[a];
                for b in 0..m {
                    hess[a][b] += w * r[a] * r[b];
                }
            }
        }
        for a in 1..m {
            grad[a] -= RIDGE * beta[idx[a]];
            hess[a][a] += RIDGE;
        }
        hess[0][0] += 1e-9;
        let Some(step) = solve(hess, grad) else {
            break;
        };
        // Halve the step until the objective does not fall (at most 30 times).
        let mut scale = 1.0;
        let mut accepted = None;
        for _ in 0..30 {
            let mut next = beta;
            for a in 0..m {
                next[idx[a]] += scale * step[a];
            }
            let value = objective(&next);
            if value >= current {
                accepted = Some((next, value));
                break;
            }
            scale *= 0.5;
        }
        let Some((next, value)) = accepted else {
            break;
        };
        let largest = (0..m).map(|a| (scale * step[a]).abs()).fold(0.0, f64::max);
        beta = next;
        current = value;
        if largest < 1e-8 {
            break;
        }
    }
    beta
}

/// The intercept plus the weighted features: a weight that is not free stays 0, so the sum over
/// every feature is the sum over the free ones.
fn linear(beta: &[f64; NF + 1], xi: &[f64; NF]) -> f64 {
    beta[0] + (0..NF).map(|j| beta[j + 1] * xi[j]).sum::<f64>()
}

/// ln(sigmoid(z)), finite for every finite z.
fn log_sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        -(-z).exp().ln_1p()
    } else {
        z - z.exp().ln_1p()
    }
}

/// Solves `a · s = b` by Gaussian elimination with partial pivoting; `None` when singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (top, rest) = a.split_at_mut(col + 1);
        let pivot_row = &top[col];
        for (r, row) in rest.iter_mut().enumerate() {
            let f = row[col] / pivot_row[col];
            row.iter_mut()
                .zip(pivot_row)
                .skip(col)
                .for_each(|(x, p)| *x -= f * p);
            b[col + 1 + r] -= f * b[col];
        }
    }
    let mut s = vec![0.0; n];
    for r in (0..n).rev() {
        let tail: f64 = (r + 1..n).map(|c| a[r][c] * s[c]).sum();
        s[r] = (b[r] - tail) / a[r][r];
    }
    Some(s)
}

/// One bin of a reliability table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    pub lower: f64,
    pub upper: f64,
    pub n: usize,
    pub mean_confidence: Option<f64>,
    pub accuracy: Option<f64>,
}

/// How well confidences match outcomes on a set of proposals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reliability {
    /// Proposals scored.
    pub proposals: usize,
    /// Columns the coverage is a share of (proposals plus columns without one).
    pub columns: usize,
    pub bins: Vec<Bin>,
    /// Expected calibration error: Σ over bins of n/N × |accuracy − mean confidence|.
    pub ece: f64,
    /// Precision → the largest share of `columns` kept by a threshold on the score at which
    /// the kept proposals are at least that precise (0 when none is).
    pub coverage_at_precision: BTreeMap<String, f64>,
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The reliability table, ECE and coverage at [`PRECISIONS`] of `scored` (confidence, right)
/// among `columns` columns.
pub fn reliability(scored: &[(f64, bool)], columns: usize) -> Reliability {
    let mut bins: Vec<(usize, f64, usize)> = vec![(0, 0.0, 0); BINS];
    for &(c, right) in scored {
        let b = ((c * BINS as f64) as usize).min(BINS - 1);
        bins[b].0 += 1;
        bins[b].1 += c;
        bins[b].2 += usize::from(right);
    }
    let total = scored.len().max(1) as f64;
    let ece = bins
        .iter()
        .filter(|b| b.0 > 0)
        .map(|&(n, sum, right)| n as f64 / total * (right as f64 / n as f64 - sum / n as f64).abs())
        .sum::<f64>();
    Reliability {
        proposals: scored.len(),
        columns,
        bins: bins
            .iter()
            .enumerate()
            .map(|(i, &(n, sum, right))| Bin {
                lower: i as f64 / BINS as f64,
                upper: (i + 1) as f64 / BINS as f64,
                n,
                mean_confidence: (n > 0).then(|| round4(sum / n as f64)),
                accuracy: (n > 0).then(|| round4(right as f64 / n as f64)),
            })
            .collect(),
        ece: round4(ece),
        coverage_at_precision: PRECISIONS
            .iter()
            .map(|&p| (format!("{p:.2}"), coverage_at(scored, columns, p)))
            .collect(),
    }
}

/// The precision–coverage curve of `scored`: one point per distinct score, highest first,
/// as (threshold, coverage of `columns`, precision of the kept proposals).
pub fn curve(scored: &[(f64, bool)], columns: usize) -> Vec<(f64, f64, f64)> {
    let mut sorted: Vec<(f64, bool)> = scored.to_vec();
    sorted.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = Vec::new();
    let (mut kept, mut right) = (0usize, 0usize);
    for (i, &(c, r)) in sorted.iter().enumerate() {
        kept += 1;
        right += usize::from(r);
        // A threshold keeps every proposal with the same score: a point after the last of them.
        if sorted.get(i + 1).is_none_or(|next| next.0 < c) {
            out.push((
                c,
                kept as f64 / columns.max(1) as f64,
                right as f64 / kept as f64,
            ));
        }
    }
    out
}

/// The largest coverage at which the kept proposals are at least `precision` precise.
pub fn coverage_at(scored: &[(f64, bool)], columns: usize, precision: f64) -> f64 {
    round4(
        curve(scored, columns)
            .into_iter()
            .filter(|&(_, _, p)| p >= precision - 1e-12)
            .map(|(_, c, _)| c)
            .fold(0.0, f64::max),
    )
}

/// Precision and coverage of the proposals at or above `threshold`.
pub fn at_threshold(scored: &[(f64, bool)], columns: usize, threshold: f64) -> (Option<f64>, f64) {
    let kept: Vec<bool> = scored
        .iter()
        .filter(|s| s.0 >= threshold)
        .map(|s| s.1)
        .collect();
    let right = kept.iter().filter(|r| **r).count();
    (
        (!kept.is_empty()).then(|| round4(right as f64 / kept.len() as f64)),
        round4(kept.len() as f64 / columns.max(1) as f64),
    )
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// Whether a table is one a map is fitted on in `govcat eval tags` (the others are held out):
/// the first byte of sha256("domain.table") is even. Tables, not columns, so sibling columns
/// never straddle the split; the same rule for every catalog.
pub fn is_calibration_table(domain: &str, table: &str) -> bool {
    digest(&format!("{domain}.{table}"))[0].is_multiple_of(2)
}

/// At most `max` of `items` (domain, id), chosen deterministically: every domain keeps its
/// share of the total (largest remainders round), and within a domain the ids whose sha256
/// sorts first. Returns the chosen indices in input order and whether some were left out.
pub fn sample(items: &[(&str, &str)], max: usize) -> (Vec<usize>, bool) {
    if items.len() <= max {
        return ((0..items.len()).collect(), false);
    }
    let mut by_domain: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (d, _)) in items.iter().enumerate() {
        by_domain.entry(d).or_default().push(i);
    }
    let total = items.len() as f64;
    let mut quota: Vec<(&str, usize, f64)> = by_domain
        .iter()
        .map(|(d, ids)| {
            let exact = ids.len() as f64 * max as f64 / total;
            (*d, exact.floor() as usize, exact - exact.floor())
        })
        .collect();
    let given: usize = quota.iter().map(|q| q.1).sum();
    let mut order: Vec<usize> = (0..quota.len()).collect();
    order.sort_by(|&a, &b| quota[b].2.total_cmp(&quota[a].2).then(a.cmp(&b)));
    for &q in order.iter().take(max - given) {
        quota[q].1 += 1;
    }
    let mut chosen = Vec::with_capacity(max);
    for (d, n, _) in quota {
        let mut ids = by_domain[d].clone();
        ids.sort_by_key(|&i| digest(items[i].1));
        chosen.extend(ids.into_iter().take(n));
    }
    chosen.sort_unstable();
    (chosen, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(share: f64, similarity: f64) -> Evidence {
        Evidence {
            share,
            runner_up: 1.0 - share,
            similarity,
            score: 0.5,
            counted: 10,
            precedent_confidence: 0.5,
            name_match: 0.0,
        }
    }

    #[test]
    fn a_fitted_map_is_monotone_and_matches_the_rates_it_was_fitted_on() {
        // Two kinds of proposals: unanimous close matches right 9 of 10 times, split weak
        // matches right 5 of 10 times.
        let mut obs = Vec::new();
        for i in 0..200 {
            obs.push(Observation {
                key: "sensitivity".into(),
                evidence: ev(1.0, 0.8),
                correct: i % 10 != 0,
            });
            obs.push(Observation {
                key: "sensitivity".into(),
                evidence: ev(0.5, 0.4),
                correct: i % 2 == 0,
            });
        }
        let map = fit(&obs, 400, false, BTreeMap::new());
        let strong = map.confidence("sensitivity", &ev(1.0, 0.8));
        let weak = map.confidence("sensitivity", &ev(0.5, 0.4));
        assert!((strong - 0.9).abs() < 0.02, "strong {strong}");
        assert!((weak - 0.5).abs() < 0.02, "weak {weak}");
        assert!(map.keys["sensitivity"].weights.iter().all(|w| *w >= 0.0));
        // Monotone: less similarity never raises confidence.
        assert!(map.confidence("sensitivity", &ev(1.0, 0.1)) <= strong);
        // A key with no observations of its own uses the pooled map.
        assert_eq!(
            map.confidence("retention", &ev(1.0, 0.8)),
            map.pooled.confidence(&ev(1.0, 0.8))
        );
    }

    #[test]
    fn below_the_support_floor_confidence_is_zero_and_at_it_the_fitted_rate() {
        let mut obs = Vec::new();
        for i in 0..100 {
            let similarity = 0.3 + i as f64 / 200.0; // 0.300 .. 0.795
            obs.push(Observation {
                key: "k".into(),
                evidence: ev(1.0, similarity),
                correct: i % 4 != 0,
            });
        }
        let map = fit(&obs, 100, false, BTreeMap::new());
        // The 3 % quantile of 100 similarities is the third smallest.
        let third = 0.3 + 2.0 / 200.0;
        assert_eq!(map.similarity_floor, third);
        assert_eq!(map.confidence("k", &ev(1.0, third - 1e-9)), 0.0);
        assert!(map.outside_support(&ev(1.0, 0.2)));
        assert!(map.confidence("k", &ev(1.0, third)) > 0.5);
        assert_eq!(
            map.keys["k"].observations, 98,
            "fitted on the proposals within support"
        );
    }

    #[test]
    fn a_feature_that_lowers_the_rate_gets_weight_zero_not_a_negative_one() {
        // Higher similarity is (perversely) less often right here: the map must not learn that.
        let mut obs = Vec::new();
        for i in 0..300 {
            obs.push(Observation {
                key: "k".into(),
                evidence: ev(1.0, 0.9),
                correct: i % 2 == 0,
            });
            obs.push(Observation {
                key: "k".into(),
                evidence: ev(1.0, 0.2),
                correct: i % 5 != 0,
            });
        }
        let map = fit(&obs, 600, false, BTreeMap::new());
        assert_eq!(map.keys["k"].weights[1], 0.0);
        let c = map.confidence("k", &ev(1.0, 0.5));
        assert!((c - 0.65).abs() < 0.02, "{c}");
    }

    /// Two kinds of proposal, 400 each, whose evidence differs in one feature: the confidences
    /// of (`one`, `other`) under a map fitted where `one` is right 19 of 20 times and `other` 3
    /// of 5, then under one fitted where both are right 4 of 5 times.
    fn fitted_on_two_kinds(one: &Evidence, other: &Evidence) -> [(f64, f64); 2] {
        [(19, 20, 3, 5), (4, 5, 4, 5)].map(|(a, of_a, b, of_b)| {
            let obs: Vec<Observation> = (0..400)
                .flat_map(|i| {
                    [(one, i % of_a < a), (other, i % of_b < b)].map(|(e, correct)| Observation {
                        key: "k".into(),
                        evidence: *e,
                        correct,
                    })
                })
                .collect();
            let map = fit(&obs, 800, false, BTreeMap::new());
            (map.confidence("k", one), map.confidence("k", other))
        })
    }

    #[test]
    fn a_likelier_direct_precedent_raises_the_confidence_only_where_it_is_more_often_right() {
        // The same share and similarity; precedents the search calls direct (0.9) against
        // neighbours of another kind (0.2).
        let with = |pc: f64| Evidence {
            precedent_confidence: pc,
            ..ev(0.8, 0.6)
        };
        let [(direct, neighbour), (same_direct, same_neighbour)] =
            fitted_on_two_kinds(&with(0.9), &with(0.2));
        assert!((direct - 0.95).abs() < 0.02, "direct {direct}");
        assert!((neighbour - 0.6).abs() < 0.02, "neighbour {neighbour}");
        // Its pair: where both are right 4 of 5 times, precedent_confidence moves nothing.
        assert!(
            (same_direct - same_neighbour).abs() < 0.01,
            "{same_direct} vs {same_neighbour}"
        );
        assert!((same_direct - 0.8).abs() < 0.02, "{same_direct}");
    }

    #[test]
    fn a_named_precedent_raises_the_confidence_only_where_named_proposals_are_more_often_right() {
        // The same share, similarity and precedent_confidence; a precedent the caller named
        // against none named.
        let with = |named: f64| Evidence {
            name_match: named,
            ..ev(0.8, 0.6)
        };
        let [(named, unnamed), (same_named, same_unnamed)] =
            fitted_on_two_kinds(&with(1.0), &with(0.0));
        assert!((named - 0.95).abs() < 0.02, "named {named}");
        assert!((unnamed - 0.6).abs() < 0.02, "unnamed {unnamed}");
        // Its pair: where both are right 4 of 5 times, naming moves nothing.
        assert!(
            (same_named - same_unnamed).abs() < 0.01,
            "{same_named} vs {same_unnamed}"
        );
        assert!((same_named - 0.8).abs() < 0.02, "{same_named}");
    }

    #[test]
    fn a_nearly_separable_fit_stays_finite_and_keeps_the_rate_of_the_weak_proposals() {
        // 850 unanimous direct precedents all right, 10 split weak ones right half the time:
        // an undamped Newton step overshoots here (intercept 7e8, every proposal at 1).
        let strong = Evidence {
            precedent_confidence: 0.95,
            ..ev(1.0, 0.9)
        };
        let weak = Evidence {
            precedent_confidence: 0.3,
            ..ev(0.5, 0.9)
        };
        let mut obs: Vec<Observation> = (0..850)
            .map(|_| Observation {
                key: "k".into(),
                evidence: strong,
                correct: true,
            })
            .collect();
        obs.extend((0..10).map(|i| Observation {
            key: "k".into(),
            evidence: weak,
            correct: i < 5,
        }));
        let map = fit(&obs, 860, false, BTreeMap::new());
        let model = &map.keys["k"];
        assert!(
            model.intercept.abs() < 10.0,
            "intercept {}",
            model.intercept
        );
        let (strong, weak) = (map.confidence("k", &strong), map.confidence("k", &weak));
        assert!((weak - 0.5).abs() < 0.1, "weak {weak}");
        assert!(strong > 0.99, "strong {strong}");
    }

    #[test]
    fn reliability_bins_ece_and_coverage_at_precision_count_exactly() {
        let scored = [
            (0.95, true),
            (0.95, true),
            (0.91, false),
            (0.55, true),
            (0.52, false),
        ];
        let r = reliability(&scored, 8);
        assert_eq!(r.bins[9].n, 3);
        assert_eq!(r.bins[9].mean_confidence, Some(0.9367));
        assert_eq!(r.bins[9].accuracy, Some(0.6667));
        assert_eq!(r.bins[5].n, 2);
        assert_eq!(r.bins[5].accuracy, Some(0.5));
        // 3/5 × |0.6667 − 0.9367| + 2/5 × |0.5 − 0.535|
        assert_eq!(r.ece, 0.176);
        // Precision 1.0 holds for the two 0.95s: coverage 2 of 8 columns.
        assert_eq!(r.coverage_at_precision["0.90"], 0.25);
        // Keeping all five: 3 right of 5 = 0.6 precise, 5 of 8 columns.
        assert_eq!(coverage_at(&scored, 8, 0.6), 0.625);
        assert_eq!(coverage_at(&scored, 8, 0.7), 0.5);
        assert_eq!(at_threshold(&scored, 8, 0.9), (Some(0.6667), 0.375));
        assert_eq!(at_threshold(&scored, 8, 0.99), (None, 0.0));
    }

    #[test]
    fn the_table_split_keeps_siblings_together_and_the_sample_keeps_domain_shares() {
        let tables: Vec<String> = (0..200).map(|i| format!("table_{i}")).collect();
        let calibration = tables
            .iter()
            .filter(|t| is_calibration_table("claims", t))
            .count();
        assert!((80..=120).contains(&calibration), "{calibration} of 200");
        let ids: Vec<String> = (0..100).map(|i| format!("column:d.t{i}.c")).collect();
        let mut items: Vec<(&str, &str)> = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            items.push((if i < 75 { "big" } else { "small" }, id.as_str()));
        }
        let (chosen, sampled) = sample(&items, 10);
        assert!(sampled);
        assert_eq!(chosen.len(), 10);
        let small = chosen.iter().filter(|&&i| i >= 75).count();
        // 7.5 and 2.5: equal remainders, the first domain by name takes the extra one.
        assert_eq!(small, 2);
        assert_eq!(sample(&items, 10).0, chosen, "deterministic");
        assert_eq!(sample(&items, 100), ((0..100).collect(), false));
    }
}
