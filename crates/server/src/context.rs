//! What every command reads: the indexes and the server's fixed facts, and the global
//! variables each data reply carries.

use crate::envelope::{date_time, Reply};
use crate::error::ApiError;
use crate::params::Params;
use crate::row::Date;
use indexes::{IndexKind, IndexStats};
use linkstore::Store;
use std::sync::{Arc, Mutex};

/// The indexes and fixed facts a command needs.
pub struct Context {
    pub indexes: indexes::Indexes,
    pub server_name: String,
    pub server_version: String,
    pub server_build: String,
    pub downloads: crate::downloads::Downloads,
    /// Heavy requests running now (see [`crate::admission`]).
    pub admission: crate::admission::Admission,
    /// Each index's build date and ID as replies spell them.
    pub build_names: BuildNames,
    /// GetIndexItemInfo rows rendered through the published views.
    pub info_rows: crate::commands::InfoRowMemo,
}

/// `IndexBuildDate` and `UniqueIndexID` of each index, made once per update of it:
/// every reply carries them.
#[derive(Default)]
pub struct BuildNames(Mutex<[Option<(i64, String, String)>; 2]>);

impl BuildNames {
    fn of(&self, stats: &IndexStats) -> (String, String) {
        let mut names = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let slot = &mut names[usize::from(stats.kind == IndexKind::Historic)];
        match slot {
            Some((at, date, id)) if *at == stats.updated_at => (date.clone(), id.clone()),
            _ => {
                let (date, id) = (date_time(stats.updated_at), unique_index_id(stats));
                *slot = Some((stats.updated_at, date.clone(), id.clone()));
                (date, id)
            }
        }
    }
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
        let (date, id) = self.build_names.of(&stats);
        reply.global("IndexBuildDate", date);
        reply.global("IndexType", i64::from(kind == IndexKind::Fresh));
        reply.global("UniqueIndexID", id);
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
