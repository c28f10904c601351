//! The sockets replication runs on. A replica's stream on the leader is a plain TCP socket, or,
//! for a replica that came in on the TLS port, one end of a local socket pair whose other end a
//! task on the async runtime relays to the TLS connection (the leader's two blocking threads,
//! sender and acknowledgement reader, each keep a handle of their own). The replica's link to
//! its leader is TCP or, under `tls-replication`, rustls's blocking stream over TCP.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use rustls::{ClientConnection, StreamOwned};

/// A replica's stream, on the leader.
pub enum Socket {
    /// The client's own TCP socket.
    Tcp(TcpStream),
    /// A local socket relayed to a TLS connection.
    Relayed(UnixStream),
}

impl Socket {
    /// Another handle on the same socket.
    pub fn try_clone(&self) -> io::Result<Socket> {
        Ok(match self {
            Socket::Tcp(s) => Socket::Tcp(s.try_clone()?),
            Socket::Relayed(s) => Socket::Relayed(s.try_clone()?),
        })
    }

    /// Ends the stream both ways (the other handles see it closed).
    pub fn shutdown(&self) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.shutdown(Shutdown::Both),
            Socket::Relayed(s) => s.shutdown(Shutdown::Both),
        }
    }

    /// Blocking I/O, writes bounded by `timeout`, no Nagle delay on TCP.
    pub fn make_blocking(&self, timeout: Duration) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => {
                s.set_nonblocking(false)?;
                s.set_write_timeout(Some(timeout))?;
                s.set_nodelay(true)
            }
            Socket::Relayed(s) => {
                s.set_nonblocking(false)?;
                s.set_write_timeout(Some(timeout))
            }
        }
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.read(buf),
            Socket::Relayed(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write(buf),
            Socket::Relayed(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Relays a TLS connection to a local socket pair on the async runtime; returns the blocking
/// end. The relay ends when either side closes.
pub fn relay_tls(
    tls: Box<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>,
) -> io::Result<Socket> {
    let (near, far) = UnixStream::pair()?;
    near.set_nonblocking(true)?;
    let near = tokio::net::UnixStream::from_std(near)?;
    tokio::spawn(async move {
        let mut tls = tls;
        let mut near = near;
        let _ = tokio::io::copy_bidirectional(&mut tls, &mut near).await;
    });
    Ok(Socket::Relayed(far))
}

/// A replica's link to its leader.
pub enum Link {
    /// Plain TCP.
    Tcp(TcpStream),
    /// TLS over TCP (`tls-replication yes`).
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Read for Link {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Link::Tcp(s) => s.read(buf),
            Link::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Link {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Link::Tcp(s) => s.write(buf),
            Link::Tls(s) => s.write(buf),
        }
    }

    /// Sends what TLS still holds.
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Link::Tcp(_) => Ok(()),
            Link::Tls(s) => s.flush(),
        }
    }
}
