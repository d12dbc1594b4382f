//! What every command reads: the indexes and the server's fixed facts, and the global
//! variables each data reply carries.

use crate::envelope::{date_time, Reply};
use crate::error::ApiError;
use crate::params::Params;
use crate::row::Date;
use indexes::{IndexKind, IndexStats};
use linkstore::Store;
use std::sync::Arc;

/// The indexes and fixed facts a command needs.
pub struct Context {
    pub indexes: indexes::Indexes,
    pub server_name: String,
    pub server_version: String,
    pub server_build: String,
    pub downloads: crate::downloads::Downloads,
    /// Heavy requests running now (see [`crate::admission`]).
    pub admission: crate::admission::Admission,
}

impl Context {
    /// The store serving an index now (a historic swap replaces it for later requests).
    pub(crate) fn store(&self, kind: IndexKind) -> Arc<Store> {
        self.indexes.store(kind)
    }

    /// The index a request names with `datasource` (historic by default).
    pub(crate) fn index(&self, p: &Params) -> Result<(IndexKind, Arc<Store>), ApiError> {
        let kind = match p.get("datasource") {
            None => IndexKind::Historic,
            Some(v) => v.parse().map_err(|_| {
                ApiError::new(
                    "InvalidDataSource",
                    format!("datasource must be 'historic' or 'fresh', not {v:?}"),
                )
            })?,
        };
        Ok((kind, self.store(kind)))
    }

    /// Global variables every data response carries, from the index's statistics.
    pub(crate) fn globals(
        &self,
        reply: &mut Reply,
        kind: IndexKind,
        store: &Arc<Store>,
    ) -> Result<(), ApiError> {
        let stats = self.indexes.stats_of(kind, store).map_err(index_error)?;
        reply.global("IndexBuildDate", date_time(stats.updated_at));
        reply.global("IndexType", i64::from(kind == IndexKind::Fresh));
        reply.global("UniqueIndexID", unique_index_id(&stats));
        reply.global("FirstBackLinkDate", Date(stats.first_day));
        reply.global("MostRecentBackLinkDate", Date(stats.last_day));
        reply.global("ServerBuild", self.server_build.as_str());
        reply.global("ServerName", self.server_name.as_str());
        reply.global("ServerVersion", self.server_version.as_str());
        Ok(())
    }
}

/// `<yyyymmddHHMMSS of the last update>-FRESH` or `-HISTORICAL`, as Majestic names builds.
pub(crate) fn unique_index_id(stats: &IndexStats) -> String {
    let stamp: String = date_time(stats.updated_at)
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let suffix = match stats.kind {
        IndexKind::Fresh => "FRESH",
        IndexKind::Historic => "HISTORICAL",
    };
    format!("{stamp}-{suffix}")
}

pub(crate) fn index_error(e: indexes::Error) -> ApiError {
    ApiError::new("InternalError", e.to_string())
}
