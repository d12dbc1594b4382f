//! Query items at three levels (URL, subdomain, root domain), recognised from the item
//! string as Majestic does, and the URL normalisation every stored URL goes through.

use crate::error::{Error, Result};
use std::fmt;
use url::Url;

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
}
