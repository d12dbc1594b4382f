use crate::UnitKind;

/// Errors of the account store and its operator commands.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("account store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("account store {path}: {message}")]
    Open { path: String, message: String },
    #[error("the operating system gave no random bytes")]
    Random,
    #[error("no {what} {id}")]
    NotFound { what: &'static str, id: i64 },
    #[error("{0}")]
    Invalid(String),
    /// A sub-account's allowance must fit in what its reseller has not yet given away.
    #[error(
        "{kind} units: {asked} asked, but the reseller account {reseller} has {left} left to give"
    )]
    ExceedsReseller {
        kind: UnitKind,
        asked: u64,
        left: u64,
        reseller: i64,
    },
    #[error("account {child} is not a sub-account of account {reseller}")]
    NotYourSubAccount { reseller: i64, child: i64 },
}

impl Error {
    /// The API code an operator error maps to, for commands that expose them.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotYourSubAccount { .. } => "NotYourSubAccount",
            Error::ExceedsReseller { .. } => "ExceedsResellerAllowance",
            Error::Invalid(_) | Error::NotFound { .. } => "InvalidParameter",
            _ => "InternalError",
        }
    }
}

/// Why a credential was refused. Every variant has its own API code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("API Key does not appear to be correct")]
    UnknownKey,
    #[error("this API key was revoked")]
    KeyRevoked,
    #[error("this API key was replaced by a new one (cycled) and its grace period is over")]
    KeyCycled,
    #[error("this API key may not be used from {0}")]
    IpNotAllowed(String),
    #[error("the OpenApp private key does not appear to be correct")]
    UnknownApp,
    #[error("this OpenApp was revoked")]
    AppRevoked,
    #[error("the access token does not appear to be correct")]
    UnknownToken,
    #[error("the access token expired")]
    TokenExpired,
    #[error("the access token was revoked")]
    TokenRevoked,
    #[error("the access token was granted to another OpenApp")]
    TokenOfAnotherApp,
    #[error("account store: {0}")]
    Store(String),
}

impl AuthError {
    pub fn code(&self) -> &'static str {
        match self {
            // Majestic's own code for a bad key, which clients check for.
            AuthError::UnknownKey => "FailedRequestViaAPI",
            AuthError::KeyRevoked => "APIKeyRevoked",
            AuthError::KeyCycled => "APIKeyCycled",
            AuthError::IpNotAllowed(_) => "IPAddressNotAllowed",
            AuthError::UnknownApp => "InvalidPrivateKey",
            AuthError::AppRevoked => "OpenAppRevoked",
            AuthError::UnknownToken => "InvalidAccessToken",
            AuthError::TokenExpired => "AccessTokenExpired",
            AuthError::TokenRevoked => "AccessTokenRevoked",
            AuthError::TokenOfAnotherApp => "AccessTokenNotForThisApp",
            AuthError::Store(_) => "InternalError",
        }
    }
}

impl From<rusqlite::Error> for AuthError {
    fn from(e: rusqlite::Error) -> AuthError {
        AuthError::Store(e.to_string())
    }
}

impl From<Error> for AuthError {
    fn from(e: Error) -> AuthError {
        AuthError::Store(e.to_string())
    }
}

/// A charge refused because an allowance (the account's own or a reseller's above it)
/// has fewer units left than the request costs. Nothing was charged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} units: this request costs {cost}, {remaining} remain{}", if *.by_reseller { " on the reseller account" } else { "" })]
pub struct Insufficient {
    pub kind: UnitKind,
    pub cost: u64,
    pub remaining: u64,
    /// The limit hit was a reseller's above the caller's own account.
    pub by_reseller: bool,
}

impl Insufficient {
    pub fn code(&self) -> &'static str {
        match self.kind {
            UnitKind::IndexItemInfo => "InsufficientIndexItemInfoUnits",
            UnitKind::Analysis => "InsufficientAnalysisUnits",
            UnitKind::Retrieval => "InsufficientRetrievalUnits",
        }
    }
}

/// A charge that could not be made: refused, or the store failed.
#[derive(Debug, thiserror::Error)]
pub enum ChargeError {
    #[error(transparent)]
    Insufficient(#[from] Insufficient),
    #[error(transparent)]
    Store(#[from] Error),
}

impl From<rusqlite::Error> for ChargeError {
    fn from(e: rusqlite::Error) -> ChargeError {
        ChargeError::Store(e.into())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
