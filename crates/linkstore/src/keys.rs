//! Key layouts of every column family (diagrams in `docs/format.md`).
//!
//! Every per-item key starts with the 8-byte big-endian xxh3 hash of the item (level byte
//! then name; a URL's is its [`url_hash`]), so one item's rows are contiguous and items
//! spread evenly over the key space (the partitioning unit if the store is ever split
//! across machines).
//!
//! Aggregate keys carry the full item name after the hash, so they are exact even when
//! hashes collide. Backlink ordering keys carry only the hash; readers verify the full
//! URLs held in the record.

use crate::item::{url_levels, Item, Level};
use crate::record::FlowPair;
use xxhash_rust::xxh3::xxh3_64;

/// Hashes item names. `bits` < 64 keeps only the top bits, which forces collisions: tests
/// use it to prove that collisions never leak another item's data.
#[derive(Debug, Clone, Copy)]
pub struct ItemHasher {
    bits: u8,
}

impl ItemHasher {
    pub fn new(bits: u8) -> ItemHasher {
        ItemHasher {
            bits: bits.clamp(1, 64),
        }
    }

    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// A URL's item hash is its [`url_hash`] (cut to `bits`), so a backlink key, which
    /// holds the target's `url_hash`, names the target URL's row without its text; the
    /// other levels hash the level byte, then the name.
    pub fn hash(&self, level: Level, name: &str) -> u64 {
        if level == Level::Url {
            return self.url_item(url_hash(name));
        }
        // Every bulk-built backlink hashes its target's host and domain: on the stack
        // when the name is short, as host names are.
        let mut stack = [0u8; 256];
        let hash = if name.len() < stack.len() {
            stack[0] = level as u8;
            stack[1..=name.len()].copy_from_slice(name.as_bytes());
            xxh3_64(&stack[..=name.len()])
        } else {
            let mut buf = Vec::with_capacity(name.len() + 1);
            buf.push(level as u8);
            buf.extend_from_slice(name.as_bytes());
            xxh3_64(&buf)
        };
        self.cut(hash)
    }

    /// The item hash of the URL whose [`url_hash`] is `url_hash`.
    pub fn url_item(&self, url_hash: u64) -> u64 {
        self.cut(url_hash)
    }

    fn cut(&self, h: u64) -> u64 {
        if self.bits == 64 {
            h
        } else {
            h & !(u64::MAX >> self.bits)
        }
    }

    /// `hash | level | name | 0x00`: the exact prefix of all aggregate rows of one item.
    pub fn item_key(&self, item: &Item) -> Vec<u8> {
        self.key_of(item.level, &item.name)
    }

    /// The item keys of a URL's levels (URL, host, root domain), and with `with_index`
    /// the whole index's.
    pub(crate) fn url_item_keys(&self, url: &str, with_index: bool) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = url_levels(url)
            .into_iter()
            .map(|(level, name)| self.key_of(level, name))
            .collect();
        if with_index {
            keys.push(self.item_key(&Item::index()));
        }
        keys
    }

    /// [`ItemHasher::item_key`] of the item `level`, `name`, without an [`Item`].
    pub fn key_of(&self, level: Level, name: &str) -> Vec<u8> {
        // Allocated at its size: `reserve` on an empty buffer takes the vector's slower
        // growth path (`docs/benchmarks.md`, "Root-relative links joined as written").
        let mut k = Vec::with_capacity(name.len() + 10);
        self.key_into(level, name, &mut k);
        k
    }

    /// [`ItemHasher::key_of`] into `out`, replacing what it held: a buffer reused for
    /// several items allocates once.
    pub(crate) fn key_into(&self, level: Level, name: &str, out: &mut Vec<u8>) {
        out.clear();
        // At once: a new buffer would grow twice on the way.
        out.reserve(name.len() + 10);
        out.extend_from_slice(&self.hash(level, name).to_be_bytes());
        out.push(level as u8);
        out.extend_from_slice(name.as_bytes());
        out.push(0);
    }
}

/// The level byte of an item key made by [`ItemHasher::item_key`].
pub(crate) fn level_of_item_key(item_key: &[u8]) -> Option<u8> {
    item_key.get(8).copied()
}

/// Full 64-bit hash of a URL, identifying link endpoints in link keys.
pub fn url_hash(url: &str) -> u64 {
    xxh3_64(url.as_bytes())
}

/// A second, independent 32-bit hash of a URL (xxh3 with another seed): with
/// [`url_hash`], 96 bits that name a URL without its text (a flow graph's nodes, and the
/// link sources it notes outside the graph).
pub fn url_check_hash(url: &str) -> u32 {
    xxhash_rust::xxh3::xxh3_64_with_seed(url.as_bytes(), 0x5eed) as u32
}

/// `links` CF: `source_url_hash | target_url_hash`.
pub fn link_key(source: &str, target: &str) -> [u8; 16] {
    link_of(url_hash(source), url_hash(target))
}

/// A link key naming its source by `source` (its URL's hash, or in a snapshot's numbered
/// generation its page number) and its target by its URL's hash.
pub(crate) fn link_of(source: u64, target: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&source.to_be_bytes());
    k[8..].copy_from_slice(&target.to_be_bytes());
    k
}

/// The source and target a [`link_key`] (or [`link_of`]) holds: the source's name (URL
/// hash or page number), the target URL's hash.
pub(crate) fn link_hashes(link: &[u8; 16]) -> (u64, u64) {
    let (source, target) = link.split_at(8);
    let hash = |b: &[u8]| u64::from_be_bytes(b.try_into().expect("8 bytes"));
    (hash(source), hash(target))
}

/// What an `expiry` row stands for: its key's first byte.
pub const EXPIRY_PAGE: u8 = b'P';
pub const EXPIRY_LINK: u8 = b'L';

/// `expiry` CF, a page: `'P' | day u32be | url_hash | url`, `day` its last fetch. A page's
/// live links were seen at its last fetch, so they leave the window with it.
pub fn expiry_page_key(day: u32, url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(url.len() + 13);
    k.push(EXPIRY_PAGE);
    k.extend_from_slice(&day.to_be_bytes());
    k.extend_from_slice(&url_key(url));
    k
}

/// `expiry` CF, a deleted link: `'L' | day u32be | link key`, `day` the earlier of its
/// last sighting and its loss: the day it leaves the window, before its page may.
pub fn expiry_link_key(day: u32, link: &[u8; 16]) -> [u8; 21] {
    let mut k = [0u8; 21];
    k[0] = EXPIRY_LINK;
    k[1..5].copy_from_slice(&day.to_be_bytes());
    k[5..].copy_from_slice(link);
    k
}

/// `backlinks` CF: `generation | item_hash | 255 - source_trust_flow | source_url_hash |
/// target_url_hash` (in a snapshot's numbered generation, the source page's number in
/// place of its URL hash: `docs/format.md`, "Source pages by number"). Scanning a prefix of `generation | item_hash` yields backlinks by
/// SourceTrustFlow descending, ties broken by the link hashes (deterministic). A flow
/// build writes the next generation beside the serving one and switches atomically.
pub fn backlink_key(generation: u8, item_hash: u64, source_tf: u8, link: &[u8; 16]) -> [u8; 26] {
    let mut k = [0u8; 26];
    k[0] = generation;
    k[1..9].copy_from_slice(&item_hash.to_be_bytes());
    k[9] = 255 - source_tf;
    k[10..].copy_from_slice(link);
    k
}

/// `generation | item_hash`: the scan prefix of one item's backlinks or top pages.
pub fn generation_item_prefix(generation: u8, item_hash: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = generation;
    k[1..].copy_from_slice(&item_hash.to_be_bytes());
    k
}

/// `top_pages` CF: `generation | site item_hash | 255 - TF | 255 - CF | url`: a site's
/// (host's or root domain's) pages, strongest first, then by URL.
pub fn top_page_key(generation: u8, site_hash: u64, flow: FlowPair, url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(TOP_PAGE_URL_AT + url.len());
    k.push(generation);
    k.extend_from_slice(&site_hash.to_be_bytes());
    k.extend_from_slice(&[255 - flow.trust_flow, 255 - flow.citation_flow]);
    k.extend_from_slice(url.as_bytes());
    k
}

/// Where a `top_pages` key's URL starts.
const TOP_PAGE_URL_AT: usize = 11;

/// The URL a `top_pages` key ends with.
pub(crate) fn top_page_url(key: &[u8]) -> crate::error::Result<&str> {
    key.get(TOP_PAGE_URL_AT..)
        .and_then(|url| std::str::from_utf8(url).ok())
        .ok_or_else(|| crate::Error::corrupt(crate::store::CF_TOP_PAGES, "a key without a URL"))
}

/// The Trust Flow and Citation Flow a `top_pages` key holds.
pub fn top_page_flow(key: &[u8]) -> FlowPair {
    FlowPair {
        trust_flow: 255 - key.get(9).copied().unwrap_or(255),
        citation_flow: 255 - key.get(10).copied().unwrap_or(255),
    }
}

/// `metrics` CF: `generation | item_key`.
pub fn metrics_key(generation: u8, item_key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(item_key.len() + 1);
    k.push(generation);
    k.extend_from_slice(item_key);
    k
}

/// `pages` and `urls` CFs: `url_hash | url` (exact).
pub fn url_key(url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(url.len() + 8);
    k.extend_from_slice(&url_hash(url).to_be_bytes());
    k.extend_from_slice(url.as_bytes());
    k
}

/// Appends a member name (a domain, an anchor text) to an item key, 0-terminated.
pub fn member_key(item_key: &[u8], member: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(item_key.len() + member.len() + 1);
    k.extend_from_slice(item_key);
    k.extend_from_slice(member.as_bytes());
    k.push(0);
    k
}

/// The member that ends an aggregate row key, `item_key | rank words | member | 0`
/// (no rank words in the unranked tables), given the item key's length.
pub(crate) fn member_of_key<'k>(
    key: &'k [u8],
    item_key_len: usize,
    rank_words: usize,
    cf: &'static str,
) -> crate::Result<&'k str> {
    key.get(item_key_len + 8 * rank_words..key.len().saturating_sub(1))
        .filter(|_| key.last() == Some(&0))
        .and_then(|m| std::str::from_utf8(m).ok())
        .ok_or_else(|| crate::Error::corrupt(cf, "key does not end in a UTF-8 member and 0"))
}

/// Ranked rows: `item_key | rank (big-endian, inverted so larger sorts first) | member | 0`.
pub fn ranked_key(item_key: &[u8], rank: &[u64], member: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(item_key.len() + rank.len() * 8 + member.len() + 1);
    k.extend_from_slice(item_key);
    for r in rank {
        k.extend_from_slice(&(u64::MAX - r).to_be_bytes());
    }
    k.extend_from_slice(member.as_bytes());
    k.push(0);
    k
}

/// `timeline` CF: `item_key | day (u32 big-endian)`.
pub fn timeline_key(item_key: &[u8], day: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(item_key.len() + 4);
    k.extend_from_slice(item_key);
    k.extend_from_slice(&day.to_be_bytes());
    k
}

/// `distinct` CF: `item_key | kind | member | 0`, a reference count per distinct member.
pub fn distinct_key(item_key: &[u8], kind: DistinctKind, member: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(item_key.len() + member.len() + 2);
    k.extend_from_slice(item_key);
    k.push(kind as u8);
    k.extend_from_slice(member.as_bytes());
    k.push(0);
    k
}

/// What a `distinct` row counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DistinctKind {
    /// Referring IP address of the item's backlinks (spelt by `views::ip_member`); its
    /// subnets are counted from these rows (format 7 kept them as kind 2).
    RefIp = 1,
    /// An anchor text of one referring domain (member is `domain \x01 anchor`, so one
    /// referring-domain row's texts are contiguous). Stored only for rows with more than
    /// `ANCHORS_IN_ROW` texts; other rows hold theirs (format 11).
    AnchorDomain = 3,
    /// External domain linked from the item's pages.
    OutDomain = 4,
    /// Index level: a crawled domain served from an address (`ip \x01 domain`).
    IpDomain = 5,
    /// Index level: an address a domain was served from (`domain \x01 ip`).
    DomainIp = 6,
    /// The one host a root domain's backlinks point to, kept only when there is one: the
    /// domain then keeps no views of its own (backlink pointers, referring domains,
    /// anchors, timeline), and reads serve the host's, which are the same rows (format
    /// 17 in snapshots, 18 in every store). Its count is always 1.
    LinkedHost = 7,
    /// In a snapshot, each host of a root domain whose backlinks point to two to
    /// `MAX_BACKLINK_HOSTS` hosts: the domain keeps no backlink rows, and reads merge the
    /// hosts' (format 20). Its count is always 1.
    BacklinkHost = 8,
    /// In a snapshot, the item hash of each URL of a host whose backlinks point to at
    /// most `MAX_BACKLINK_URLS` URLs ([`url_item_member`]): the host keeps no backlink
    /// rows, and reads merge the URLs' (format 25). Its count is always 1.
    BacklinkUrl = 9,
}

impl DistinctKind {
    /// The kinds an item's backlinks feed (the others are its pages' own, or the
    /// index's): member rows, which a small item keeps none of
    /// (`crate::small_item`).
    pub(crate) const MEMBER_KINDS: [DistinctKind; 2] =
        [DistinctKind::RefIp, DistinctKind::AnchorDomain];

    /// Whether this kind is one of [`DistinctKind::MEMBER_KINDS`].
    pub(crate) fn is_member(self) -> bool {
        DistinctKind::MEMBER_KINDS.contains(&self)
    }

    /// Whether rows of this kind exist only for the incremental writer, to move the
    /// counters they stand behind exactly (no read looks them up): a snapshot store
    /// ([`crate::Store::is_snapshot`]) has none.
    pub(crate) fn is_writer_only(self) -> bool {
        matches!(
            self,
            DistinctKind::RefIp | DistinctKind::AnchorDomain | DistinctKind::OutDomain
        )
    }

    /// The count a row of this kind stores for `n` references: a `LinkedHost` row
    /// stores 1, which the incremental writer, which counts no references to it, writes
    /// too.
    pub(crate) fn stored_count(self, n: i64) -> i64 {
        match self {
            DistinctKind::LinkedHost | DistinctKind::BacklinkHost | DistinctKind::BacklinkUrl => 1,
            _ => n,
        }
    }

    pub(crate) fn from_u8(b: u8) -> Option<DistinctKind> {
        Some(match b {
            1 => DistinctKind::RefIp,
            3 => DistinctKind::AnchorDomain,
            4 => DistinctKind::OutDomain,
            5 => DistinctKind::IpDomain,
            6 => DistinctKind::DomainIp,
            7 => DistinctKind::LinkedHost,
            8 => DistinctKind::BacklinkHost,
            9 => DistinctKind::BacklinkUrl,
            _ => return None,
        })
    }
}

/// The member of a [`DistinctKind::BacklinkUrl`] row: a URL's item hash, as 16 lower-case
/// hex digits.
pub(crate) fn url_item_member(url_item: u64) -> String {
    format!("{url_item:016x}")
}

/// The URL item hash a [`url_item_member`] names.
pub(crate) fn member_url_item(member: &str) -> Option<u64> {
    let digits = member.len() == 16 && member.bytes().all(|b| b.is_ascii_hexdigit());
    digits
        .then(|| u64::from_str_radix(member, 16).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_domain_hashes_are_of_the_level_byte_then_the_name() {
        // Every stored key holds these hashes: names hashed on the stack and on the heap
        // must hash as they always have, either side of the stack buffer's end.
        let h = ItemHasher::new(64);
        for len in [0, 1, 254, 255, 256, 257, 2048] {
            let name = "n".repeat(len);
            for level in [Level::SubDomain, Level::RootDomain] {
                let mut bytes = vec![level as u8];
                bytes.extend_from_slice(name.as_bytes());
                assert_eq!(h.hash(level, &name), xxh3_64(&bytes), "{len} bytes");
            }
        }
    }

    #[test]
    fn tiny_hashes_collide_but_item_keys_stay_distinct() {
        let h = ItemHasher::new(2);
        let a = Item::domain("a.com");
        let names: Vec<String> = (0..20).map(|i| format!("d{i}.com")).collect();
        let colliding = names
            .iter()
            .find(|n| h.hash(Level::RootDomain, n) == h.hash(Level::RootDomain, "a.com"))
            .expect("2-bit hashes collide");
        assert_ne!(h.item_key(&a), h.item_key(&Item::domain(colliding.clone())));
    }

    #[test]
    fn backlink_keys_sort_by_descending_trust_flow() {
        let link = link_key("http://a.com/", "http://b.com/");
        assert!(backlink_key(0, 7, 90, &link) < backlink_key(0, 7, 10, &link));
        assert!(backlink_key(0, 7, 0, &link) < backlink_key(0, 8, 100, &link));
        assert!(backlink_key(0, 8, 0, &link) < backlink_key(1, 7, 100, &link));
        assert!(backlink_key(3, 7, 1, &link).starts_with(&generation_item_prefix(3, 7)));
    }

    #[test]
    fn a_url_item_member_names_its_hash_and_nothing_else_reads_as_one() {
        for hash in [0, 1, 0xdead_beef, u64::MAX] {
            assert_eq!(member_url_item(&url_item_member(hash)), Some(hash));
        }
        assert_eq!(url_item_member(1).len(), 16);
        assert_eq!(member_url_item("www.example.com"), None);
        assert_eq!(member_url_item("1"), None, "not 16 digits");
        assert_eq!(member_url_item("+000000000000001"), None);
    }
}
