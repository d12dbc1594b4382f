//! The commands: parameters in, a [`Reply`] out. Every command reads one index, chosen by
//! `datasource` (`historic` by default).

use crate::envelope::{Reply, Table, Value};
use crate::error::ApiError;
use crate::metering::{self, Caller};
use crate::params::Params;
use indexes::{IndexKind, IndexStats};
use linkstore::{
    format_day, parse_day, BacklinkQuery, Item, Level, LinkRecord, ReadView, Store,
    MAX_BACKLINK_COUNT,
};
use std::sync::Arc;

/// Most items one GetIndexItemInfo or GetRefDomains request may name.
pub const MAX_ITEMS: usize = 100;

/// The indexes and fixed facts a command needs.
pub struct Context {
    pub indexes: indexes::Indexes,
    pub server_name: String,
    pub server_version: String,
    pub server_build: String,
    pub downloads: crate::downloads::Downloads,
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
        store: &Store,
    ) -> Result<(), ApiError> {
        let stats = IndexStats::of(kind, store).map_err(index_error)?;
        reply.global("IndexBuildDate", date_time(stats.updated_at));
        reply.global("IndexType", i64::from(kind == IndexKind::Fresh));
        reply.global("UniqueIndexID", unique_index_id(&stats));
        reply.global(
            "FirstBackLinkDate",
            day_or_empty(i64::from(stats.first_day)),
        );
        reply.global(
            "MostRecentBackLinkDate",
            day_or_empty(i64::from(stats.last_day)),
        );
        reply.global("ServerBuild", self.server_build.as_str());
        reply.global("ServerName", self.server_name.as_str());
        reply.global("ServerVersion", self.server_version.as_str());
        Ok(())
    }
}

/// `<yyyymmddHHMMSS of the last update>-FRESH` or `-HISTORICAL`, as Majestic names builds.
fn unique_index_id(stats: &IndexStats) -> String {
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

fn index_error(e: indexes::Error) -> ApiError {
    ApiError::new("InternalError", e.to_string())
}

fn internal(e: linkstore::Error) -> ApiError {
    ApiError::new("InternalError", e.to_string())
}

/// A batched read in which repeated items are read once (backlinks of one URL share a
/// target; links from one domain share a domain).
fn read_unique<T: Clone>(
    items: &[Item],
    read: impl Fn(&[Item]) -> linkstore::Result<Vec<Option<T>>>,
) -> Result<Vec<Option<T>>, ApiError> {
    let mut index: std::collections::HashMap<&Item, usize> = Default::default();
    let mut unique: Vec<Item> = Vec::new();
    let slots: Vec<usize> = items
        .iter()
        .map(|i| {
            *index.entry(i).or_insert_with(|| {
                unique.push(i.clone());
                unique.len() - 1
            })
        })
        .collect();
    let values = read(&unique).map_err(internal)?;
    Ok(slots.into_iter().map(|s| values[s].clone()).collect())
}

fn day_or_empty(d: i64) -> Value {
    if d > 0 {
        Value::Str(format_day(d as u32))
    } else {
        Value::empty()
    }
}

fn parse_item(raw: &str, param: &str) -> Result<Item, ApiError> {
    Item::parse(raw).map_err(|e| ApiError::new("InvalidItem", format!("{param}: {e}")))
}

/// `items` + `item0..`, or just `item0..` when `items` is absent.
fn items(p: &Params) -> Result<Vec<(String, Item)>, ApiError> {
    let count = match p.get("items") {
        Some(_) => p.int("items", 0)?,
        None => (0..=MAX_ITEMS as i64)
            .take_while(|i| p.get(&format!("item{i}")).is_some())
            .count() as i64,
    };
    if count <= 0 {
        return Err(ApiError::new(
            "MissingParameter",
            "parameter 'item0' is required",
        ));
    }
    if count as usize > MAX_ITEMS {
        return Err(ApiError::new(
            "TooManyItems",
            format!("at most {MAX_ITEMS} items per request, got {count}"),
        ));
    }
    (0..count)
        .map(|i| {
            let name = format!("item{i}");
            let raw = p.required(&name)?;
            Ok((raw.to_string(), parse_item(raw, &name)?))
        })
        .collect()
}

/// Runs one command for `caller` and charges what it cost. A command that fails, or that
/// the caller cannot afford, charges nothing.
pub fn execute(
    ctx: &std::sync::Arc<Context>,
    caller: &Caller<'_>,
    cmd: &str,
    p: &Params,
) -> Result<Reply, ApiError> {
    let cmd_lower = cmd.to_ascii_lowercase();
    let mut reply = match cmd_lower.as_str() {
        "downloadbacklinks" => crate::downloads::download_back_links(ctx, caller, p),
        "getdownloadslist" => crate::downloads::get_downloads_list(ctx, caller, p),
        "deletedownloads" => crate::downloads::delete_downloads(ctx, caller, p),
        "getindexiteminfo" => get_index_item_info(ctx, p),
        "getbacklinkdata" => get_back_link_data(ctx, p),
        "getrefdomains" => get_ref_domains(ctx, p),
        "getanchortext" => get_anchor_text(ctx, p),
        "getnewlostbacklinks" => get_new_lost_back_links(ctx, p),
        "gettopics" => get_topics(ctx, p),
        "getsubscriptioninfo" => get_subscription_info(ctx, caller, p),
        "getindexstats" => get_index_stats(ctx, p),
        "createsubaccount" => crate::resellers::create_sub_account(caller, p),
        "setsubaccountallowance" => crate::resellers::set_sub_account_allowance(caller, p),
        "getsubaccounts" => crate::resellers::get_sub_accounts(caller),
        "createsubaccountkey" => crate::resellers::create_sub_account_key(caller, p),
        _ => Err(ApiError::new(
            "FailedRequestViaAPI",
            format!("The command '{cmd}' is not in the list of supported commands."),
        )),
    }?;
    if let Some(cost) = metering::cost(&cmd_lower, &reply) {
        match caller.charge(&mut reply, cost) {
            Err(e) if e.code == "InsufficientIndexItemInfoUnits" => {
                match metering::failover(p, cost)? {
                    Some(other) => caller.charge(&mut reply, other)?,
                    None => return Err(e),
                }
            }
            charged => charged?,
        }
    }
    if caller.sandbox {
        reply.global("Sandbox", 1);
    }
    Ok(reply)
}

fn topic_columns(prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .flat_map(|i| [format!("{prefix}_Topic_{i}"), format!("{prefix}_Value_{i}")])
        .collect()
}

fn topic_values(topics: &[(String, u8)], n: usize) -> Vec<Value> {
    (0..n)
        .flat_map(|i| match topics.get(i) {
            Some((t, v)) => [Value::from(t.as_str()), Value::Int(i64::from(*v))],
            None => [Value::empty(), Value::empty()],
        })
        .collect()
}

const INFO_COLUMNS: &[&str] = &[
    "ItemNum",
    "Item",
    "ResultCode",
    "Status",
    "ExtBackLinks",
    "RefDomains",
    "AnalysisResUnitsCost",
    "ACRank",
    "ItemType",
    "IndexedURLs",
    "GetTopBackLinksAnalysisResUnitsCost",
    "DownloadBacklinksAnalysisResUnitsCost",
    "DownloadRefDomainBacklinksAnalysisResUnitsCost",
    "RefIPs",
    "RefSubNets",
    "RefDomainsEDU",
    "ExtBackLinksEDU",
    "RefDomainsGOV",
    "ExtBackLinksGOV",
    "RefDomainsEDU_Exact",
    "ExtBackLinksEDU_Exact",
    "RefDomainsGOV_Exact",
    "ExtBackLinksGOV_Exact",
    "CrawledFlag",
    "LastCrawlDate",
    "LastCrawlResult",
    "RedirectFlag",
    "FinalRedirectResult",
    "OutDomainsExternal",
    "OutLinksExternal",
    "OutLinksInternal",
    "OutLinksPages",
    "LastSeen",
    "AffectedByAntiSpamAlgo",
    "Title",
    "RedirectTo",
    "Language",
    "LanguageDesc",
    "LanguageConfidence",
    "LanguagePageRatios",
    "LanguageTotalPages",
    "RefLanguage",
    "RefLanguageDesc",
    "RefLanguageConfidence",
    "RefLanguagePageRatios",
    "RefLanguageTotalPages",
    "CrawledURLs",
    "RootDomainIPAddress",
    "TotalNonUniqueLinks",
    "NonUniqueLinkTypeHomepages",
    "NonUniqueLinkTypeIndirect",
    "NonUniqueLinkTypeDeleted",
    "NonUniqueLinkTypeNoFollow",
    "NonUniqueLinkTypeProtocolHTTPS",
    "NonUniqueLinkTypeFrame",
    "NonUniqueLinkTypeImageLink",
    "NonUniqueLinkTypeRedirect",
    "NonUniqueLinkTypeTextLink",
    "RefDomainTypeLive",
    "RefDomainTypeFollow",
    "RefDomainTypeHomepageLink",
    "RefDomainTypeDirect",
    "RefDomainTypeProtocolHTTPS",
    "CanonicalURL",
    "CitationFlow",
    "TrustFlow",
    "TrustMetric",
];

fn get_index_item_info(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let items = items(p)?;
    let topics = p.int("DesiredTopics", 3)?.clamp(0, 30) as usize;
    let list: Vec<Item> = items.iter().map(|(_, i)| i.clone()).collect();
    let counters = view.counters_many(&list).map_err(internal)?;
    let metrics = view.metrics_many(&list).map_err(internal)?;
    let mut cols: Vec<String> = INFO_COLUMNS.iter().map(|c| c.to_string()).collect();
    cols.extend(topic_columns("TopicalTrustFlow", topics));
    let mut t = Table::new("Results", cols);
    t.param("MaxTopicsRootDomain", 30);
    t.param("MaxTopicsSubDomain", 20);
    t.param("MaxTopicsURL", 10);
    t.param("TopicsCount", topics as i64);
    let mut queried = [0i64; 3];
    for (n, ((raw, item), (c, m))) in items.iter().zip(counters.iter().zip(&metrics)).enumerate() {
        queried[item.level as usize - 1] += 1;
        let c = c.unwrap_or_default();
        let m = m.clone().unwrap_or_default();
        let page = if item.level == Level::Url {
            view.page(&item.name).map_err(internal)?
        } else {
            None
        };
        let s = |v: i64| Value::Str(v.to_string());
        let e = Value::empty;
        let mut row: Vec<Value> = vec![
            (n as i64).into(),
            raw.as_str().into(),
            "OK".into(),
            if c.ext_backlinks > 0 || c.indexed_urls > 0 {
                "Found"
            } else {
                "NotFound"
            }
            .into(),
            c.ext_backlinks.into(),
            c.ref_domains.into(),
            c.ext_backlinks.into(),
            (-1).into(),
            i64::from(item.level.item_type()).into(),
            c.indexed_urls.into(),
            (metering::BACKLINK_ANALYSIS as i64).into(),
            metering::download_analysis(c.ext_backlinks, c.indexed_urls).into(),
            metering::download_ref_domain_analysis(c.ref_domains).into(),
            c.ref_ips.into(),
            c.ref_subnets.into(),
            c.ref_domains_edu.into(),
            c.edu_links.into(),
            c.ref_domains_gov.into(),
            c.gov_links.into(),
            (-1).into(),
            (-1).into(),
            (-1).into(),
            (-1).into(),
            if page.is_some() { "True" } else { "False" }.into(),
            page.map_or_else(e, |pg| format_day(linkstore::day_of(pg.last_fetch)).into()),
            page.map_or_else(e, |pg| match pg.last_status {
                200..=299 => "DownloadedSuccessfully".into(),
                st => format!("HttpStatus{st}").into(),
            }),
            if page.is_some_and(|pg| (300..400).contains(&pg.last_status)) {
                "True"
            } else {
                "False"
            }
            .into(),
            e(),
            s(c.out_domains_external),
            s(c.out_links_external),
            s(c.out_links_internal),
            s(c.crawled_urls),
            day_or_empty(c.last_link_day),
            0.into(),
        ];
        // Title, RedirectTo, then page and referring-page languages: not known.
        row.extend(std::iter::repeat_with(e).take(6));
        row.push((-1).into()); // LanguageTotalPages
        row.extend(std::iter::repeat_with(e).take(4));
        row.push((-1).into()); // RefLanguageTotalPages
        row.push(c.crawled_urls.into());
        row.push(e());
        row.extend([
            s(c.ext_backlinks),
            e(),
            e(),
            s(c.deleted_links),
            s(c.nofollow_links),
            s(c.https_links),
            s(c.frame_links),
            s(c.image_links),
            s(c.redirect_links),
            s(c.text_links),
            s(c.ref_domains_live),
            e(),
            e(),
            e(),
            e(),
            e(),
            i64::from(m.citation_flow).into(),
            i64::from(m.trust_flow).into(),
            i64::from(m.trust_flow).into(),
        ]);
        row.extend(topic_values(&m.topics, topics));
        t.push(row);
    }
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("QueriedRootDomains", queried[0]);
    reply.global("QueriedSubDomains", queried[1]);
    reply.global("QueriedURLs", queried[2]);
    reply.global("QueriedURLsMayExist", 0);
    reply.tables.push(t);
    Ok(reply)
}

/// GetBackLinkData columns, in the current JSON order; topic pairs follow where marked.
const BACKLINK_COLUMNS: &[&str] = &[
    "SourceURL",
    "ACRank",
    "AnchorText",
    "Date",
    "SourceTitle",
    "SourceOutDomainsExternal",
    "SourceOutLinksExternal",
    "SourceOutLinksInternal",
    "SourceLanguage",
    "SourceLanguageDesc",
    "SourceLanguageConfidence",
    "FlagRedirect",
    "FlagFrame",
    "FlagNoFollow",
    "FlagImages",
    "FlagDeleted",
    "FlagAltText",
    "FlagMention",
    "TargetURL",
    "IndirectTargetURL",
    "IndirectTargetType",
    "TargetTitle",
    "TargetLanguage",
    "TargetLanguageDesc",
    "TargetLanguageConfidence",
    "LinksAvailableForRootDomain",
    "DomainID",
    "FirstIndexedDate",
    "LastSeenDate",
    "DateLost",
    "ReasonLost",
    "LinkType",
    "LinkSubType",
    "TargetCitationFlow",
    "TargetTrustFlow",
];
use linkstore::{SOURCE_TOPICS, TARGET_TOPICS};

fn backlink_columns() -> Vec<String> {
    let mut cols: Vec<String> = BACKLINK_COLUMNS.iter().map(|c| c.to_string()).collect();
    cols.extend(topic_columns("TargetTopicalTrustFlow", TARGET_TOPICS));
    cols.push("SourceCitationFlow".into());
    cols.push("SourceTrustFlow".into());
    cols.extend(topic_columns("SourceTopicalTrustFlow", SOURCE_TOPICS));
    cols
}

/// One BackLinks row. `domain_id` joins the DomainsInfo table (-1 without it).
fn backlink_row(r: &LinkRecord, domain_id: i64) -> Vec<Value> {
    let flag = |b: bool| Value::Int(i64::from(b));
    let e = Value::empty;
    let mut row: Vec<Value> = vec![
        r.source_url.as_str().into(),
        (-1).into(),
        r.anchor_text.as_str().into(),
        Value::Day(r.last_seen),
        e(),
        i64::from(r.source_out.external_domains).into(),
        i64::from(r.source_out.external).into(),
        i64::from(r.source_out.internal).into(),
        e(),
        e(),
        e(),
        flag(r.kind == linkstore::LinkKind::Redirect),
        flag(r.kind == linkstore::LinkKind::Frame),
        flag(r.is_nofollow()),
        flag(r.kind == linkstore::LinkKind::Image),
        flag(r.is_deleted()),
        0.into(),
        0.into(),
        r.target_url.as_str().into(),
        e(),
        e(),
        e(),
        e(),
        e(),
        e(),
        e(),
        domain_id.into(),
        Value::Day(r.first_seen),
        Value::Day(r.last_seen),
        if r.date_lost > 0 {
            Value::Day(r.date_lost)
        } else {
            e()
        },
        Value::Static(r.lost_reason.as_str()),
        Value::Static(r.kind.link_type()),
        Value::Static(r.kind.link_subtype()),
        i64::from(r.target_flow.citation_flow).into(),
        i64::from(r.target_flow.trust_flow).into(),
    ];
    row.extend(topic_values(&r.target_topics, TARGET_TOPICS));
    row.push(i64::from(r.source_flow.citation_flow).into());
    row.push(i64::from(r.source_flow.trust_flow).into());
    row.extend(topic_values(&r.source_topics, SOURCE_TOPICS));
    row
}

fn cap(p: &Params, name: &str) -> Result<Option<usize>, ApiError> {
    let v = p.int(name, -1)?;
    Ok((v >= 0).then_some(v as usize))
}

/// A GetBackLinkData sort value: numbers and texts compare within their kind.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum SortValue {
    Num(i64),
    Text(String),
}

const BACKLINK_SORT_KEYS: &[&str] = &[
    "anchortext",
    "datedeleted",
    "domaincitationflow",
    "domaintrustflow",
    "externaloutlinks",
    "firstseen",
    "internaloutlinks",
    "lastseen",
    "outdomainsexternal",
    "sourcecitationflow",
    "sourcetrustflow",
    "sourceurl",
    "targeturllength",
    "totaloutlinks",
];

/// `SortBy1`/`SortDir1` and `SortBy2`/`SortDir2` (`asc` or `desc`, default `desc`).
fn backlink_sort_keys(p: &Params) -> Result<Vec<(String, bool)>, ApiError> {
    let mut keys = Vec::new();
    for n in 1..=2 {
        let Some(by) = p
            .get(&format!("SortBy{n}"))
            .map(str::trim)
            .filter(|s| !s.is_empty())
        else {
            continue;
        };
        let by = by.to_ascii_lowercase();
        if !BACKLINK_SORT_KEYS.contains(&by.as_str()) {
            return Err(ApiError::new(
                "InvalidParameter",
                format!("SortBy{n}={by:?} is not a sort key"),
            ));
        }
        let desc = match p
            .get(&format!("SortDir{n}"))
            .map(|d| d.trim().to_ascii_lowercase())
        {
            None => true,
            Some(d) if d == "desc" || d.is_empty() => true,
            Some(d) if d == "asc" => false,
            Some(d) => {
                return Err(ApiError::new(
                    "InvalidParameter",
                    format!("SortDir{n} must be asc or desc, not {d:?}"),
                ))
            }
        };
        keys.push((by, desc));
    }
    Ok(keys)
}

fn domain_of(url: &str) -> String {
    let host = linkstore::host_of(url);
    linkstore::root_domain(host).unwrap_or(host).to_string()
}

fn get_back_link_data(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let count = p.int("Count", 100)?;
    if count > MAX_BACKLINK_COUNT as i64 {
        return Err(ApiError::new(
            "CountTooLarge",
            format!("Count is at most {MAX_BACKLINK_COUNT}; use DownloadBackLinks for more"),
        ));
    }
    let from = p.int("From", 0)?;
    if count < 0 || from < 0 {
        return Err(ApiError::new(
            "InvalidParameter",
            "Count and From must not be negative",
        ));
    }
    let filter_topic = p
        .get("FilterTopic")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let sort_keys = backlink_sort_keys(p)?;
    // Filtering by topic or sorting by another key works on a scanned window
    // (`FilteringDepth` rows, as Majestic does), then pages through it.
    let post_process = filter_topic.is_some() || !sort_keys.is_empty();
    let depth = if sort_keys.is_empty() {
        MAX_BACKLINK_COUNT as i64
    } else {
        p.int("FilteringDepth", 5_000)?
            .clamp(1, MAX_BACKLINK_COUNT as i64)
    };
    let q = BacklinkQuery {
        from: if post_process { 0 } else { from as usize },
        count: if post_process {
            depth as usize
        } else {
            count as usize
        },
        exclude_deleted: p.int("Mode", 0)? == 1,
        max_per_ref_domain: cap(p, "MaxSourceURLsPerRefDomain")?,
        max_per_source_url: cap(p, "MaxSameSourceURLs")?,
        ref_domain: p
            .get("RefDomain")
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string),
    };
    let scanned = view.backlinks(&item, &q).map_err(internal)?;
    let mut order: Vec<usize> = (0..scanned.len())
        .filter(|&i| {
            filter_topic
                .as_ref()
                .is_none_or(|topic| scanned[i].source_topics.iter().any(|(t, _)| t == topic))
        })
        .collect();
    if !sort_keys.is_empty() {
        let by_domain = sort_keys.iter().any(|(k, _)| k.starts_with("domain"));
        let domains: Vec<Item> = if by_domain {
            scanned
                .iter()
                .map(|r| Item::domain(domain_of(&r.source_url)))
                .collect()
        } else {
            Vec::new()
        };
        let domain_metrics = read_unique(&domains, |i| view.metrics_many(i))?;
        let key = |i: usize, k: &str| -> SortValue {
            let r = &scanned[i];
            let o = r.source_out;
            let dm = || domain_metrics[i].clone().unwrap_or_default();
            match k {
                "anchortext" => SortValue::Text(r.anchor_text.to_lowercase()),
                "sourceurl" => SortValue::Text(r.source_url.clone()),
                "datedeleted" => SortValue::Num(i64::from(r.date_lost)),
                "domaintrustflow" => SortValue::Num(i64::from(dm().trust_flow)),
                "domaincitationflow" => SortValue::Num(i64::from(dm().citation_flow)),
                "externaloutlinks" => SortValue::Num(i64::from(o.external)),
                "internaloutlinks" => SortValue::Num(i64::from(o.internal)),
                "totaloutlinks" => SortValue::Num(i64::from(o.external + o.internal)),
                "outdomainsexternal" => SortValue::Num(i64::from(o.external_domains)),
                "firstseen" => SortValue::Num(i64::from(r.first_seen)),
                "lastseen" => SortValue::Num(i64::from(r.last_seen)),
                "sourcecitationflow" => SortValue::Num(i64::from(r.source_flow.citation_flow)),
                "targeturllength" => SortValue::Num(r.target_url.len() as i64),
                _ => SortValue::Num(i64::from(r.source_flow.trust_flow)),
            }
        };
        // Stable: ties keep the SourceTrustFlow order.
        order.sort_by(|&a, &b| {
            for (k, desc) in &sort_keys {
                let o = key(a, k).cmp(&key(b, k));
                let o = if *desc { o.reverse() } else { o };
                if o.is_ne() {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
    }
    if post_process {
        order = order
            .into_iter()
            .skip(from as usize)
            .take(count as usize)
            .collect();
    }
    let rows: Vec<&LinkRecord> = order.iter().map(|&i| &scanned[i]).collect();
    let show_domains = p.int("ShowDomainInfo", 0)? == 1;
    let mut domain_ids: std::collections::BTreeMap<String, i64> = Default::default();
    let total = view
        .counters(&item)
        .map_err(internal)?
        .unwrap_or_default()
        .ext_backlinks;
    let mut t = Table::new("BackLinks", backlink_columns());
    for r in &rows {
        let domain_id = if show_domains {
            let next = domain_ids.len() as i64;
            *domain_ids.entry(domain_of(&r.source_url)).or_insert(next)
        } else {
            -1
        };
        t.push(backlink_row(r, domain_id));
    }
    t.param("AvailableLines", total);
    t.param("BackLinkItem", raw);
    t.param("BackLinkType", item.level.name());
    t.param("Count", rows.len() as i64);
    t.param("From", from);
    t.param("Item", raw);
    t.param("ItemType", item.level.name());
    t.param("MaxRefDomainTopics", 10);
    t.param("MaxSourceTopics", 10);
    t.param("MaxTargetTopics", 10);
    t.param("OrigItem", raw);
    t.param("RefDomainTopicsCount", 0);
    t.param("SourceTopicsCount", SOURCE_TOPICS as i64);
    t.param("TargetTopicsCount", TARGET_TOPICS as i64);
    t.param("TotalBackLinks", total);
    t.param("TotalLines", total);
    t.param("TotalMatches", total);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.tables.push(t);
    if show_domains {
        reply.tables.push(domains_info(&view, &domain_ids)?);
    }
    Ok(reply)
}

/// The `DomainsInfo` table of GetBackLinkData with `ShowDomainInfo=1`.
fn domains_info(
    view: &ReadView,
    ids: &std::collections::BTreeMap<String, i64>,
) -> Result<Table, ApiError> {
    let cols = [
        "DomainID",
        "Domain",
        "AlexaRank",
        "RefDomains",
        "ExtBackLinks",
        "IndexedURLs",
        "CrawledURLs",
        "FirstCrawled",
        "LastSuccessfulCrawl",
        "IP",
        "SubNet",
        "CountryCode",
        "TLD",
        "CitationFlow",
        "TrustFlow",
    ];
    let mut t = Table::new("DomainsInfo", cols.iter().map(|c| c.to_string()).collect());
    let mut by_id: Vec<(&i64, &String)> = ids.iter().map(|(d, i)| (i, d)).collect();
    by_id.sort();
    let items: Vec<Item> = by_id
        .iter()
        .map(|(_, d)| Item::domain((*d).clone()))
        .collect();
    let counters = view.counters_many(&items).map_err(internal)?;
    let metrics = view.metrics_many(&items).map_err(internal)?;
    for (((id, domain), c), m) in by_id.iter().zip(&counters).zip(&metrics) {
        let c = c.unwrap_or_default();
        let m = m.clone().unwrap_or_default();
        let tld = psl_suffix(domain);
        t.push(vec![
            (**id).into(),
            domain.as_str().into(),
            (-1).into(),
            c.ref_domains.into(),
            c.ext_backlinks.into(),
            c.indexed_urls.into(),
            c.crawled_urls.into(),
            Value::empty(),
            day_or_empty(c.last_crawl_day),
            Value::empty(),
            Value::empty(),
            Value::empty(),
            tld.into(),
            i64::from(m.citation_flow).into(),
            i64::from(m.trust_flow).into(),
        ]);
    }
    Ok(t)
}

fn psl_suffix(domain: &str) -> String {
    domain
        .split_once('.')
        .map_or(domain, |(_, s)| s)
        .to_string()
}

/// GetRefDomains `OrderBy` keys this server can sort by, with the column they use.
fn ref_domain_sort_key(code: i64) -> Option<&'static str> {
    Some(match code {
        0 => "Matches",
        2 => "RefDomains",
        3 => "ExtBackLinks",
        4 => "IndexedURLs",
        5 => "CrawledURLs",
        11 => "MatchedLinks",
        12 => "CitationFlow",
        13 => "TrustFlow",
        _ => return None,
    })
}

fn get_ref_domains(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let mut items = match items(p) {
        Ok(i) => i,
        // Some clients send `item` for the single-item form.
        Err(_) if p.get("item").is_some() => {
            let raw = p.required("item")?;
            vec![(raw.to_string(), parse_item(raw, "item")?)]
        }
        Err(e) => return Err(e),
    };
    items.truncate(MAX_ITEMS);
    let count = p.int("Count", 100)?.clamp(0, MAX_BACKLINK_COUNT as i64) as usize;
    let from = p.int("From", 0)?.max(0) as usize;
    let depth = p.int("AnalysisDepth", 1000)?.clamp(1, 100_000) as usize;

    let mut request = Table::new(
        "Request",
        [
            "ID",
            "OriginalRequest",
            "UsedRootDomain",
            "TotalRefDomains",
            "PrefixScanMode",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect(),
    );
    // Candidates: the top `depth` referring domains of every item.
    let mut candidates: std::collections::BTreeMap<String, ()> = Default::default();
    for (i, (raw, item)) in items.iter().enumerate() {
        let c = view.counters(item).map_err(internal)?.unwrap_or_default();
        request.push(vec![
            (i as i64).into(),
            raw.as_str().into(),
            domain_of(&format!("http://{}/", linkstore::host_of(&item.name))).into(),
            c.ref_domains.into(),
            0.into(),
        ]);
        for d in view.ref_domains(item, 0, depth).map_err(internal)? {
            candidates.insert(d.domain, ());
        }
    }
    let domains: Vec<Item> = candidates.keys().map(|d| Item::domain(d.clone())).collect();
    let counters = view.counters_many(&domains).map_err(internal)?;
    let metrics = view.metrics_many(&domains).map_err(internal)?;
    struct Row {
        domain: String,
        per_item: Vec<linkstore::RefDomain>,
        counters: linkstore::Counters,
        metrics: linkstore::ItemMetrics,
    }
    let mut rows = Vec::with_capacity(domains.len());
    for ((d, c), m) in domains.iter().zip(counters).zip(metrics) {
        let mut per_item = Vec::with_capacity(items.len());
        for (_, item) in &items {
            per_item.push(
                view.ref_domain(item, &d.name)
                    .map_err(internal)?
                    .unwrap_or_default(),
            );
        }
        rows.push(Row {
            domain: d.name.clone(),
            per_item,
            counters: c.unwrap_or_default(),
            metrics: m.unwrap_or_default(),
        });
    }
    let key = |r: &Row, col: &str| -> i64 {
        match col {
            "Matches" => r.per_item.iter().filter(|a| a.links > 0).count() as i64,
            "MatchedLinks" => r.per_item.iter().map(|a| a.links).sum(),
            "RefDomains" => r.counters.ref_domains,
            "ExtBackLinks" => r.counters.ext_backlinks,
            "IndexedURLs" => r.counters.indexed_urls,
            "CrawledURLs" => r.counters.crawled_urls,
            "CitationFlow" => i64::from(r.metrics.citation_flow),
            _ => i64::from(r.metrics.trust_flow),
        }
    };
    let mut order = Vec::new();
    for n in 1..=2 {
        if let Some(code) = p.get(&format!("OrderBy{n}")) {
            let code: i64 = code.trim().parse().map_err(|_| {
                ApiError::new("InvalidParameter", format!("OrderBy{n} must be a number"))
            })?;
            let col = ref_domain_sort_key(code).ok_or_else(|| {
                ApiError::new(
                    "InvalidParameter",
                    format!("OrderBy{n}={code} is not a supported sort key"),
                )
            })?;
            order.push((col, p.int(&format!("OrderDir{n}"), 1)? != 0));
        }
    }
    if order.is_empty() {
        order = vec![("Matches", true), ("MatchedLinks", true)];
    }
    rows.sort_by(|a, b| {
        for (col, desc) in &order {
            let (x, y) = (key(a, col), key(b, col));
            let o = if *desc { y.cmp(&x) } else { x.cmp(&y) };
            if o.is_ne() {
                return o;
            }
        }
        a.domain.cmp(&b.domain)
    });
    let global_cols = [
        "Position",
        "Domain",
        "RefDomains",
        "AlexaRank",
        "Matches",
        "MatchedLinks",
        "ExtBackLinks",
        "IndexedURLs",
        "CrawledURLs",
        "FirstCrawled",
        "LastSuccessfulCrawl",
        "IP",
        "SubNet",
        "CountryCode",
        "TLD",
        "CitationFlow",
        "TrustFlow",
        "Title",
        "OutDomainsExternal",
        "OutLinksExternal",
        "OutLinksInternal",
        "OutLinksPages",
        "Language",
        "LanguageDesc",
        "LanguageConfidence",
        "LanguagePageRatios",
        "LanguageTotalPages",
        "LinkSaturation",
    ];
    let mut cols: Vec<String> = global_cols.iter().map(|c| c.to_string()).collect();
    cols.extend(topic_columns("TopicalTrustFlow", 10));
    let global_width = cols.len();
    for (raw, _) in &items {
        cols.push(format!("BackLinks_{raw}"));
        cols.push(format!("FirstLinkDate_{raw}"));
        cols.push(format!("LastLinkDate_{raw}"));
    }
    let mut t = Table::new("Results", cols);
    let total = rows.len();
    for (pos, r) in rows.iter().enumerate().skip(from).take(count) {
        let c = &r.counters;
        let e = Value::empty;
        let mut row: Vec<Value> = vec![
            (pos as i64 + 1).into(),
            r.domain.as_str().into(),
            c.ref_domains.into(),
            (-1).into(),
            key(r, "Matches").into(),
            key(r, "MatchedLinks").into(),
            c.ext_backlinks.into(),
            c.indexed_urls.into(),
            c.crawled_urls.into(),
            e(),
            day_or_empty(c.last_crawl_day),
            e(),
            e(),
            e(),
            psl_suffix(&r.domain).into(),
            i64::from(r.metrics.citation_flow).into(),
            i64::from(r.metrics.trust_flow).into(),
            e(),
            c.out_domains_external.into(),
            c.out_links_external.into(),
            c.out_links_internal.into(),
            c.crawled_urls.into(),
            e(),
            e(),
            e(),
            e(),
            (-1).into(),
            e(),
        ];
        row.extend(topic_values(&r.metrics.topics, 10));
        for a in &r.per_item {
            row.push(a.links.into());
            row.push(if a.first_seen > 0 {
                format_day(a.first_seen).into()
            } else {
                e()
            });
            row.push(if a.last_seen > 0 {
                format_day(a.last_seen).into()
            } else {
                e()
            });
        }
        t.push(row);
    }
    t.param("AnalysisDepth", depth as i64);
    t.param("ColumnsForGlobalInfo", global_width as i64);
    t.param("ColumnsPerRequestedDomain", 3);
    t.param("MaxRefDomainTopics", 10);
    t.param("RefDomainTopicsCount", 10);
    t.param("TotalConsideredDomains", total as i64);
    t.param("TotalMatchedDomains", total as i64);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("Cmd", "GetRefDomains");
    reply.tables.push(request);
    reply.tables.push(t);
    Ok(reply)
}

/// Anchor text as GetAnchorText's `TextMode` shows it: lower-cased (0), or also with
/// punctuation and separators removed (1).
fn anchor_form(text: &str, mode: i64) -> String {
    let lower = text.to_lowercase();
    if mode == 1 {
        let cleaned: String = lower
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { ' ' })
            .collect();
        cleaned.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        lower
    }
}

fn get_anchor_text(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let count = p.int("Count", 10)?.clamp(0, 1000) as usize;
    let from = p.int("From", 0)?.max(0) as usize;
    let text_mode = p.int("TextMode", 0)?;
    let mode = p.int("Mode", 0)?;
    let filter = p
        .get("FilterAnchorText")
        .map(|f| anchor_form(f, text_mode))
        .filter(|f| !f.is_empty());
    let filter_mode = p.int("FilterAnchorTextMode", if filter.is_some() { 1 } else { 0 })?;
    let filter_domain = p
        .get("FilterRefDomain")
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_ascii_lowercase);
    let matches = |a: &str| match (&filter, filter_mode) {
        (Some(f), 1) => a == f,
        (Some(f), 2) => a.contains(f.as_str()),
        _ => true,
    };
    let c = view.counters(&item).map_err(internal)?.unwrap_or_default();
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    let mut t = match mode {
        0 => {
            // Group stored anchors by their shown form (stored anchors keep their case).
            let mut grouped: Vec<(String, linkstore::AnchorText)> = Vec::new();
            let mut index: std::collections::HashMap<String, usize> = Default::default();
            for a in view.anchors(&item, 0, 100_000).map_err(internal)? {
                let form = anchor_form(&a.text, text_mode);
                if !matches(&form) {
                    continue;
                }
                match index.get(&form) {
                    Some(&i) => {
                        let g = &mut grouped[i].1;
                        g.links += a.links;
                        g.deleted_links += a.deleted_links;
                        g.nofollow_links += a.nofollow_links;
                        // Referring domains of merged variants may overlap: the largest is a lower bound.
                        g.ref_domains = g.ref_domains.max(a.ref_domains);
                    }
                    None => {
                        index.insert(form.clone(), grouped.len());
                        grouped.push((form, a));
                    }
                }
            }
            grouped.sort_by(|a, b| {
                b.1.ref_domains
                    .cmp(&a.1.ref_domains)
                    .then(b.1.links.cmp(&a.1.links))
                    .then(a.0.cmp(&b.0))
            });
            let total = grouped.len();
            let mut cols: Vec<String> = [
                "AnchorText",
                "RefDomains",
                "TotalLinks",
                "DeletedLinks",
                "NoFollowLinks",
                "EstimatedLinkCitationFlow",
                "EstimatedLinkTrustFlow",
            ]
            .iter()
            .map(|c| c.to_string())
            .collect();
            cols.extend(topic_columns("TopicalTrustFlow", 3));
            let mut t = Table::new("AnchorText", cols);
            let m = view.metrics(&item).map_err(internal)?.unwrap_or_default();
            for (form, a) in grouped.iter().skip(from).take(count) {
                // Estimated flows: the item's own flows, scaled by the anchor's followed share.
                let followed = (a.links - a.nofollow_links).max(0) as f64 / a.links.max(1) as f64;
                let mut row: Vec<Value> = vec![
                    form.as_str().into(),
                    a.ref_domains.into(),
                    a.links.into(),
                    a.deleted_links.into(),
                    a.nofollow_links.into(),
                    ((f64::from(m.citation_flow) * followed).round() as i64)
                        .to_string()
                        .into(),
                    ((f64::from(m.trust_flow) * followed).round() as i64)
                        .to_string()
                        .into(),
                ];
                row.extend(topic_values(&m.topics, 3));
                t.push(row);
            }
            t.param("MaxTopics", 10);
            t.param("TopicsCount", 3);
            t.param("TotalResults", total as i64);
            t
        }
        1 | 2 => {
            if filter.is_none() {
                return Err(ApiError::new(
                    "MissingParameter",
                    "Mode 1 and 2 need FilterAnchorText",
                ));
            }
            // Scan the item's backlinks for the anchor: referring domains (1) or links (2).
            let mut links = Vec::new();
            view.scan_backlinks(&item, |r| {
                if matches(&anchor_form(&r.anchor_text, text_mode))
                    && filter_domain
                        .as_ref()
                        .is_none_or(|d| *d == domain_of(&r.source_url))
                {
                    links.push(r);
                }
                links.len() < MAX_BACKLINK_COUNT
            })
            .map_err(internal)?;
            if mode == 1 {
                let mut per: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
                for r in &links {
                    let e = per.entry(domain_of(&r.source_url)).or_default();
                    e.0 += 1;
                    e.1 += i64::from(r.is_deleted());
                }
                let mut t = Table::new(
                    "RefDomains",
                    ["Domain", "TotalLinks", "DeletedLinks"]
                        .iter()
                        .map(|c| c.to_string())
                        .collect(),
                );
                let total = per.len();
                for (d, (n, del)) in per.iter().skip(from).take(count) {
                    t.push(vec![d.as_str().into(), (*n).into(), (*del).into()]);
                }
                t.param("TotalResults", total as i64);
                t
            } else {
                let mut t = Table::new("BackLinks", backlink_columns());
                let total = links.len();
                for r in links.iter().skip(from).take(count) {
                    t.push(backlink_row(r, -1));
                }
                t.param("TotalResults", total as i64);
                t
            }
        }
        _ => return Err(ApiError::new("InvalidParameter", "Mode must be 0, 1 or 2")),
    };
    t.param("CanReturnURLs", 1);
    t.param("Count", t.rows.len() as i64);
    t.param("FilterAnchorText", p.get("FilterAnchorText").unwrap_or(""));
    t.param("FilterAnchorTextMode", filter_mode);
    t.param("FilterRefDomain", filter_domain.as_deref().unwrap_or(""));
    t.param("From", from as i64);
    t.param("Item", raw);
    t.param("Mode", mode);
    t.param("OrigItem", raw);
    t.param("TextMode", text_mode);
    t.param("TotalBackLinks", c.ext_backlinks);
    t.param("TotalRefDomains", c.ref_domains);
    reply.tables.push(t);
    Ok(reply)
}

fn date_param(p: &Params, names: &[&str]) -> Result<Option<u32>, ApiError> {
    for n in names {
        if let Some(v) = p.get(n).map(str::trim).filter(|v| !v.is_empty()) {
            return parse_day(v).map(Some).ok_or_else(|| {
                ApiError::new(
                    "InvalidDate",
                    format!("parameter '{n}' must be a date yyyy-mm-dd, not {v:?}"),
                )
            });
        }
    }
    Ok(None)
}

fn get_new_lost_back_links(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let from = date_param(p, &["datefrom", "From"])?.unwrap_or(1);
    let to = date_param(p, &["dateto", "To"])?.unwrap_or(u32::MAX);
    if from > to {
        return Err(ApiError::new(
            "InvalidDate",
            "the start date is after the end date",
        ));
    }
    let points = view.timeline(&item, from, to).map_err(internal)?;
    let mut t = Table::new(
        "NewLostBackLinks",
        ["Date", "NewLinks", "LostLinks"]
            .iter()
            .map(|c| c.to_string())
            .collect(),
    );
    for pt in &points {
        t.push(vec![
            format_day(pt.day).into(),
            pt.found.into(),
            pt.lost.into(),
        ]);
    }
    t.param("Item", raw);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.tables.push(t);
    Ok(reply)
}

/// GetTopics: the topics of the item's referring domains (each domain counted under its
/// strongest topic, over its top 10,000 referring domains), with the item's own Topical
/// Trust Flow for each.
fn get_topics(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let view = store.read();
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let count = p.int("Count", 100)?.clamp(0, 10_000) as usize;
    let from = (p.int("From", 1)?.max(1) - 1) as usize;
    let own = view.metrics(&item).map_err(internal)?.unwrap_or_default();
    let refs = view.ref_domains(&item, 0, 10_000).map_err(internal)?;
    let domains: Vec<Item> = refs
        .iter()
        .map(|d| Item::domain(d.domain.clone()))
        .collect();
    let metrics = view.metrics_many(&domains).map_err(internal)?;
    let mut per: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
    for (d, m) in refs.iter().zip(&metrics) {
        if let Some((topic, _)) = m.as_ref().and_then(|m| m.topics.first()) {
            let e = per.entry(topic.clone()).or_default();
            e.0 += d.links;
            e.1 += 1;
        }
    }
    for (topic, _) in &own.topics {
        per.entry(topic.clone()).or_default();
    }
    let ttf = |t: &str| {
        own.topics
            .iter()
            .find(|(n, _)| n == t)
            .map_or(0, |(_, v)| i64::from(*v))
    };
    let mut rows: Vec<(String, i64, i64, i64)> = per
        .into_iter()
        .map(|(t, (l, r))| (t.clone(), ttf(&t), l, r))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
    let mut t = Table::new(
        "Topics",
        [
            "Topic",
            "Links",
            "TopicalTrustFlow",
            "LinksFromRefDomains",
            "RefDomains",
            "Pages",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect(),
    );
    let total = rows.len();
    for (topic, v, links, refdomains) in rows.into_iter().skip(from).take(count) {
        t.push(vec![
            topic.into(),
            links.into(),
            v.into(),
            links.into(),
            refdomains.into(),
            (-1).into(),
        ]);
    }
    t.param("Count", t.rows.len() as i64);
    t.param("From", from as i64 + 1);
    t.param("SortBy", "trustflow&links");
    t.param("SortOrder", "desc");
    t.param("TotalResults", total as i64);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("Cmd", "GetTopics");
    reply.tables.push(t);
    Ok(reply)
}

/// GetSubscriptionInfo: free; the limits this server enforces and both indexes' facts.
fn get_subscription_info(
    ctx: &Context,
    caller: &Caller<'_>,
    p: &Params,
) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.global("MaxGetIndexInfoBatchCount", MAX_ITEMS as i64);
    reply.global("SubscriptionIsActive", 1);
    let usage = caller
        .accounts
        .usage(caller.principal.account)
        .map_err(|e| ApiError::new("InternalError", e.to_string()))?;
    let total = usage.account.allowance;
    reply.global("TotalIndexItemInfoResUnits", total.index_item_info as i64);
    reply.global("TotalAnalysisResUnits", total.analysis as i64);
    reply.global("TotalRetrievalResUnits", total.retrieval as i64);
    let mut subs = Table::new(
        "Subscriptions",
        [
            "Starts",
            "Expires",
            "IndexItemInfoResUnits",
            "RetrievalResUnits",
            "AnalysisResUnits",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect(),
    );
    let left = usage.remaining;
    subs.push(vec![
        date_time(usage.period.0).into(),
        date_time(usage.period.1).into(),
        (left.index_item_info as i64).into(),
        (left.retrieval as i64).into(),
        (left.analysis as i64).into(),
    ]);
    reply.tables.push(subs);
    reply.tables.push(index_table(ctx, "IndexInfo")?);
    Ok(reply)
}

/// The four statistics of each index, one row per index: the `IndexInfo` table of
/// GetSubscriptionInfo, and GetIndexStats.
fn index_table(ctx: &Context, name: &str) -> Result<Table, ApiError> {
    let mut t = Table::new(
        name,
        [
            "IndexType",
            "IndexName",
            "IndexBuildDate",
            "UniqueIndexID",
            "CrawledURLs",
            "IndexedURLs",
            "FirstBackLinkDate",
            "MostRecentBackLinkDate",
            "WindowDays",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect(),
    );
    for kind in IndexKind::ALL {
        let stats = ctx.indexes.stats(kind).map_err(index_error)?;
        t.push(vec![
            i64::from(kind == IndexKind::Fresh).into(),
            kind.as_str().into(),
            date_time(stats.updated_at).into(),
            unique_index_id(&stats).into(),
            stats.crawled_urls.into(),
            stats.found_urls.into(),
            day_or_empty(i64::from(stats.first_day)),
            day_or_empty(i64::from(stats.last_day)),
            match kind {
                IndexKind::Fresh => i64::from(ctx.indexes.window_days()).into(),
                IndexKind::Historic => Value::empty(),
            },
        ]);
    }
    Ok(t)
}

/// GetIndexStats (free): the statistics of both indexes, and the requested one's globals.
fn get_index_stats(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, &store)?;
    reply.tables.push(index_table(ctx, "IndexStats")?);
    Ok(reply)
}

/// `yyyy-mm-dd HH:MM:SS` (UTC) of Unix seconds.
pub(crate) fn date_time(t: i64) -> String {
    let s = t.rem_euclid(86_400);
    format!(
        "{} {:02}:{:02}:{:02}",
        format_day(t.div_euclid(86_400) as u32),
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}
