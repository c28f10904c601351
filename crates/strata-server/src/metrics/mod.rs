//! The Prometheus metrics endpoint: `GET /metrics` over plain HTTP/1.1 on `metrics-port`
//! (0 = off) at the `metrics-bind` addresses, answering the text format 0.0.4 that `series.rs`
//! writes. It runs as tasks on the server's async runtime: an accept loop per address, one
//! short-lived task per scrape. A request head is read within [`READ_TIMEOUT`] and at most
//! [`MAX_REQUEST`] bytes, at most [`MAX_CONNECTIONS`] connections are open at once (others are
//! closed at once), and the figures are gathered on the blocking pool, [`MAX_RENDERS`] at a
//! time: no scraper can hold a worker or the server. CONFIG SET of either directive binds the new sockets first (an error leaves
//! the old ones serving) and hands them to [`serve`] (`listener::Rebindable`), which swaps them in. Other paths get 404,
//! other methods 405; every response closes the connection.

mod exposition;
mod series;

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::listener;
use crate::log::{self, warning};
use crate::server::Server;

pub use series::render;

/// The longest request head (request line and headers) read; longer ones get 431.
pub const MAX_REQUEST: usize = 8192;
/// Time a client has to send its request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Time the whole exchange may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections open at once.
pub const MAX_CONNECTIONS: usize = 128;
/// Scrapes whose figures are gathered at once.
pub const MAX_RENDERS: usize = 2;

/// Binds every address of `bind` on `port` for the endpoint (none when `port` is 0). The
/// error is the text to log.
pub fn bind(bind: &[String], port: u16) -> Result<Vec<std::net::TcpListener>, String> {
    if port == 0 {
        return Ok(Vec::new());
    }
    let mut listeners = Vec::new();
    for entry in bind {
        let addr = listener::parse_bind(entry)?;
        match listener::bind(&addr, port) {
            Ok(l) => listeners.push(l),
            Err(e) if addr.optional => warning!(
                "Skipping optional metrics bind address {}: {}",
                addr.text,
                listener::os_error_text(&e)
            ),
            Err(e) => {
                return Err(format!(
                    "Could not create the metrics listening socket {}:{port}: bind: {}",
                    addr.text,
                    listener::os_error_text(&e)
                ))
            }
        }
    }
    Ok(listeners)
}

/// Runs the endpoint for the server's lifetime on the sockets installed last in
/// `server.metrics` (CONFIG SET replaces them).
pub async fn serve(server: Arc<Server>) {
    let scrapers = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let renders = Arc::new(Semaphore::new(MAX_RENDERS));
    let s = server.clone();
    server
        .metrics
        .supervise(|l| {
            log::verbose!("Metrics endpoint listening on {:?}", l.local_addr().ok());
            tokio::spawn(accept_loop(s.clone(), l, scrapers.clone(), renders.clone()))
        })
        .await
}

async fn accept_loop(
    server: Arc<Server>,
    listener: TcpListener,
    scrapers: Arc<Semaphore>,
    renders: Arc<Semaphore>,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                warning!(
                    "Accepting a metrics connection: {}",
                    listener::os_error_text(&e)
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Over the limit: closed at once (a scraper retries at its next interval).
        let Ok(permit) = scrapers.clone().try_acquire_owned() else {
            continue;
        };
        let server = server.clone();
        let renders = renders.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let _ = tokio::time::timeout(EXCHANGE_TIMEOUT, exchange(server, stream, renders)).await;
        });
    }
}

/// One request and its response.
async fn exchange(server: Arc<Server>, mut stream: TcpStream, renders: Arc<Semaphore>) {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(head)) => head,
        Ok(Err(status)) => return respond(&mut stream, status, "", false).await,
        Err(_) => return respond(&mut stream, Status::Timeout, "", false).await,
    };
    let (status, with_body) = route(&head);
    if status != Status::Ok {
        return respond(&mut stream, status, "", with_body).await;
    }
    let Ok(_render) = renders.acquire_owned().await else {
        return respond(&mut stream, Status::Error, "", with_body).await;
    };
    match tokio::task::spawn_blocking(move || render(&server)).await {
        Ok(body) => respond(&mut stream, Status::Ok, &body, with_body).await,
        Err(_) => respond(&mut stream, Status::Error, "", with_body).await,
    }
}

/// Reads up to the blank line ending the request head.
async fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>, Status> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    loop {
        let n = stream
            .read(&mut buf)
            .await
            .map_err(|_| Status::BadRequest)?;
        if n == 0 {
            return Err(Status::BadRequest);
        }
        let scan_from = head.len().saturating_sub(3);
        head.extend_from_slice(&buf[..n]);
        if head[scan_from..].windows(4).any(|w| w == b"\r\n\r\n")
            || head[scan_from..].windows(2).any(|w| w == b"\n\n")
        {
            return Ok(head);
        }
        if head.len() > MAX_REQUEST {
            return Err(Status::TooLarge);
        }
    }
}

/// The status a request head gets, and whether the response carries a body (not for HEAD).
fn route(head: &[u8]) -> (Status, bool) {
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = String::from_utf8_lossy(&head[..line_end]);
    let mut words = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (words.next(), words.next(), words.next())
    else {
        return (Status::BadRequest, true);
    };
    if !version.starts_with("HTTP/1.") || words.next().is_some() {
        return (Status::BadRequest, true);
    }
    let path = target.split(['?', '#']).next().unwrap_or("");
    let with_body = method != "HEAD";
    if path != "/metrics" {
        return (Status::NotFound, with_body);
    }
    match method {
        "GET" | "HEAD" => (Status::Ok, with_body),
        _ => (Status::MethodNotAllowed, true),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    Timeout,
    TooLarge,
    Error,
}

impl Status {
    fn line(self) -> &'static str {
        match self {
            Status::Ok => "200 OK",
            Status::BadRequest => "400 Bad Request",
            Status::NotFound => "404 Not Found",
            Status::MethodNotAllowed => "405 Method Not Allowed",
            Status::Timeout => "408 Request Timeout",
            Status::TooLarge => "431 Request Header Fields Too Large",
            Status::Error => "500 Internal Server Error",
        }
    }
}

/// Writes the response and closes the connection.
async fn respond(stream: &mut TcpStream, status: Status, body: &str, with_body: bool) {
    let body = match status {
        Status::Ok => body.to_string(),
        other => format!("{}\n", other.line()),
    };
    let content_type = match status {
        Status::Ok => "text/plain; version=0.0.4; charset=utf-8",
        _ => "text/plain; charset=utf-8",
    };
    let mut response = format!(
        "HTTP/1.1 {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        status.line(),
        body.len()
    );
    if status == Status::MethodNotAllowed {
        response.push_str("Allow: GET, HEAD\r\n");
    }
    response.push_str("\r\n");
    if with_body {
        response.push_str(&body);
    }
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_and_head_of_the_metrics_path_are_served() {
        assert_eq!(route(b"GET /metrics HTTP/1.1\r\n\r\n"), (Status::Ok, true));
        assert_eq!(
            route(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"),
            (Status::Ok, true)
        );
        assert_eq!(
            route(b"HEAD /metrics HTTP/1.1\r\n\r\n"),
            (Status::Ok, false)
        );
        assert_eq!(route(b"GET / HTTP/1.1\r\n\r\n"), (Status::NotFound, true));
        assert_eq!(
            route(b"POST /metrics HTTP/1.1\r\n\r\n"),
            (Status::MethodNotAllowed, true)
        );
        assert_eq!(route(b"garbage\r\n\r\n"), (Status::BadRequest, true));
        assert_eq!(
            route(b"GET /metrics SPDY/3\r\n\r\n"),
            (Status::BadRequest, true)
        );
    }

    #[test]
    fn port_zero_listens_nowhere() -> Result<(), String> {
        assert!(bind(&["127.0.0.1".to_string()], 0)?.is_empty());
        Ok(())
    }

    #[test]
    fn a_taken_port_is_an_error() -> Result<(), Box<dyn std::error::Error>> {
        let taken = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = taken.local_addr()?.port();
        let err = bind(&["127.0.0.1".to_string()], port)
            .err()
            .ok_or("bound a taken port")?;
        assert!(err.contains("Address already in use"), "{err}");
        Ok(())
    }
}
