//! A stand-in server for driving [`crate::execute`] without a network, in this crate's unit tests
//! and integration tests: no password, no configuration, no clients, a WATCH registry of its own.

use std::sync::Arc;

#[cfg(test)]
use bytes::Bytes;
#[cfg(test)]
use strata_resp::Frame;

use crate::scripting::ScriptCache;
use crate::watch::Watches;
use crate::{KillFilter, ServerApi, Session};

/// A [`ServerApi`] that has nothing to offer beyond answering.
#[derive(Default)]
pub struct NoServer {
    watches: Arc<Watches>,
    tracking: Arc<crate::tracking::Tracking>,
    scripts: Arc<ScriptCache>,
    functions: Arc<crate::scripting::functions::FunctionRegistry>,
    acl: Arc<crate::acl::Users>,
}

impl ServerApi for NoServer {
    fn requirepass(&self) -> Option<Vec<u8>> {
        None
    }
    fn config_get(&self, _: &[&[u8]]) -> Vec<(String, String)> {
        vec![]
    }
    fn config_set(&self, _: &[(String, String)]) -> Result<(), String> {
        Ok(())
    }
    fn config_rewrite(&self) -> Result<(), String> {
        Ok(())
    }
    fn reset_stats(&self) {}
    fn info(&self, _: &Session, _: &[String]) -> String {
        String::new()
    }
    fn client_list(&self, _: Option<&[u64]>, _: Option<&str>) -> String {
        String::new()
    }
    fn client_info(&self, _: &Session) -> String {
        String::new()
    }
    fn client_update(&self, _: &Session) {}
    fn client_kill(&self, _: &KillFilter, _: u64) -> usize {
        0
    }
    fn bgsave(&self) -> Result<(), String> {
        Ok(())
    }
    fn save(&self) -> Result<(), String> {
        Ok(())
    }
    fn lastsave(&self) -> u64 {
        0
    }
    fn shutdown(&self) -> Result<(), String> {
        Ok(())
    }
    fn note_command(&self, _: &Session, _: &str) {}
    fn acl(&self) -> &Arc<crate::acl::Users> {
        &self.acl
    }
    fn watches(&self) -> &Arc<Watches> {
        &self.watches
    }
    fn tracking(&self) -> &Arc<crate::tracking::Tracking> {
        &self.tracking
    }
    fn scripts(&self) -> &Arc<ScriptCache> {
        &self.scripts
    }
    fn functions(&self) -> &Arc<crate::scripting::functions::FunctionRegistry> {
        &self.functions
    }
}

/// A connection of its own on a fresh temporary database, running commands through
/// [`crate::execute`] with a [`NoServer`]: the in-process test bench of the families' unit
/// tests.
#[cfg(test)]
pub struct Harness {
    _dir: tempfile::TempDir,
    session: Session,
    server: NoServer,
}

#[cfg(test)]
impl Default for Harness {
    fn default() -> Harness {
        Harness::new()
    }
}

#[cfg(test)]
impl Harness {
    /// A new database in a temporary directory, and a session on it.
    #[allow(clippy::expect_used)]
    pub fn new() -> Harness {
        let dir = tempfile::tempdir().expect("temporary directory");
        let db = strata::Db::open(dir.path()).expect("open a temporary database");
        Harness {
            _dir: dir,
            session: Session::new(1, db, false),
            server: NoServer::default(),
        }
    }

    /// The database the session works on.
    pub fn db(&self) -> &strata::Db {
        &self.session.db
    }

    /// The CLIENT TRACKING table of the stand-in server.
    pub fn tracking(&self) -> &crate::tracking::Tracking {
        &self.server.tracking
    }

    /// Runs one command; its reply (the last one for a command answering several times).
    pub fn run(&mut self, words: &[&str]) -> Frame {
        self.outcome(words).into_reply()
    }

    /// Runs one command given as binary arguments; its reply.
    pub fn run_bytes(&mut self, words: &[&[u8]]) -> Frame {
        let argv: Vec<Bytes> = words.iter().map(|w| Bytes::copy_from_slice(w)).collect();
        self.execute(&argv).into_reply()
    }

    /// Runs one command; what it asks of the connection.
    pub fn outcome(&mut self, words: &[&str]) -> crate::Outcome {
        let argv: Vec<Bytes> = words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        self.execute(&argv)
    }

    fn execute(&mut self, argv: &[Bytes]) -> crate::Outcome {
        let mut ctx = crate::Ctx {
            session: &mut self.session,
            server: &self.server,
        };
        crate::execute(&mut ctx, argv)
    }

    /// Runs one command that must fail; the error text (panics on any other reply).
    pub fn error(&mut self, words: &[&str]) -> String {
        match self.run(words) {
            Frame::Error(e) => String::from_utf8_lossy(&e).into_owned(),
            other => panic!("{words:?} answered {other:?}, not an error"),
        }
    }
}
