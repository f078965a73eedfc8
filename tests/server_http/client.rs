//! A minimal blocking HTTP/1.1 client for loopback tests and the HTTP bench: one connection,
//! keep-alive, `Content-Length` or chunked bodies. Just enough to talk to `govcat serve`
//! without pulling an HTTP client crate into the build.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    #[allow(dead_code)]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC messages of an MCP answer: a JSON body or the `data:` lines of SSE.
    #[allow(dead_code)]
    pub fn rpc_messages(&self) -> Vec<serde_json::Value> {
        let text = self.text();
        if let Ok(v) = serde_json::from_str(&text) {
            return vec![v];
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    }

    /// The body as JSON; panics with the body text when it is not JSON (tests only).
    #[allow(dead_code)]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("response body is not JSON ({e}): {}", self.text()))
    }
}

/// A keep-alive connection to one server.
pub struct Conn {
    addr: SocketAddr,
    reader: BufReader<TcpStream>,
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

impl Conn {
    pub fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn {
            addr,
            reader: BufReader::new(stream),
        })
    }

    /// Sends one request and reads the whole response. `headers` may override `Host`.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> io::Result<Response> {
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head += &format!("Host: {}\r\n", self.addr);
        }
        for (k, v) in headers {
            head += &format!("{k}: {v}\r\n");
        }
        let body = body.unwrap_or_default();
        if method != "GET" || !body.is_empty() {
            head += &format!("Content-Length: {}\r\n", body.len());
        }
        head += "\r\n";
        let stream = self.reader.get_mut();
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        stream.flush()?;
        self.read_response()
    }

    /// Writes `bytes` as they are (a request in pieces, a stalled body) and nothing else.
    #[allow(dead_code)]
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        let stream = self.reader.get_mut();
        stream.write_all(bytes)?;
        stream.flush()
    }

    /// Whether the server closed the connection: a read sees end of file (or a reset).
    #[allow(dead_code)]
    pub fn closed_by_server(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.reader.read(&mut byte), Ok(0) | Err(_))
    }

    fn read_line(&mut self) -> io::Result<String> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed before a full response",
            ));
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }

    #[allow(dead_code)]
    pub fn read_response(&mut self) -> io::Result<Response> {
        let status_line = self.read_line()?;
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(format!("bad status line {status_line:?}")))?;
        let mut headers = Vec::new();
        loop {
            let line = self.read_line()?;
            if line.is_empty() {
                break;
            }
            let (k, v) = line
                .split_once(':')
                .ok_or_else(|| bad(format!("bad header {line:?}")))?;
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        let find = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let mut body = Vec::new();
        // 204 and 304 have no body by definition (RFC 9110), and no length to say so.
        if status == 204 || status == 304 {
        } else if let Some(len) = find("content-length") {
            let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
            body.resize(len, 0);
            self.reader.read_exact(&mut body)?;
        } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            loop {
                let size_line = self.read_line()?;
                let size =
                    usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
                        .map_err(|_| bad(format!("bad chunk size {size_line:?}")))?;
                if size == 0 {
                    while !self.read_line()?.is_empty() {}
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.reader.read_exact(&mut body[start..])?;
                self.read_line()?;
            }
        } else {
            self.reader.read_to_end(&mut body)?;
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

/// One request on a fresh connection.
#[allow(dead_code)]
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> io::Result<Response> {
    Conn::connect(addr)?.request(method, path, headers, body)
}
