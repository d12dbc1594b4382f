//! The run of columns every per-domain table of Majestic's shares, from `AlexaRank` to
//! `TrustFlow` (DomainsInfo of GetBackLinkData and of GetRefDomainInfo).

use crate::envelope::Value;
use crate::row::{Cells, Date, UnknownNumber, UnknownText};
use linkstore::{Counters, ItemMetrics};

/// A domain's own statistics, as one group of cells.
#[derive(Default)]
pub struct DomainFacts {
    counters: Counters,
    citation_flow: u8,
    trust_flow: u8,
    tld: String,
}

const COLUMNS: [&str; 13] = [
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

impl DomainFacts {
    pub fn of(domain: &str, counters: Counters, metrics: &ItemMetrics) -> DomainFacts {
        DomainFacts {
            counters,
            citation_flow: metrics.citation_flow,
            trust_flow: metrics.trust_flow,
            tld: super::psl_suffix(domain),
        }
    }
}

impl Cells for DomainFacts {
    fn columns(_: &str, out: &mut Vec<String>) {
        out.extend(COLUMNS.iter().map(|c| c.to_string()));
    }

    fn cells(self, out: &mut Vec<Value>) {
        let c = self.counters;
        UnknownNumber.cells(out);
        for n in [
            c.ref_domains,
            c.ext_backlinks,
            c.indexed_urls,
            c.crawled_urls,
        ] {
            n.cells(out);
        }
        UnknownText.cells(out);
        Date::of(c.last_crawl_day).cells(out);
        for _ in 0..3 {
            UnknownText.cells(out);
        }
        self.tld.cells(out);
        i64::from(self.citation_flow).cells(out);
        i64::from(self.trust_flow).cells(out);
    }
}
