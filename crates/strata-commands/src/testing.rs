//! A stand-in server for driving [`crate::execute`] without a network, in this crate's unit tests
//! and integration tests: no password, no configuration, no clients, a WATCH registry of its own.

use std::sync::Arc;

use crate::scripting::ScriptCache;
use crate::watch::Watches;
use crate::{KillFilter, ServerApi, Session};

/// A [`ServerApi`] that has nothing to offer beyond answering.
#[derive(Default)]
pub struct NoServer {
    watches: Arc<Watches>,
    scripts: Arc<ScriptCache>,
    functions: Arc<crate::scripting::functions::FunctionRegistry>,
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
    fn lastsave(&self) -> u64 {
        0
    }
    fn shutdown(&self) -> Result<(), String> {
        Ok(())
    }
    fn note_command(&self, _: &Session, _: &str) {}
    fn watches(&self) -> &Arc<Watches> {
        &self.watches
    }
    fn scripts(&self) -> &Arc<ScriptCache> {
        &self.scripts
    }
    fn functions(&self) -> &Arc<crate::scripting::functions::FunctionRegistry> {
        &self.functions
    }
}
