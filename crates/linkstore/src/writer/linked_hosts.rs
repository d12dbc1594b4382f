//! The incremental writer's side of root domains that read their one linked host's
//! views (`docs/format.md`, "Root domains with one linked host").
//!
//! A batch classes each root domain its links point to when it first meets it: by its
//! `LinkedHost` row (the domain reads that host's views), else by its backlinks (none:
//! new; some: it keeps its own views). A new domain reads the host of its first link,
//! unless one crawl links it on two hosts. Of a link to a domain that reads a host's
//! views, the domain gets only its counters; the counters its member rows would feed
//! (referring domains, addresses, subnets, anchor texts) move as the host's do. Classes
//! live beside the store's write lock once their batch is in the store, so later
//! batches and writers read none again; a batch dropped, or whose write fails (its
//! writer then dropped), takes its classes with it, and expiring the window forgets
//! them all.
//!
//! A crawl that would link such a domain on a second host first has the host's rows
//! copied to the domain in one write of its own, so the domain keeps its own views from
//! then on, exactly as if it always had. The copy reads the store, so when the batch so
//! far or the one in flight linked the domain, it is committed first (a page boundary:
//! nothing of the crawl is applied yet).

use super::{BatchRows, HashMap, Op, SortedBatch, Writer};
use crate::build::Table;
use crate::crawl::found_links;
use crate::error::{Error, Result};
use crate::item::{Item, Level};
use crate::keys::{generation_item_prefix, level_of_item_key, DistinctKind, ItemHasher};
use crate::page::PageCrawl;
use crate::record::LinkRecord;
use crate::store::{cf_handle, prefix_successor, CF_BACKLINKS, CF_COUNTERS, CF_DISTINCT};
use crate::table::{
    is_pointer, with_item_key, BacklinkKey, BacklinkRow, Count, CountersKey, DistinctKey, TableKey,
};
use crate::views::{domain_of_url, Contribution};
use rocksdb::ReadOptions;
use std::collections::BTreeSet;

/// Root domains by item key, and how they were classed.
pub(crate) type DomainClasses = HashMap<Vec<u8>, DomainClass>;

/// How a batch treats a root domain its links point to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DomainClass {
    /// Every backlink record of the domain is on this host, whose views it reads.
    AtHost(String),
    /// It keeps its own views.
    Own,
    /// No backlinks; `stale`: the host a `LinkedHost` row still names from records since
    /// expired, removed when the domain is classed again.
    New { stale: Option<String> },
}

/// Tables whose rows of an item start with its item key and are the same for a root
/// domain as for its one linked host.
const VIEW_TABLES: [Table; 5] = [
    Table::RefDomains,
    Table::RefDomainsRanked,
    Table::Anchors,
    Table::AnchorsRanked,
    Table::Timeline,
];

/// Root domains a store's writers remember the classes of before they forget them all
/// (about 100 bytes each).
const MAX_KNOWN_DOMAINS: usize = 1 << 21;

/// Pointer rows resolved per multi-get while copying a host's backlinks.
const POINTER_CHUNK: usize = 4096;

impl Writer<'_> {
    /// Classes the root domains `crawl` links to before anything of it is applied, and
    /// gives those that read one host's views and are linked on another their own views
    /// (committing the batch so far first if it or the batch in flight linked them).
    pub(super) fn prepare_domains(&mut self, crawl: &PageCrawl) -> Result<()> {
        let source_domain = domain_of_url(&crawl.url);
        let mut hosts: HashMap<Vec<u8>, (String, BTreeSet<String>)> = HashMap::default();
        for target in found_links(crawl).keys() {
            if domain_of_url(target) == source_domain {
                continue;
            }
            let [_, host, domain] = Item::levels_of_url(target);
            let key = self.store.hasher.item_key(&domain);
            hosts
                .entry(key)
                .or_insert_with(|| (domain.name, BTreeSet::new()))
                .1
                .insert(host.name);
        }
        let (mut second_hosts, mut new_own) = (Vec::new(), Vec::new());
        let mut batch_touched_a_host = false;
        for (domain_key, (domain, hosts)) in hosts {
            let touched = self.classed_unwritten(&domain_key);
            match self.domain_class(&domain_key)? {
                DomainClass::AtHost(host) if hosts.iter().any(|h| *h != host) => {
                    batch_touched_a_host |= touched;
                    second_hosts.push((domain_key, domain, host));
                }
                DomainClass::New { stale } if hosts.len() > 1 => new_own.push((domain_key, stale)),
                _ => {}
            }
        }
        if !second_hosts.is_empty() {
            if batch_touched_a_host {
                // The host's rows are copied from the store: it must have the batch's.
                self.commit()?;
            }
            for (domain_key, domain, host) in second_hosts {
                self.own_views(&domain_key, &domain, &host)?;
                // Written already: the store has the class whatever becomes of the batch.
                self.known.insert(domain_key.clone(), DomainClass::Own);
                self.set_class(domain_key, DomainClass::Own);
            }
        }
        for (domain_key, stale) in new_own {
            self.forget_linked_host(&domain_key, stale);
            self.set_class(domain_key, DomainClass::Own);
        }
        Ok(())
    }

    /// Whether this batch or the one in flight classed the root domain `domain_key`:
    /// only their links can have changed its host's rows since they were last written,
    /// every link to the host being one to the domain.
    fn classed_unwritten(&self, domain_key: &[u8]) -> bool {
        self.rows.domains.contains_key(domain_key)
            || self
                .in_flight_rows()
                .is_some_and(|rows| rows.domains.contains_key(domain_key))
    }

    /// The class of the root domain `domain_key`: as this batch, the batch in flight or
    /// a batch written before last classed it, else from the store.
    pub(super) fn domain_class(&mut self, domain_key: &[u8]) -> Result<DomainClass> {
        if let Some(c) = self.rows.domains.get(domain_key) {
            return Ok(c.clone());
        }
        let in_flight = self
            .in_flight_rows()
            .and_then(|rows| rows.domains.get(domain_key));
        let class = match in_flight.or_else(|| self.known.get(domain_key)) {
            Some(c) => c.clone(),
            None => stored_class(&self.store.db, domain_key)?,
        };
        self.set_class(domain_key.to_vec(), class.clone());
        Ok(class)
    }

    /// Classes a domain for this batch, whose write thread reads its classes, and which
    /// hands them to the batches after it once written ([`Writer::remember_classes`]).
    fn set_class(&mut self, domain_key: Vec<u8>, class: DomainClass) {
        self.rows.domains.insert(domain_key, class);
    }

    /// Keeps the classes of a batch now in the store for the batches and writers after
    /// it.
    pub(super) fn remember_classes(&mut self, written: &BatchRows) {
        if self.known.len() + written.domains.len() > MAX_KNOWN_DOMAINS {
            self.known.clear();
        }
        for (key, class) in &written.domains {
            self.known.insert(key.clone(), class.clone());
        }
    }

    /// Appends `rec`'s contributions (`sign` as for [`super::contributions`]) to the
    /// pending ones, leaving out those of its target's root domain but its counters when
    /// the domain reads the host's views. A new domain starts reading the host of its
    /// first link.
    pub(super) fn push_contributions(&mut self, rec: &LinkRecord, sign: i64) -> Result<()> {
        let start = self.pending.len();
        let hasher = self.store.hasher;
        super::contributions(rec, sign, &hasher, self.generation, &mut self.pending);
        if rec.is_internal() {
            return Ok(());
        }
        let [url, host, domain] = Item::levels_of_url(&rec.target_url);
        let domain_key = hasher.item_key(&domain);
        match self.domain_class(&domain_key)? {
            DomainClass::Own => return Ok(()),
            DomainClass::AtHost(at) if at == host.name => {}
            DomainClass::AtHost(at) => {
                return Err(Error::corrupt(
                    CF_DISTINCT,
                    format!(
                        "{} reads the views of {at}, but a link to {} was not prepared for",
                        domain.name, rec.target_url
                    ),
                ))
            }
            DomainClass::New { stale } => {
                if sign < 0 {
                    return Err(Error::corrupt(
                        CF_COUNTERS,
                        format!(
                            "a link to {} is removed from a domain without backlinks",
                            rec.target_url
                        ),
                    ));
                }
                self.forget_linked_host(&domain_key, stale);
                let key = DistinctKey {
                    item_key: &domain_key,
                    kind: DistinctKind::LinkedHost,
                    member: &host.name,
                };
                self.batch.put(&key, &Count(1));
                self.set_class(domain_key.clone(), DomainClass::AtHost(host.name.clone()));
            }
        }
        // The domain's pointer row, unless its key is the URL's or the host's row too
        // (hash collisions).
        let domain_hash = hasher.hash(Level::RootDomain, &domain.name);
        let shared_hash = [
            hasher.hash(Level::Url, &url.name),
            hasher.hash(Level::SubDomain, &host.name),
        ]
        .contains(&domain_hash);
        let tail = self.pending.split_off(start);
        self.pending.extend(tail.into_iter().filter(|c| match c {
            Contribution::Counters { .. } => true,
            Contribution::Distinct { item_key, .. }
            | Contribution::RefDomain { item_key, .. }
            | Contribution::Anchor { item_key, .. }
            | Contribution::Timeline { item_key, .. } => *item_key != domain_key,
            Contribution::Backlink { key, .. } => {
                key.item_hash != domain_hash || shared_hash || key.is_url_row(&hasher)
            }
            Contribution::Expiry { .. } => true,
        }));
        Ok(())
    }

    /// Whether `item_key` is a root domain that reads its linked host's views.
    pub(super) fn reads_host_views(&mut self, item_key: &[u8]) -> Result<bool> {
        if level_of_item_key(item_key) != Some(Level::RootDomain as u8) {
            return Ok(false);
        }
        Ok(matches!(
            self.domain_class(item_key)?,
            DomainClass::AtHost(_)
        ))
    }

    /// The root domain whose views are those of the host `item_key`, if any.
    pub(super) fn domain_at_host(&self, item_key: &[u8]) -> Option<Vec<u8>> {
        domain_at_host(&self.rows, &self.store.hasher, item_key)
    }

    /// Deletes the `LinkedHost` row of a domain left without backlinks.
    fn forget_linked_host(&mut self, domain_key: &[u8], stale: Option<String>) {
        if let Some(host) = stale {
            self.batch.delete(&DistinctKey {
                item_key: domain_key,
                kind: DistinctKind::LinkedHost,
                member: &host,
            });
        }
    }

    /// Gives the domain `domain_key`, which reads the views of `host`, its own: the
    /// host's rows of every view table copied under the domain's key, pointer rows for
    /// the host's backlinks, and its `LinkedHost` row deleted, in one write. Its counters
    /// already hold what those rows count. Runs when no batch pending or in flight has
    /// classed the domain, so that the store has every row of the host, and none of
    /// those batches writes the domain's or the host's rows.
    fn own_views(&mut self, domain_key: &[u8], domain: &str, host: &str) -> Result<()> {
        let db = &self.store.db;
        let hasher = self.store.hasher;
        // Every read at one point in time: a batch in flight may be written meanwhile,
        // and its rows of items whose hashes collide with the host's can move.
        let snapshot = db.snapshot();
        let host_key = hasher.item_key(&Item::host(host.to_string()));
        let mut out = SortedBatch::default();
        let mut prefixes: Vec<(Table, Vec<u8>)> =
            VIEW_TABLES.iter().map(|&t| (t, host_key.clone())).collect();
        for kind in DistinctKind::MEMBER_KINDS {
            let mut prefix = host_key.clone();
            prefix.push(kind as u8);
            prefixes.push((Table::Distinct, prefix));
        }
        for (table, prefix) in prefixes {
            let read = read_at(Some(&snapshot));
            scan_prefix(db, table.cf_name(), &prefix, read, |key, value| {
                let copy = with_item_key(key, table.cf_name(), &host_key, domain_key)?;
                out.push(table, copy, Op::Put(value.to_vec()));
                Ok(())
            })?;
        }
        self.copy_pointers(&mut out, domain, host, &snapshot)?;
        out.delete(&DistinctKey {
            item_key: domain_key,
            kind: DistinctKind::LinkedHost,
            member: host,
        });
        let mut wo = rocksdb::WriteOptions::default();
        wo.disable_wal(true);
        db.write_opt(out.into_write_batch(db), &wo)?;
        Ok(())
    }

    /// Adds to `out` the domain's pointer row of each backlink of `host` (found under the
    /// host's hash, and checked against its record's target, which hash collisions
    /// share).
    fn copy_pointers(
        &self,
        out: &mut SortedBatch,
        domain: &str,
        host: &str,
        snapshot: &rocksdb::Snapshot<'_>,
    ) -> Result<()> {
        let (db, hasher) = (&self.store.db, self.store.hasher);
        let host_item = Item::host(host.to_string());
        let host_hash = hasher.hash(Level::SubDomain, host);
        let domain_hash = hasher.hash(Level::RootDomain, domain);
        if domain_hash == host_hash {
            return Ok(());
        }
        let prefix = generation_item_prefix(self.generation, host_hash);
        let point = |key: BacklinkKey, rec: &LinkRecord, out: &mut SortedBatch| {
            if host_item.contains_url(&rec.target_url) {
                let copy = BacklinkKey {
                    item_hash: domain_hash,
                    ..key
                };
                if !copy.is_url_row(&hasher) {
                    out.put(&copy, &BacklinkRow::Pointer);
                }
            }
        };
        let mut keys: Vec<BacklinkKey> = Vec::new();
        let flush = |keys: &mut Vec<BacklinkKey>, out: &mut SortedBatch| -> Result<()> {
            let at_url: Vec<Vec<u8>> = keys.iter().map(|k| k.url_row(&hasher).encode()).collect();
            let read = read_at(Some(snapshot));
            let values =
                db.batched_multi_get_cf_opt(cf_handle(db, CF_BACKLINKS), &at_url, false, &read);
            for (key, value) in keys.drain(..).zip(values) {
                let value = value?.ok_or_else(crate::table::url_row_missing)?;
                point(key, &LinkRecord::decode(&value)?, out);
            }
            Ok(())
        };
        scan_prefix(
            db,
            CF_BACKLINKS,
            &prefix,
            read_at(Some(snapshot)),
            |key, value| {
                if is_pointer(value)? {
                    keys.push(BacklinkKey::parse(key)?);
                    if keys.len() >= POINTER_CHUNK {
                        flush(&mut keys, out)?;
                    }
                } else {
                    // A URL row whose hash is the host's too (collisions): the host's row as
                    // well when its URL is the host's.
                    point(BacklinkKey::parse(key)?, &LinkRecord::decode(value)?, out);
                }
                Ok(())
            },
        )?;
        flush(&mut keys, out)
    }
}

/// The root domain whose views are those of the host `item_key` as `rows` classed it.
pub(super) fn domain_at_host(
    rows: &BatchRows,
    hasher: &ItemHasher,
    item_key: &[u8],
) -> Option<Vec<u8>> {
    if level_of_item_key(item_key) != Some(Level::SubDomain as u8) || rows.domains.is_empty() {
        return None;
    }
    let host = item_key
        .get(9..item_key.len().saturating_sub(1))
        .and_then(|name| std::str::from_utf8(name).ok())?;
    let domain = Item::domain(crate::item::root_domain(host).unwrap_or(host).to_string());
    let domain_key = hasher.item_key(&domain);
    match rows.domains.get(&domain_key) {
        Some(DomainClass::AtHost(at)) if at == host => Some(domain_key),
        _ => None,
    }
}

/// A root domain's class as the store has it.
fn stored_class(db: &rocksdb::DB, domain_key: &[u8]) -> Result<DomainClass> {
    let mut prefix = domain_key.to_vec();
    prefix.push(DistinctKind::LinkedHost as u8);
    let mut host = None;
    scan_prefix(db, CF_DISTINCT, &prefix, read_at(None), |key, _| {
        host.get_or_insert(DistinctKey::parse(key)?.member.to_string());
        Ok(())
    })?;
    let backlinks = match db.get_pinned_cf(cf_handle(db, CF_COUNTERS), domain_key)? {
        Some(v) => CountersKey(domain_key).decode_value(&v)?.ext_backlinks,
        None => 0,
    };
    Ok(match host {
        _ if backlinks <= 0 => DomainClass::New { stale: host },
        Some(host) => DomainClass::AtHost(host),
        None => DomainClass::Own,
    })
}

/// Reads of the store as `snapshot` saw it, else as last written.
fn read_at(snapshot: Option<&rocksdb::Snapshot<'_>>) -> ReadOptions {
    let mut opts = ReadOptions::default();
    if let Some(snapshot) = snapshot {
        opts.set_snapshot(snapshot);
    }
    opts
}

/// Visits the rows of `cf` whose keys start with `prefix`, as `opts` reads them.
fn scan_prefix(
    db: &rocksdb::DB,
    cf: &str,
    prefix: &[u8],
    mut opts: ReadOptions,
    mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    if let Some(upper) = prefix_successor(prefix) {
        opts.set_iterate_upper_bound(upper);
    }
    let mut it = db.raw_iterator_cf_opt(cf_handle(db, cf), opts);
    it.seek(prefix);
    while let Some((key, value)) = it.item() {
        visit(key, value)?;
        it.next();
    }
    it.status()?;
    Ok(())
}
