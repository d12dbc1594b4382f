//! DownloadBackLinks and DownloadRefDomainBackLinks jobs: an export of an item's backlinks
//! into a gzipped CSV, written by one of a few worker threads that streams the ordered
//! backlink scan into a gzip writer compressing on every core (memory flat in the row
//! count; [`crate::parallel_gzip`]), listed by
//! GetDownloadsList, removed by DeleteDownloads or after 7 days, and served over HTTP
//! under `/downloads/`. Jobs are capped per account and per server; a failed one gives
//! its units back.
//!
//! Job state is kept in `DATA/downloads/<JobID>.json` beside the file, so jobs survive a
//! restart (a job that was queued or running when the server stopped is marked failed).

use crate::context::Context;
use crate::envelope::{Reply, Table};
use crate::error::ApiError;
use crate::metering::{self, Caller};
use crate::parallel_gzip::ParallelGzWriter;
use crate::params::Params;
use crate::row::{table_row, Row};
use accounts::Units;
use flate2::Compression;
use indexes::IndexKind;
use linkstore::{format_day, BacklinkQuery, Item, LinkRecord, ReadView, Store};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// How long a finished file is kept.
pub const EXPIRY_SECONDS: i64 = 7 * 86_400;
/// Download jobs (and so files) one account keeps at most, sandbox included.
pub const MAX_JOBS_PER_ACCOUNT: usize = 20;
/// Download jobs a server keeps at most.
pub const MAX_JOBS: usize = 1_000;
/// Threads that run download jobs, one job each at a time.
pub const DOWNLOAD_WORKERS: usize = 2;

/// Majestic's job status codes.
pub mod status {
    pub const AWAITING_PROCESSING: i64 = 0;
    pub const PROCESSING: i64 = 1;
    pub const READY: i64 = 4;
    pub const ERROR: i64 = 5;
    pub const PENDING_NOTIFICATION: i64 = 6;
    pub const NOTIFICATION_FAILED: i64 = 7;

    /// Whether a job's file is complete (a failed callback leaves it so).
    pub fn has_file(status: i64) -> bool {
        matches!(status, READY | PENDING_NOTIFICATION | NOTIFICATION_FAILED)
    }
}

/// What a job exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    /// Every backlink (DownloadBackLinks).
    BackLinks,
    /// At most `per_domain` links from each referring domain, deleted ones left out
    /// with `exclude_deleted` (DownloadRefDomainBackLinks).
    RefDomainBackLinks {
        per_domain: u8,
        exclude_deleted: bool,
    },
}

impl Export {
    fn command(self) -> &'static str {
        match self {
            Export::BackLinks => "DownloadBackLinks",
            Export::RefDomainBackLinks { .. } => "DownloadRefDomainBackLinks",
        }
    }
}

/// The analysis units above which a job is not run unless the request raises the limit
/// (`SkipIfAnalysisCostGreaterThan`), as Majestic does.
pub const DEFAULT_SKIP_ABOVE: i64 = 1_000_000;

/// The 20 columns of Majestic's backlink download file, in order.
pub const CSV_HEADER: &[&str] = &[
    "Target URL",
    "Source URL",
    "Anchor Text",
    "Source Crawl Date",
    "Source First Found Date",
    "FlagNoFollow",
    "FlagImageLink",
    "FlagRedirect",
    "FlagFrame",
    "FlagOldCrawl",
    "FlagAltText",
    "FlagMention",
    "SourceCitationFlow",
    "SourceTrustFlow",
    "TargetCitationFlow",
    "TargetTrustFlow",
    "SourceTopicalTrustFlow_Topic_0",
    "SourceTopicalTrustFlow_Value_0",
    "RefDomainTopicalTrustFlow_Topic_0",
    "RefDomainTopicalTrustFlow_Value_0",
];

#[derive(Debug, Clone)]
struct Job {
    id: String,
    /// The account that queued the job: only it sees and deletes the job.
    account: i64,
    item: String,
    index: IndexKind,
    status: i64,
    created: i64,
    updated: i64,
    rows: u64,
    file_size: u64,
    last_error: String,
    file_name: String,
    export: Export,
    /// Called when the file is ready ("" for none).
    notify_url: String,
    /// What queueing the job charged (nothing in the sandbox): given back if it fails.
    charged: Units,
}

impl Job {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id, "account": self.account, "item": self.item, "index": self.index.as_str(), "status": self.status,
            "created": self.created, "updated": self.updated, "rows": self.rows,
            "file_size": self.file_size, "last_error": self.last_error, "file_name": self.file_name,
            "export": self.export.command(), "notify_url": self.notify_url,
            "charged": [self.charged.index_item_info, self.charged.analysis, self.charged.retrieval],
            "per_domain": match self.export { Export::RefDomainBackLinks { per_domain, .. } => per_domain, Export::BackLinks => 0 },
            "exclude_deleted": matches!(self.export, Export::RefDomainBackLinks { exclude_deleted: true, .. }),
        })
    }

    fn from_json(v: &serde_json::Value) -> Option<Job> {
        Some(Job {
            id: v["id"].as_str()?.to_string(),
            account: v["account"].as_i64()?,
            item: v["item"].as_str()?.to_string(),
            index: v["index"].as_str()?.parse().ok()?,
            status: v["status"].as_i64()?,
            created: v["created"].as_i64()?,
            updated: v["updated"].as_i64()?,
            rows: v["rows"].as_u64()?,
            file_size: v["file_size"].as_u64()?,
            last_error: v["last_error"].as_str()?.to_string(),
            file_name: v["file_name"].as_str()?.to_string(),
            // Jobs written before these fields existed are whole exports without callback.
            export: match v["export"].as_str() {
                Some("DownloadRefDomainBackLinks") => Export::RefDomainBackLinks {
                    per_domain: u8::try_from(v["per_domain"].as_u64()?).ok()?,
                    exclude_deleted: v["exclude_deleted"].as_bool()?,
                },
                _ => Export::BackLinks,
            },
            notify_url: v["notify_url"].as_str().unwrap_or_default().to_string(),
            charged: match &v["charged"] {
                serde_json::Value::Array(u) => Units {
                    index_item_info: u.first()?.as_u64()?,
                    analysis: u.get(1)?.as_u64()?,
                    retrieval: u.get(2)?.as_u64()?,
                },
                _ => Units::default(),
            },
        })
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `dd/mm/yyyy HH:MM:SS`, as GetDownloadsList writes dates.
fn list_date(t: i64) -> String {
    let d = format_day(t.div_euclid(86_400) as u32);
    let s = t.rem_euclid(86_400);
    format!(
        "{}/{}/{} {:02}:{:02}:{:02}",
        &d[8..10],
        &d[5..7],
        &d[0..4],
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

fn new_job_id() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_err()
    {
        b = (now() as u128 ^ u128::from(std::process::id())).to_be_bytes();
    }
    b.iter().map(|x| format!("{x:02X}")).collect()
}

table_row! {
    /// The one row of a queued job's answer.
    pub struct QueuedRow {
        job_id: String = "JobID",
        status: i64 = "Status",
    }
}

table_row! {
    /// A `Downloads` row of GetDownloadsList.
    pub struct JobRow {
        description: String = "Description",
        job_id: String = "JobID",
        status: i64 = "Status",
        created: String = "Created",
        expires: String = "Expires",
        last_updated: String = "LastUpdated",
        file_size: i64 = "FileSize",
        last_error: String = "LastError",
        public_download_location: String = "PublicDownloadLocation",
        analysis_progress_info: String = "AnalysisProgressInfo",
    }
}

table_row! {
    /// A `DeletionResults` row of DeleteDownloads.
    pub struct DeletionRow {
        download_job_id: String = "DownloadJobID",
        result: &'static str = "Result",
        description: String = "Description",
        file_name: String = "FileName",
    }
}

/// The download jobs of one server.
pub struct Downloads {
    dir: PathBuf,
    /// URL prefix of `PublicDownloadLocation` (e.g. `http://127.0.0.1:8080`).
    pub public_base: Mutex<String>,
    jobs: Mutex<BTreeMap<String, Job>>,
    cancel: Mutex<HashMap<String, Arc<AtomicBool>>>,
    notify: crate::notify::NotifyPolicy,
    /// Where failed jobs' charges go back (`None` where nothing is charged: the sandbox).
    accounts: Option<Arc<accounts::Accounts>>,
    /// Started with the first job.
    workers: std::sync::OnceLock<Workers>,
}

impl Downloads {
    /// Opens `dir`, reloading the jobs kept there; callbacks follow `notify`; failed jobs'
    /// charges go back to `accounts`. A job that was running when the server stopped has
    /// failed (its partial file removed, its units refunded); a job file that does not
    /// parse is removed, and so is a download file no job names.
    pub fn open(
        dir: &Path,
        notify: crate::notify::NotifyPolicy,
        accounts: Option<Arc<accounts::Accounts>>,
    ) -> std::io::Result<Downloads> {
        std::fs::create_dir_all(dir)?;
        let downloads = Downloads {
            dir: dir.to_path_buf(),
            public_base: Mutex::new(String::new()),
            jobs: Mutex::new(BTreeMap::new()),
            cancel: Mutex::new(HashMap::new()),
            notify,
            accounts,
            workers: std::sync::OnceLock::new(),
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.extension().is_none_or(|e| e != "json") {
                files.push(path);
                continue;
            }
            let parsed = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .and_then(|v| Job::from_json(&v));
            let Some(mut job) = parsed else {
                let _ = std::fs::remove_file(&path);
                continue;
            };
            if !status::has_file(job.status) && job.status != status::ERROR {
                job.status = status::ERROR;
                job.last_error = "the server stopped while the job ran".into();
                let _ = std::fs::remove_file(dir.join(&job.file_name));
                downloads.refund(&job);
                downloads.save(&job);
            }
            downloads
                .jobs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(job.id.clone(), job);
        }
        {
            let jobs = downloads.jobs.lock().unwrap_or_else(|p| p.into_inner());
            for path in files {
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default();
                let named = jobs.values().any(|j| j.file_name == name);
                if !named && (name.ends_with(".csv.gz") || name.ends_with(".tmp")) {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Ok(downloads)
    }

    /// Adds a new job if its account keeps fewer than [`MAX_JOBS_PER_ACCOUNT`] jobs and
    /// the server fewer than [`MAX_JOBS`]; each job holds a file for 7 days.
    fn reserve(&self, job: &Job) -> Result<(), ApiError> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        let mine = jobs.values().filter(|j| j.account == job.account).count();
        if mine >= MAX_JOBS_PER_ACCOUNT || jobs.len() >= MAX_JOBS {
            return Err(ApiError::new(
                "TooManyDownloadJobs",
                format!(
                    "an account keeps at most {MAX_JOBS_PER_ACCOUNT} download jobs (this one has {mine}) and the server {MAX_JOBS}; delete finished ones with DeleteDownloads"
                ),
            ));
        }
        jobs.insert(job.id.clone(), job.clone());
        Ok(())
    }

    fn workers(&self) -> &Workers {
        self.workers.get_or_init(Workers::start)
    }

    /// Gives a failed job's charge back (errors reported, not fatal: the job has failed
    /// either way).
    fn refund(&self, job: &Job) {
        if let (Some(accounts), false) = (&self.accounts, job.charged == Units::default()) {
            if let Err(e) = accounts.refund(job.account, job.charged) {
                tracing::warn!(job = %job.id, error = %e, "refunding a failed download job failed");
            }
        }
    }

    /// Writes a job's state whole or not at all: a temporary file renamed over the old.
    fn save(&self, job: &Job) {
        let path = self.dir.join(format!("{}.json", job.id));
        let tmp = self.dir.join(format!("{}.json.tmp", job.id));
        if std::fs::write(&tmp, job.to_json().to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }

    fn update(&self, id: &str, f: impl FnOnce(&mut Job)) {
        let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(job) = jobs.get_mut(id) {
            f(job);
            job.updated = now();
            self.save(job);
        }
    }

    /// Removes expired jobs and their files.
    fn purge_expired(&self) {
        let expired: Vec<(String, i64)> = {
            let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            jobs.values()
                .filter(|j| now() - j.created > EXPIRY_SECONDS)
                .map(|j| (j.id.clone(), j.account))
                .collect()
        };
        for (id, account) in expired {
            self.delete(&id, account);
        }
    }

    /// Removes `account`'s job `id`, aborting it if it runs; another account's job is left
    /// alone, as if it did not exist.
    fn delete(&self, id: &str, account: i64) -> Option<Job> {
        let job = {
            let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            if jobs.get(id)?.account != account {
                return None;
            }
            jobs.remove(id)?
        };
        if let Some(flag) = self
            .cancel
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
        {
            flag.store(true, Ordering::Relaxed);
        }
        let _ = std::fs::remove_file(self.dir.join(&job.file_name));
        let _ = std::fs::remove_file(self.dir.join(format!("{id}.json")));
        Some(job)
    }

    /// `PublicDownloadLocation` of a file.
    fn location(&self, file_name: &str) -> String {
        let base = self
            .public_base
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        format!("{base}/downloads/{file_name}")
    }

    /// The path of a finished download file, if `name` is one.
    pub fn file(&self, name: &str) -> Option<PathBuf> {
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.values()
            .find(|j| j.file_name == name && status::has_file(j.status))
            .map(|j| self.dir.join(&j.file_name))
    }
}

/// One CSV cell: quoted when it holds a separator or quote, and, when a spreadsheet would
/// read it as a formula (it starts with `=`, `+`, `-`, `@`, a tab or a carriage return:
/// anchor texts come from crawled pages), prefixed with `'` so it stays text.
fn csv_field(out: &mut impl Write, s: &str) -> std::io::Result<()> {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let text = if formula {
        std::borrow::Cow::Owned(format!("'{s}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    };
    if text.contains([',', '"', '\n', '\r']) {
        out.write_all(b"\"")?;
        out.write_all(text.replace('"', "\"\"").as_bytes())?;
        out.write_all(b"\"")
    } else {
        out.write_all(text.as_bytes())
    }
}

/// Topic and value of each referring domain's strongest topic, cached (the cache is
/// bounded): rows of one domain come in runs.
struct TopicCache {
    map: HashMap<String, (String, String)>,
}

impl TopicCache {
    fn get(&mut self, view: &ReadView, domain: &str) -> linkstore::Result<&(String, String)> {
        if !self.map.contains_key(domain) {
            if self.map.len() > 100_000 {
                self.map.clear();
            }
            let v = match view
                .metrics(&Item::domain(domain.to_string()))?
                .and_then(|m| m.topics.first().cloned())
            {
                Some((t, v)) => (t, v.to_string()),
                None => (String::new(), String::new()),
            };
            self.map.insert(domain.to_string(), v);
        }
        Ok(&self.map[domain])
    }
}

/// Writes one backlink as a CSV line (the columns of [`CSV_HEADER`]).
fn write_csv_row(
    out: &mut impl Write,
    r: &LinkRecord,
    domain_topic: &(String, String),
) -> std::io::Result<()> {
    let flag = |b: bool| if b { "1" } else { "" };
    let mut num = itoa::Buffer::new();
    let (src_topic, src_topic_value) = r
        .source_topics
        .first()
        .map_or(("", 0), |(t, v)| (t.as_str(), *v));
    let text: [&str; 3] = [&r.target_url, &r.source_url, &r.anchor_text];
    for (i, f) in text.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        csv_field(out, f)?;
    }
    write!(
        out,
        ",{},{}",
        format_day(r.last_seen),
        format_day(r.first_seen)
    )?;
    for f in [
        flag(r.is_nofollow()),
        flag(r.kind == linkstore::LinkKind::Image),
        flag(r.kind == linkstore::LinkKind::Redirect),
        flag(r.kind == linkstore::LinkKind::Frame),
        flag(r.is_deleted()),
        "",
        "",
    ] {
        out.write_all(b",")?;
        out.write_all(f.as_bytes())?;
    }
    for v in [
        r.source_flow.citation_flow,
        r.source_flow.trust_flow,
        r.target_flow.citation_flow,
        r.target_flow.trust_flow,
    ] {
        out.write_all(b",")?;
        out.write_all(num.format(v).as_bytes())?;
    }
    out.write_all(b",")?;
    csv_field(out, src_topic)?;
    out.write_all(b",")?;
    if !src_topic.is_empty() {
        out.write_all(num.format(src_topic_value).as_bytes())?;
    }
    out.write_all(b",")?;
    csv_field(out, &domain_topic.0)?;
    out.write_all(b",")?;
    csv_field(out, &domain_topic.1)?;
    out.write_all(b"\n")
}

/// Writes the backlinks of `item` that `what` selects to `path` (gzip CSV, compressed on
/// every core while this thread reads and formats); returns the row count.
fn export(
    store: &Store,
    item: &Item,
    what: Export,
    path: &Path,
    cancel: &AtomicBool,
) -> Result<u64, String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let io = |e: std::io::Error| e.to_string();
    let mut out = ParallelGzWriter::new(
        BufWriter::with_capacity(1 << 20, file),
        Compression::fast(),
        threads,
    )
    .map_err(io)?;
    out.write_all(CSV_HEADER.join(",").as_bytes()).map_err(io)?;
    out.write_all(b"\n").map_err(io)?;
    let mut rows = 0u64;
    let mut topics = TopicCache {
        map: HashMap::new(),
    };
    let mut failure: Option<String> = None;
    let q = match what {
        Export::BackLinks => BacklinkQuery::default(),
        Export::RefDomainBackLinks {
            per_domain,
            exclude_deleted,
        } => BacklinkQuery {
            exclude_deleted,
            max_per_ref_domain: Some(usize::from(per_domain)),
            ..Default::default()
        },
    };
    // One view for the whole export: every row and topic from the same published state.
    let view = store.read();
    view.for_each_backlink(item, &q, |r: LinkRecord| {
        if cancel.load(Ordering::Relaxed) {
            failure = Some("deleted while running".into());
            return false;
        }
        let host = linkstore::host_of(&r.source_url);
        let domain = linkstore::root_domain(host).unwrap_or(host);
        let result = match topics.get(&view, domain) {
            Ok(domain_topic) => write_csv_row(&mut out, &r, domain_topic).map_err(io),
            Err(e) => Err(e.to_string()),
        };
        match result {
            Ok(()) => {
                rows += 1;
                true
            }
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    })
    .map_err(|e| e.to_string())?;
    if let Some(e) = failure {
        return Err(e);
    }
    out.finish().and_then(|mut w| w.flush()).map_err(io)?;
    Ok(rows)
}

/// The item a download request names (`Query`, or `item` as some clients send).
fn download_item(p: &Params) -> Result<Item, ApiError> {
    let raw = p
        .get("Query")
        .or_else(|| p.get("item"))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::new("MissingParameter", "parameter 'Query' is required"))?;
    Item::parse(raw).map_err(|e| ApiError::new("InvalidItem", format!("Query: {e}")))
}

/// DownloadBackLinks: queues an export of every backlink and answers
/// `QueuedForProcessing` with its JobID.
pub fn download_back_links(
    ctx: &Arc<Context>,
    caller: &Caller<'_>,
    p: &Params,
) -> Result<Reply, ApiError> {
    let item = download_item(p)?;
    queue(ctx, caller, p, item, Export::BackLinks, |c| Units {
        // The analysis cost GetIndexItemInfo predicts, and one retrieval unit per
        // backlink the export will write.
        analysis: metering::download_analysis(c.ext_backlinks, c.indexed_urls) as u64,
        retrieval: c.ext_backlinks.max(0) as u64,
        ..Units::default()
    })
}

/// DownloadRefDomainBackLinks: queues an export of at most `MaxSourceURLsPerRefDomain`
/// (1 to 10, default 10) links from each referring domain; `Mode=1` leaves out deleted
/// links.
pub fn download_ref_domain_back_links(
    ctx: &Arc<Context>,
    caller: &Caller<'_>,
    p: &Params,
) -> Result<Reply, ApiError> {
    let item = download_item(p)?;
    let per_domain = p.int("MaxSourceURLsPerRefDomain", 10)?;
    if !(1..=10).contains(&per_domain) {
        return Err(ApiError::new(
            "InvalidParameter",
            format!("MaxSourceURLsPerRefDomain must be 1 to 10, not {per_domain}"),
        ));
    }
    let exclude_deleted = match p.int("Mode", 0)? {
        0 => false,
        1 => true,
        m => {
            return Err(ApiError::new(
                "InvalidParameter",
                format!("Mode must be 0 or 1, not {m}"),
            ))
        }
    };
    let export = Export::RefDomainBackLinks {
        per_domain: per_domain as u8,
        exclude_deleted,
    };
    queue(ctx, caller, p, item, export, |c| Units {
        analysis: metering::download_ref_domain_analysis(c.ref_domains) as u64,
        retrieval: c.ext_backlinks.min(per_domain * c.ref_domains).max(0) as u64,
        ..Units::default()
    })
}

/// Checks, charges and queues a job: refused (nothing charged) when its analysis cost is
/// above `SkipIfAnalysisCostGreaterThan` or its `NotifyURL` is not a callback address.
fn queue(
    ctx: &Arc<Context>,
    caller: &Caller<'_>,
    p: &Params,
    item: Item,
    what: Export,
    cost: impl FnOnce(&linkstore::Counters) -> Units,
) -> Result<Reply, ApiError> {
    let downloads = &ctx.downloads;
    downloads.purge_expired();
    let (index, store) = ctx.index(p)?;
    let notify_url = p.get("NotifyURL").map(str::trim).unwrap_or_default();
    if !notify_url.is_empty() {
        crate::notify::validate(notify_url).map_err(|e| ApiError::new("InvalidParameter", e))?;
    }
    let c = store
        .read()
        .counters(&item)
        .map_err(|e| ApiError::new("InternalError", e.to_string()))?
        .unwrap_or_default();
    let cost = cost(&c);
    let limit = p.int("SkipIfAnalysisCostGreaterThan", DEFAULT_SKIP_ABOVE)?;
    if cost.analysis > limit.max(0) as u64 {
        return Err(ApiError::new(
            "AnalysisCostTooHigh",
            format!(
                "this export costs {} analysis units, above SkipIfAnalysisCostGreaterThan={limit}; nothing was charged",
                cost.analysis
            ),
        ));
    }
    let id = new_job_id();
    let day = format_day((now() / 86_400) as u32);
    let safe: String = item
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(80)
        .collect();
    let kind_name = if index == IndexKind::Fresh {
        "fresh"
    } else {
        "historical"
    };
    let job = Job {
        id: id.clone(),
        account: caller.principal.account,
        item: item.name.clone(),
        index,
        status: status::AWAITING_PROCESSING,
        created: now(),
        updated: now(),
        rows: 0,
        file_size: 0,
        last_error: String::new(),
        file_name: format!(
            "download_{kind_name}_{safe}_{}_{id}.csv.gz",
            day.replace('-', "_")
        ),
        export: what,
        notify_url: notify_url.to_string(),
        charged: if caller.sandbox {
            Units::default()
        } else {
            cost
        },
    };
    // The job takes its place under the caps before it is charged, in one lock, so two
    // requests cannot both take the last place; a refused charge gives the place back.
    downloads.reserve(&job)?;
    let mut reply = Reply::ok();
    if let Err(e) = caller.charge(&mut reply, cost) {
        downloads
            .jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        return Err(e);
    }
    downloads.save(&job);
    let cancel = Arc::new(AtomicBool::new(false));
    downloads
        .cancel
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id.clone(), cancel.clone());
    downloads.workers().send(Task {
        ctx: ctx.clone(),
        id: id.clone(),
        job,
        item,
        cancel,
    });
    ctx.globals(&mut reply, index, &store)?;
    reply.code = "QueuedForProcessing".into();
    reply.global("DownloadJobID", id.as_str());
    let mut t = QueuedRow::table(what.command());
    t.add(QueuedRow {
        job_id: id,
        status: status::AWAITING_PROCESSING,
    });
    reply.tables.push(t);
    Ok(reply)
}

/// A queued job, for a worker.
struct Task {
    ctx: Arc<Context>,
    id: String,
    job: Job,
    item: Item,
    cancel: Arc<AtomicBool>,
}

/// The download workers' queue: [`DOWNLOAD_WORKERS`] threads take jobs in order, so jobs
/// wait (status 0) rather than each taking a thread.
struct Workers(Mutex<std::sync::mpsc::Sender<Task>>);

impl Workers {
    fn start() -> Workers {
        let (tx, rx) = std::sync::mpsc::channel::<Task>();
        let rx = Arc::new(Mutex::new(rx));
        for n in 0..DOWNLOAD_WORKERS {
            let rx = rx.clone();
            let _ = std::thread::Builder::new()
                .name(format!("download-{n}"))
                .spawn(move || loop {
                    crate::priority::background();
                    let task = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok(t) = task else { return };
                    run(&t.ctx, &t.id, t.job, &t.item, &t.cancel);
                });
        }
        Workers(Mutex::new(tx))
    }

    fn send(&self, task: Task) {
        let _ = self.0.lock().unwrap_or_else(|p| p.into_inner()).send(task);
    }
}

/// A queued job, on a worker: the export, then the callback if one was asked for.
fn run(ctx: &Context, id: &str, job: Job, item: &Item, cancel: &AtomicBool) {
    let d = &ctx.downloads;
    d.update(id, |j| j.status = status::PROCESSING);
    let path = d.dir.join(&job.file_name);
    let result = export(&ctx.store(job.index), item, job.export, &path, cancel);
    d.cancel
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(id);
    match result {
        Ok(rows) => {
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            let notify = !job.notify_url.is_empty();
            d.update(id, |j| {
                j.status = if notify {
                    status::PENDING_NOTIFICATION
                } else {
                    status::READY
                };
                j.rows = rows;
                j.file_size = size;
            });
            if notify {
                let location = d.location(&job.file_name);
                let url = crate::notify::expand(&job.notify_url, &job.file_name, &location);
                let outcome = d.notify.call(&url);
                d.update(id, |j| match outcome {
                    Ok(()) => j.status = status::READY,
                    Err(e) => {
                        j.status = status::NOTIFICATION_FAILED;
                        j.last_error = format!("NotifyURL: {e}");
                    }
                });
            }
        }
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            d.refund(&job);
            d.update(id, |j| {
                j.status = status::ERROR;
                j.last_error = e;
            });
        }
    }
}

/// GetDownloadsList: every job, or one (`DownloadJobID`).
pub fn get_downloads_list(
    ctx: &Context,
    caller: &Caller<'_>,
    p: &Params,
) -> Result<Reply, ApiError> {
    let downloads = &ctx.downloads;
    downloads.purge_expired();
    let only = p
        .get("DownloadJobID")
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let mut t = JobRow::table("Downloads");
    let jobs = downloads.jobs.lock().unwrap_or_else(|p| p.into_inner());
    let mine = |j: &&Job| j.account == caller.principal.account;
    if let Some(id) = only {
        if !jobs.get(id).is_some_and(|j| mine(&j)) {
            return Err(ApiError::new(
                "UnknownDownloadJob",
                format!("no download job {id:?}"),
            ));
        }
    }
    for j in jobs
        .values()
        .filter(mine)
        .filter(|j| only.is_none_or(|id| id == j.id))
    {
        t.add(JobRow {
            description: format!("API Job: {} ({}) {}", j.export.command(), j.id, j.item),
            job_id: j.id.clone(),
            status: j.status,
            created: list_date(j.created),
            expires: list_date(j.created + EXPIRY_SECONDS),
            last_updated: list_date(j.updated),
            file_size: j.file_size as i64,
            last_error: j.last_error.clone(),
            public_download_location: if status::has_file(j.status) {
                downloads.location(&j.file_name)
            } else {
                String::new()
            },
            analysis_progress_info: format!("{} rows", j.rows),
        });
    }
    drop(jobs);
    job_list_reply(ctx, t)
}

/// DeleteDownloads: removes jobs (aborting running ones) and their files.
pub fn delete_downloads(ctx: &Context, caller: &Caller<'_>, p: &Params) -> Result<Reply, ApiError> {
    let ids = p.required("DownloadJobIDs")?;
    let mut t = DeletionRow::table("DeletionResults");
    for id in ids.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        t.add(match ctx.downloads.delete(id, caller.principal.account) {
            Some(j) => DeletionRow {
                download_job_id: id.to_string(),
                result: "Deleted successfully.",
                description: format!("API Job: {} ({id}) {}", j.export.command(), j.item),
                file_name: j.file_name,
            },
            None => DeletionRow {
                download_job_id: id.to_string(),
                result: "No such job.",
                ..Default::default()
            },
        });
    }
    job_list_reply(ctx, t)
}

/// GetDownloadsList's and DeleteDownloads' answer: jobs are not of one index, so the
/// globals are the default (historic) index's.
fn job_list_reply(ctx: &Context, table: Table) -> Result<Reply, ApiError> {
    let mut reply = Reply::ok();
    ctx.globals(
        &mut reply,
        IndexKind::Historic,
        &ctx.store(IndexKind::Historic),
    )?;
    reply.tables.push(table);
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(s: &str) -> String {
        let mut out = Vec::new();
        csv_field(&mut out, s).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn reopening_refunds_interrupted_jobs_and_clears_what_no_job_owns() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(accounts::Accounts::open(&dir.path().join("a.sqlite")).unwrap());
        let account = store
            .create_account(&accounts::NewAccount {
                name: "a".into(),
                parent: None,
                reseller: false,
                allowance: Units {
                    index_item_info: 0,
                    analysis: 1_000,
                    retrieval: 1_000,
                },
                period_days: 30,
            })
            .unwrap();
        let cost = Units {
            analysis: 600,
            retrieval: 20,
            ..Units::default()
        };
        store.charge(account.id, cost).unwrap();
        let jobs = dir.path().join("downloads");
        std::fs::create_dir_all(&jobs).unwrap();
        let running = Job {
            id: "A".repeat(32),
            account: account.id,
            item: "a.com".into(),
            index: IndexKind::Historic,
            status: status::PROCESSING,
            created: now(),
            updated: now(),
            rows: 0,
            file_size: 0,
            last_error: String::new(),
            file_name: "download_a.csv.gz".into(),
            export: Export::BackLinks,
            notify_url: String::new(),
            charged: cost,
        };
        std::fs::write(
            jobs.join(format!("{}.json", running.id)),
            running.to_json().to_string(),
        )
        .unwrap();
        std::fs::write(jobs.join("download_a.csv.gz"), b"half").unwrap();
        std::fs::write(jobs.join("BROKEN.json"), b"{\"id\": ").unwrap();
        std::fs::write(jobs.join("download_orphan.csv.gz"), b"x").unwrap();
        std::fs::write(jobs.join("X.json.tmp"), b"{").unwrap();

        let d = Downloads::open(&jobs, Default::default(), Some(store.clone())).unwrap();
        let job = d.jobs.lock().unwrap()[&running.id].clone();
        assert_eq!(job.status, status::ERROR);
        assert!(job.last_error.contains("stopped"));
        assert_eq!(
            store.usage(account.id).unwrap().used,
            Units::default(),
            "refunded"
        );
        let mut left: Vec<String> = std::fs::read_dir(&jobs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [format!("{}.json", running.id)],
            "the half-written file too"
        );
        // Reopening again refunds nothing twice: the job is already failed.
        drop(d);
        store.charge(account.id, cost).unwrap();
        Downloads::open(&jobs, Default::default(), Some(store.clone())).unwrap();
        assert_eq!(store.usage(account.id).unwrap().used, cost);
    }

    #[test]
    fn cells_a_spreadsheet_would_run_are_written_as_text() {
        // Anchor texts come from crawled pages: a cell starting with = + - @ (or a tab or
        // carriage return) is a formula to a spreadsheet.
        assert_eq!(field("=1+1"), "'=1+1");
        assert_eq!(field("+SUM(A1)"), "'+SUM(A1)");
        assert_eq!(field("-2"), "'-2");
        assert_eq!(field("@cmd"), "'@cmd");
        assert_eq!(field("\tx"), "'\tx");
        assert_eq!(
            field("=HYPERLINK(\"http://e.com\",\"x\")"),
            "\"'=HYPERLINK(\"\"http://e.com\"\",\"\"x\"\")\""
        );
        assert_eq!(field("click here"), "click here");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field(""), "");
    }
}
