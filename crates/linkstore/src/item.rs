//! Query items at three levels (URL, subdomain, root domain), recognised from the item
//! string as Majestic does, and the URL normalisation every stored URL goes through.

use crate::error::{Error, Result};
use std::fmt;
use url::{Position, Url};

/// The longest URL the store accepts. Longer URLs are rejected at ingest.
pub const MAX_URL_LEN: usize = 2048;

/// Level of a query item. The byte value is part of every item key (see `docs/format.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    RootDomain = 1,
    SubDomain = 2,
    Url = 3,
    /// The whole index: global counters live under this level with an empty name.
    Index = 4,
}

impl Level {
    /// Majestic's numeric `ItemType`.
    pub fn item_type(self) -> u8 {
        self as u8
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::RootDomain => "RootDomain",
            Level::SubDomain => "SubDomain",
            Level::Url => "URL",
            Level::Index => "Index",
        }
    }
}

/// A normalised query item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Item {
    pub level: Level,
    pub name: String,
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl Item {
    pub fn url(name: impl Into<String>) -> Item {
        Item {
            level: Level::Url,
            name: name.into(),
        }
    }

    pub fn host(name: impl Into<String>) -> Item {
        Item {
            level: Level::SubDomain,
            name: name.into(),
        }
    }

    pub fn domain(name: impl Into<String>) -> Item {
        Item {
            level: Level::RootDomain,
            name: name.into(),
        }
    }

    pub(crate) fn index() -> Item {
        Item {
            level: Level::Index,
            name: String::new(),
        }
    }

    /// Recognises a user-supplied item: anything with a scheme or a path is a URL; a bare
    /// host equal to its registered domain is a root domain; any other bare host is a
    /// subdomain (so `www.example.com` is a subdomain, `example.com` a root domain).
    pub fn parse(raw: &str) -> Result<Item> {
        let s = raw.trim();
        let invalid = |reason: &str| Error::InvalidItem {
            item: raw.chars().take(200).collect(),
            reason: reason.to_string(),
        };
        if s.is_empty() {
            return Err(invalid("empty item"));
        }
        if s.contains("://") || s.contains('/') {
            let with_scheme = if s.contains("://") {
                s.to_string()
            } else {
                format!("http://{s}")
            };
            let url = normalize_url(&with_scheme, None).map_err(|r| invalid(&r))?;
            return Ok(Item::url(url));
        }
        let host = normalize_host(s).ok_or_else(|| invalid("not a valid host name"))?;
        match root_domain(&host) {
            Some(d) if d == host => Ok(Item::domain(host)),
            Some(_) => Ok(Item::host(host)),
            None => Err(invalid("host has no registrable domain")),
        }
    }

    /// The three items a stored URL belongs to, most specific first.
    pub fn levels_of_url(url: &str) -> [Item; 3] {
        url_levels(url).map(|(level, name)| Item {
            level,
            name: name.to_string(),
        })
    }

    /// True when `url` (a normalised URL) falls under this item.
    pub fn contains_url(&self, url: &str) -> bool {
        match self.level {
            Level::Url => url == self.name,
            Level::SubDomain => host_of(url) == self.name,
            Level::RootDomain => {
                let host = host_of(url);
                host == self.name
                    || (host.ends_with(&self.name)
                        && host.as_bytes()[host.len() - self.name.len() - 1] == b'.'
                        && root_domain(host) == Some(self.name.as_str()))
            }
            Level::Index => true,
        }
    }
}

/// The levels and names of the three items a stored URL belongs to, most specific first
/// ([`Item::levels_of_url`] without copies).
pub(crate) fn url_levels(url: &str) -> [(Level, &str); 3] {
    let host = host_of(url);
    let domain = root_domain(host).unwrap_or(host);
    [
        (Level::Url, url),
        (Level::SubDomain, host),
        (Level::RootDomain, domain),
    ]
}

/// Host of a normalised URL (`scheme://host[:port]/...`), without port.
pub fn host_of(url: &str) -> &str {
    // Byte scans: every write works out the hosts of each link's two ends several times.
    let bytes = url.as_bytes();
    let start = if bytes.starts_with(b"https://") {
        8
    } else if bytes.starts_with(b"http://") {
        7
    } else {
        memchr::memmem::find(bytes, b"://").map_or(0, |i| i + 3)
    };
    let rest = &url[start..];
    let end = memchr::memchr3(b'/', b'?', b'#', rest.as_bytes()).unwrap_or(rest.len());
    let authority = &rest[..end];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// Registered domain of a host by the Public Suffix List; IP addresses are their own
/// domain. Hosts that are only a public suffix have none.
pub fn root_domain(host: &str) -> Option<&str> {
    RootDomains::with(|cache| cache.lookup(host))
}

fn root_domain_uncached(host: &str) -> Option<&str> {
    if host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some(host);
    }
    psl::domain_str(host)
}

/// A host and where its registered domain lies in it: the outer `None` marks an empty
/// slot, the inner one a host without a registered domain.
type CachedHost = (String, Option<Option<(usize, usize)>>);

/// The registered domains of recently seen hosts, per thread: a write looks up the same
/// few hosts (a page's, its targets') many times per link, and the list lookup is the
/// costly part. Direct-mapped and of fixed size, so hostile hosts only evict each other;
/// a slot's host keeps its allocation for the next (a bulk build's backlinks, grouped by
/// target, look up their sources' hosts in no order, so most lookups there miss).
struct RootDomains {
    slots: Vec<CachedHost>,
    hasher: foldhash::fast::FixedState,
}

impl RootDomains {
    const SLOTS: usize = 4096;

    fn with<R>(f: impl FnOnce(&mut RootDomains) -> R) -> R {
        thread_local! {
            static CACHE: std::cell::RefCell<RootDomains> = std::cell::RefCell::new(RootDomains {
                slots: vec![(String::new(), None); RootDomains::SLOTS],
                hasher: foldhash::fast::FixedState::default(),
            });
        }
        CACHE.with(|c| f(&mut c.borrow_mut()))
    }

    fn lookup<'h>(&mut self, host: &'h str) -> Option<&'h str> {
        use std::hash::BuildHasher;
        let (cached, found) = &mut self.slots[self.hasher.hash_one(host) as usize % Self::SLOTS];
        let span = match found {
            Some(span) if cached == host => *span,
            _ => {
                // The registered domain is a slice of the host.
                let span = root_domain_uncached(host).map(|d| {
                    let start = d.as_ptr() as usize - host.as_ptr() as usize;
                    (start, start + d.len())
                });
                cached.clear();
                cached.push_str(host);
                *found = Some(span);
                span
            }
        };
        span.map(|(start, end)| &host[start..end])
    }
}

/// Lowercases and IDNA-encodes a bare host name.
pub fn normalize_host(s: &str) -> Option<String> {
    let url = Url::parse(&format!("http://{s}/")).ok()?;
    let host = url.host_str()?.to_string();
    (url.path() == "/" && url.port().is_none() && !host.is_empty()).then_some(host)
}

/// WHATWG-parses `raw` (resolved against `base` if relative), keeps http(s) only, drops
/// the fragment and default port, and lowercases the host. Errors say why a URL was
/// refused, for the ingest summary.
pub fn normalize_url(raw: &str, base: Option<&Url>) -> std::result::Result<String, String> {
    if raw.len() > MAX_URL_LEN {
        return Err(format!("URL longer than {MAX_URL_LEN} bytes"));
    }
    // An absolute URL ignores its base, and one already in normal form is its own answer.
    if let Some(normal) = already_normal(raw) {
        return Ok(normal.to_string());
    }
    if let Some(joined) = base.and_then(|base| joined_to_root(raw, base)) {
        return Ok(joined);
    }
    parse_url(raw, base)
}

/// A root-relative link (`/path`) on a base whose `scheme://host` is in normal form,
/// joined by writing one after the other, when the join passes [`already_normal`]: the
/// WHATWG parse keeps the base's scheme and host and takes the link's path, query and
/// fragment. Real crawls write most of their links so (`docs/benchmarks.md`,
/// "Root-relative links joined as written"). `None` leaves the link to the parse:
/// `//host` and `/\host` name another host, and anything [`already_normal`] refuses is
/// in doubt.
fn joined_to_root(raw: &str, base: &Url) -> Option<String> {
    let bytes = raw.as_bytes();
    if bytes.first() != Some(&b'/') || matches!(bytes.get(1), Some(b'/' | b'\\')) {
        return None;
    }
    let root = &base[..Position::BeforePath];
    let mut joined = String::with_capacity(root.len() + raw.len());
    joined.push_str(root);
    joined.push_str(raw);
    let normal_len = already_normal(&joined)?.len();
    joined.truncate(normal_len);
    (normal_len <= MAX_URL_LEN).then_some(joined)
}

/// [`normalize_url`] by the WHATWG parse, for a URL within the length bound.
fn parse_url(raw: &str, base: Option<&Url>) -> std::result::Result<String, String> {
    let parsed = match base {
        Some(b) => b.join(raw),
        None => Url::parse(raw),
    };
    let mut url = parsed.map_err(|e| format!("unparsable URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("unsupported scheme {:?}", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("URL has no host".to_string());
    }
    url.set_fragment(None);
    let s = String::from(url);
    if s.len() > MAX_URL_LEN {
        return Err(format!("URL longer than {MAX_URL_LEN} bytes"));
    }
    Ok(s)
}

/// `raw` without its fragment when it is certainly what the WHATWG parse would give
/// back: an `http(s)` URL with a plain lowercase domain name, a path, no port or user,
/// no dot segments, and only characters no encode set touches. Most links of a crawl
/// are written so, and parsing them costs a link's ingest more than anything else it
/// does to its target (`docs/benchmarks.md`, "URLs already in normal form"). Anything
/// else, or anything in doubt, is `None`: the full parse decides it.
fn already_normal(raw: &str) -> Option<&str> {
    let bytes = raw.as_bytes();
    let host_start = if bytes.starts_with(b"https://") {
        8
    } else if bytes.starts_with(b"http://") {
        7
    } else {
        return None;
    };
    let path_start = host_start + plain_domain_end(&bytes[host_start..])?;
    let end = memchr::memchr(b'#', bytes).unwrap_or(bytes.len());
    plain_path_and_query(&bytes[path_start..end]).then(|| &raw[..end])
}

/// Whether a path (and query, after the first `?`) is kept as written by the parse:
/// every byte [`is_kept`], no `'` in the query, and no path segment the parse would
/// resolve away: `.` or `..`, or one written with `%2e` (any case; refused outright
/// rather than decoded). One pass, as every link's URL goes through it.
fn plain_path_and_query(path_and_query: &[u8]) -> bool {
    let mut segment_start = 0;
    for (i, &b) in path_and_query.iter().enumerate() {
        match b {
            b'/' | b'?' => {
                if matches!(&path_and_query[segment_start..i], b"." | b"..") {
                    return false;
                }
                if b == b'?' {
                    return path_and_query[i + 1..]
                        .iter()
                        .all(|&b| is_kept(b) && b != b'\'');
                }
                segment_start = i + 1;
            }
            b'%' if path_and_query
                .get(i + 1..i + 3)
                .is_some_and(|hex| hex.eq_ignore_ascii_case(b"2e")) =>
            {
                return false
            }
            _ if !is_kept(b) => return false,
            _ => {}
        }
    }
    !matches!(&path_and_query[segment_start..], b"." | b"..")
}

/// Where the host ends (at the first `/`) when it is a plain domain name: lowercase ASCII
/// labels of letters, digits and hyphens, none empty and none an IDNA (`xn--`) label, the
/// last with a letter and not `0x` (else the host would be an IPv4 address). `None` for
/// any other host, or none followed by a path. One pass, as for the path.
fn plain_domain_end(after_scheme: &[u8]) -> Option<usize> {
    let mut label_start = 0;
    let mut label_has_letter = false;
    for (i, &b) in after_scheme.iter().enumerate() {
        match b {
            b'a'..=b'z' => label_has_letter = true,
            b'0'..=b'9' | b'-' => {}
            b'.' | b'/' => {
                let label = &after_scheme[label_start..i];
                if label.is_empty() || label.starts_with(b"xn--") {
                    return None;
                }
                if b == b'/' {
                    return (label_has_letter && !label.starts_with(b"0x")).then_some(i);
                }
                label_start = i + 1;
                label_has_letter = false;
            }
            _ => return None,
        }
    }
    None
}

/// Bytes the parse keeps as they are in a path and in a query (but `'` in a query; a
/// path ends at the first `?`). `%` stays as written whatever follows it; dot segments
/// are checked apart ([`plain_path_and_query`]).
fn is_kept(b: u8) -> bool {
    KEPT[usize::from(b)]
}

/// [`is_kept`] by byte: a table, as every byte of every link's URL is looked up.
const KEPT: [bool; 256] = {
    let mut kept = [false; 256];
    let mut b = 0;
    while b < 256 {
        kept[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let marks = b"-._~!$&'()*+,;=:@/%?";
    let mut i = 0;
    while i < marks.len() {
        kept[marks[i] as usize] = true;
        i += 1;
    }
    kept
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_root_domains_are_the_list_s_answers() {
        let mut hosts: Vec<String> = [
            "www.example.co.uk",
            "example.com",
            "example.com.",
            "co.uk",
            "com",
            "192.168.0.1",
            "[2001:db8::1]",
            "a.b.c.d.example.org",
            "",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect();
        // More hosts than the cache has slots: they evict each other.
        hosts.extend((0..3 * RootDomains::SLOTS).map(|i| format!("h{i}.site{}.com", i % 97)));
        for _ in 0..2 {
            for h in &hosts {
                assert_eq!(root_domain(h), root_domain_uncached(h), "{h}");
            }
        }
    }

    #[test]
    fn hosts_of_urls() {
        for (url, host) in [
            ("https://www.example.com/a?b#c", "www.example.com"),
            ("http://example.com", "example.com"),
            ("http://example.com?x", "example.com"),
            ("http://user:pw@example.com:8080/", "example.com"),
            ("http://[2001:db8::1]:80/x", "[2001:db8::1]"),
            ("example.com/x", "example.com"),
            ("ftp://files.example.org/a", "files.example.org"),
            ("HTTP://Example.com/", "Example.com"),
            ("https://", ""),
        ] {
            assert_eq!(host_of(url), host, "{url}");
        }
    }

    #[test]
    fn items_are_recognised_at_three_levels() {
        assert_eq!(
            Item::parse("example.com").unwrap(),
            Item::domain("example.com")
        );
        assert_eq!(
            Item::parse("Example.CO.UK").unwrap(),
            Item::domain("example.co.uk")
        );
        assert_eq!(
            Item::parse("www.example.co.uk").unwrap(),
            Item::host("www.example.co.uk")
        );
        assert_eq!(
            Item::parse("http://Example.com:80/a#frag").unwrap(),
            Item::url("http://example.com/a")
        );
        assert_eq!(
            Item::parse("example.com/page").unwrap(),
            Item::url("http://example.com/page")
        );
        assert!(Item::parse("").is_err());
        assert!(Item::parse("co.uk").is_err());
        assert!(Item::parse("bad host!").is_err());
    }

    #[test]
    fn urls_belong_to_their_host_and_domain_only() {
        let [u, h, d] = Item::levels_of_url("https://blog.example.co.uk/x?y=1");
        assert_eq!(u.name, "https://blog.example.co.uk/x?y=1");
        assert_eq!(h.name, "blog.example.co.uk");
        assert_eq!(d.name, "example.co.uk");
        assert!(d.contains_url("http://example.co.uk/"));
        assert!(d.contains_url("http://a.b.example.co.uk/"));
        assert!(!d.contains_url("http://notexample.co.uk/"));
        assert!(!h.contains_url("http://example.co.uk/"));
        assert_eq!(host_of("http://user@h.com:8080/p"), "h.com");
    }

    #[test]
    fn normalisation_resolves_and_refuses_clearly() {
        let base = Url::parse("http://a.com/dir/page.html").unwrap();
        assert_eq!(
            normalize_url("../x#top", Some(&base)).unwrap(),
            "http://a.com/x"
        );
        assert_eq!(
            normalize_url("HTTPS://A.COM:443/", None).unwrap(),
            "https://a.com/"
        );
        assert!(normalize_url("mailto:x@y.z", None)
            .unwrap_err()
            .contains("scheme"));
        let long = format!("http://a.com/{}", "x".repeat(100_000));
        assert!(normalize_url(&long, None).unwrap_err().contains("longer"));
    }

    /// What the shortcut takes as it is, the WHATWG parse gives back unchanged, with or
    /// without a base; and it takes the common forms.
    fn assert_shortcut_agrees(raw: &str, base: &Url) -> bool {
        let Some(normal) = already_normal(raw) else {
            return false;
        };
        assert_eq!(Ok(normal.to_string()), parse_url(raw, None), "{raw:?}");
        assert_eq!(
            Ok(normal.to_string()),
            parse_url(raw, Some(base)),
            "{raw:?}"
        );
        true
    }

    /// What the root-relative shortcut joins, the WHATWG parse gives too.
    fn assert_join_agrees(raw: &str, base: &Url) -> bool {
        let Some(joined) = joined_to_root(raw, base) else {
            return false;
        };
        assert_eq!(Ok(joined), parse_url(raw, Some(base)), "{raw:?} on {base}");
        true
    }

    #[test]
    fn root_relative_links_joined_as_written_are_what_the_parse_gives() {
        let base = Url::parse("https://b.org/dir/page?x=1#f").unwrap();
        for raw in [
            "/",
            "/x/y.html?q=1&r=%20s#frag",
            "/a//b/...x/%zz?%27",
            "/p?#",
        ] {
            assert!(assert_join_agrees(raw, &base), "{raw:?} not joined");
        }
        for raw in [
            "//c.org/x",
            "/\\c.org/x",
            "x/y",
            "?q",
            "#f",
            "/./x",
            "/x/..",
            "/a b",
            "/\u{e9}",
            "/?it's",
        ] {
            assert_eq!(joined_to_root(raw, &base), None, "{raw:?} joined");
        }
        for base in [
            "http://b.org:8080/",
            "http://u:p@b.org/",
            "http://10.0.0.1/",
            "http://[::1]/",
            "http://xn--nxasmq6b.com/",
            "ftp://b.org/",
        ] {
            let base = Url::parse(base).unwrap();
            assert_eq!(joined_to_root("/x", &base), None, "joined on {base}");
            assert!(parse_url("/x", Some(&base)).is_ok() || base.scheme() == "ftp");
        }
        let long = format!("/{}", "x".repeat(MAX_URL_LEN));
        assert_eq!(joined_to_root(&long, &base), None);
        assert!(normalize_url(&long[..MAX_URL_LEN], Some(&base))
            .unwrap_err()
            .contains("longer"));
    }

    #[test]
    fn urls_taken_as_written_are_what_the_parse_gives() {
        let base = Url::parse("https://b.org/dir/page?x=1").unwrap();
        for raw in [
            "http://www.example.com/",
            "https://a-b.c0.co.uk/x/y.html?q=1&r=%20s#frag",
            "http://example.com/a//b/.well-known/...x/%zz?%27",
            "http://example.com/#",
            "http://example.com/p?",
            "https://www.example.com/Upper/Case?Q=A,B;c=d:e@f/g?h",
        ] {
            assert!(assert_shortcut_agrees(raw, &base), "{raw:?} not taken");
        }
        for raw in [
            "HTTP://example.com/",
            "http://Example.com/",
            "http://example.com",
            "http://example.com?q",
            "http://example.com:80/",
            "http://u@example.com/",
            "http://xn--nxasmq6b.com/",
            "http://10.0.0.1/",
            "http://a.0x1f/",
            "http://a..b/",
            "http://a.com./",
            "http://a.com/./x",
            "http://a.com/x/..",
            "http://a.com/%2e%2E/x",
            "http://a.com/a b",
            "http://a.com/a\\b",
            "http://a.com/\"",
            "http://a.com/?it's",
            "http://a.com/\u{e9}",
            "http://a_b.com/",
        ] {
            assert_eq!(already_normal(raw), None, "{raw:?} taken");
        }
    }

    /// Strings built from pieces the parse treats specially, compared with the parse.
    #[test]
    fn generated_urls_taken_as_written_are_what_the_parse_gives() {
        const SCHEMES: &[&str] = &["http://", "https://", "HTTP://", "http:/", "ftp://", ""];
        const HOST: &[&str] = &[
            "a", "b1", "com", "www", "xn--", "-", "0x1f", "0X2", "12", "", "A", "_", ":80", ":",
            "@", "%41", "[::1]", "\u{e9}", "\t", " ",
        ];
        const PATH: &[&str] = &[
            "/", "/", "a", "B", ".", "..", "%2e", "%2E", "%", "%zz", "?", "#", "'", " ", "\\",
            "\t", "\"", "<", "`", "{", "^", "|", "\u{e9}", "~", "=", "&", "@", ":",
        ];
        let base = Url::parse("http://base.example/d/p").unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut taken = 0;
        for _ in 0..400_000 {
            let mut raw = String::from(SCHEMES[next(SCHEMES.len())]);
            for _ in 0..1 + next(3) {
                raw.push_str(HOST[next(HOST.len())]);
                raw.push('.');
            }
            raw.push_str(["com", "org1", "1", "a-"][next(4)]);
            if next(8) > 0 {
                raw.push('/');
            }
            for _ in 0..next(10) {
                raw.push_str(PATH[next(PATH.len())]);
            }
            taken += usize::from(assert_shortcut_agrees(&raw, &base));
        }
        assert!(taken > 2_000, "only {taken} taken as written");

        let bases = [
            "http://base.example/d/p",
            "https://a-b.c0.co.uk/",
            "http://base.example:81/",
            "http://10.1.2.3/d/",
            "http://u@base.example/",
        ]
        .map(|b| Url::parse(b).unwrap());
        let mut joined = 0;
        for _ in 0..400_000 {
            let mut raw = String::from(["/", "/", "//", "/\\", ""][next(5)]);
            for _ in 0..next(10) {
                raw.push_str(PATH[next(PATH.len())]);
            }
            joined += usize::from(assert_join_agrees(&raw, &bases[next(bases.len())]));
        }
        assert!(joined > 10_000, "only {joined} joined as written");
    }
}
