//! HTTP throughput bench (not a test): requests/s and latency percentiles of tool calls over
//! `POST /v1/tools/{name}` on loopback, at concurrency 1, 8 and 32, against `govcat serve`
//! built with the bench's profile (`GOVCAT_BIN` overrides the binary). A bounded load
//! generator: a fixed number of worker threads, each with one keep-alive connection, issuing
//! one request at a time for a fixed duration.
//!
//! The server runs on a private copy of the demo catalog and ontology with its own snapshot
//! (under `target/bench/http-work/`), so `--watch` can be exercised: the bench then rewrites the
//! ontology copy every few seconds, the server rebuilds and swaps snapshots under load, and the
//! report counts swaps next to failed requests (which must stay 0).
//!
//! Run:   cargo bench --bench http_load   (or --profile dev: the numeric crates optimised only)
//! Options (after `--`): --tools find_precedents,get_dataset,resolve_lf_tag
//!                       --concurrency 1,8,32  --seconds 5  --watch  --unique
//!                       --out FILE (default target/bench/http.json)
//! Retrieval tools cycle through the labelled query set (fixtures/bench/queries.jsonl); by
//! default every description is sent once before measuring, so the runs see a warm
//! query-embedding cache. `--unique` appends a counter to every description instead, so every
//! request misses the cache and pays for one model inference.
//! Writes `target/bench/http.json` (or `--out`).

#[path = "../tests/server_http/client.rs"]
mod client;
mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{
    copy_dir, descriptions, govcat_bin, metric, percentile, spawn_server, stop_server, REPO,
};

const WARMUP: Duration = Duration::from_secs(1);
const TOUCH_EVERY: Duration = Duration::from_secs(3);

struct Options {
    tools: Vec<String>,
    concurrency: Vec<usize>,
    seconds: u64,
    watch: bool,
    unique: bool,
    out: PathBuf,
}

fn options() -> Options {
    let mut o = Options {
        tools: ["find_precedents", "get_dataset", "resolve_lf_tag"]
            .map(String::from)
            .to_vec(),
        concurrency: vec![1, 8, 32],
        seconds: 5,
        watch: false,
        unique: false,
        out: Path::new(REPO).join("target/bench/http.json"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| panic!("{name} needs a value"))
        };
        match a.as_str() {
            "--tools" => o.tools = value("--tools").split(',').map(String::from).collect(),
            "--concurrency" => {
                o.concurrency = value("--concurrency")
                    .split(',')
                    .map(|c| c.parse().expect("--concurrency: numbers, e.g. 1,8,32"))
                    .collect()
            }
            "--seconds" => o.seconds = value("--seconds").parse().expect("--seconds: a number"),
            "--watch" => o.watch = true,
            "--unique" => o.unique = true,
            "--out" => o.out = PathBuf::from(value("--out")),
            "--bench" => {} // passed by `cargo bench`
            other => panic!("unknown option {other}; see the header of benches/http_load.rs"),
        }
    }
    o
}

/// Arguments of request `i` to `tool`.
fn arguments(tool: &str, i: u64, descriptions: &[String], unique: bool) -> Value {
    let d = &descriptions[(i as usize) % descriptions.len()];
    let description = if unique {
        format!("{d} {i}")
    } else {
        d.clone()
    };
    match tool {
        "find_precedents" => json!({"description": description, "limit": 10}),
        "suggest_tags" => {
            json!({"description": description, "domain": "policy", "table": "customer"})
        }
        "get_dataset" => json!({"domain": "policy", "table": "customer"}),
        "list_domains" => json!({}),
        "resolve_lf_tag" => json!({"tags": {
            "sensitivity": "high", "residency": "eu", "subject_type": "customer",
            "retention": "10y", "lawful_basis": "contract"}}),
        "check_grant_expression" => {
            json!({"role": "policy-underwriter", "domain": "policy", "table": "customer"})
        }
        other => panic!("no bench arguments for tool {other}"),
    }
}

struct Work {
    catalog: PathBuf,
    ontology: PathBuf,
    index: PathBuf,
}

impl Work {
    fn global_args(&self) -> Vec<String> {
        vec![
            "--catalog".into(),
            self.catalog.display().to_string(),
            "--ontology".into(),
            self.ontology.display().to_string(),
            "--index".into(),
            self.index.display().to_string(),
        ]
    }
}

/// A private copy of the demo catalog and ontology, indexed with the real model.
fn prepare() -> Work {
    let root = Path::new(REPO).join("target/bench/http-work");
    let _ = std::fs::remove_dir_all(&root);
    let work = Work {
        catalog: root.join("catalog"),
        ontology: root.join("lf-tags.json"),
        index: root.join("index"),
    };
    copy_dir(&Path::new(REPO).join("fixtures/catalog"), &work.catalog);
    std::fs::copy(
        Path::new(REPO).join("ontology/lf-tags.json"),
        &work.ontology,
    )
    .expect("copy the ontology");
    let started = Instant::now();
    let status = Command::new(govcat_bin())
        .current_dir(REPO)
        .args(work.global_args())
        .arg("index")
        .stdout(Stdio::null())
        .status()
        .expect("run govcat index");
    assert!(
        status.success(),
        "govcat index failed; the bench needs the model (scripts/fetch-model.sh)"
    );
    eprintln!(
        "indexed the bench catalog in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    work
}

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(work: &Work, watch: bool) -> Server {
        let mut cmd = Command::new(govcat_bin());
        cmd.current_dir(REPO)
            .args(work.global_args())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("GOVCAT_LOG", "warn")
            .stderr(Stdio::inherit());
        if watch {
            cmd.arg("--watch");
        }
        let (child, addr) = spawn_server(&mut cmd);
        Server { child, addr }
    }

    fn stop(self) {
        stop_server(self.child);
    }
}

#[derive(Default)]
struct Run {
    latencies_us: Vec<u64>,
    failed: u64,
    first_failure: Option<String>,
}

/// What the workers send: request arguments are numbered across all workers.
#[derive(Clone)]
struct Feed {
    descriptions: Arc<Vec<String>>,
    unique: bool,
    counter: Arc<AtomicU64>,
}

/// `concurrency` workers calling `tool` until `until`; latencies are recorded after `record_from`.
fn load(
    addr: SocketAddr,
    tool: &str,
    concurrency: usize,
    (record_from, until): (Instant, Instant),
    feed: &Feed,
) -> Run {
    let path = format!("/v1/tools/{tool}");
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (path, tool, feed) = (path.clone(), tool.to_string(), feed.clone());
            std::thread::spawn(move || {
                let mut run = Run::default();
                let mut conn = client::Conn::connect(addr).expect("connect");
                while Instant::now() < until {
                    let i = feed.counter.fetch_add(1, Ordering::Relaxed);
                    let body = arguments(&tool, i, &feed.descriptions, feed.unique).to_string();
                    let started = Instant::now();
                    let outcome = conn.request(
                        "POST",
                        &path,
                        &[("Content-Type", "application/json")],
                        Some(body.as_bytes()),
                    );
                    let took = started.elapsed();
                    let failure = match outcome {
                        Ok(r) if r.status == 200 => None,
                        Ok(r) => Some(format!("HTTP {}: {}", r.status, r.text())),
                        Err(e) => {
                            // Reconnect so one broken connection does not end the worker.
                            if let Ok(c) = client::Conn::connect(addr) {
                                conn = c;
                            }
                            Some(format!("I/O: {e}"))
                        }
                    };
                    if started >= record_from {
                        run.latencies_us.push(took.as_micros() as u64);
                        if let Some(f) = failure {
                            run.failed += 1;
                            run.first_failure.get_or_insert(f);
                        }
                    }
                }
                run
            })
        })
        .collect();
    let mut total = Run::default();
    for w in workers {
        let run = w.join().expect("worker");
        total.latencies_us.extend(run.latencies_us);
        total.failed += run.failed;
        if total.first_failure.is_none() {
            total.first_failure = run.first_failure;
        }
    }
    total
}

/// Calls each retrieval tool once per description, so the measured runs see a warm
/// query-embedding cache throughout instead of a cold first pass mixed into one cell.
fn prime(addr: SocketAddr, tools: &[String], feed: &Feed) {
    let started = Instant::now();
    let mut conn = client::Conn::connect(addr).expect("connect");
    for tool in tools
        .iter()
        .filter(|t| matches!(t.as_str(), "find_precedents" | "suggest_tags"))
    {
        for i in 0..feed.descriptions.len() as u64 {
            let body = arguments(tool, i, &feed.descriptions, false).to_string();
            let r = conn
                .request(
                    "POST",
                    &format!("/v1/tools/{tool}"),
                    &[],
                    Some(body.as_bytes()),
                )
                .expect("prime request");
            assert_eq!(r.status, 200, "priming {tool} failed: {}", r.text());
        }
    }
    eprintln!(
        "primed the query cache in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this binary without it.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("http_load: a bench, not a test; run it with `cargo bench --bench http_load`");
        return;
    }
    let opts = options();
    let work = prepare();
    let server = Server::start(&work, opts.watch);
    let ready = client::request(server.addr, "GET", "/readyz", &[], None).expect("readyz");
    assert_eq!(ready.status, 200, "server not ready: {}", ready.text());

    let stop_touching = Arc::new(AtomicBool::new(false));
    let toucher = opts.watch.then(|| {
        let (stop, ontology) = (stop_touching.clone(), work.ontology.clone());
        std::thread::spawn(move || {
            let text = std::fs::read(&ontology).expect("read the ontology copy");
            let mut touches = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(TOUCH_EVERY);
                std::fs::write(&ontology, &text).expect("rewrite the ontology copy");
                touches += 1;
            }
            touches
        })
    });

    let feed = Feed {
        descriptions: Arc::new(descriptions()),
        unique: opts.unique,
        counter: Arc::new(AtomicU64::new(0)),
    };
    if !opts.unique {
        prime(server.addr, &opts.tools, &feed);
    }
    let mut results = Vec::new();
    println!(
        "{:<18} {:>5} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "tool", "conc", "requests", "failed", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms"
    );
    for tool in &opts.tools {
        for &c in &opts.concurrency {
            let start = Instant::now();
            let record_from = start + WARMUP;
            let until = record_from + Duration::from_secs(opts.seconds);
            let mut run = load(server.addr, tool, c, (record_from, until), &feed);
            run.latencies_us.sort_unstable();
            let n = run.latencies_us.len() as u64;
            let rps = n as f64 / opts.seconds as f64;
            let row = json!({
                "tool": tool,
                "concurrency": c,
                "seconds": opts.seconds,
                "requests": n,
                "failed": run.failed,
                "first_failure": run.first_failure,
                "requests_per_second": (rps * 10.0).round() / 10.0,
                "p50_ms": percentile(&run.latencies_us, 50.0),
                "p90_ms": percentile(&run.latencies_us, 90.0),
                "p99_ms": percentile(&run.latencies_us, 99.0),
                "max_ms": percentile(&run.latencies_us, 100.0),
            });
            println!(
                "{:<18} {:>5} {:>9} {:>7} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                tool,
                c,
                n,
                run.failed,
                rps,
                row["p50_ms"].as_f64().unwrap_or(0.0),
                row["p90_ms"].as_f64().unwrap_or(0.0),
                row["p99_ms"].as_f64().unwrap_or(0.0),
                row["max_ms"].as_f64().unwrap_or(0.0),
            );
            if let Some(f) = &run.first_failure {
                println!("    first failure: {f}");
            }
            results.push(row);
        }
    }

    stop_touching.store(true, Ordering::Relaxed);
    let touches = toucher.map(|t| t.join().unwrap_or(0));
    let metrics = client::request(server.addr, "GET", "/metrics", &[], None)
        .map(|r| r.text())
        .unwrap_or_default();
    server.stop();

    let watch = json!({
        "enabled": opts.watch,
        "ontology_rewrites": touches,
        "snapshot_swaps": metric(&metrics, "govcat_snapshot_swaps_total"),
        "rebuilds_ok": metric(&metrics, "govcat_snapshot_rebuilds_total{outcome=\"ok\"}"),
        "rebuilds_failed": metric(&metrics, "govcat_snapshot_rebuilds_total{outcome=\"failed\"}"),
    });
    if opts.watch {
        println!("watch: {watch}");
    }
    let report = json!({
        "bench": "http_load",
        "transport": "REST POST /v1/tools/{name}, HTTP/1.1 keep-alive, loopback",
        "server": govcat_bin().display().to_string(),
        "profile": support::profile(),
        "machine": support::machine(),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "warmup_seconds": WARMUP.as_secs(),
        "distinct_descriptions": feed.descriptions.len(),
        "unique_descriptions": opts.unique,
        "watch": watch,
        "results": results,
    });
    let out = &opts.out;
    std::fs::create_dir_all(out.parent().expect("parent")).expect("create the report directory");
    std::fs::write(
        out,
        serde_json::to_string_pretty(&report).expect("serialise the report"),
    )
    .expect("write the report");
    println!("wrote {}", out.display());
}
