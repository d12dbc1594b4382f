//! Which hosts of a snapshot read their URLs' backlink rows instead of keeping pointer
//! rows (format 25).
//!
//! A host's pointer rows repeat, under the host's hash and in the same order, the URL
//! rows of the host's linked URLs: merged by key (SourceTrustFlow, then the link hashes)
//! the URLs' rows are the host's. A host whose backlinks point to at most
//! [`MAX_BACKLINK_URLS`] URLs keeps no pointer rows, but a `distinct` row
//! ([`DistinctKind::BacklinkUrl`]) naming each URL's item hash, and readers merge the
//! URLs' rows. The reducer meets a host's rows one after another (they share its
//! partition hash), so it holds them back until the host's group ends and knows how many
//! URLs they point to. What it decides depends on the group's rows alone, not on the
//! build's memory, workers or whether it keeps rows for a flow build, so every build of
//! a crawl writes the same rows. (The incremental writer, which would have to write every
//! pointer row when a host gains a URL, keeps them.)

use super::item_rows::Row;
use super::ReduceOut;
use crate::keys::{url_item_member, DistinctKind, ItemHasher};
use crate::table::{row, Count, DistinctKey};

/// The most linked URLs whose backlink rows a snapshot's host reads instead of keeping
/// its own: a read of the host's backlinks opens one iterator per URL (and a root domain
/// that reads its hosts' rows, up to `MAX_BACKLINK_HOSTS` times as many).
pub(crate) const MAX_BACKLINK_URLS: usize = 8;

/// Rows held back in one group before its hosts give up reading their URLs' rows: a host
/// with few URLs but more backlinks than this keeps its pointer rows. Counted in rows,
/// the same in every build (a historic build's values also name the link's source):
/// about 10 MiB held at most.
const MOST_HELD_ROWS: usize = 1 << 16;

/// A host of the group being reduced, with the item hashes of its linked URLs (`None`
/// once it has more than [`MAX_BACKLINK_URLS`]).
struct GroupHost {
    name: String,
    urls: Option<Vec<u64>>,
    /// Whether any of its rows could be left out.
    leaves_rows: bool,
}

/// A row held back: its key and value in [`HostUrls::bytes`].
struct HeldRow {
    key_end: usize,
    value_end: usize,
    at_url: bool,
    /// The host the row stands for, when its other items (a root domain) could do
    /// without it: the row is left out if that host reads its URLs' rows.
    left_with: Option<usize>,
}

/// The hosts of one group and their rows held back (see the module documentation).
pub(crate) struct HostUrls {
    /// False in a store the incremental writer keeps: every row is written as it comes.
    enabled: bool,
    hosts: Vec<GroupHost>,
    held: Vec<HeldRow>,
    bytes: Vec<u8>,
}

impl HostUrls {
    /// `snapshot`: whether the store is a snapshot, whose hosts may read their URLs'
    /// backlink rows.
    pub(crate) fn new(snapshot: bool) -> HostUrls {
        HostUrls {
            enabled: snapshot,
            hosts: Vec::new(),
            held: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// A backlink row of the group standing for the host `host` (and perhaps other
    /// levels, whose hashes equal it), pointing to the URL whose item hash is `url_item`:
    /// returns the host's place in the group, for [`HostUrls::put`].
    pub(crate) fn note(&mut self, host: &str, url_item: u64) -> Option<usize> {
        if !self.enabled {
            return None;
        }
        let i = match self.hosts.iter().position(|h| h.name == host) {
            Some(i) => i,
            None => {
                self.hosts.push(GroupHost {
                    name: host.to_string(),
                    urls: Some(Vec::new()),
                    leaves_rows: false,
                });
                self.hosts.len() - 1
            }
        };
        let h = &mut self.hosts[i];
        if let Some(urls) = &mut h.urls {
            if !urls.contains(&url_item) {
                urls.push(url_item);
            }
            if urls.len() > MAX_BACKLINK_URLS {
                h.urls = None;
            }
        }
        Some(i)
    }

    /// A final backlink row of the group (see [`ReduceOut::backlink`]): `left_with`
    /// names the host (from [`HostUrls::note`]) without whose pointer row the row's items
    /// would do, if there is one. Held back from its first such row to the group's end,
    /// with every row after it (rows are written in key order).
    pub(crate) fn put(
        &mut self,
        key: &[u8],
        value: &[u8],
        at_url: bool,
        left_with: Option<usize>,
        out: &mut dyn ReduceOut,
    ) {
        let holds = match left_with {
            Some(i) if !at_url && self.hosts[i].urls.is_some() => {
                self.hosts[i].leaves_rows = true;
                true
            }
            _ => !self.held.is_empty(),
        };
        if !holds {
            out.backlink(key, value, at_url);
            return;
        }
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.held.push(HeldRow {
            key_end,
            value_end: self.bytes.len(),
            at_url,
            left_with: left_with.filter(|_| !at_url),
        });
        if self.held.len() > MOST_HELD_ROWS {
            // Too many to hold: the group's hosts keep their rows.
            for h in &mut self.hosts {
                h.urls = None;
            }
            self.write_held(out);
        }
    }

    /// Ends the group: writes the rows held back but those of hosts that read their URLs'
    /// rows, and returns the `distinct` rows naming those URLs (for the items' other rows,
    /// or for a later stage where those are reduced).
    pub(crate) fn end_group(&mut self, hasher: &ItemHasher, out: &mut dyn ReduceOut) -> Vec<Row> {
        for h in &mut self.hosts {
            if !h.leaves_rows {
                h.urls = None;
            }
        }
        self.write_held(out);
        let mut rows = Vec::new();
        for h in self.hosts.drain(..) {
            let Some(mut urls) = h.urls else { continue };
            urls.sort_unstable();
            let item_key = hasher.key_of(crate::item::Level::SubDomain, &h.name);
            for url in urls {
                let member = url_item_member(url);
                let key = DistinctKey {
                    item_key: &item_key,
                    kind: DistinctKind::BacklinkUrl,
                    member: &member,
                };
                rows.push(row(&key, &Count(1)));
            }
        }
        rows
    }

    /// Writes the rows held back, in order, but those of hosts that read their URLs'.
    fn write_held(&mut self, out: &mut dyn ReduceOut) {
        let mut start = 0;
        for r in self.held.drain(..) {
            let (key, value) = (
                &self.bytes[start..r.key_end],
                &self.bytes[r.key_end..r.value_end],
            );
            start = r.value_end;
            let left = r.left_with.is_some_and(|i| self.hosts[i].urls.is_some());
            if !left {
                out.backlink(key, value, r.at_url);
            }
        }
        self.bytes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::Table;

    /// Rows written, by table.
    #[derive(Default)]
    struct Written(Vec<(Table, Vec<u8>)>);

    impl ReduceOut for Written {
        fn row(&mut self, table: Table, key: &[u8], _: &[u8]) {
            self.0.push((table, key.to_vec()));
        }
        fn feed(&mut self, _: Table, _: Vec<u8>, _: Vec<u8>) {
            unreachable!("nothing is fed")
        }
        fn cut(&mut self) {}
    }

    fn keys(out: &Written) -> Vec<u8> {
        out.0.iter().map(|(_, k)| k[0]).collect()
    }

    #[test]
    fn a_host_with_few_urls_leaves_its_rows_and_names_its_urls() {
        let hasher = ItemHasher::new(64);
        let (mut hosts, mut out) = (HostUrls::new(true), Written::default());
        let a = hosts.note("a.com", 7);
        hosts.put(&[1], b"x", false, a, &mut out);
        let a = hosts.note("a.com", 9);
        hosts.put(&[2], b"x", false, a, &mut out);
        assert!(out.0.is_empty(), "held back to the group's end");
        let rows = hosts.end_group(&hasher, &mut out);
        assert!(out.0.is_empty(), "left out");
        let members: Vec<_> = rows
            .iter()
            .map(|(t, k, _)| {
                assert_eq!(*t, Table::Distinct);
                let key = DistinctKey::parse(k).unwrap();
                assert_eq!(key.kind, DistinctKind::BacklinkUrl);
                key.member.to_string()
            })
            .collect();
        assert_eq!(members, [url_item_member(7), url_item_member(9)]);
    }

    #[test]
    fn a_host_past_the_most_urls_keeps_its_rows_in_order() {
        let hasher = ItemHasher::new(64);
        let (mut hosts, mut out) = (HostUrls::new(true), Written::default());
        for url in 0..=MAX_BACKLINK_URLS as u64 {
            let a = hosts.note("a.com", url);
            hosts.put(&[url as u8], b"x", false, a, &mut out);
        }
        assert!(hosts.end_group(&hasher, &mut out).is_empty());
        assert_eq!(
            keys(&out),
            (0..=MAX_BACKLINK_URLS as u8).collect::<Vec<_>>()
        );

        // A row of a root domain that keeps its rows, after a held one: held too.
        let mut out = Written::default();
        let b = hosts.note("b.com", 1);
        hosts.put(&[1], b"x", false, b, &mut out);
        hosts.put(&[2], b"x", false, None, &mut out);
        assert!(out.0.is_empty());
        assert_eq!(hosts.end_group(&hasher, &mut out).len(), 1);
        assert_eq!(keys(&out), [2]);
    }

    #[test]
    fn rows_of_other_items_keep_their_place_and_a_store_with_the_writer_holds_nothing() {
        let hasher = ItemHasher::new(2);
        let (mut hosts, mut out) = (HostUrls::new(true), Written::default());
        // A URL row (kept) before, between and after a host's pointer rows.
        hosts.put(&[1], b"r", true, None, &mut out);
        let a = hosts.note("a.com", 1);
        hosts.put(&[2], b"x", false, a, &mut out);
        let a = hosts.note("a.com", 1);
        hosts.put(&[3], b"r", true, a, &mut out);
        hosts.put(&[4], b"x", false, a, &mut out);
        assert_eq!(keys(&out), [1]);
        assert_eq!(hosts.end_group(&hasher, &mut out).len(), 1);
        assert_eq!(keys(&out), [1, 3]);

        let (mut hosts, mut out) = (HostUrls::new(false), Written::default());
        assert_eq!(hosts.note("a.com", 1), None);
        hosts.put(&[1], b"x", false, None, &mut out);
        assert_eq!(keys(&out), [1]);
    }

    #[test]
    fn a_group_past_the_held_rows_keeps_its_rows() {
        let hasher = ItemHasher::new(64);
        let (mut hosts, mut out) = (HostUrls::new(true), Written::default());
        let n = MOST_HELD_ROWS + 1;
        for i in 0..n {
            let a = hosts.note("a.com", 1);
            hosts.put(&(i as u32).to_be_bytes(), b"x", false, a, &mut out);
        }
        assert_eq!(out.0.len(), n, "written once too many were held");
        let a = hosts.note("a.com", 1);
        hosts.put(&(n as u32).to_be_bytes(), b"x", false, a, &mut out);
        assert!(hosts.end_group(&hasher, &mut out).is_empty());
        assert_eq!(out.0.len(), n + 1);
    }
}
