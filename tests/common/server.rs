//! `govcat` as a child process, for tests of the real binary: `govcat serve` on a free
//! loopback port (killed when dropped) and one-shot CLI runs under `--json`.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

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

/// `govcat mcp-stdio` with newline-delimited JSON-RPC on its stdin and stdout.
pub struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl StdioServer {
    pub fn start(audit_log: &Path, scopes: &str) -> StdioServer {
        StdioServer::start_with_scopes(audit_log, Some(scopes))
    }

    /// [`StdioServer::start`] with `GOVCAT_SCOPES` unset when `scopes` is `None`.
    pub fn start_with_scopes(audit_log: &Path, scopes: Option<&str>) -> StdioServer {
        let mut command = Command::new(BIN);
        match scopes {
            Some(s) => command.env("GOVCAT_SCOPES", s),
            None => command.env_remove("GOVCAT_SCOPES"),
        };
        command.current_dir(super::repo());
        StdioServer::spawn(command, audit_log)
    }

    /// `command` (a `govcat` with its environment and directory set) as `mcp-stdio`,
    /// initialized.
    pub fn spawn(mut command: Command, audit_log: &Path) -> StdioServer {
        let mut child = command
            .arg("mcp-stdio")
            .arg("--audit-log")
            .arg(audit_log)
            .env("GOVCAT_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn govcat mcp-stdio");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = StdioServer {
            child,
            stdin,
            stdout,
        };
        let init = s.call(
            0,
            "initialize",
            json!({"protocolVersion": MCP_PROTOCOL, "capabilities": {},
                   "clientInfo": {"name": "stdio-test", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write to mcp-stdio");
        self.stdin.flush().expect("flush");
    }

    pub fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read mcp-stdio");
            assert!(
                n > 0,
                "mcp-stdio closed its stdout while {method} was pending"
            );
            let message: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
