//! The commands: parameters in, a [`Reply`] out. Every command reads one index, chosen by
//! `datasource` (`historic` by default).

use crate::envelope::{Reply, Table, Value};
use crate::error::ApiError;
use crate::params::Params;
use indexes::IndexKind;
use linkstore::{
    format_day, parse_day, BacklinkQuery, Item, Level, LinkRecord, Store, MAX_BACKLINK_COUNT,
};

/// Most items one GetIndexItemInfo or GetRefDomains request may name.
pub const MAX_ITEMS: usize = 100;

/// The stores and fixed facts a command needs.
pub struct Context {
    pub historic: Store,
    pub fresh: Store,
    pub server_name: String,
    pub server_version: String,
    pub server_build: String,
}

impl Context {
    fn index(&self, p: &Params) -> Result<(IndexKind, &Store), ApiError> {
        let kind = match p.get("datasource") {
            None => IndexKind::Historic,
            Some(v) => v.parse().map_err(|_| {
                ApiError::new(
                    "InvalidDataSource",
                    format!("datasource must be 'historic' or 'fresh', not {v:?}"),
                )
            })?,
        };
        Ok((
            kind,
            if kind == IndexKind::Fresh {
                &self.fresh
            } else {
                &self.historic
            },
        ))
    }

    /// Global variables every data response carries.
    fn globals(&self, reply: &mut Reply, kind: IndexKind, store: &Store) -> Result<(), ApiError> {
        let c = store.index_counters().map_err(internal)?;
        let build = format_day(c.last_crawl_day.max(1) as u32);
        reply.global("IndexBuildDate", format!("{build} 00:00:00"));
        reply.global("IndexType", i64::from(kind == IndexKind::Fresh));
        reply.global(
            "UniqueIndexID",
            format!(
                "{}000000-{}",
                build.replace('-', ""),
                if kind == IndexKind::Fresh {
                    "FRESH"
                } else {
                    "HISTORICAL"
                }
            ),
        );
        reply.global("FirstBackLinkDate", day_or_empty(c.first_link_day));
        reply.global("MostRecentBackLinkDate", day_or_empty(c.last_link_day));
        reply.global("ServerBuild", self.server_build.as_str());
        reply.global("ServerName", self.server_name.as_str());
        reply.global("ServerVersion", self.server_version.as_str());
        Ok(())
    }
}

fn internal(e: linkstore::Error) -> ApiError {
    ApiError::new("InternalError", e.to_string())
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

pub fn execute(ctx: &Context, cmd: &str, p: &Params) -> Result<Reply, ApiError> {
    match cmd.to_ascii_lowercase().as_str() {
        "getindexiteminfo" => get_index_item_info(ctx, p),
        "getbacklinkdata" => get_back_link_data(ctx, p),
        "getrefdomains" => get_ref_domains(ctx, p),
        "getanchortext" => get_anchor_text(ctx, p),
        "getnewlostbacklinks" => get_new_lost_back_links(ctx, p),
        "gettopics" => get_topics(ctx, p),
        _ => Err(ApiError::new(
            "FailedRequestViaAPI",
            format!("The command '{cmd}' is not in the list of supported commands."),
        )),
    }
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
    let items = items(p)?;
    let topics = p.int("DesiredTopics", 3)?.clamp(0, 30) as usize;
    let list: Vec<Item> = items.iter().map(|(_, i)| i.clone()).collect();
    let counters = store.counters_many(&list).map_err(internal)?;
    let metrics = store.metrics_many(&list).map_err(internal)?;
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
            store.page(&item.name).map_err(internal)?
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
            5000.into(),
            c.ext_backlinks.into(),
            c.ref_domains.into(),
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
    ctx.globals(&mut reply, kind, store)?;
    reply.global("QueriedRootDomains", queried[0]);
    reply.global("QueriedSubDomains", queried[1]);
    reply.global("QueriedURLs", queried[2]);
    reply.global("QueriedURLsMayExist", 0);
    reply.tables.push(t);
    Ok(reply)
}

const BACKLINK_COLUMNS: &[&str] = &[
    "SourceURL",
    "ACRank",
    "AnchorText",
    "Date",
    "FlagRedirect",
    "FlagFrame",
    "FlagNoFollow",
    "FlagImages",
    "FlagDeleted",
    "FlagAltText",
    "FlagMention",
    "TargetURL",
    "DomainID",
    "FirstIndexedDate",
    "LastSeenDate",
    "DateLost",
    "ReasonLost",
    "LinkType",
    "LinkSubType",
    "TargetCitationFlow",
    "TargetTrustFlow",
    "SourceCitationFlow",
    "SourceTrustFlow",
];

fn backlink_row(r: &LinkRecord) -> Vec<Value> {
    let flag = |b: bool| Value::Int(i64::from(b));
    vec![
        r.source_url.as_str().into(),
        (-1).into(),
        r.anchor_text.as_str().into(),
        format_day(r.last_seen).into(),
        flag(r.kind == linkstore::LinkKind::Redirect),
        flag(r.kind == linkstore::LinkKind::Frame),
        flag(r.is_nofollow()),
        flag(r.kind == linkstore::LinkKind::Image),
        flag(r.is_deleted()),
        0.into(),
        0.into(),
        r.target_url.as_str().into(),
        (-1).into(),
        format_day(r.first_seen).into(),
        format_day(r.last_seen).into(),
        if r.date_lost > 0 {
            format_day(r.date_lost).into()
        } else {
            Value::empty()
        },
        r.lost_reason.as_str().into(),
        r.kind.link_type().into(),
        format!("{}_Normal", r.kind.link_type()).into(),
        i64::from(r.target_flow.citation_flow).into(),
        i64::from(r.target_flow.trust_flow).into(),
        i64::from(r.source_flow.citation_flow).into(),
        i64::from(r.source_flow.trust_flow).into(),
    ]
}

fn cap(p: &Params, name: &str) -> Result<Option<usize>, ApiError> {
    let v = p.int(name, -1)?;
    Ok((v >= 0).then_some(v as usize))
}

fn get_back_link_data(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
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
    let q = BacklinkQuery {
        from: from as usize,
        count: count as usize,
        exclude_deleted: p.int("Mode", 0)? == 1,
        max_per_ref_domain: cap(p, "MaxSourceURLsPerRefDomain")?,
        max_per_source_url: cap(p, "MaxSameSourceURLs")?,
        ref_domain: p
            .get("RefDomain")
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string),
    };
    let rows = store.backlinks(&item, &q).map_err(internal)?;
    let total = store
        .counters(&item)
        .map_err(internal)?
        .unwrap_or_default()
        .ext_backlinks;
    let mut t = Table::new(
        "BackLinks",
        BACKLINK_COLUMNS.iter().map(|c| c.to_string()).collect(),
    );
    t.param("AvailableLines", total);
    t.param("Count", rows.len() as i64);
    t.param("From", from);
    t.param("Item", raw);
    t.param("ItemType", item.level.name());
    t.param("OrigItem", raw);
    t.param("TotalBackLinks", total);
    t.param("TotalLines", total);
    for r in &rows {
        t.push(backlink_row(r));
    }
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, store)?;
    reply.tables.push(t);
    Ok(reply)
}

fn get_ref_domains(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let items = items(p)?;
    let count = p.int("Count", 100)?.clamp(0, MAX_BACKLINK_COUNT as i64) as usize;
    let from = p.int("From", 0)?.max(0) as usize;
    let mut request = Table::new(
        "Request",
        vec!["Item".into(), "ResultCode".into(), "Status".into()],
    );
    let mut cols = vec![
        "Position".to_string(),
        "Domain".to_string(),
        "RefDomains".to_string(),
        "AlexaRank".to_string(),
        "Matches".to_string(),
        "CitationFlow".to_string(),
        "TrustFlow".to_string(),
    ];
    for i in 0..items.len() {
        for c in [
            "ExtBackLinks",
            "DeletedLinks",
            "NoFollowLinks",
            "FirstSeen",
            "LastSeen",
        ] {
            cols.push(format!("{c}_{i}"));
        }
    }
    let mut t = Table::new("Results", cols);
    // Ranked by the first item; the others are compared on the same domains.
    let first = store
        .ref_domains(&items[0].1, from, count)
        .map_err(internal)?;
    let domains: Vec<Item> = first
        .iter()
        .map(|d| Item::domain(d.domain.clone()))
        .collect();
    let metrics = store.metrics_many(&domains).map_err(internal)?;
    for (raw, item) in &items {
        let found = store.counters(item).map_err(internal)?.is_some();
        request.push(vec![
            raw.as_str().into(),
            "OK".into(),
            if found { "Found" } else { "NotFound" }.into(),
        ]);
    }
    for (pos, (d, m)) in first.iter().zip(&metrics).enumerate() {
        let m = m.clone().unwrap_or_default();
        let c = store
            .counters(&Item::domain(d.domain.clone()))
            .map_err(internal)?
            .unwrap_or_default();
        let mut row: Vec<Value> = vec![
            ((from + pos) as i64).into(),
            d.domain.as_str().into(),
            c.ref_domains.into(),
            (-1).into(),
            d.links.into(),
            i64::from(m.citation_flow).into(),
            i64::from(m.trust_flow).into(),
        ];
        for (_, item) in &items {
            let agg = store
                .ref_domain(item, &d.domain)
                .map_err(internal)?
                .unwrap_or_default();
            row.extend([
                agg.links.into(),
                agg.deleted_links.into(),
                agg.nofollow_links.into(),
                if agg.first_seen > 0 {
                    format_day(agg.first_seen).into()
                } else {
                    Value::empty()
                },
                if agg.last_seen > 0 {
                    format_day(agg.last_seen).into()
                } else {
                    Value::empty()
                },
            ]);
        }
        t.push(row);
    }
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, store)?;
    reply.tables.push(request);
    reply.tables.push(t);
    Ok(reply)
}

fn get_anchor_text(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let count = p.int("Count", 10)?.clamp(0, 1000) as usize;
    let filter = p
        .get("FilterAnchorText")
        .map(str::to_lowercase)
        .filter(|f| !f.is_empty());
    let anchors = store
        .anchors(&item, 0, if filter.is_some() { 100_000 } else { count })
        .map_err(internal)?;
    let mut t = Table::new(
        "AnchorText",
        [
            "AnchorText",
            "RefDomains",
            "TotalLinks",
            "DeletedLinks",
            "NoFollowLinks",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect(),
    );
    for a in anchors
        .iter()
        .filter(|a| {
            filter
                .as_ref()
                .is_none_or(|f| a.text.to_lowercase().contains(f.as_str()))
        })
        .take(count)
    {
        t.push(vec![
            a.text.as_str().into(),
            a.ref_domains.into(),
            a.links.into(),
            a.deleted_links.into(),
            a.nofollow_links.into(),
        ]);
    }
    t.param("Item", raw);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, store)?;
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
    let points = store.timeline(&item, from, to).map_err(internal)?;
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
    ctx.globals(&mut reply, kind, store)?;
    reply.tables.push(t);
    Ok(reply)
}

fn get_topics(ctx: &Context, p: &Params) -> Result<Reply, ApiError> {
    let (kind, store) = ctx.index(p)?;
    let raw = p.required("item")?;
    let item = parse_item(raw, "item")?;
    let m = store.metrics(&item).map_err(internal)?.unwrap_or_default();
    let mut t = Table::new(
        "Topics",
        ["Topic", "TopicalTrustFlow"]
            .iter()
            .map(|c| c.to_string())
            .collect(),
    );
    for (n, v) in &m.topics {
        t.push(vec![n.as_str().into(), i64::from(*v).into()]);
    }
    t.param("Item", raw);
    t.param("TotalResults", m.topics.len() as i64);
    let mut reply = Reply::ok();
    ctx.globals(&mut reply, kind, store)?;
    reply.tables.push(t);
    Ok(reply)
}
