//! Listening sockets and the accept loop: binds every `bind` address on `port` and `tls-port`
//! (Redis's `*`, `::*` and optional `-addr` forms included), then for each new connection sets
//! TCP_NODELAY and keepalive, on the TLS port completes the handshake (in a task of its own,
//! bounded by [`crate::tls::HANDSHAKE_TIMEOUT`], so a client that stalls or sends garbage holds
//! no worker), registers it (refusing it over `maxclients`, or from outside the loopback
//! interface in protected mode) and spawns its connection task. [`Rebindable`] holds sockets
//! that CONFIG SET can replace while the server runs (`tls-port`, `metrics-port`): the new
//! sockets are bound first, so a failure changes nothing. Knows nothing of commands.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, SockRef, Socket, TcpKeepalive, Type};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::log::{self, warning};
use crate::server::Server;
use crate::stream::ClientStream;

/// Listen backlog, as Redis's default `tcp-backlog`.
const BACKLOG: i32 = 511;

/// One address to listen on, parsed from a `bind` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindAddr {
    /// The entry as configured (without a leading `-`), for messages.
    pub text: String,
    /// The IP address.
    pub ip: IpAddr,
    /// A leading `-`: failing to bind because the address is unavailable is not fatal.
    pub optional: bool,
}

/// Parses a `bind` entry: an IP address, `*` (every IPv4 address), `::*` (every IPv6 address),
/// optionally prefixed with `-`.
pub fn parse_bind(entry: &str) -> Result<BindAddr, String> {
    let (optional, text) = match entry.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, entry),
    };
    let ip = match text {
        "*" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        "::*" => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        other => other
            .parse()
            .map_err(|_| format!("Invalid bind address '{other}'"))?,
    };
    Ok(BindAddr {
        text: text.to_string(),
        ip,
        optional,
    })
}

/// Binds `addr` on `port`. IPv6 sockets are IPv6-only so `* ::*` can both be bound.
pub fn bind(addr: &BindAddr, port: u16) -> io::Result<std::net::TcpListener> {
    let sa = SocketAddr::new(addr.ip, port);
    let socket = Socket::new(Domain::for_address(sa), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if sa.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&sa.into())?;
    socket.listen(BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Binds every `bind` address on `port`, skipping optional addresses that are unavailable.
/// The error is Redis's message.
pub fn bind_all(binds: &[BindAddr], port: u16) -> Result<Vec<std::net::TcpListener>, String> {
    let mut listeners = Vec::new();
    for b in binds {
        match bind(b, port) {
            Ok(l) => listeners.push(l),
            Err(e)
                if b.optional
                    && matches!(
                        e.raw_os_error(),
                        Some(libc::EADDRNOTAVAIL | libc::EAFNOSUPPORT | libc::EPROTONOSUPPORT)
                    ) =>
            {
                warning!(
                    "Skipping optional bind address {}: {}",
                    b.text,
                    os_error_text(&e)
                );
            }
            Err(e) => {
                return Err(format!(
                    "Could not create server TCP listening socket {}:{port}: bind: {}",
                    b.text,
                    os_error_text(&e)
                ));
            }
        }
    }
    Ok(listeners)
}

/// [`bind_all`] for `bind` entries as configured (nothing when `port` is 0).
pub fn bind_entries(entries: &[String], port: u16) -> Result<Vec<std::net::TcpListener>, String> {
    if port == 0 {
        return Ok(Vec::new());
    }
    let binds = entries
        .iter()
        .map(|e| parse_bind(e))
        .collect::<Result<Vec<_>, _>>()?;
    bind_all(&binds, port)
}

/// Listening sockets that can be replaced while the server runs.
#[derive(Default)]
pub struct Rebindable {
    /// Sockets bound for [`Rebindable::supervise`] to take over.
    pending: parking_lot::Mutex<Option<Vec<std::net::TcpListener>>>,
    /// The addresses and port in force.
    current: parking_lot::Mutex<(Vec<String>, u16)>,
    changed: tokio::sync::Notify,
}

impl Rebindable {
    /// Whether `bind` and `port` differ from what is served now.
    pub fn differs(&self, bind: &[String], port: u16) -> bool {
        let current = self.current.lock();
        current.0 != bind || current.1 != port
    }

    /// The port served now (0: none).
    pub fn port(&self) -> u16 {
        self.current.lock().1
    }

    /// Serves `listeners` (bound for `bind` and `port`) from now on, in place of the old ones.
    pub fn install(&self, bind: &[String], port: u16, listeners: Vec<std::net::TcpListener>) {
        *self.current.lock() = (bind.to_vec(), port);
        *self.pending.lock() = Some(listeners);
        self.changed.notify_one();
    }

    /// Serves the sockets installed last, one `serve` task each, until aborted; the tasks of
    /// replaced sockets are aborted (closing them).
    pub async fn supervise(&self, serve: impl Fn(TcpListener) -> tokio::task::JoinHandle<()>) {
        let mut tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
        loop {
            let taken = self.pending.lock().take();
            if let Some(listeners) = taken {
                for t in tasks.drain(..) {
                    t.abort();
                }
                for l in listeners {
                    let local = l.local_addr().ok();
                    match TcpListener::from_std(l) {
                        Ok(l) => tasks.push(serve(l)),
                        Err(e) => warning!("Could not register listening socket {local:?}: {e}"),
                    }
                }
            }
            self.changed.notified().await;
        }
    }
}

/// `strerror` text of an I/O error, without Rust's "(os error N)" suffix.
pub fn os_error_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => {
            // SAFETY: strerror returns a pointer to a NUL-terminated static (or thread-local) string.
            let s = unsafe { std::ffi::CStr::from_ptr(libc::strerror(code)) };
            s.to_string_lossy().into_owned()
        }
        None => e.to_string(),
    }
}

/// Accepts connections on `listener` forever; `tls`: the listener is on the TLS port.
pub async fn accept_loop(server: Arc<Server>, listener: TcpListener, tls: bool) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Typically EMFILE: back off briefly instead of spinning.
                warning!("Accepting client connection: {}", os_error_text(&e));
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        server
            .stats
            .connections_received
            .fetch_add(1, Ordering::Relaxed);
        configure(&server, &stream);
        if tls {
            tokio::spawn(handshake(server.clone(), stream, peer));
        } else {
            admit(&server, ClientStream::Plain(stream), peer);
        }
    }
}

/// The TLS handshake of a client on the TLS port, then [`admit`]. A handshake that fails or
/// does not finish within the time allowed closes the connection.
async fn handshake(server: Arc<Server>, stream: TcpStream, peer: SocketAddr) {
    let Some(contexts) = server.tls.current() else {
        return;
    };
    let mode = server.config().tls_auth_clients;
    let Some(config) = contexts.server(mode) else {
        warning!(
            "Error accepting a client connection: tls-auth-clients {} needs tls-ca-cert-file or tls-ca-cert-dir (conn: fd={})",
            mode.name(),
            stream.as_raw_fd()
        );
        return;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    match tokio::time::timeout(crate::tls::HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => admit(&server, ClientStream::Tls(Box::new(tls)), peer),
        Ok(Err(e)) => warning!("Error accepting a client connection: {e} (addr={peer})"),
        Err(_) => log::verbose!(
            "Error accepting a client connection: TLS handshake timed out (addr={peer})"
        ),
    }
}

/// Registers a connected client and starts serving it, unless it is over `maxclients` or
/// protected mode refuses it (then it gets Redis's error and is closed).
fn admit(server: &Arc<Server>, stream: ClientStream, peer: SocketAddr) {
    let tcp = stream.tcp();
    let local = tcp
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], server.port)));
    let fd = tcp.as_raw_fd();
    let refusal =
        match server
            .registry
            .register(peer, local, fd, server.clock_ms(), server.maxclients())
        {
            None => {
                log::verbose!("Refused {peer}: max number of clients reached");
                "-ERR max number of clients reached\r\n".to_string()
            }
            Some(client) if server.protected_refuses(peer) => {
                server.registry.deregister(client.id);
                log::verbose!("Refused {peer}: protected mode");
                format!("-{}\r\n", strata_commands::errors::PROTECTED_MODE_DENIED)
            }
            Some(client) => {
                log::verbose!("Accepted {peer}");
                tokio::spawn(crate::connection::run(server.clone(), stream, client));
                return;
            }
        };
    server
        .stats
        .rejected_connections
        .fetch_add(1, Ordering::Relaxed);
    tokio::spawn(refuse(stream, refusal));
}

async fn refuse(mut stream: ClientStream, reply: String) {
    let _ = stream.send_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn configure(server: &Server, stream: &TcpStream) {
    let _ = stream.set_nodelay(true);
    let secs = server.config().tcp_keepalive;
    if secs > 0 {
        let ka = TcpKeepalive::new()
            .with_time(Duration::from_secs(secs))
            .with_interval(Duration::from_secs((secs / 3).max(1)));
        let _ = SockRef::from(stream).set_tcp_keepalive(&ka);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_entries_follow_redis_forms() -> Result<(), String> {
        assert_eq!(parse_bind("*")?.ip, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        let v6 = parse_bind("-::*")?;
        assert!(v6.optional);
        assert_eq!(v6.text, "::*");
        assert_eq!(v6.ip, IpAddr::V6(Ipv6Addr::UNSPECIFIED));
        assert_eq!(parse_bind("127.0.0.1")?.ip, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(parse_bind("nonsense").is_err());
        Ok(())
    }

    #[test]
    fn address_in_use_is_reported_like_redis() -> Result<(), Box<dyn std::error::Error>> {
        let addr = parse_bind("127.0.0.1")?;
        let first = bind(&addr, 0)?;
        let port = first.local_addr()?.port();
        let err = bind(&addr, port).err().ok_or("second bind succeeded")?;
        assert_eq!(os_error_text(&err), "Address already in use");
        Ok(())
    }
}
