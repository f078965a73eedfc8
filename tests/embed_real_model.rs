//! Integration tests against the real all-MiniLM-L6-v2 model in `models/all-MiniLM-L6-v2`
//! (or `$GOVCAT_MODEL_DIR`). Fetch it with `scripts/fetch-model.sh`.
//!
//! Outside CI a missing model skips these tests with a message; under `CI=true` a missing
//! model fails them.

use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use govcat::embed::{Embedder, MiniLm, DEFAULT_MODEL_DIR, MODEL_DIR_ENV};

fn model_dir() -> PathBuf {
    match std::env::var_os(MODEL_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_MODEL_DIR),
    }
}

/// The shared model, or `None` (after saying why) when the tests should be skipped.
fn model() -> Option<&'static MiniLm> {
    static MODEL: OnceLock<Option<MiniLm>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = model_dir();
            let ci = std::env::var("CI").is_ok_and(|v| v == "true");
            if !dir.join("model.safetensors").is_file() && !ci {
                // Written to stderr directly, not through eprintln!, so the test harness does
                // not capture it: a skip must be visible in a plain `cargo test` run.
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED embed_real_model: no embedding model in {}; run \
                     scripts/fetch-model.sh to enable these tests (under CI=true a missing \
                     model fails them)",
                    dir.display()
                );
                return None;
            }
            match MiniLm::load(&dir) {
                Ok(m) => Some(m),
                Err(e) => panic!("{e}"),
            }
        })
        .as_ref()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn identity_dimension_and_unit_norms() {
    let Some(m) = model() else { return };
    assert_eq!(m.model_id(), "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(m.dimension(), 384);
    assert_eq!(
        m.checksum(),
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    );
    let long = "policyholder premium account ".repeat(200); // far beyond 256 tokens
    let texts = [
        "contains an EU IBAN",
        "",
        "Date of birth of the insured person",
        &long,
    ];
    let vectors = m.embed_batch(&texts).expect("embed_batch");
    assert_eq!(vectors.len(), texts.len());
    for (t, v) in texts.iter().zip(&vectors) {
        assert_eq!(v.len(), 384);
        let norm = dot(v, v).sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm} for {:.40?}", t);
    }
    assert!(m.embed_batch(&[]).expect("empty batch").is_empty());
}

#[test]
fn iban_query_prefers_the_iban_column() {
    let Some(m) = model() else { return };
    let q = m.embed_query("contains an EU IBAN").expect("embed_query");
    let docs = m
        .embed_batch(&[
            "International Bank Account Number (IBAN) of the policyholder's premium account",
            "Date of birth of the insured person",
            "Postcode of the branch office",
        ])
        .expect("embed_batch");
    let (iban, dob, postcode) = (dot(&q, &docs[0]), dot(&q, &docs[1]), dot(&q, &docs[2]));
    eprintln!("cosine: iban {iban:.4}, date of birth {dob:.4}, postcode {postcode:.4}");
    assert!(iban > dob, "iban {iban} <= date of birth {dob}");
    assert!(iban > postcode, "iban {iban} <= postcode {postcode}");
}

#[test]
fn batch_equals_single() {
    let Some(m) = model() else { return };
    // Lengths differ a lot, so the batch pads most of them; and more than one chunk of 32.
    let mut texts: Vec<String> = vec![
        "IBAN".to_owned(),
        "Date of birth of the insured person".to_owned(),
        "Postcode of the branch office where the policy was sold, as recorded at inception"
            .to_owned(),
    ];
    texts.extend((0..40).map(|i| format!("column {i}: {}", "claim amount in euro ".repeat(i % 7))));
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = m.embed_batch(&refs).expect("embed_batch");
    assert_eq!(batch.len(), refs.len());
    for (t, b) in refs.iter().zip(&batch) {
        let single = m.embed_batch(&[t]).expect("single embed");
        let max_diff = single[0]
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(
            max_diff < 1e-4,
            "batch vs single differ by {max_diff} for {t:?}"
        );
    }
}

/// Threads of this process whose name starts with `prefix` (Linux: /proc/self/task/*/comm).
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with(prefix))
        .count()
}

/// Query forward passes from 16 concurrent callers run on at most one thread per core (gemm
/// leaves ~2 MiB of scratch on every thread that runs a pass), and give the vectors a batch
/// pass gives.
#[test]
fn concurrent_queries_run_on_one_lane_per_core() {
    let Some(m) = model() else { return };
    let texts: Vec<String> = (0..16)
        .map(|i| format!("lane check {i}: policy number of the insured vehicle"))
        .collect();
    let vectors: Vec<Vec<f32>> = std::thread::scope(|s| {
        let calls: Vec<_> = texts
            .iter()
            .map(|t| s.spawn(move || m.embed_query(t).expect("embed_query")))
            .collect();
        calls
            .into_iter()
            .map(|c| c.join().expect("caller"))
            .collect()
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let lanes = threads_named(govcat::embed::QUERY_THREAD_PREFIX);
    assert!(
        (1..=cores).contains(&lanes),
        "{lanes} lane threads, {cores} cores"
    );
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = m.embed_batch(&refs).expect("embed_batch");
    for (q, b) in vectors.iter().zip(&batch) {
        assert!(
            dot(q, b) > 0.9999,
            "a lane's vector differs from the batch's: {}",
            dot(q, b)
        );
    }
}

#[test]
fn repeated_query_hits_the_cache() {
    let Some(m) = model() else { return };
    let text = "cache probe: premium account holder IBAN (unique to this test)";
    let (h0, m0) = m.cache_stats();
    let first = m.embed_query(text).expect("first embed_query");
    let (h1, m1) = m.cache_stats();
    assert!(m1 > m0, "first query was not counted as a miss");
    let second = m.embed_query(text).expect("second embed_query");
    let (h2, _) = m.cache_stats();
    assert!(h2 > h1.max(h0), "repeated query was not counted as a hit");
    assert_eq!(first, second);
    // The cached vector is the model's vector.
    let fresh = m.embed_batch(&[text]).expect("embed_batch");
    let max_diff = fresh[0]
        .iter()
        .zip(&first)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    assert!(max_diff < 1e-4, "{max_diff}");
}

/// Timings for the record: `cargo test --test embed_real_model -- --ignored --nocapture`.
#[test]
#[ignore = "timing report, not a check"]
fn timing_report() {
    let dir = model_dir();
    let t = Instant::now();
    let m = MiniLm::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let load_ms = t.elapsed().as_secs_f64() * 1e3;

    let queries: Vec<String> = (0..60)
        .map(|i| format!("which columns hold customer contact detail number {i}"))
        .collect();
    for q in &queries[..10] {
        m.embed_query(q).expect("warm-up");
    }
    let mut per_query: Vec<f64> = queries[10..]
        .iter()
        .map(|q| {
            let t = Instant::now();
            m.embed_query(q).expect("query");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    per_query.sort_by(f64::total_cmp);
    let p50 = per_query[per_query.len() / 2];
    let p90 = per_query[per_query.len() * 9 / 10];

    let texts: Vec<String> = (0..500)
        .map(|i| {
            format!(
                "Column {i} of dataset policies_{}: {}",
                i % 13,
                "premium amount paid by the policyholder per month in euro ".repeat(1 + i % 4)
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = Instant::now();
    let v = m.embed_batch(&refs).expect("batch");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(v.len(), 500);
    eprintln!(
        "TIMING load {load_ms:.0} ms; query p50 {p50:.2} ms, p90 {p90:.2} ms (50 queries); \
         batch 500 texts in {secs:.2} s = {:.0} texts/s",
        500.0 / secs
    );
}
