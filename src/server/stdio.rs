//! The stdio transport of `govcat mcp-stdio`: stdin and stdout, with the end of stdin held back
//! until every request read has been answered.
//!
//! rmcp stops serving when its input ends and gives the calls still running 5 s to answer; a
//! client that writes its requests and then closes stdin (`printf ... | govcat mcp-stdio`, a
//! script, a batch) lost every answer not written by then (measured: 128 of 391 searches on 2
//! busy cores). Here the reader counts the JSON-RPC requests it passes on, the writer the
//! responses it writes, and at the end of stdin the reader reports it only when the two match,
//! or when no answer has been written for [`QUIET_CAP`] (a call that hangs cannot hold the
//! process: the unanswered are counted in a warning).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// How long the end of stdin waits for the next answer while requests are unanswered.
pub const QUIET_CAP: Duration = Duration::from_secs(30);

/// Requests read and responses written on one stdio session.
#[derive(Debug)]
pub struct Pending {
    requests: AtomicUsize,
    answered: AtomicUsize,
    last_answer: Mutex<Instant>,
    notify: Notify,
}

impl Pending {
    fn new() -> Self {
        Pending {
            requests: AtomicUsize::new(0),
            answered: AtomicUsize::new(0),
            last_answer: Mutex::new(Instant::now()),
            notify: Notify::new(),
        }
    }

    fn unanswered(&self) -> usize {
        self.requests
            .load(Ordering::SeqCst)
            .saturating_sub(self.answered.load(Ordering::SeqCst))
    }

    /// Until every request read is answered, or no answer came for `quiet`.
    async fn all_answered(self: Arc<Self>, quiet: Duration) {
        let closed = Instant::now();
        loop {
            let notified = self.notify.notified();
            let unanswered = self.unanswered();
            if unanswered == 0 {
                return;
            }
            let since = self
                .last_answer
                .lock()
                .map_or(quiet, |t| t.elapsed())
                .min(closed.elapsed());
            if since >= quiet {
                tracing::warn!(
                    unanswered,
                    "stdin closed: {unanswered} requests still unanswered after {} s without an answer; they are dropped",
                    quiet.as_secs()
                );
                return;
            }
            let _ = tokio::time::timeout(quiet - since, notified).await;
        }
    }
}

/// Whole lines of a byte stream, each handed to `each` once its newline arrives.
#[derive(Debug, Default)]
struct Lines(Vec<u8>);

impl Lines {
    fn feed(&mut self, bytes: &[u8], mut each: impl FnMut(&[u8])) {
        for &b in bytes {
            if b == b'\n' {
                each(&self.0);
                self.0.clear();
            } else {
                self.0.push(b);
            }
        }
    }
}

/// A JSON-RPC message's kind, as far as the counting needs it.
fn kind(line: &[u8]) -> Option<Kind> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    let o = v.as_object()?;
    match (
        o.contains_key("method"),
        o.get("id").is_some_and(|id| !id.is_null()),
    ) {
        (true, true) => Some(Kind::Request),
        (false, true) if o.contains_key("result") || o.contains_key("error") => {
            Some(Kind::Response)
        }
        _ => None,
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Request,
    Response,
}

/// stdin, counting requests; its end waits for [`Pending::all_answered`].
pub struct Reader<R> {
    inner: R,
    pending: Arc<Pending>,
    lines: Lines,
    quiet: Duration,
    end: End,
}

/// Where a [`Reader`] is with the end of its input.
enum End {
    Open,
    Waiting(Pin<Box<dyn Future<Output = ()> + Send>>),
    Reported,
}

impl<R: AsyncRead + Unpin> AsyncRead for Reader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        match &mut this.end {
            End::Reported => return Poll::Ready(Ok(())),
            End::Waiting(wait) => {
                let done = wait.as_mut().poll(cx);
                if done.is_ready() {
                    this.end = End::Reported;
                }
                return done.map(Ok);
            }
            End::Open => {}
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                this.end =
                    End::Waiting(Box::pin(Arc::clone(&this.pending).all_answered(this.quiet)));
                self.poll_read(cx, buf)
            }
            Poll::Ready(Ok(())) => {
                let pending = &this.pending;
                this.lines.feed(&buf.filled()[before..], |line| {
                    if kind(line) == Some(Kind::Request) {
                        pending.requests.fetch_add(1, Ordering::SeqCst);
                    }
                });
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

/// stdout, counting responses.
pub struct Writer<W> {
    inner: W,
    pending: Arc<Pending>,
    lines: Lines,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Writer<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &written {
            let pending = &this.pending;
            this.lines.feed(&buf[..*n], |line| {
                if kind(line) == Some(Kind::Response) {
                    pending.answered.fetch_add(1, Ordering::SeqCst);
                    if let Ok(mut t) = pending.last_answer.lock() {
                        *t = Instant::now();
                    }
                    pending.notify.notify_waiters();
                }
            });
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// `input` and `output` as the stdio transport: the end of `input` waits for every request's
/// answer on `output` (or [`QUIET_CAP`] without one).
pub fn transport<R, W>(input: R, output: W, quiet: Duration) -> (Reader<R>, Writer<W>) {
    let pending = Arc::new(Pending::new());
    (
        Reader {
            inner: input,
            pending: Arc::clone(&pending),
            lines: Lines::default(),
            quiet,
            end: End::Open,
        },
        Writer {
            inner: output,
            pending,
            lines: Lines::default(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn requests_responses_and_the_rest_are_told_apart() {
        assert_eq!(
            kind(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}"#),
            Some(Kind::Request)
        );
        assert_eq!(
            kind(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Some(Kind::Response)
        );
        assert_eq!(
            kind(br#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}"#),
            Some(Kind::Response)
        );
        assert_eq!(
            kind(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(kind(b"not json"), None);
    }

    #[tokio::test]
    async fn the_end_of_input_waits_until_every_request_is_answered_and_not_longer() {
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
        let (mut reader, mut writer) = transport(input, Vec::new(), Duration::from_secs(30));
        let mut read = Vec::new();
        let mut chunk = [0u8; 256];
        let n = reader.read(&mut chunk).await.expect("read");
        read.extend_from_slice(&chunk[..n]);
        assert_eq!(read, input);
        // One request read, none answered: the end of input is held back.
        let held = tokio::time::timeout(Duration::from_millis(200), reader.read(&mut chunk)).await;
        assert!(held.is_err(), "the end of input came before the answer");
        writer
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
            .await
            .expect("write");
        // Answered: the end comes at once.
        let end = tokio::time::timeout(Duration::from_secs(5), reader.read(&mut chunk))
            .await
            .expect("the end of input after the answer")
            .expect("read");
        assert_eq!(end, 0);
    }

    #[tokio::test]
    async fn an_unanswered_request_holds_the_end_of_input_only_for_the_quiet_cap() {
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}\n";
        let (mut reader, _writer) = transport(input, Vec::<u8>::new(), Duration::from_millis(300));
        let mut chunk = [0u8; 256];
        assert_eq!(reader.read(&mut chunk).await.expect("read"), input.len());
        let started = Instant::now();
        let end = tokio::time::timeout(Duration::from_secs(5), reader.read(&mut chunk))
            .await
            .expect("the end of input after the cap")
            .expect("read");
        assert_eq!(end, 0);
        assert!(started.elapsed() >= Duration::from_millis(250));
    }
}
