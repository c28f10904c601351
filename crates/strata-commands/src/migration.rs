//! MIGRATE's side of the wire: a blocking connection to the target instance, opened for one call
//! (Redis keeps one per target for 10 seconds; docs/differences.md), the whole request written
//! at once, then one reply line read per command, as Redis's `connSyncReadLine` reads them.
//! Every step is bounded by the call's timeout; the worker thread's other connections move to
//! another thread while it waits (tokio's `block_in_place`). Knows nothing of keys or payloads:
//! the command builds the request and words the errors.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The longest reply line kept (Redis reads into a 1024-byte buffer).
const LINE_MAX: usize = 1024;

/// Where an exchange failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkError {
    /// The address could not be resolved.
    Connect,
    /// Writing the request failed (`timed_out`: by the timeout).
    Write {
        /// The timeout ran out.
        timed_out: bool,
    },
    /// Reading a reply failed (`timed_out`: by the timeout).
    Read {
        /// The timeout ran out.
        timed_out: bool,
    },
}

/// Appends a RESP command.
pub fn push_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// The port as C's `atoi` reads it (Redis does not check it; a port it cannot connect to is a
/// connection error).
fn port_of(port: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(port).ok()?.trim_start();
    let digits: String = text.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

/// A connection to the target.
pub struct Link {
    stream: BufReader<TcpStream>,
}

impl Link {
    /// Connects to `host:port` within `timeout`: [`LinkError::Connect`] when the address does
    /// not resolve, [`LinkError::Write`] when the connection is refused or times out (where
    /// Redis notices it).
    pub fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Result<Link, LinkError> {
        let host = std::str::from_utf8(host).map_err(|_| LinkError::Connect)?;
        let port = port_of(port).ok_or(LinkError::Connect)?;
        let addrs = (host, port)
            .to_socket_addrs()
            .map_err(|_| LinkError::Connect)?;
        // Redis's connect does not wait for the outcome: a refused or timed-out connection
        // shows when the request is written.
        let mut last = LinkError::Connect;
        let mut stream = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => {
                    last = LinkError::Write {
                        timed_out: timed_out(&e),
                    }
                }
            }
        }
        let stream = stream.ok_or(last)?;
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(timeout))
            .and_then(|()| stream.set_write_timeout(Some(timeout)))
            .map_err(|_| LinkError::Connect)?;
        Ok(Link {
            stream: BufReader::new(stream),
        })
    }

    /// Writes the whole request.
    pub fn send(&mut self, request: &[u8]) -> Result<(), LinkError> {
        let s = self.stream.get_mut();
        s.write_all(request)
            .and_then(|()| s.flush())
            .map_err(|e| LinkError::Write {
                timed_out: timed_out(&e),
            })
    }

    /// Reads one reply line, without its line ending (cut at 1024 bytes).
    pub fn line(&mut self) -> Result<Vec<u8>, LinkError> {
        let mut line = Vec::new();
        let read = self.stream.read_until(b'\n', &mut line);
        match read {
            Ok(0) => Err(LinkError::Read { timed_out: false }),
            Ok(_) if line.last() != Some(&b'\n') => Err(LinkError::Read { timed_out: false }),
            Ok(_) => {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                line.truncate(LINE_MAX - 1);
                Ok(line)
            }
            Err(e) => Err(LinkError::Read {
                timed_out: timed_out(&e),
            }),
        }
    }
}

/// Runs `f`, which blocks on the network, letting tokio move this worker's other connections
/// to another thread meanwhile.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread) {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_read_as_atoi_reads_them() {
        assert_eq!(port_of(b"6379"), Some(6379));
        assert_eq!(port_of(b" 6379x"), Some(6379));
        assert_eq!(port_of(b"x"), None);
        assert_eq!(port_of(b"70000"), None);
    }

    #[test]
    fn commands_are_written_as_resp_arrays() {
        let mut out = Vec::new();
        push_command(&mut out, &[b"SELECT", b"0"]);
        assert_eq!(out, b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n");
    }

    #[test]
    fn a_closed_port_is_a_write_error_as_in_redis() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let got = Link::connect(
            b"127.0.0.1",
            port.to_string().as_bytes(),
            Duration::from_millis(500),
        );
        assert!(matches!(got, Err(LinkError::Write { timed_out: false })));
    }
}
