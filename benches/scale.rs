//! Scale bench: a synthetic catalog of N column documents (deterministic seed) at 1k, 10k, 100k
//! and 1M columns, written as a real snapshot (`index::write_snapshot`) and loaded back
//! (`index::load`). Per size: hybrid `retrieval::search` latency (p50/p95/p99) with a fresh
//! query embedding and with a cached one, the dense index (HNSW) against the exact scan on the
//! same queries (recall@10 and speed-up), an `ef_search` sweep, build throughput, snapshot
//! write and load time, and RSS after load. Writes `target/bench/scale.json` and prints a table.
//!
//! Run: `cargo bench --profile dev --bench scale [-- --sizes 1000,10000 --queries 200]`.
//! The dev profile optimises the numeric crates (candle, gemm, tantivy, hnsw_rs) but compiles
//! govcat itself at opt-level 0; a release build of the whole tree takes too long here. Add
//! `--config 'profile.dev.package.govcat.opt-level=3'` to measure govcat's own code optimised
//! (the report records which build ran).
//!
//! Document vectors come from the real model (all-MiniLM-L6-v2) up to 10k columns. Above that
//! they are composed: the sum of the real model's embeddings of the document's words plus
//! Gaussian noise, normalised. Isotropic random vectors would be a worst case real embeddings
//! never present (every pair at cosine ~0); `calibration` in the report compares the composed
//! vectors with the real ones at 10k (similarity levels and HNSW recall). Queries are always
//! embedded by the real model.
//!
//! Each size runs in child processes of this binary (`--phase build`, then `--phase query`),
//! so RSS after load is the snapshot's and the model's, not leftovers of a previous size.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use govcat::catalog::{
    Column, Contract, Dataset, DatasetMetadata, Domain, FieldState, SourceFreshness, TableName,
    TagLevel, TagState, Tags,
};
use govcat::embed::{Embedder, MiniLm};
use govcat::index::dense::{build_hnsw, exact_top_k, Backend, Dense, Vectors, EXACT_MAX_DOCS};
use govcat::index::documents::{column_documents, Document, Kind};
use govcat::index::lexical::{parse_query, scope_term};
use govcat::index::{self, Counts, ModelInfo, Quiet};
use govcat::retrieval::{self, Mode, Params, Query, CANDIDATES};
use hnsw_rs::anndists::dist::DistDot;
use hnsw_rs::hnswio::HnswIo;
use serde_json::{json, Value};

const SEED: u64 = 0x5CA1_E000_6C0D_u64;
const DEFAULT_SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];
const DEFAULT_QUERIES: usize = 200;
/// Up to this many columns the document vectors come from the real model.
const REAL_VECTORS_MAX: usize = 10_000;
/// Noise added to composed vectors, relative to the norm of the word sum (see `calibration`).
const NOISE: f32 = 0.35;
/// Time budget of the exact-vs-HNSW comparison per size (at least `MIN_COMPARE` queries run).
const COMPARE_BUDGET: Duration = Duration::from_secs(60);
const MIN_COMPARE: usize = 20;
/// The HNSW file basename `index::dense` writes (`dense.hnsw.graph`, `dense.hnsw.data`).
const HNSW_BASENAME: &str = "dense";
const EF_SWEEP: [usize; 5] = [100, 128, 200, 300, 400];
const RECALL_K: usize = 10;
/// Targets of issue 3 at 100k columns.
const TARGET_SIZE: usize = 100_000;
const TARGET_P50_UNCACHED_MS: f64 = 15.0;
const TARGET_P50_CACHED_MS: f64 = 2.0;
const TARGET_RECALL: f64 = 0.98;

// ---------------------------------------------------------------------------------------------
// Deterministic generator

/// SplitMix64: small, fast, and the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn gaussian(&mut self) -> f32 {
        let u1 = self.unit().max(1e-12);
        let u2 = self.unit();
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Zipf-like sampling (weight 1/(rank+1)^0.9): a few words are in many documents, most in
/// few, so BM25 sees long and short posting lists.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut acc = 0.0;
        let cdf = (0..n)
            .map(|i| {
                acc += 1.0 / ((i + 1) as f64).powf(0.9);
                acc
            })
            .collect::<Vec<_>>();
        let total = acc;
        Zipf {
            cdf: cdf.into_iter().map(|c| c / total).collect(),
        }
    }

    fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1)
    }
}

const DOMAINS: &[&str] = &[
    "policy",
    "claims",
    "billing",
    "payments",
    "hr",
    "payroll",
    "sales",
    "marketing",
    "underwriting",
    "actuarial",
    "risk",
    "compliance",
    "finance",
    "treasury",
    "customer",
    "partner",
    "broker",
    "reinsurance",
    "fraud",
    "legal",
    "procurement",
    "logistics",
    "research",
    "servicing",
];

const ENTITIES: &[&str] = &[
    "customer",
    "policy",
    "claim",
    "contract",
    "invoice",
    "payment",
    "employee",
    "partner",
    "broker",
    "agent",
    "account",
    "vehicle",
    "property",
    "loan",
    "card",
    "transaction",
    "order",
    "premium",
    "coverage",
    "beneficiary",
    "supplier",
    "patient",
    "member",
    "prospect",
    "household",
    "address",
    "document",
    "case",
    "quote",
    "renewal",
];

/// Column concept words, most frequent first. German words mirror the demo catalog's mix.
const CONCEPTS: &[&str] = &[
    "id",
    "name",
    "date",
    "number",
    "status",
    "code",
    "amount",
    "type",
    "customer",
    "address",
    "email",
    "phone",
    "country",
    "birth",
    "created",
    "updated",
    "currency",
    "policy",
    "iban",
    "first",
    "last",
    "city",
    "postal",
    "street",
    "account",
    "claim",
    "premium",
    "tax",
    "gender",
    "nationality",
    "salary",
    "income",
    "balance",
    "rate",
    "score",
    "category",
    "reason",
    "channel",
    "segment",
    "language",
    "timestamp",
    "start",
    "end",
    "expiry",
    "renewal",
    "vat",
    "ssn",
    "passport",
    "license",
    "plate",
    "signature",
    "consent",
    "marketing",
    "flag",
    "hash",
    "token",
    "ip",
    "device",
    "latitude",
    "longitude",
    "weight",
    "height",
    "diagnosis",
    "medication",
    "employer",
    "department",
    "manager",
    "title",
    "grade",
    "bonus",
    "pension",
    "retirement",
    "dividend",
    "interest",
    "fee",
    "commission",
    "discount",
    "limit",
    "deductible",
    "excess",
    "sum",
    "insured",
    "risk",
    "fraud",
    "rating",
    "comment",
    "note",
    "url",
    "version",
    "source",
    "batch",
    "checksum",
    "sequence",
    "line",
    "item",
    "quantity",
    "unit",
    "price",
    "total",
    "net",
    "gross",
    "bic",
    "swift",
    "mobile",
    "middle",
    "maiden",
    "marital",
    "children",
    "occupation",
    "industry",
    "revenue",
    "employees",
    "region",
    "zip",
    "province",
    "holder",
    "beneficiary",
    "payer",
    "payee",
    "mandate",
    "debit",
    "credit",
    "refund",
    "chargeback",
    "dispute",
    "settlement",
    "reserve",
    "loss",
    "incident",
    "injury",
    "hospital",
    "doctor",
    "vehicle",
    "vin",
    "mileage",
    "engine",
    "registration",
    "building",
    "construction",
    "roof",
    "flood",
    "fire",
    "theft",
    "versicherungsnehmer",
    "geburtsdatum",
    "quellensteuer",
    "vertragsnummer",
    "schadennummer",
    "kundennummer",
    "postleitzahl",
    "praemie",
    "selbstbehalt",
    "leistung",
    "ahv",
    "steuer",
    "wohnort",
    "arbeitgeber",
];

const VERBS: &[&str] = &[
    "created",
    "updated",
    "closed",
    "approved",
    "settled",
    "cancelled",
    "renewed",
    "submitted",
    "verified",
    "migrated",
];

const SYSTEMS: &[&str] = &[
    "core",
    "legacy",
    "crm",
    "erp",
    "ledger",
    "portal",
    "mainframe",
    "broker",
    "partner",
    "batch",
];

const TYPES: &[&str] = &[
    "string",
    "string",
    "string",
    "bigint",
    "date",
    "decimal(18,2)",
    "timestamp",
    "boolean",
    "int",
];

const TAG_VALUES: &[(&str, &[&str])] = &[
    (
        "sensitivity",
        &["public", "internal", "confidential", "high"],
    ),
    ("residency", &["eu", "ch", "us", "global"]),
    (
        "subject_type",
        &["customer", "employee", "partner", "prospect", "none"],
    ),
    ("retention", &["30d", "1y", "7y", "10y"]),
    (
        "lawful_basis",
        &[
            "contract",
            "consent",
            "legal_obligation",
            "legitimate_interest",
        ],
    ),
];

/// Every word the generator writes, so composed vectors can look each one up.
fn vocabulary() -> Vec<String> {
    let fixed = "of the for each record as at time assigned by system derived from and reporting \
                 in free text about iso format null when has no table identifier used recorded \
                 reported";
    let mut words: Vec<String> = DOMAINS
        .iter()
        .chain(ENTITIES)
        .chain(CONCEPTS)
        .chain(VERBS)
        .chain(SYSTEMS)
        .map(|w| w.to_string())
        .chain(fixed.split_whitespace().map(str::to_string))
        .collect();
    words.sort();
    words.dedup();
    words
}

/// The column name's words and the name itself (snake_case, camelCase or run together).
fn column_name(rng: &mut Rng, zipf: &Zipf) -> (Vec<&'static str>, String) {
    let n = 1 + rng.below(3);
    let mut words: Vec<&'static str> = Vec::new();
    while words.len() < n {
        let w = CONCEPTS[zipf.sample(rng)];
        if !words.contains(&w) {
            words.push(w);
        }
    }
    let style = rng.below(10);
    let name = if style < 7 || words.len() == 1 {
        words.join("_")
    } else if style < 9 {
        words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i == 0 {
                    w.to_string()
                } else {
                    let mut c = w.chars();
                    c.next()
                        .map(|f| f.to_uppercase().chain(c).collect())
                        .unwrap_or_default()
                }
            })
            .collect()
    } else {
        words.concat()
    };
    (words, name)
}

fn description(rng: &mut Rng, zipf: &Zipf, words: &[&str], entity: &str, domain: &str) -> String {
    let name = words.join(" ");
    let x1 = CONCEPTS[zipf.sample(rng)];
    let x2 = CONCEPTS[zipf.sample(rng)];
    match rng.below(8) {
        0 => format!("{name} of the {entity}"),
        1 => format!(
            "The {entity} {name}, as recorded when the {entity} was {}",
            rng.pick(VERBS)
        ),
        2 => format!("{name} ({x1} {x2}) for each {entity} record"),
        3 => format!(
            "Identifier: {name} assigned by the {} system",
            rng.pick(SYSTEMS)
        ),
        4 => format!("{name}; derived from {x1} and {x2} of the {entity}"),
        5 => format!("{name} used for {x1} {x2} reporting in {domain}"),
        6 => format!("Free text {x1} about the {name}"),
        _ => format!("{name} in ISO format, null when the {entity} has no {x1}"),
    }
}

fn tags(rng: &mut Rng) -> Tags {
    TAG_VALUES
        .iter()
        .map(|(key, values)| {
            (
                key.to_string(),
                TagState::present(values[rng.below(values.len())], TagLevel::Column),
            )
        })
        .collect()
}

/// A synthetic catalog of exactly `n` column documents, in a deterministic order.
struct Catalog {
    docs: Vec<Document>,
    tables: usize,
    domains: usize,
}

fn generate(n: usize) -> Catalog {
    let mut rng = Rng::new(SEED);
    let zipf = Zipf::new(CONCEPTS.len());
    let mut docs = Vec::with_capacity(n);
    let mut tables = 0usize;
    let mut domains_seen = HashSet::new();
    while docs.len() < n {
        let domain = DOMAINS[tables % DOMAINS.len()];
        domains_seen.insert(domain);
        let entity = rng.pick(ENTITIES);
        let table = format!("{entity}_{}_{tables}", rng.pick(SYSTEMS));
        let width = (5 + rng.below(36)).min(n - docs.len());
        let mut names = HashSet::new();
        let mut columns = Vec::with_capacity(width);
        while columns.len() < width {
            let (words, mut name) = column_name(&mut rng, &zipf);
            if !names.insert(name.clone()) {
                name = format!("{name}_{}", columns.len());
                names.insert(name.clone());
            }
            let description =
                (rng.below(100) >= 3).then(|| description(&mut rng, &zipf, &words, entity, domain));
            columns.push(Column {
                name,
                data_type: rng.pick(TYPES).to_string(),
                description_state: if description.is_some() {
                    FieldState::Present
                } else {
                    FieldState::EmptyInSource
                },
                description,
                is_partition_key: false,
                lf_tags: tags(&mut rng),
            });
        }
        let dataset = Dataset {
            metadata: DatasetMetadata {
                name: TableName(table),
                domain: Domain(domain.to_string()),
                database: format!("{domain}_db"),
                owner: Some(format!("{domain}-data-owners")),
                description: None,
                updated_at: None,
            },
            contract: Contract {
                freshness_sla: Some("24h".into()),
                table_tags: Tags::new(),
            },
            columns,
        };
        docs.extend(column_documents(&dataset));
        tables += 1;
    }
    Catalog {
        docs,
        tables,
        domains: domains_seen.len(),
    }
}

/// `count` distinct query texts that describe columns the way a domain engineer would.
/// `salt` keeps different query sets (warm-up, measured) apart.
fn queries(count: usize, salt: u64) -> Vec<String> {
    let mut rng = Rng::new(SEED ^ salt.wrapping_mul(0x9E37_79B9));
    let zipf = Zipf::new(CONCEPTS.len());
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let a = CONCEPTS[zipf.sample(&mut rng)];
        let b = CONCEPTS[zipf.sample(&mut rng)];
        let e = rng.pick(ENTITIES);
        let q = match rng.below(6) {
            0 => format!("{a} {b} of the {e}"),
            1 => format!("contains the {a} {b}"),
            2 => format!("{a} {b}"),
            3 => format!("{a} number of a {e}"),
            4 => format!("which column holds the {a} of the {e}"),
            _ => format!("{e} {a} {b} when {}", rng.pick(VERBS)),
        };
        if a != b && seen.insert(q.clone()) {
            out.push(q);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Vectors

fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 1e-12 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// The real model's embedding of every vocabulary word.
fn word_vectors(model: &MiniLm) -> Result<HashMap<String, Vec<f32>>> {
    let words = vocabulary();
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    let vectors = model
        .embed_batch(&refs)
        .context("embedding the generator's vocabulary with the real model")?;
    Ok(words.into_iter().zip(vectors).collect())
}

/// Composed vectors: the sum of the document's known word embeddings plus Gaussian noise of
/// `noise` times the sum's norm, normalised. `noise = None` gives isotropic random vectors.
fn composed_vectors(
    docs: &[Document],
    words: &HashMap<String, Vec<f32>>,
    noise: Option<f32>,
    dim: usize,
) -> Vectors {
    let mut rng = Rng::new(SEED ^ 0xC0FFEE);
    let mut data = Vec::with_capacity(docs.len() * dim);
    let mut v = vec![0f32; dim];
    let mut g = vec![0f32; dim];
    for d in docs {
        v.iter_mut().for_each(|x| *x = 0.0);
        if noise.is_some() {
            for w in govcat::index::text::words(&d.dense_text) {
                if let Some(e) = words.get(&w) {
                    v.iter_mut().zip(e).for_each(|(x, y)| *x += y);
                }
            }
        }
        let signal = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        g.iter_mut().for_each(|x| *x = rng.gaussian());
        normalise(&mut g);
        let scale = match noise {
            Some(s) if signal > 1e-6 => s * signal,
            _ => 1.0,
        };
        v.iter_mut().zip(&g).for_each(|(x, y)| *x += scale * y);
        normalise(&mut v);
        data.extend_from_slice(&v);
    }
    Vectors { dim, data }
}

// ---------------------------------------------------------------------------------------------
// Measurement helpers

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Nearest-rank percentiles of `samples` (milliseconds).
fn percentiles(samples: &[f64]) -> Value {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |p: f64| -> f64 {
        if s.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
        s[rank.clamp(1, s.len()) - 1]
    };
    let mean = s.iter().sum::<f64>() / s.len().max(1) as f64;
    json!({
        "n": s.len(),
        "p50_ms": round3(at(50.0)),
        "p95_ms": round3(at(95.0)),
        "p99_ms": round3(at(99.0)),
        "mean_ms": round3(mean),
        "max_ms": round3(s.last().copied().unwrap_or(f64::NAN)),
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// (VmRSS, VmHWM) of this process in MiB.
fn rss_mib() -> Result<(f64, f64)> {
    let status = fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let field = |name: &str| -> Result<f64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .ok_or_else(|| anyhow!("/proc/self/status has no {name} line"))?;
        let kb: f64 = line
            .split_whitespace()
            .nth(1)
            .ok_or_else(|| anyhow!("/proc/self/status line '{line}' has no value"))?
            .parse()
            .with_context(|| format!("/proc/self/status line '{line}'"))?;
        Ok(kb / 1024.0)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let meta = entry
            .metadata()
            .with_context(|| format!("stat {}", entry.path().display()))?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

/// Recall of `approx` against `exact` at k, tolerant of ties: an approximate hit counts if its
/// similarity reaches the exact k-th similarity.
fn recall_at(approx: &[(u32, f32)], exact: &[(u32, f32)], k: usize) -> f64 {
    let k = k.min(exact.len());
    if k == 0 {
        return 1.0;
    }
    let kth = exact[k - 1].1 - 1e-6;
    let truth: HashSet<u32> = exact[..k].iter().map(|x| x.0).collect();
    let found = approx
        .iter()
        .take(k)
        .filter(|(id, sim)| truth.contains(id) || *sim >= kth)
        .count();
    found as f64 / k as f64
}

fn load_model() -> Result<MiniLm> {
    MiniLm::load_default().context(
        "the scale bench needs the real model; fetch it with the README's commands \
         (scripts/fetch-model.sh) or set GOVCAT_MODEL_DIR",
    )
}

fn model_info(model: &MiniLm) -> ModelInfo {
    ModelInfo {
        id: model.model_id().to_string(),
        dimension: model.dimension(),
        checksum: model.checksum().to_string(),
    }
}

fn write_json(path: &Path, value: &Value) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value).context("serialising the report")?;
    fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn read_json(path: &Path) -> Result<Value> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// Phase: build (one size)

fn snapshot_dir(work: &Path) -> Result<PathBuf> {
    let index_dir = work.join("index");
    let id = index::current_id(&index_dir)?;
    Ok(index_dir.join("snapshots").join(id))
}

fn phase_build(size: usize, work: &Path) -> Result<Value> {
    let model = load_model()?;
    let started = Instant::now();
    let catalog = generate(size);
    let generate_ms = ms(started.elapsed());
    eprintln!(
        "[scale {size}] generated {} documents in {generate_ms:.0} ms",
        catalog.docs.len()
    );

    let dim = model.dimension();
    let started = Instant::now();
    let (vectors, vector_source) = if size <= REAL_VECTORS_MAX {
        eprintln!("[scale {size}] embedding {size} documents with the real model");
        (
            index::embed_documents(&model, &catalog.docs, &Quiet)
                .context("embedding the synthetic documents")?,
            "real model (all-MiniLM-L6-v2)",
        )
    } else {
        let words = word_vectors(&model)?;
        (
            composed_vectors(&catalog.docs, &words, Some(NOISE), dim),
            "composed from real word embeddings + noise",
        )
    };
    let vectors_ms = ms(started.elapsed());

    let counts = Counts {
        documents: catalog.docs.len(),
        columns: catalog.docs.len(),
        ontology_values: 0,
        domains: catalog.domains,
        tables: catalog.tables,
        unreadable_tables: Vec::new(),
    };
    let freshness = SourceFreshness {
        kind: "synthetic".into(),
        location: format!("benches/scale.rs generator, seed {SEED:#x}"),
        recorded_at: None,
        refresh_every_secs: None,
    };
    let index_dir = work.join("index");
    eprintln!(
        "[scale {size}] writing the snapshot (tantivy{})",
        if size > EXACT_MAX_DOCS { " + HNSW" } else { "" }
    );
    let started = Instant::now();
    index::write_snapshot(
        &index_dir,
        &catalog.docs,
        &vectors,
        counts,
        freshness,
        model_info(&model),
        "synthetic",
    )
    .context("writing the snapshot")?;
    let write_ms = ms(started.elapsed());
    let snapshot_bytes = dir_bytes(&snapshot_dir(work)?)?;

    // Breakdown: the lexical index alone (skipped at 1M, where it would add minutes).
    let lexical_ms = if size <= TARGET_SIZE {
        let scratch = work.join("lexical-only");
        fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
        let started = Instant::now();
        index::lexical::build(&scratch, &catalog.docs)
            .context("building the lexical index alone")?;
        let t = ms(started.elapsed());
        fs::remove_dir_all(&scratch).with_context(|| format!("removing {}", scratch.display()))?;
        Some(round3(t))
    } else {
        None
    };

    // Small sizes serve from the exact scan; build the graph beside the snapshot anyway so the
    // query phase can compare HNSW with the exact scan at every size.
    let side_hnsw_ms = if size <= EXACT_MAX_DOCS {
        let side = work.join("hnsw");
        fs::create_dir_all(&side).with_context(|| format!("creating {}", side.display()))?;
        eprintln!("[scale {size}] building the comparison HNSW graph");
        let started = Instant::now();
        build_hnsw(&side, &vectors).context("building the comparison HNSW graph")?;
        Some(round3(ms(started.elapsed())))
    } else {
        None
    };

    let (rss, hwm) = rss_mib()?;
    Ok(json!({
        "documents": catalog.docs.len(),
        "tables": catalog.tables,
        "domains": catalog.domains,
        "vector_source": vector_source,
        "generate_ms": round3(generate_ms),
        "vectors_ms": round3(vectors_ms),
        "embed_docs_per_s": (size <= REAL_VECTORS_MAX).then(|| round3(size as f64 / (vectors_ms / 1e3))),
        "snapshot_write_ms": round3(write_ms),
        "snapshot_write_docs_per_s": round3(size as f64 / (write_ms / 1e3)),
        "snapshot_backend": if size > EXACT_MAX_DOCS { "hnsw" } else { "exact" },
        "lexical_build_ms": lexical_ms,
        "hnsw_build_ms_separate": side_hnsw_ms,
        "hnsw_build_ms_estimate": lexical_ms.filter(|_| size > EXACT_MAX_DOCS).map(|l| round3(write_ms - l)),
        "total_build_docs_per_s": round3(size as f64 / ((vectors_ms + write_ms + side_hnsw_ms.unwrap_or(0.0)) / 1e3)),
        "snapshot_bytes": snapshot_bytes,
        "build_rss_mib": round3(rss),
        "build_peak_rss_mib": round3(hwm),
    }))
}

// ---------------------------------------------------------------------------------------------
// Phase: query (one size)

fn phase_query(size: usize, work: &Path, query_count: usize) -> Result<Value> {
    let started = Instant::now();
    let model = load_model()?;
    let model_load_ms = ms(started.elapsed());
    let (rss_model, _) = rss_mib()?;

    let dir = snapshot_dir(work)?;
    let started = Instant::now();
    let snapshot = index::load(&dir, &model).context("loading the snapshot")?;
    let load_ms = ms(started.elapsed());
    let (rss_loaded, hwm_loaded) = rss_mib()?;
    let n = snapshot.docs.len();
    if n != size {
        bail!(
            "snapshot {} holds {n} documents, expected {size}",
            dir.display()
        );
    }
    let backend = snapshot.dense.backend();
    eprintln!("[scale {size}] loaded in {load_ms:.0} ms ({backend:?}); RSS {rss_loaded:.0} MiB");

    let domains = snapshot.domains.clone();
    let kinds = Kind::ALL.to_vec();
    let params = Params::default();
    let search = |text: &str| -> Result<(f64, usize)> {
        let q = Query {
            description: text,
            domains: &domains,
            kinds: &kinds,
            mode: Mode::Hybrid,
        };
        let t = Instant::now();
        let hits = retrieval::search(&snapshot, &model, &params, &q)
            .with_context(|| format!("searching '{text}'"))?;
        Ok((ms(t.elapsed()), hits.len()))
    };

    // Warm-up on texts never measured (page cache, tantivy readers, allocator).
    for text in queries(10, 1) {
        search(&text)?;
    }
    let texts = queries(query_count, 2);

    // Fresh embeddings: every text is new to the query cache.
    let (hits0, misses0) = model.cache_stats();
    let mut uncached = Vec::with_capacity(texts.len());
    let mut hit_counts = Vec::with_capacity(texts.len());
    for text in &texts {
        let (t, hits) = search(text)?;
        uncached.push(t);
        hit_counts.push(hits);
    }
    let (hits1, misses1) = model.cache_stats();
    if misses1 - misses0 != texts.len() as u64 || hits1 != hits0 {
        bail!(
            "the uncached pass was not uncached: {} misses and {} hits for {} new texts",
            misses1 - misses0,
            hits1 - hits0,
            texts.len()
        );
    }

    // Cached embeddings: the same texts again.
    let mut cached = Vec::with_capacity(texts.len());
    for text in &texts {
        cached.push(search(text)?.0);
    }
    let (hits2, misses2) = model.cache_stats();
    if hits2 - hits1 != texts.len() as u64 || misses2 != misses1 {
        bail!(
            "the cached pass was not cached: {} hits and {} misses for {} repeated texts",
            hits2 - hits1,
            misses2 - misses1,
            texts.len()
        );
    }

    // Where a cached query's time goes (the same calls retrieval::search makes).
    let mut scopes: Vec<String> = domains.iter().map(|d| format!("domain:{d}")).collect();
    scopes.push("ontology".into());
    let mut embed_fresh = Vec::new();
    let mut lexical_t = Vec::new();
    let mut mask_t = Vec::new();
    let mut dense_t = Vec::new();
    let mut query_vectors = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        // A fresh text per sample, so this is the model's time, not the cache's.
        let t = Instant::now();
        model
            .embed_query(&format!("{text} ({i})"))
            .context("embedding a query")?;
        embed_fresh.push(ms(t.elapsed()));
        let v = model.embed_query(text).context("embedding a query")?;
        let t = Instant::now();
        snapshot
            .lexical
            .search(&parse_query(text), &scopes, CANDIDATES)
            .context("lexical search")?;
        lexical_t.push(ms(t.elapsed()));
        let t = Instant::now();
        let mask: Vec<bool> = snapshot
            .docs
            .iter()
            .map(|d| scopes.contains(&scope_term(d)))
            .collect();
        let allowed_count = mask.iter().filter(|a| **a).count();
        mask_t.push(ms(t.elapsed()));
        let t = Instant::now();
        snapshot
            .dense
            .search(&v, CANDIDATES, &|o| mask[o as usize], allowed_count);
        dense_t.push(ms(t.elapsed()));
        query_vectors.push(v);
    }

    // HNSW against the exact scan, same queries, same k as the product (CANDIDATES).
    let side = work.join("hnsw");
    let graph_dir = if backend == Backend::Hnsw {
        dir.clone()
    } else {
        side.clone()
    };
    let side_dense;
    let hnsw_dense: &Dense = if backend == Backend::Hnsw {
        &snapshot.dense
    } else {
        let copy = Vectors {
            dim: snapshot.dense.vectors.dim,
            data: snapshot.dense.vectors.data.clone(),
        };
        side_dense = Dense::with_hnsw(copy, &side).context("loading the comparison HNSW graph")?;
        &side_dense
    };
    let all = |_: u32| true;
    let mut exact_t = Vec::new();
    let mut hnsw_t = Vec::new();
    let mut recall10 = Vec::new();
    let mut recall100 = Vec::new();
    let mut exact_results = Vec::new();
    let budget = Instant::now();
    for v in &query_vectors {
        if exact_t.len() >= MIN_COMPARE && budget.elapsed() > COMPARE_BUDGET {
            break;
        }
        let t = Instant::now();
        let exact = exact_top_k(&snapshot.dense.vectors, v, CANDIDATES, &all);
        exact_t.push(ms(t.elapsed()));
        let t = Instant::now();
        let approx = hnsw_dense.search(v, CANDIDATES, &all, n);
        hnsw_t.push(ms(t.elapsed()));
        recall10.push(recall_at(&approx, &exact, RECALL_K));
        recall100.push(recall_at(&approx, &exact, CANDIDATES));
        exact_results.push(exact);
    }
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    let exact_p = percentiles(&exact_t);
    let hnsw_p = percentiles(&hnsw_t);
    let speedup = exact_p["p50_ms"].as_f64().unwrap_or(f64::NAN)
        / hnsw_p["p50_ms"].as_f64().unwrap_or(f64::NAN);

    // ef_search sweep on the same graph, loaded directly.
    let mut io = HnswIo::new(&graph_dir, HNSW_BASENAME);
    let graph = io.load_hnsw::<f32, DistDot>().map_err(|e| {
        anyhow!(
            "loading {}/{HNSW_BASENAME}.hnsw.graph for the ef sweep: {e}",
            graph_dir.display()
        )
    })?;
    let mut sweep = Vec::new();
    for ef in EF_SWEEP {
        let mut t_ef = Vec::new();
        let mut r10 = Vec::new();
        let mut r100 = Vec::new();
        for (v, exact) in query_vectors.iter().zip(&exact_results) {
            let t = Instant::now();
            let found = graph.search(v, CANDIDATES, ef);
            t_ef.push(ms(t.elapsed()));
            let approx: Vec<(u32, f32)> = found
                .iter()
                .map(|nb| (nb.d_id as u32, 1.0 - nb.distance))
                .collect();
            r10.push(recall_at(&approx, exact, RECALL_K));
            r100.push(recall_at(&approx, exact, CANDIDATES));
        }
        sweep.push(json!({
            "ef_search": ef,
            "recall_at_10": round3(mean(&r10)),
            "min_recall_at_10": round3(r10.iter().copied().fold(1.0, f64::min)),
            "recall_at_100": round3(mean(&r100)),
            "latency": percentiles(&t_ef),
        }));
    }
    let graph_params = json!({
        "max_nb_connection": graph.get_max_nb_connection(),
        "ef_construction": graph.get_ef_construction(),
        "max_level_observed": graph.get_max_level_observed(),
    });
    drop(graph);

    let top1: Vec<f64> = exact_results
        .iter()
        .filter_map(|r| r.first().map(|x| f64::from(x.1)))
        .collect();
    let empty = hit_counts.iter().filter(|h| **h == 0).count();
    Ok(json!({
        "model_load_ms": round3(model_load_ms),
        "snapshot_load_ms": round3(load_ms),
        "rss_with_model_mib": round3(rss_model),
        "rss_after_load_mib": round3(rss_loaded),
        "snapshot_rss_mib": round3(rss_loaded - rss_model),
        "peak_rss_after_load_mib": round3(hwm_loaded),
        "backend": match backend { Backend::Exact => "exact", Backend::Hnsw => "hnsw" },
        "queries": texts.len(),
        "mean_hits_per_query": round3(hit_counts.iter().sum::<usize>() as f64 / hit_counts.len().max(1) as f64),
        "queries_with_no_hit": empty,
        "search_uncached": percentiles(&uncached),
        "search_cached": percentiles(&cached),
        "breakdown_cached": {
            "embed_fresh_query": percentiles(&embed_fresh),
            "lexical_search": percentiles(&lexical_t),
            "scope_mask_over_all_docs": percentiles(&mask_t),
            "dense_search_product_backend": percentiles(&dense_t),
        },
        "dense_vs_exact": {
            "k": CANDIDATES,
            "queries": exact_t.len(),
            "exact": exact_p,
            "hnsw": hnsw_p,
            "speedup_p50": round3(speedup),
            "recall_at_10": round3(mean(&recall10)),
            "min_recall_at_10": round3(recall10.iter().copied().fold(1.0, f64::min)),
            "recall_at_100": round3(mean(&recall100)),
            "mean_top1_similarity": round3(mean(&top1)),
            "graph": graph_params,
            "ef_sweep": sweep,
        },
    }))
}

// ---------------------------------------------------------------------------------------------
// Phase: calibrate (composed vs real vectors on the same documents)

fn phase_calibrate(size: usize, work: &Path) -> Result<Value> {
    let model = load_model()?;
    let dir = snapshot_dir(work)?;
    let snapshot = index::load(&dir, &model).context("loading the real-vector snapshot")?;
    let real = Vectors {
        dim: snapshot.dense.vectors.dim,
        data: snapshot.dense.vectors.data.clone(),
    };
    let words = word_vectors(&model)?;
    let texts = queries(100, 3);
    let qv: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| model.embed_query(t))
        .collect::<Result<_, _>>()
        .context("embedding calibration queries")?;

    let describe = |name: &str,
                    vectors: &Vectors,
                    real_top: Option<&[Vec<(u32, f32)>]>|
     -> Result<(Value, Vec<Vec<(u32, f32)>>)> {
        let mut rng = Rng::new(SEED ^ 0xBEEF);
        let pairs: Vec<f64> = (0..2000)
            .map(|_| {
                let a = vectors.row(rng.below(vectors.len()));
                let b = vectors.row(rng.below(vectors.len()));
                f64::from(a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
            })
            .collect();
        let tops: Vec<Vec<(u32, f32)>> = qv
            .iter()
            .map(|v| exact_top_k(vectors, v, CANDIDATES, &|_| true))
            .collect();
        let hnsw_dir = work.join(format!("calibrate-{name}"));
        fs::create_dir_all(&hnsw_dir)
            .with_context(|| format!("creating {}", hnsw_dir.display()))?;
        build_hnsw(&hnsw_dir, vectors).context("building a calibration graph")?;
        let copy = Vectors {
            dim: vectors.dim,
            data: vectors.data.clone(),
        };
        let dense = Dense::with_hnsw(copy, &hnsw_dir).context("loading a calibration graph")?;
        let recalls: Vec<f64> = qv
            .iter()
            .zip(&tops)
            .map(|(v, exact)| {
                recall_at(
                    &dense.search(v, CANDIDATES, &|_| true, vectors.len()),
                    exact,
                    RECALL_K,
                )
            })
            .collect();
        // Neighbourhood agreement with the real vectors: share of the real top 10 in this top 10.
        let agreement = real_top.map(|rt| {
            rt.iter()
                .zip(&tops)
                .map(|(r, t)| {
                    let truth: HashSet<u32> = r.iter().take(10).map(|x| x.0).collect();
                    t.iter().take(10).filter(|x| truth.contains(&x.0)).count() as f64 / 10.0
                })
                .sum::<f64>()
                / rt.len().max(1) as f64
        });
        let n = qv.len().max(1) as f64;
        let mean_pair = pairs.iter().sum::<f64>() / pairs.len() as f64;
        let sd_pair = (pairs.iter().map(|p| (p - mean_pair).powi(2)).sum::<f64>()
            / pairs.len() as f64)
            .sqrt();
        let value = json!({
            "vectors": name,
            "random_pair_cosine_mean": round3(mean_pair),
            "random_pair_cosine_sd": round3(sd_pair),
            "query_top1_similarity_mean": round3(tops.iter().map(|t| f64::from(t[0].1)).sum::<f64>() / n),
            "query_top10_similarity_mean": round3(tops.iter().map(|t| f64::from(t[9].1)).sum::<f64>() / n),
            "query_top100_similarity_mean": round3(tops.iter().map(|t| f64::from(t[99].1)).sum::<f64>() / n),
            "hnsw_recall_at_10": round3(recalls.iter().sum::<f64>() / n),
            "top10_agreement_with_real": agreement.map(round3),
        });
        fs::remove_dir_all(&hnsw_dir)
            .with_context(|| format!("removing {}", hnsw_dir.display()))?;
        Ok((value, tops))
    };

    eprintln!("[calibrate {size}] real vectors");
    let (real_stats, real_tops) = describe("real", &real, None)?;
    let mut rows = vec![real_stats];
    for noise in [Some(0.2), Some(NOISE), Some(0.6), None] {
        let name = noise.map_or("isotropic random".to_string(), |s| {
            format!("composed, noise {s}")
        });
        eprintln!("[calibrate {size}] {name}");
        let v = composed_vectors(&snapshot.docs, &words, noise, real.dim);
        rows.push(describe(&name, &v, Some(&real_tops))?.0);
    }
    Ok(json!({ "documents": size, "noise_used_above_real_sizes": NOISE, "rows": rows }))
}

// ---------------------------------------------------------------------------------------------
// Parent: orchestration, report, table

struct Args {
    phase: Option<String>,
    sizes: Vec<usize>,
    size: usize,
    queries: usize,
    work: Option<PathBuf>,
    out: Option<PathBuf>,
    timeout: Duration,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        phase: None,
        sizes: DEFAULT_SIZES.to_vec(),
        size: 0,
        queries: DEFAULT_QUERIES,
        work: None,
        out: None,
        timeout: Duration::from_secs(1800),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .ok_or_else(|| anyhow!("{flag} needs a value; see the header of benches/scale.rs"))
        };
        match a.as_str() {
            "--phase" => args.phase = Some(value("--phase")?),
            "--sizes" => {
                args.sizes = value("--sizes")?
                    .split(',')
                    .map(|s| s.trim().replace('_', "").parse::<usize>())
                    .collect::<Result<_, _>>()
                    .context("--sizes takes comma-separated column counts, e.g. 1000,10000")?
            }
            "--size" => {
                args.size = value("--size")?
                    .parse()
                    .context("--size takes a column count")?
            }
            "--queries" => {
                args.queries = value("--queries")?
                    .parse()
                    .context("--queries takes a count")?
            }
            "--work" => args.work = Some(PathBuf::from(value("--work")?)),
            "--out" => args.out = Some(PathBuf::from(value("--out")?)),
            "--timeout-secs" => {
                args.timeout = Duration::from_secs(
                    value("--timeout-secs")?
                        .parse()
                        .context("--timeout-secs takes seconds")?,
                )
            }
            // `cargo bench` passes --bench; other harness flags do not apply here.
            _ => {}
        }
    }
    Ok(args)
}

/// Runs one phase in a child process; `Ok(None)` when it ran out of time.
fn run_child(
    phase: &str,
    size: usize,
    work: &Path,
    queries: usize,
    timeout: Duration,
) -> Result<Option<(Value, f64)>> {
    let exe = std::env::current_exe().context("locating the bench binary")?;
    let out = work.join(format!("{phase}.json"));
    let started = Instant::now();
    let mut child = Command::new(exe)
        .args([
            "--phase",
            phase,
            "--size",
            &size.to_string(),
            "--queries",
            &queries.to_string(),
        ])
        .arg("--work")
        .arg(work)
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("starting the {phase} phase for {size} columns"))?;
    loop {
        if let Some(status) = child.try_wait().context("waiting for a bench phase")? {
            if !status.success() {
                bail!("the {phase} phase for {size} columns failed ({status}); its error is printed above");
            }
            return Ok(Some((read_json(&out)?, started.elapsed().as_secs_f64())));
        }
        if started.elapsed() > timeout {
            eprintln!(
                "[scale {size}] {phase} phase exceeded {} s; stopping it",
                timeout.as_secs()
            );
            child
                .kill()
                .context("stopping a bench phase that ran out of time")?;
            child.wait().context("reaping a stopped bench phase")?;
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn machine() -> Value {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string());
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok());
    json!({
        "nproc": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "cpu_model": model,
        "memory_total_mib": mem_kib.map(|k| (k / 1024.0).round()),
        "loadavg": loadavg(),
    })
}

fn loadavg() -> Option<String> {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

fn get(v: &Value, path: &str) -> Option<f64> {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_f64)
}

fn fmt_ms(v: &Value, path: &str) -> String {
    get(v, path).map_or("-".into(), |x| format!("{x:.2}"))
}

fn print_table(rows: &[Value]) {
    println!();
    println!(
        "{:>9} {:>6} {:>10} {:>9} {:>8} {:>8} | {:>22} | {:>22} | {:>8} {:>8} {:>7} {:>6}",
        "columns",
        "dense",
        "embed d/s",
        "write s",
        "load ms",
        "RSS MiB",
        "uncached p50/p95/p99",
        "cached p50/p95/p99",
        "exact",
        "hnsw",
        "speedup",
        "r@10"
    );
    for r in rows {
        let size = r["size"].as_u64().unwrap_or(0);
        if r["status"] != "complete" {
            println!("{size:>9} {}", r["status"].as_str().unwrap_or("?"));
            continue;
        }
        let q = &r["query"];
        let b = &r["build"];
        let trio = |p: &str| {
            format!(
                "{}/{}/{}",
                fmt_ms(q, &format!("{p}.p50_ms")),
                fmt_ms(q, &format!("{p}.p95_ms")),
                fmt_ms(q, &format!("{p}.p99_ms"))
            )
        };
        println!(
            "{size:>9} {:>6} {:>10} {:>9} {:>8} {:>8} | {:>22} | {:>22} | {:>8} {:>8} {:>7} {:>6}",
            q["backend"].as_str().unwrap_or("?"),
            get(b, "embed_docs_per_s").map_or("-".into(), |x| format!("{x:.0}")),
            get(b, "snapshot_write_ms").map_or("-".into(), |x| format!("{:.1}", x / 1e3)),
            fmt_ms(q, "snapshot_load_ms"),
            get(q, "rss_after_load_mib").map_or("-".into(), |x| format!("{x:.0}")),
            trio("search_uncached"),
            trio("search_cached"),
            fmt_ms(q, "dense_vs_exact.exact.p50_ms"),
            fmt_ms(q, "dense_vs_exact.hnsw.p50_ms"),
            get(q, "dense_vs_exact.speedup_p50").map_or("-".into(), |x| format!("{x:.1}x")),
            get(q, "dense_vs_exact.recall_at_10").map_or("-".into(), |x| format!("{x:.3}")),
        );
    }
    println!("(times in ms unless marked; exact/hnsw: p50 of one dense top-{CANDIDATES} query; r@10: HNSW recall@10 of the exact scan)");
}

fn targets(rows: &[Value]) -> Value {
    let Some(q) = rows
        .iter()
        .find(|r| r["size"].as_u64() == Some(TARGET_SIZE as u64) && r["status"] == "complete")
        .map(|r| &r["query"])
    else {
        return json!({ "size": TARGET_SIZE, "measured": false });
    };
    let uncached = get(q, "search_uncached.p50_ms");
    let cached = get(q, "search_cached.p50_ms");
    let recall = get(q, "dense_vs_exact.recall_at_10");
    json!({
        "size": TARGET_SIZE,
        "measured": true,
        "p50_uncached_ms": { "target": TARGET_P50_UNCACHED_MS, "measured": uncached, "met": uncached.is_some_and(|x| x <= TARGET_P50_UNCACHED_MS) },
        "p50_cached_ms": { "target": TARGET_P50_CACHED_MS, "measured": cached, "met": cached.is_some_and(|x| x <= TARGET_P50_CACHED_MS) },
        "hnsw_recall_at_10": { "target": TARGET_RECALL, "measured": recall, "met": recall.is_some_and(|x| x >= TARGET_RECALL) },
    })
}

fn orchestrate(args: &Args) -> Result<()> {
    let bench_dir = PathBuf::from("target/bench");
    fs::create_dir_all(&bench_dir).with_context(|| format!("creating {}", bench_dir.display()))?;
    let report_path = bench_dir.join("scale.json");
    let profile = json!({
        "debug_assertions": cfg!(debug_assertions),
        "note": "run with `cargo bench --profile dev`: the numeric crates (candle, gemm, tantivy, \
                 hnsw_rs, anndists, sha2, serde_json) are at opt-level 3, govcat itself at the \
                 dev profile's opt-level unless --config 'profile.dev.package.govcat.opt-level=3' \
                 was given; a release build of the whole dependency tree takes too long on this machine",
        "hnsw_rs_threads": std::thread::available_parallelism().map(|n| n.get()).ok(),
    });
    let started_machine = machine();
    let mut rows: Vec<Value> = Vec::new();
    let mut calibration = Value::Null;
    let real_max = args
        .sizes
        .iter()
        .copied()
        .filter(|s| *s <= REAL_VECTORS_MAX)
        .max();
    for &size in &args.sizes {
        let work = tempfile::Builder::new()
            .prefix(&format!("scale-{size}-"))
            .tempdir_in(&bench_dir)
            .with_context(|| format!("creating a work directory under {}", bench_dir.display()))?;
        eprintln!("[scale {size}] work directory {}", work.path().display());
        let mut row = json!({ "size": size, "loadavg_before": loadavg() });
        match run_child("build", size, work.path(), args.queries, args.timeout)? {
            None => {
                row["status"] = json!(format!(
                    "build did not finish in {} s",
                    args.timeout.as_secs()
                ))
            }
            Some((build, _)) => {
                row["build"] = build;
                match run_child("query", size, work.path(), args.queries, args.timeout)? {
                    None => {
                        row["status"] = json!(format!(
                            "query phase did not finish in {} s",
                            args.timeout.as_secs()
                        ))
                    }
                    Some((query, _)) => {
                        row["query"] = query;
                        row["status"] = json!("complete");
                    }
                }
                if Some(size) == real_max && size >= 5_000 {
                    if let Some((c, _)) =
                        run_child("calibrate", size, work.path(), args.queries, args.timeout)?
                    {
                        calibration = c;
                    }
                }
            }
        }
        row["loadavg_after"] = json!(loadavg());
        rows.push(row);
        let report = json!({
            "bench": "scale",
            "seed": format!("{SEED:#x}"),
            "profile": profile,
            "machine": started_machine,
            "loadavg_end": loadavg(),
            "exact_max_docs": EXACT_MAX_DOCS,
            "candidates": CANDIDATES,
            "queries_per_size": args.queries,
            "sizes": rows,
            "calibration": calibration,
            "targets": targets(&rows),
        });
        write_json(&report_path, &report)?;
        print_table(&rows);
    }
    println!("report: {}", report_path.display());
    Ok(())
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let Some(phase) = &args.phase else {
        return orchestrate(&args);
    };
    let work = args
        .work
        .as_deref()
        .ok_or_else(|| anyhow!("--phase {phase} needs --work DIR"))?;
    let out = args
        .out
        .as_deref()
        .ok_or_else(|| anyhow!("--phase {phase} needs --out FILE"))?;
    let value = match phase.as_str() {
        "build" => phase_build(args.size, work)?,
        "query" => phase_query(args.size, work, args.queries)?,
        "calibrate" => phase_calibrate(args.size, work)?,
        other => bail!("unknown phase '{other}': expected build, query or calibrate"),
    };
    write_json(out, &value)?;
    Ok(())
}
