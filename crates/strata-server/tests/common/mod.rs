//! Test harness: starts the real `strata-server` binary on a free port with a temporary data
//! directory, waits until it accepts connections, and kills it (by PID) when dropped.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_strata-server")
}

/// A port nothing listens on right now.
pub fn free_port() -> std::io::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// What [`Server::start_on`] says when another process's server answers on its port.
const ANOTHER_SERVER: &str = "answered by another server";

/// Whether a start failed because the port was not this server's: another test's server
/// answered on it, or held it when this one tried to bind it (then this one exited at once).
fn port_taken(error: &str) -> bool {
    error.contains(ANOTHER_SERVER) || error.contains("Address already in use")
}

/// A running server, killed when dropped.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    pub log: PathBuf,
}

impl Server {
    /// Starts a server on a free port with data in `root/data`, its log in `root/server-<port>.log`,
    /// and the extra `--directive value` args.
    /// Another test's server may take the port between [`free_port`] and this server's bind;
    /// then a new port is tried.
    pub fn start(root: &Path, extra: &[&str]) -> Result<Server, Box<dyn std::error::Error>> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Server::start_on(root, free_port()?, extra) {
                Err(e) if attempt < 3 && port_taken(&e.to_string()) => continue,
                started => return started,
            }
        }
    }

    /// Starts a server on `port`.
    pub fn start_on(
        root: &Path,
        port: u16,
        extra: &[&str],
    ) -> Result<Server, Box<dyn std::error::Error>> {
        let dir = root.join("data");
        let log = root.join(format!("server-{port}.log"));
        let stderr = std::fs::File::create(&log)?;
        let child = Command::new(binary())
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--dir"])
            .arg(&dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr))
            .spawn()?;
        let mut server = Server {
            child: Some(child),
            port,
            dir,
            log,
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), Box<dyn std::error::Error>> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    return Err(
                        format!("server exited early with {status}: {}", self.log_text()).into(),
                    );
                }
            }
            if let Ok(s) = TcpStream::connect(("127.0.0.1", self.port)) {
                match self.check_ours(s) {
                    // The probe's connection broke: the server answering was another test's,
                    // closing its clients (CLIENT KILL resets a connection it has not read).
                    // Probe again: this server, or that one's PID, answers next.
                    Err(e) if e.downcast_ref::<std::io::Error>().is_some() => {}
                    checked => return checked,
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("server did not start: {}", self.log_text()).into())
    }

    /// Checks that the server answering on the port is this one (INFO's `process_id`): a test
    /// that talked to another test's server failed with a connection that server reset. A server
    /// that refuses INFO (a password is required) is taken as this one.
    fn check_ours(&self, mut s: TcpStream) -> Result<(), Box<dyn std::error::Error>> {
        let pid = self.child.as_ref().map(|c| c.id()).ok_or("no child")?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")?;
        let mut reply = Vec::new();
        let mut chunk = [0u8; 4096];
        // A bulk string: `$<len>\r\n`, then the text and `\r\n`; or an error line.
        loop {
            let n = s.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("port {}: closed while answering INFO", self.port),
                )
                .into());
            }
            reply.extend_from_slice(&chunk[..n]);
            if reply.first() == Some(&b'-') && reply.ends_with(b"\r\n") {
                return Ok(());
            }
            let text = String::from_utf8_lossy(&reply);
            if let Some((head, body)) = text.split_once("\r\n") {
                let len: usize = head.trim_start_matches('$').parse()?;
                if body.len() >= len + 2 {
                    return match body.contains(&format!("process_id:{pid}\r\n")) {
                        true => Ok(()),
                        false => Err(format!("port {}: {ANOTHER_SERVER}", self.port).into()),
                    };
                }
            }
        }
    }

    /// What the server logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A `redis` crate client.
    pub fn client(&self) -> redis::RedisResult<redis::Client> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
    }

    /// A fresh synchronous connection.
    pub fn conn(&self) -> redis::RedisResult<redis::Connection> {
        self.client()?.get_connection()
    }

    /// A raw TCP connection with a read timeout.
    pub fn raw(&self) -> std::io::Result<TcpStream> {
        let s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(s)
    }

    /// Waits up to `timeout` for the process to exit by itself; returns its exit code.
    pub fn wait_exit(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<i32>, Box<dyn std::error::Error>> {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut().ok_or("no child")?;
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait()? {
                self.child = None;
                return Ok(status.code());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("server did not exit in time".into())
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) -> std::io::Result<()> {
        let pid = self.child.as_ref().map(|c| c.id()).unwrap_or(0);
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other("kill failed"))
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs the binary to completion with `args` (for startup errors), with a time limit.
pub fn run_to_exit(args: &[&str]) -> Result<Output, Box<dyn std::error::Error>> {
    let mut child = Command::new(binary())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err("binary did not exit".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(child.wait_with_output()?)
}

/// Reads from `s` until `want` bytes arrived or the peer closed; returns what was read.
pub fn read_n(s: &mut TcpStream, want: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while out.len() < want {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    Ok(out)
}

/// Whether the peer closed `s` (EOF or reset) within the read timeout.
pub fn closed_by_peer(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Sends raw bytes.
pub fn send(s: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    s.write_all(bytes)
}
