//! Linkbase's backlink store: link records, backlink orderings by SourceTrustFlow,
//! per-item counters and aggregates, kept in RocksDB column families.
//!
//! This crate knows nothing of HTTP or crawl formats: crawls arrive as [`PageCrawl`]s and
//! leave as records, counters and aggregates. On-disk layouts are in `docs/format.md`.

mod aggregate;
mod anchor_query;
pub mod build;
mod codec;
mod crawl;
mod error;
mod flow_update;
mod item;
mod keys;
mod metrics;
mod page;
mod read_view;
mod record;
mod ref_domain_query;
mod small_item;
mod source_row;
mod store;
mod table;
mod table_disk;
mod topic;
mod views;
pub use views::{ip_member, subnet_of_member};
mod writer;

pub use aggregate::{
    AnchorText, Counters, RefDomain, ANCHORS_IN_ROW, MEMBER_ROW_VERSION, RANKED_COPIES_ABOVE,
    REF_DOMAIN_ROW_VERSION, SNAPSHOT_RANKED_REF_DOMAINS,
};
pub use anchor_query::{anchor_form, AnchorFilter, AnchorPage, AnchorQuery, ANCHOR_SCAN_LIMIT};
pub use error::{Error, Result};
pub use flow_update::{EndName, FlowUpdate, FlowUpdateReport};
pub use item::{host_of, normalize_host, normalize_url, root_domain, Item, Level, MAX_URL_LEN};
pub use keys::{url_check_hash, url_hash, ItemHasher};
pub use metrics::ItemMetrics;
pub use page::{
    day_of, format_day, parse_day, push_day, CrawlOutcome, OutLink, PageCrawl, PageState,
};
pub use read_view::{
    BacklinkPage, BacklinkQuery, ReadView, TimelinePoint, TopPage, MAX_BACKLINK_COUNT,
};
pub use record::{
    flags, flow_link, FlowLink, FlowPair, LinkEnd, LinkKind, LinkRecord, LostReason,
    SourceOutlinks, SOURCE_TOPICS, TARGET_TOPICS,
};
pub use ref_domain_query::{
    RefDomainMatch, RefDomainOrder, RefDomainPage, RefDomainQuery, MAX_ANALYSIS_DEPTH,
    MAX_CANDIDATE_ROWS,
};
pub use small_item::MEMBER_ROWS_ABOVE;
pub use store::{
    sibling_path, Store, StoreMemory, StoreOptions, StoreStamp, ALL_CFS, FORMAT_VERSION,
};
pub use table::{
    row_flow_edges, source_row_url, BACKLINK_POINTER, LINK_AT_TARGET, PAGE_FLOW_TARGETS,
};
pub use table_disk::TableDisk;
pub use topic::{is_topic, TAXONOMY};
pub use writer::{ApplyStats, ExpireStats, Writer};
