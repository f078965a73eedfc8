//! Test harness for the `aws` source: a moto server per test (started on a free loopback port,
//! seeded by `tests/aws/seed.py`, killed on drop even when the test fails), a recording and
//! fault-injecting HTTP proxy that sits between the SDK and moto, and builders for the source.
//!
//! moto runs *without* `MOTO_ACCOUNT_ID`: that variable pins every request to one account,
//! while without it moto switches account by the assumed role's ARN, so each domain lives in
//! its own account as in production.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_config::BehaviorVersion;
use govcat::catalog::aws::{AwsConfig, AwsSource};
use govcat::ontology::Ontology;
use serde_json::Value;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn ontology() -> Ontology {
    Ontology::load(&repo().join("ontology/lf-tags.json")).expect("ontology/lf-tags.json loads")
}

/// `moto_server` and `python` of the project's venv, or `None` (after saying why) when the
/// tests should be skipped. Under `CI=true` a missing venv fails the test instead.
pub fn venv() -> Option<(PathBuf, PathBuf)> {
    let bin = repo().join(".venv/bin");
    let (moto, python) = (bin.join("moto_server"), bin.join("python"));
    if moto.is_file() && python.is_file() {
        return Some((moto, python));
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !ci,
        "no moto server at {}: run scripts/setup-python.sh (CI=true: the aws tests must run, not skip)",
        moto.display()
    );
    // Written to stderr directly so that `cargo test` shows the skip without --nocapture.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED aws_moto: no moto server at {}; run scripts/setup-python.sh to enable these tests \
         (under CI=true a missing venv fails them)",
        moto.display()
    );
    None
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One HTTP/1.0 GET; the status code, if anything answered.
fn http_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A moto server process, killed when dropped.
pub struct Moto {
    child: Option<Child>,
    pub addr: SocketAddr,
    python: PathBuf,
    log: PathBuf,
}

impl Moto {
    /// Starts moto and waits until `GET /moto-api/` answers; `None` when skipped (no venv).
    pub fn start() -> Option<Moto> {
        let (moto, python) = venv()?;
        let port = free_port();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let log = std::env::temp_dir().join(format!("govcat-moto-{port}.log"));
        let mut server = Moto {
            child: None,
            addr,
            python,
            log,
        };
        server.spawn(&moto);
        Some(server)
    }

    /// Starts `moto_server` on this server's address and waits until it answers.
    fn spawn(&mut self, moto: &Path) {
        let log_file = std::fs::File::create(&self.log).expect("moto log file");
        let child = Command::new(moto)
            .args(["-H", "127.0.0.1", "-p", &self.addr.port().to_string()])
            .env_remove("MOTO_ACCOUNT_ID")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log handle"))
            .stderr(log_file)
            .spawn()
            .expect("moto_server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while http_status(self.addr, "/moto-api/").is_none() {
            assert!(
                Instant::now() < deadline,
                "moto did not answer on {} within 30 s; its log: {}",
                self.addr,
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts the emulator again on the same address after [`Moto::stop`], empty (reseed it).
    pub fn restart(&mut self) {
        self.stop();
        let (moto, _) = venv().expect("the venv that started moto");
        self.spawn(&moto);
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Seeds the demo domains; returns the seed script's summary.
    pub fn seed(&self) -> Value {
        let out = Command::new(&self.python)
            .arg(repo().join("tests/aws/seed.py"))
            .args(["--endpoint", &self.url()])
            .output()
            .expect("seed.py runs");
        assert!(
            out.status.success(),
            "seed.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("seed.py prints JSON")
    }

    /// Kills the server now (the emulator going away mid-run).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while http_status(self.addr, "/moto-api/").is_some() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The seeded tables of a domain, from the seed summary.
pub fn seeded_tables(summary: &Value, domain: &str) -> Vec<String> {
    summary["domains"][domain]["tables"]
        .as_array()
        .expect("seed summary lists tables")
        .iter()
        .map(|t| t.as_str().expect("table name").to_string())
        .collect()
}

/// The domain map used by the tests, with `extra` top-level settings (e.g. `max_attempts = 1`).
pub fn config_text(extra: &str) -> String {
    let base =
        std::fs::read_to_string(repo().join("tests/aws/domains.toml")).expect("domains.toml");
    format!("{extra}\n{base}")
}

pub fn config(extra: &str) -> AwsConfig {
    AwsConfig::parse(&config_text(extra), Path::new("tests/aws/domains.toml"))
        .expect("domain map parses")
}

/// The aws source against `endpoint`, with fixed server credentials (no environment involved).
pub fn source(endpoint: &str, extra: &str) -> AwsSource {
    source_with(endpoint, config(extra))
}

/// [`source`] with a domain map of the test's own.
pub fn source_with(endpoint: &str, config: AwsConfig) -> AwsSource {
    let loader = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_sts::config::Credentials::new(
            "AKIDGOVCATSERVER",
            "govcat-server-secret",
            None,
            None,
            "tests",
        ));
    AwsSource::with_loader(config, ontology(), loader).expect("aws source opens")
}

/// Environment for a `govcat` child process that talks to `endpoint`.
pub fn aws_env(cmd: &mut Command, endpoint: &str) {
    for var in [
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "AKIDGOVCATSERVER")
        .env("AWS_SECRET_ACCESS_KEY", "govcat-server-secret")
        .env("AWS_REGION", "eu-central-1")
        .env("AWS_EC2_METADATA_DISABLED", "true");
}

/// One request as it reached the emulator.
#[derive(Debug, Clone)]
pub struct Request {
    pub head: String,
    pub body: String,
    /// The body as sent (forwarded as is: S3 bodies are binary).
    pub raw_body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The operation: `X-Amz-Target` (Glue), the path (Lake Formation) or `Action` (STS).
    pub fn operation(&self) -> String {
        if let Some(t) = self.header("x-amz-target") {
            return t.rsplit('.').next().unwrap_or(t).to_string();
        }
        if let Some(a) = form(&self.body).into_iter().find(|(k, _)| k == "Action") {
            return a.1;
        }
        let path = self.head.split_whitespace().nth(1).unwrap_or("");
        path.trim_start_matches('/')
            .split('?')
            .next()
            .unwrap_or("")
            .to_string()
    }

    pub fn raw(&self) -> String {
        format!("{}\r\n\r\n{}", self.head, self.body)
    }
}

/// Decodes an `application/x-www-form-urlencoded` body.
pub fn form(body: &str) -> Vec<(String, String)> {
    fn decode(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    match std::str::from_utf8(&bytes[i + 1..i + 3])
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                    {
                        Some(b) => {
                            out.push(b);
                            i += 2;
                        }
                        None => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).to_string()
    }
    body.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// What the proxy does with a matching request.
#[derive(Debug, Clone)]
pub enum Action {
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Never answer (until the proxy is dropped): a call that runs into its deadline.
    Hang,
}

struct Rule {
    operation: String,
    body_contains: Option<String>,
    action: Action,
}

/// A recording, fault-injecting HTTP/1.1 proxy in front of moto.
pub struct Proxy {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<Request>>>,
    rules: Arc<Mutex<Vec<Rule>>>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy binds");
        let addr = listener.local_addr().expect("proxy address");
        let proxy = Proxy {
            addr,
            log: Arc::default(),
            rules: Arc::default(),
            stop: Arc::default(),
        };
        let (log, rules, stop) = (proxy.log.clone(), proxy.rules.clone(), proxy.stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (log, rules, stop) = (log.clone(), rules.clone(), stop.clone());
                std::thread::spawn(move || serve(conn, upstream, &log, &rules, &stop));
            }
        });
        proxy
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request to `operation` (whose body contains `body_contains`, if given) gets `action`.
    /// An `operation` ending in `*` matches every operation it is a prefix of (S3 keys).
    pub fn on(&self, operation: &str, body_contains: Option<&str>, action: Action) {
        self.rules.lock().expect("rules").push(Rule {
            operation: operation.into(),
            body_contains: body_contains.map(str::to_string),
            action,
        });
    }

    /// Removes every rule: requests are forwarded again (the fault is gone).
    pub fn clear(&self) {
        self.rules.lock().expect("rules").clear();
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().expect("log").clone()
    }

    pub fn count(&self, operation: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.operation() == operation)
            .count()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn read_request(r: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" || line == "\n" {
            break;
        }
        head.push_str(&line);
    }
    let head = head.trim_end().to_string();
    let req = Request {
        head,
        body: String::new(),
        raw_body: Vec::new(),
    };
    let len: usize = req
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Request {
        body: String::from_utf8_lossy(&body).to_string(),
        raw_body: body,
        ..req
    })
}

fn serve(
    conn: TcpStream,
    upstream: SocketAddr,
    log: &Mutex<Vec<Request>>,
    rules: &Mutex<Vec<Rule>>,
    stop: &AtomicBool,
) {
    let Ok(mut client) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    // One request per connection: every answer carries `Connection: close` and the SDK
    // reconnects for the next request.
    let Some(req) = read_request(&mut reader) else {
        return;
    };
    if let Ok(mut l) = log.lock() {
        l.push(req.clone());
    }
    let action = rules.lock().ok().and_then(|rules| {
        rules
            .iter()
            .find(|rule| {
                let op = req.operation();
                (rule.operation == op
                    || rule
                        .operation
                        .strip_suffix('*')
                        .is_some_and(|prefix| op.starts_with(prefix)))
                    && rule
                        .body_contains
                        .as_ref()
                        .is_none_or(|s| req.body.contains(s.as_str()))
            })
            .map(|rule| rule.action.clone())
    });
    match action {
        Some(Action::Respond {
            status,
            headers,
            body,
        }) => {
            let mut resp = format!(
                "HTTP/1.1 {status} Injected\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                resp.push_str(&format!("{k}: {v}\r\n"));
            }
            resp.push_str("\r\n");
            resp.push_str(&body);
            let _ = client.write_all(resp.as_bytes());
        }
        Some(Action::Hang) => {
            let until = Instant::now() + Duration::from_secs(60);
            while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        None => {
            // Forward with `Connection: close` so the upstream's answer ends at EOF. When the
            // upstream is down the client sees its connection close.
            let head: Vec<&str> = req
                .head
                .lines()
                .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
                .collect();
            let mut forwarded =
                format!("{}\r\nConnection: close\r\n\r\n", head.join("\r\n")).into_bytes();
            forwarded.extend_from_slice(&req.raw_body);
            let mut answer = Vec::new();
            let answered = TcpStream::connect(upstream)
                .and_then(|mut up| {
                    up.write_all(&forwarded)?;
                    up.read_to_end(&mut answer)
                })
                .is_ok();
            if answered {
                let _ = client.write_all(&answer);
            }
        }
    }
}
