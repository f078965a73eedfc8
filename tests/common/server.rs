//! `govcat` as a child process, for tests of the real binary: `govcat serve` on a free
//! loopback port (killed when dropped) and one-shot CLI runs under `--json`.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The `govcat` binary of this build.
pub const BIN: &str = env!("CARGO_BIN_EXE_govcat");

/// A running `govcat serve`.
pub struct Served {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Served {
    /// `govcat serve --listen 127.0.0.1:0 <args>` in the repository, with `envs` set. Stdout
    /// (the bound address, then audit lines unless `--audit-log` is given) is drained so no
    /// call is refused for an unwritable audit log.
    pub fn start(args: &[&str], envs: &[(&str, &str)]) -> Served {
        let mut child = Command::new(BIN)
            .current_dir(super::repo())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .envs(envs.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {BIN} serve: {e}"));
        let mut reader = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .expect("read the first line of govcat serve");
        std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        let addr = line
            .strip_prefix("govcat: serving MCP at http://")
            .and_then(|rest| rest.split('/').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("govcat serve did not start: first line {line:?}"));
        Served { child, addr }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `govcat --json <args>` in the repository; returns the exit code and stdout as JSON.
pub fn cli_json(args: &[&str], envs: &[(&str, &str)]) -> (Option<i32>, Value) {
    let out = Command::new(BIN)
        .current_dir(super::repo())
        .arg("--json")
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("run {BIN}: {e}"));
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "govcat --json {args:?} printed no JSON ({e}): stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), json)
}

/// Whether tests that search over `govcat serve` may run (the model and a snapshot in
/// `index/`); says why when they may not, and fails under `CI=true`.
pub fn retrieval_available(test: &str) -> bool {
    let have = super::model_dir().join("model.safetensors").is_file()
        && super::repo().join("index/CURRENT").is_file();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        have || !ci,
        "{test}: no model in {} or no snapshot in index/; run scripts/fetch-model.sh and `govcat index`",
        super::model_dir().display()
    );
    if !have {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: needs the model (scripts/fetch-model.sh) and a snapshot (govcat index)"
        );
    }
    have
}

/// The MCP protocol version the hand-written HTTP sessions negotiate.
pub const MCP_PROTOCOL: &str = "2025-11-25";

/// Headers of an MCP POST over streamable HTTP.
pub const MCP_HEADERS: &[(&str, &str)] = &[
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];
