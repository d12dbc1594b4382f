//! Linkbase's HTTP API, speaking the Majestic protocol (`docs/api.md`): the only crate
//! that knows HTTP and the Majestic envelopes.

mod admin;
pub mod admission;
pub mod commands;
mod connection_threads;
mod context;
mod deadlines;
pub mod downloads;
pub mod envelope;
mod error;
mod explorer;
pub mod http;
pub mod metering;
pub mod metrics;
pub mod notify;
mod openapp;
pub mod parallel_gzip;
pub mod params;
mod priority;
mod resellers;
mod row;

pub use accounts;
pub use context::Context;
pub use downloads::Downloads;
pub use error::{ApiError, Error, Result};
pub use http::{serve, tls_config, Limits, Service};
pub use notify::NotifyPolicy;

pub use rustls;
