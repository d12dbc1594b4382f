//! Linkbase's HTTP API, speaking the Majestic protocol (`docs/api.md`): the only crate
//! that knows HTTP and the Majestic envelopes.

pub mod commands;
pub mod downloads;
pub mod envelope;
mod error;
pub mod http;
pub mod params;

pub use commands::Context;
pub use downloads::Downloads;
pub use error::{ApiError, Error, Result};
pub use http::{serve, tls_config, Limits, Service};

use std::collections::HashSet;
use std::path::Path;

/// Reads API keys: one per line, `#` comments and blank lines ignored.
pub fn read_keys(path: &Path) -> Result<HashSet<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Keys {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let keys: HashSet<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    if keys.is_empty() {
        return Err(Error::Keys {
            path: path.display().to_string(),
            message: "no keys in file".into(),
        });
    }
    Ok(keys)
}
pub use rustls;
