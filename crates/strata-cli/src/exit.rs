//! Failures and exit codes: every error the tool reports becomes a [`Failure`] with a message and
//! one of the documented exit codes (see `args::EXIT_CODES`). `main` prints it and exits.

use std::fmt;

/// Exit code: not found / problems found.
pub const NOT_FOUND: i32 = 1;
/// Exit code: usage error.
pub const USAGE: i32 = 2;
/// Exit code: the directory is missing, foreign, or locked.
pub const DIRECTORY: i32 = 3;
/// Exit code: anything else.
pub const OTHER: i32 = 4;

/// A failure to report: message and exit code.
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: i32,
    /// What to tell the user (printed after `strata: `).
    pub message: String,
}

impl Failure {
    /// A failure with this code and message.
    pub fn new(code: i32, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A quiet "not found": exit 1 with a message.
    pub fn not_found(message: impl Into<String>) -> Failure {
        Failure::new(NOT_FOUND, message)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<strata::Error> for Failure {
    fn from(e: strata::Error) -> Failure {
        let code = match e {
            strata::Error::Locked(_) | strata::Error::Missing(_) | strata::Error::NotStrata(_) => {
                DIRECTORY
            }
            strata::Error::WrongType
            | strata::Error::NotInteger
            | strata::Error::NotFloat
            | strata::Error::DbIndexOutOfRange => USAGE,
            _ => OTHER,
        };
        Failure::new(code, e.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::new(OTHER, format!("I/O error: {e}"))
    }
}

/// Short for a command's result.
pub type Outcome = Result<(), Failure>;
