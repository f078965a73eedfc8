//! What the loopback benches (`http_load`, `load_faults`) share: the `govcat` binary to run,
//! private copies of the demo catalog, the labelled descriptions, starting `govcat serve` and
//! reading its address, percentiles and Prometheus metrics.

#![allow(dead_code)] // each bench uses a different subset

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// The `govcat` binary: `$GOVCAT_BIN` if set (a private copy, so that a build in a shared
/// target directory cannot replace the binary under a long run), else the one cargo built.
pub fn govcat_bin() -> PathBuf {
    match std::env::var_os("GOVCAT_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_govcat")),
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// The labelled query set's descriptions (fixtures/bench/queries.jsonl), in file order.
pub fn descriptions() -> Vec<String> {
    let path = Path::new(REPO).join("fixtures/bench/queries.jsonl");
    let from_file: Vec<String> = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(String::from))
        .collect();
    if from_file.is_empty() {
        vec!["contains an EU IBAN".into()]
    } else {
        from_file
    }
}

/// Starts `cmd` (a `govcat serve --listen 127.0.0.1:0 ...`), reads the address from its first
/// line and keeps draining its stdout (audit lines land there by default; a full pipe would
/// make every call a 503).
pub fn spawn_server(cmd: &mut Command) -> (Child, SocketAddr) {
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn govcat serve");
    let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .expect("read govcat serve's first line");
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let addr = line
        .strip_prefix("govcat: serving MCP at http://")
        .and_then(|r| r.split('/').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("govcat serve did not start: {line:?}"));
    (child, addr)
}

/// Sends SIGTERM and waits, so the server shuts down as in production.
pub fn stop_server(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// The `p`th percentile of sorted microseconds, in milliseconds (nearest rank).
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

/// The value of one Prometheus sample (`name` including labels) in `/metrics` text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// The machine a report was measured on.
pub fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok());
    serde_json::json!({
        "nproc": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu_model": cpu_model,
        "memory_total_mib": mem_kib.map(|k| (k / 1024.0).round()),
        "loadavg": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    })
}

/// The cargo profile this bench was built with: `dev` (`cargo bench --profile dev`: numeric
/// crates at opt-level 3, govcat's own code at 0) or `release` (`cargo bench`). Told apart by
/// debug assertions, which only the dev profile enables.
pub fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "dev"
    } else {
        "release"
    }
}
