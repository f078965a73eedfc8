//! The accept loop of `govcat serve`: one hyper HTTP/1 connection per socket, with the bounds
//! axum's own `serve` does not set — a request's headers must arrive within
//! `--header-read-timeout` (the same timer closes a kept-alive connection idle that long), its
//! body within `--body-read-timeout` ([`BodyDeadline`], answered 408), and at most
//! `--max-connections` sockets are served at once (one more is answered 503 and closed).
//!
//! Shutdown is two phases: on the signal `/readyz` turns to 503 `draining` while requests are
//! still served for `--drain-seconds` (a load balancer deregisters the replica meanwhile; a
//! second signal ends the drain at once); then
//! the listener closes, each connection finishes its request in flight and closes, and the
//! loop waits at most [`SHUTDOWN_GRACE_SECS`](crate::limits::SHUTDOWN_GRACE_SECS) for them.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

use super::AppState;
use crate::tools::ToolError;

/// The connection bounds of one server (`serve` flags, defaults in [`crate::limits`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnLimits {
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub max_connections: usize,
    pub drain: Duration,
    pub grace: Duration,
}

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        use crate::limits::*;
        ConnLimits {
            header_read_timeout: Duration::from_secs(DEFAULT_HEADER_READ_TIMEOUT_SECS),
            body_read_timeout: Duration::from_secs(DEFAULT_BODY_READ_TIMEOUT_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            drain: Duration::from_secs(DEFAULT_DRAIN_SECONDS),
            grace: Duration::from_secs(SHUTDOWN_GRACE_SECS),
        }
    }
}

/// The error kind of a body that did not arrive within `--body-read-timeout`.
pub const BODY_TIMEOUT: &str = "RequestTimeout";

/// Serves `app` on `listener` until `shutdown` completes, then drains (see the module doc).
/// `draining` is called once when the signal arrives, before the drain starts; `streams` is
/// cancelled when the drain is over, so that open event streams end and their connections
/// can close.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: ConnLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    draining: impl FnOnce() + Send + 'static,
    streams: tokio_util::sync::CancellationToken,
) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let mut shutdown = std::pin::pin!(shutdown);
    let mut draining = Some(draining);
    let mut drain_until: Option<tokio::time::Instant> = None;
    loop {
        // The drain ends at its time, or at a second signal (Ctrl-C twice stops at once).
        let drain_over = async {
            match drain_until {
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = super::shutdown_signal() => tracing::info!("second signal: ending the drain now"),
                    }
                }
                None => std::future::pending().await,
            }
        };
        // Biased: the shutdown future is polled before the first accept, so the SIGTERM handler
        // is installed before any request is answered (a random first branch let a signal sent
        // right after the first /healthz kill the process undrained, exit without a status).
        tokio::select! {
            biased;
            () = &mut shutdown, if drain_until.is_none() => {
                if let Some(f) = draining.take() { f(); }
                tracing::info!(drain = ?limits.drain, "shutting down: /readyz answers 503 draining; still serving until the drain ends");
                drain_until = Some(tokio::time::Instant::now() + limits.drain);
            }
            () = drain_over => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors and the like: wait rather than spin.
                        tracing::warn!(error = %e, "accept failed; retrying in 100 ms");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let Ok(permit) = connections.clone().try_acquire_owned() else {
                    tokio::spawn(refuse_connection(stream, limits.max_connections));
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                let mut stop = stop_rx.clone();
                tokio::spawn(async move {
                    let _permit = permit;
                    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let mut req = req.map(Body::new);
                        req.extensions_mut().insert(ConnectInfo(peer));
                        app.clone().oneshot(req)
                    });
                    let mut builder = hyper::server::conn::http1::Builder::new();
                    builder
                        .timer(TokioTimer::new())
                        .header_read_timeout(limits.header_read_timeout);
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    let mut conn = std::pin::pin!(conn);
                    tokio::select! {
                        r = conn.as_mut() => { if let Err(e) = r { tracing::debug!(%peer, error = %e, "connection ended"); } return; }
                        _ = stop.wait_for(|s| *s) => conn.as_mut().graceful_shutdown(),
                    }
                    if let Err(e) = conn.await {
                        tracing::debug!(%peer, error = %e, "connection ended during shutdown");
                    }
                });
            }
        }
    }
    drop(listener);
    tracing::info!("drain over: listener closed, finishing requests in flight");
    streams.cancel();
    let _ = stop_tx.send(true);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(limits.grace, connections.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!(grace = ?limits.grace, "requests still in flight after the grace; exiting anyway");
    }
}

/// The answer of a connection over `--max-connections`: a 503 the client can read, then close.
async fn refuse_connection(mut stream: tokio::net::TcpStream, max: usize) {
    let body = ToolError::new(
        "TooManyConnections",
        format!("this server already serves {max} connections (--max-connections); retry after {}s, or reuse one connection for several requests", crate::limits::RETRY_AFTER_SECS),
    )
    .to_json()
    .to_string();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        crate::limits::RETRY_AFTER_SECS,
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// What every request gets on arrival: a deadline of `--body-read-timeout` on its body (see
/// [`BodyDeadline`]) and the [`Peer`] it came from.
pub async fn arrival(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let deadline = state.conn_limits.body_read_timeout;
    let mut request = request.map(|body| Body::new(BodyDeadline::new(body, deadline)));
    if let Some(ConnectInfo(addr)) = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .copied()
    {
        let forwarded_for = state
            .trusted_proxies
            .client_behind(addr.ip(), request.headers());
        request.extensions_mut().insert(Peer {
            addr,
            forwarded_for,
        });
    }
    next.run(request).await
}

/// Where a request came from: its TCP peer and, behind a trusted proxy, the client address the
/// proxy forwarded.
#[derive(Debug, Clone, PartialEq)]
pub struct Peer {
    pub addr: SocketAddr,
    pub forwarded_for: Option<String>,
}

impl Peer {
    /// Copies the request's peer (if [`arrival`] noted one) into an audit line's `who`.
    pub fn note(extensions: &axum::http::Extensions, who: &mut crate::audit::Who) {
        if let Some(peer) = extensions.get::<Peer>() {
            who.peer = Some(peer.addr.to_string());
            who.forwarded_for = peer.forwarded_for.clone();
        }
    }
}

/// The proxies whose `X-Forwarded-For` is believed (`serve --trusted-proxy`, IP or CIDR).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

impl TrustedProxies {
    /// Parses `10.0.0.0/8`, `192.168.1.7`, `fd00::/8`.
    pub fn parse(entries: &[String]) -> Result<TrustedProxies, String> {
        let mut nets = Vec::new();
        for e in entries {
            let (ip, bits) = match e.split_once('/') {
                Some((ip, bits)) => (ip, Some(bits)),
                None => (e.as_str(), None),
            };
            let ip: IpAddr = ip.trim().parse().map_err(|_| {
                format!("--trusted-proxy '{e}' is not an IP address or CIDR; give e.g. 10.0.0.0/8 or 192.168.1.7")
            })?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                None => max,
                Some(b) => match b.trim().parse::<u8>() {
                    Ok(n) if n <= max => n,
                    _ => {
                        return Err(format!(
                            "--trusted-proxy '{e}': the prefix length must be 0 to {max}"
                        ))
                    }
                },
            };
            nets.push((ip, bits));
        }
        Ok(TrustedProxies(nets))
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|(net, bits)| in_net(ip, *net, *bits))
    }

    /// The client behind `peer` when `peer` is trusted: the right-most `X-Forwarded-For`
    /// address that is not itself a trusted proxy (each proxy appends the address it saw, so
    /// only the entries added by trusted ones can be believed).
    pub fn client_behind(&self, peer: IpAddr, headers: &axum::http::HeaderMap) -> Option<String> {
        if !self.trusts(peer) {
            return None;
        }
        let chain: Vec<IpAddr> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|a| a.trim().parse::<IpAddr>().ok())
            .collect();
        let client = chain
            .iter()
            .rev()
            .find(|ip| !self.trusts(**ip))
            .or(chain.first())?;
        Some(client.to_string())
    }
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// A request body that fails with [`BodyTimedOut`] unless it ends within its deadline.
pub struct BodyDeadline {
    inner: Body,
    sleep: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
}

impl BodyDeadline {
    fn new(inner: Body, limit: Duration) -> BodyDeadline {
        BodyDeadline {
            inner,
            sleep: Box::pin(tokio::time::sleep(limit)),
            limit,
        }
    }
}

/// The error of a body that did not arrive within its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {}s (--body-read-timeout)", .0.as_secs())]
pub struct BodyTimedOut(pub Duration);

impl HttpBody for BodyDeadline {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut(self.limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether a body-read error (anywhere in its source chain) is a missed body deadline.
pub fn is_body_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<BodyTimedOut>() {
            return true;
        }
        cur = err.source();
    }
    false
}

/// The 408 of a body that missed its deadline; the connection is closed after it (its rest
/// may still be on the way).
pub fn body_timeout_response(limit: Duration, what: &str) -> Response {
    let error = ToolError::new(
        BODY_TIMEOUT,
        format!("{what}: the request body did not arrive within {}s (--body-read-timeout); send the whole body at once, and retry", limit.as_secs()),
    );
    let mut resp = (StatusCode::REQUEST_TIMEOUT, Json(error.to_json())).into_response();
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn a_forwarded_client_is_believed_only_from_a_trusted_proxy() {
        let proxies = TrustedProxies::parse(&["10.0.0.0/8".into(), "::1".into()]).unwrap();
        let mut h = axum::http::HeaderMap::new();
        h.insert("x-forwarded-for", "203.0.113.9, 10.1.2.3".parse().unwrap());
        let alb: IpAddr = "10.0.7.1".parse().unwrap();
        assert_eq!(proxies.client_behind(alb, &h), Some("203.0.113.9".into()));
        // The same header from an untrusted peer is the peer's own claim: not believed.
        let stranger: IpAddr = "198.51.100.4".parse().unwrap();
        assert_eq!(proxies.client_behind(stranger, &h), None);
        // A forged left-most entry does not hide the address the trusted proxy saw.
        h.insert("x-forwarded-for", "1.2.3.4, 203.0.113.9".parse().unwrap());
        assert_eq!(proxies.client_behind(alb, &h), Some("203.0.113.9".into()));
        assert_eq!(
            TrustedProxies::parse(&["10.0.0.0/33".into()]).unwrap_err(),
            "--trusted-proxy '10.0.0.0/33': the prefix length must be 0 to 32"
        );
        assert!(TrustedProxies::parse(&["alb".into()]).is_err());
    }

    /// A body that sends `first` and then nothing, never ending.
    struct Stalls(Option<Bytes>);

    impl HttpBody for Stalls {
        type Data = Bytes;
        type Error = axum::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut TaskContext<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
            match self.0.take() {
                Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                None => Poll::Pending,
            }
        }
    }

    #[tokio::test]
    async fn a_body_that_stalls_fails_at_its_deadline_and_a_whole_one_does_not() {
        let stalled = Body::new(Stalls(Some(Bytes::from_static(b"{\"par"))));
        let stalled = BodyDeadline::new(stalled, Duration::from_millis(200));
        let started = std::time::Instant::now();
        let err = stalled.collect().await.unwrap_err();
        assert!(is_body_timeout(&err), "{err}");
        assert!(started.elapsed() >= Duration::from_millis(200));

        let whole = BodyDeadline::new(Body::from("{}"), Duration::from_millis(200));
        assert_eq!(
            whole.collect().await.unwrap().to_bytes(),
            Bytes::from_static(b"{}")
        );
    }
}
