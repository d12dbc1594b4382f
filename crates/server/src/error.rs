/// An API-level error: rendered in the envelope with HTTP 200, as Majestic clients expect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
        }
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Indexes(#[from] indexes::Error),
    #[error("TLS {path}: {message}")]
    Tls { path: String, message: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
