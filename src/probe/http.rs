//! A lean HTTP/1.1 client: one connection per in-flight request, kept alive and reused, and
//! driven in the same task that reads the response (no hop between tasks per event).

use super::stamped::{StampedStream, Stamps};
use super::workload::Api;
use super::Target;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Instant;
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// Where and how requests are sent.
#[derive(Debug)]
pub(crate) struct Endpoint {
    /// `host:port` to connect to.
    pub address: String,
    host: HeaderValue,
    path: String,
    authorization: Option<HeaderValue>,
}

impl Endpoint {
    /// Checks the target's URL and builds the endpoint path for `api`.
    pub fn new(target: &Target, api: Api) -> Result<Self> {
        let url = target.base_url.trim_end_matches('/');
        let uri: Uri = url.parse().with_context(|| {
            format!("invalid target URL `{url}` (expected e.g. http://127.0.0.1:8000)")
        })?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => bail!(
                "target URL `{url}`: scheme `{other}` is not supported; use http:// (put a \
                 TLS-terminating proxy in front of an https server)"
            ),
            None => bail!("target URL `{url}` has no scheme; write it like http://{url}"),
        }
        let authority = uri
            .authority()
            .with_context(|| format!("target URL `{url}` has no host"))?;
        let port = authority.port_u16().unwrap_or(80);
        let address = format!("{}:{port}", authority.host());
        let base = uri.path().trim_end_matches('/');
        let suffix = match api {
            Api::Chat => "chat/completions",
            Api::Completions => "completions",
        };
        let path = if base.ends_with("/v1") {
            format!("{base}/{suffix}")
        } else {
            format!("{base}/v1/{suffix}")
        };
        let authorization = match &target.api_key {
            Some(key) => Some(
                HeaderValue::try_from(format!("Bearer {key}"))
                    .context("the API key holds characters not allowed in an HTTP header")?,
            ),
            None => None,
        };
        Ok(Endpoint {
            address,
            host: HeaderValue::try_from(authority.as_str())
                .context("invalid host in target URL")?,
            path,
            authorization,
        })
    }

    /// A POST of `body` to the endpoint.
    pub fn request(&self, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = Uri::try_from(self.path.as_str()).unwrap_or_default();
        let headers = request.headers_mut();
        headers.insert(HOST, self.host.clone());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json"),
        );
        if let Some(auth) = &self.authorization {
            headers.insert(AUTHORIZATION, auth.clone());
        }
        request
    }

    /// The URL path requests go to.
    pub fn path(&self) -> &str {
        &self.path
    }
}

type Driver = http1::Connection<TokioIo<StampedStream>, Full<Bytes>>;

/// The reading/writing half of a connection; it makes progress only while polled.
pub(crate) struct ConnDriver {
    driver: Driver,
    closed: bool,
    stamps: Arc<Stamps>,
}

/// One open HTTP/1.1 connection.
pub(crate) struct Conn {
    /// Sends requests.
    pub sender: http1::SendRequest<Full<Bytes>>,
    /// Drives the socket.
    pub driver: ConnDriver,
}

impl Conn {
    /// Connects to `endpoint`.
    pub async fn open(endpoint: &Endpoint) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(&endpoint.address).await?;
        stream.set_nodelay(true)?;
        let stream = StampedStream::new(stream)?;
        let stamps = stream.stamps();
        let (sender, driver) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
        Ok(Conn {
            sender,
            driver: ConnDriver {
                driver,
                closed: false,
                stamps,
            },
        })
    }

    /// Whether the connection can carry another request.
    pub fn reusable(&self) -> bool {
        !self.driver.closed && !self.sender.is_closed()
    }
}

/// Result of [`ConnDriver::run`].
pub(crate) enum Driven<T> {
    /// The future completed.
    Done(T),
    /// The timer fired first.
    TimerFired,
}

impl ConnDriver {
    /// When the kernel received the bytes of the latest read on this connection.
    pub fn last_arrival(&self) -> Instant {
        self.stamps.last_arrival()
    }

    /// The next write starts a request; [`ConnDriver::request_written`] then tells when.
    pub fn expect_request(&self) {
        self.stamps.expect_request();
    }

    /// When the request announced by [`ConnDriver::expect_request`] began to be written.
    pub fn request_written(&self) -> Option<Instant> {
        self.stamps.request_written()
    }

    /// Polls `future` while driving the connection, until it completes or `timer` fires.
    pub async fn run<F: Future>(&mut self, future: F, timer: Pin<&mut Sleep>) -> Driven<F::Output> {
        let future = std::pin::pin!(future);
        Drive {
            conn: self,
            future,
            timer,
        }
        .await
    }
}

struct Drive<'a, 'b, F> {
    conn: &'a mut ConnDriver,
    future: Pin<&'b mut F>,
    timer: Pin<&'b mut Sleep>,
}

impl<F: Future> Future for Drive<'_, '_, F> {
    type Output = Driven<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        // The future first (it may hand the connection a request), then the connection
        // (writes it at once, reads what arrived), then the future again (takes the result).
        if let Poll::Ready(output) = this.future.as_mut().poll(cx) {
            return Poll::Ready(Driven::Done(output));
        }
        if !this.conn.closed && Pin::new(&mut this.conn.driver).poll(cx).is_ready() {
            this.conn.closed = true;
        }
        if let Poll::Ready(output) = this.future.as_mut().poll(cx) {
            return Poll::Ready(Driven::Done(output));
        }
        if this.timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Driven::TimerFired);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(url: &str, api: Api) -> Result<Endpoint> {
        let target = Target {
            base_url: url.into(),
            model: "m".into(),
            api_key: None,
        };
        Endpoint::new(&target, api)
    }

    #[test]
    fn paths_follow_the_api_and_a_v1_base() {
        let e = endpoint("http://127.0.0.1:8000", Api::Chat).unwrap();
        assert_eq!(
            (e.address.as_str(), e.path()),
            ("127.0.0.1:8000", "/v1/chat/completions")
        );
        let e = endpoint("http://localhost:9/v1/", Api::Completions).unwrap();
        assert_eq!(
            (e.address.as_str(), e.path()),
            ("localhost:9", "/v1/completions")
        );
    }

    #[test]
    fn unsupported_urls_are_explained() {
        let e = endpoint("https://x:1", Api::Chat).unwrap_err().to_string();
        assert!(e.contains("use http://"), "{e}");
        let e = endpoint("127.0.0.1:8000", Api::Chat)
            .unwrap_err()
            .to_string();
        assert!(e.contains("http://"), "{e}");
    }
}
