//! Every real crawl file in `../shared/data` ingests, with link counts checked against
//! the data README and the ia-web-commons answer key.

use indexes::{ingest_file, IngestOptions};
use ingest::{extract_links, FileSummary, LinkTag};
use linkstore::{BacklinkQuery, Item, Store, StoreOptions};
use std::collections::BTreeMap;
use std::io::BufReader;
use testdata::shared;

fn ingest(rel: &str) -> Option<(tempfile::TempDir, Store, FileSummary)> {
    let path = shared(rel)?;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let summary = ingest_file(&store, &path, &IngestOptions::default(), &mut |_| {}).unwrap();
    assert!(
        summary.truncated.is_none(),
        "{rel}: {:?}",
        summary.truncated
    );
    Some((dir, store, summary))
}

/// (file, pages applied, links extracted). The README counts only `<a>`/`<area>` in 2xx
/// HTML; ours also count frames, image links and meta refreshes and leave out
/// fragment-only (`#top`) and non-http links, so they differ a little, as noted.
const EXPECTED: &[(&str, u64, u64)] = &[
    // README: 94 2xx HTML pages of 299 responses, 37,782 links; we apply all 261 http(s)
    // responses (redirects, 404s, non-HTML are crawls too).
    ("warc/aut-example.warc.gz", 261, 37_574),
    ("warc/resiliparse-warcfile.warc.gz", 16, 1_352),
    ("warc/resiliparse-clueweb-quirk.warc.gz", 29, 2_945),
    ("warc/jwarc-cc.warc.gz", 1, 43),
    ("warc/whirlwind.warc.gz", 1, 193),
    ("warc/cc-link-extraction-test.warc", 9, 16),
    ("wat/fluo-webindex-wat-18.warc", 5, 389),
    ("wat/pycommoncrawl-file1.warc.wat.gz", 2, 62),
    ("wat/whirlwind.warc.wat.gz", 0, 0),
    ("wat/whirlwind.warc.wet.gz", 0, 0),
];

#[test]
fn every_shared_crawl_file_ingests_cleanly() {
    for &(rel, pages, links) in EXPECTED {
        let Some((_d, store, s)) = ingest(rel) else {
            return;
        };
        assert_eq!(s.bad_records, 0, "{rel}: {:?}", s.problems);
        assert_eq!((s.pages, s.links_found), (pages, links), "{rel}");
        // Ingesting the same file again changes nothing.
        let before = store.read().index_counters().unwrap();
        let again = ingest_file(
            &store,
            &shared(rel).unwrap(),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(again.pages, 0, "{rel}");
        assert_eq!(again.pages_unchanged, pages, "{rel}");
        assert_eq!(store.read().index_counters().unwrap(), before, "{rel}");
    }
}

#[test]
fn readme_link_counts_hold_within_the_documented_differences() {
    // README: jwarc-cc 44 links (1 fragment-only self link); whirlwind 207 (14 `#...`).
    let Some((_d, store, s)) = ingest("warc/jwarc-cc.warc.gz") else {
        return;
    };
    assert_eq!(s.links_found, 43);
    let c = store
        .read()
        .counters(&Item::parse("commoncrawl.org").unwrap())
        .unwrap()
        .unwrap();
    assert!(c.out_links_internal + c.out_links_external > 0);
    let Some((_d, _s, w)) = ingest("warc/whirlwind.warc.gz") else {
        return;
    };
    assert_eq!(w.links_found, 193);
}

#[test]
fn wat_links_arrays_are_read_exactly() {
    // README: fluo-webindex has 458 `A@/href` entries in 4 response records; pycommoncrawl
    // has 63. Count them through the WAT parser before resolution.
    for (rel, expected) in [
        ("wat/fluo-webindex-wat-18.warc", 458),
        ("wat/pycommoncrawl-file1.warc.wat.gz", 63),
    ] {
        let Some(path) = shared(rel) else { return };
        let file = std::fs::File::open(&path).unwrap();
        let input: Box<dyn std::io::BufRead> = if rel.ends_with(".gz") {
            Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)))
        } else {
            Box::new(BufReader::new(file))
        };
        let mut reader = ingest::warc::WarcReader::new(input);
        let mut a_links = 0;
        while let Some(rec) = reader.next_record() {
            let Ok(rec) = rec else {
                panic!("{rel}: unreadable record")
            };
            if let Ok(Some(page)) = ingest::wat::parse_wat(&rec.block) {
                a_links += page
                    .links
                    .iter()
                    .filter(|l| l.tag == Some(LinkTag::A))
                    .count();
            }
        }
        assert_eq!(a_links, expected, "{rel}");
    }
}

#[test]
fn ia_web_commons_answer_key_matches_for_anchor_and_area_links() {
    let (Some(warc), Some(key)) = (
        shared("warc/cc-link-extraction-test.warc"),
        shared("warc/cc-link-extraction-test.expected-links.json"),
    ) else {
        return;
    };
    let key: serde_json::Value = serde_json::from_slice(&std::fs::read(key).unwrap()).unwrap();
    let mut expected: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for rec in key["records"].as_array().unwrap() {
        let uri = rec["record_target_uri"].as_str().unwrap().to_string();
        let mut links: Vec<(String, String)> = rec["expected_links"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| matches!(l["path"].as_str(), Some("A@/href" | "AREA@/href")))
            .map(|l| {
                (
                    l["url"].as_str().unwrap().into(),
                    l["path"].as_str().unwrap().into(),
                )
            })
            .collect();
        links.sort();
        expected.insert(uri, links);
    }
    let mut reader =
        ingest::warc::WarcReader::new(BufReader::new(std::fs::File::open(warc).unwrap()));
    let mut checked = 0;
    while let Some(rec) = reader.next_record() {
        let rec = rec.unwrap_or_else(|_| panic!("answer-key WARC must read cleanly"));
        if rec.header("WARC-Type") != Some("response") {
            continue;
        }
        let uri = rec.header("WARC-Target-URI").unwrap();
        let uri = uri
            .trim_start_matches('<')
            .trim_end_matches('>')
            .to_string();
        let resp = ingest::http::parse_response(&rec.block).unwrap();
        let mut got: Vec<(String, String)> = extract_links(&resp.text())
            .links
            .into_iter()
            .filter(|l| matches!(l.tag, Some(LinkTag::A | LinkTag::Area)))
            .map(|l| (l.url, l.tag.unwrap().wat_path().to_string()))
            .collect();
        got.sort();
        assert_eq!(got, expected[&uri], "{uri}");
        checked += 1;
    }
    assert_eq!(checked, 9, "all nine answer-key pages");
}

#[test]
fn backlinks_of_a_real_crawl_are_ordered_and_verified() {
    let Some((_d, store, _)) = ingest("warc/aut-example.warc.gz") else {
        return;
    };
    // Nearly all of this archive.org crawl's 37k links stay inside archive.org: only
    // links to other root domains are backlinks.
    let idx = store.read().index_counters().unwrap();
    assert_eq!(idx.ext_backlinks, 239);
    let item = Item::parse("creativecommons.org").unwrap();
    let rows = store
        .read()
        .backlinks(
            &item,
            &BacklinkQuery {
                count: 50_000,
                ..Default::default()
            },
        )
        .unwrap();
    let c = store.read().counters(&item).unwrap().unwrap();
    assert_eq!(rows.len() as i64, c.ext_backlinks);
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().all(|r| item.contains_url(&r.target_url)));
    assert!(rows
        .iter()
        .all(|r| linkstore::root_domain(linkstore::host_of(&r.source_url)) == Some("archive.org")));
}

/// The real crawl files' text, one string per file, gunzipped where gzipped.
fn crawl_texts() -> Option<Vec<(std::path::PathBuf, String)>> {
    use std::io::Read;
    let paths = testdata::crawl_files()?;
    let texts = paths.into_iter().map(|path| {
        let mut bytes = Vec::new();
        let file = std::fs::File::open(&path).unwrap();
        if path.extension().is_some_and(|e| e == "gz") {
            flate2::read::MultiGzDecoder::new(file).read_to_end(&mut bytes)
        } else {
            BufReader::new(file).read_to_end(&mut bytes)
        }
        .unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        (path, text)
    });
    Some(texts.collect())
}

/// What the WHATWG parse makes of `raw` (joined to `base` if given), as `normalize_url`
/// promises it: http(s) with a host, without its fragment.
fn parsed(raw: &str, base: Option<&url::Url>) -> Option<String> {
    let mut url = match base {
        Some(base) => base.join(raw),
        None => url::Url::parse(raw),
    }
    .ok()?;
    let web = matches!(url.scheme(), "http" | "https");
    if !web || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    url.set_fragment(None);
    Some(String::from(url)).filter(|s| s.len() <= linkstore::MAX_URL_LEN)
}

/// Every `http(s)://` string in the real crawl files (hrefs, headers, WAT metadata) comes
/// out of `normalize_url` exactly as the WHATWG parse gives it, whichever way the
/// function took.
#[test]
fn real_urls_normalize_as_the_whatwg_parse_gives_them() {
    let Some(texts) = crawl_texts() else {
        return;
    };
    let mut checked = 0;
    for (path, text) in &texts {
        for (at, _) in text.match_indices("http") {
            let token = text[at..]
                .split(|c: char| c.is_whitespace() || "\"<>".contains(c))
                .next()
                .unwrap_or_default();
            if !token.contains("://") || token.len() > linkstore::MAX_URL_LEN {
                continue;
            }
            let ours = linkstore::normalize_url(token, None).ok();
            assert_eq!(ours, parsed(token, None), "{}: {token:?}", path.display());
            checked += 1;
        }
    }
    assert!(checked > 10_000, "only {checked} URLs found");
}

/// Every `href` and WAT `url` value in the real crawl files, most of them relative,
/// resolves through `normalize_url` to what the WHATWG parse joins it to, on bases of
/// every kind: plain, with a port, an IP address, a user, an IDNA host.
#[test]
fn real_links_resolve_as_the_whatwg_parse_joins_them() {
    let Some(texts) = crawl_texts() else {
        return;
    };
    let bases = [
        "http://www.example.com/dir/page.html?q=1",
        "https://a-b.example.co.uk/",
        "http://www.example.com:8080/dir/",
        "http://192.0.2.7/dir/page",
        "http://user@www.example.com/",
        "http://xn--nxasmq6b.com/a",
    ]
    .map(|b| url::Url::parse(b).unwrap());
    let (mut checked, mut root_relative) = (0, 0);
    for (path, text) in &texts {
        for opener in ["href=\"", "\"url\":\""] {
            for (at, _) in text.match_indices(opener) {
                let value = &text[at + opener.len()..];
                let link = value[..value.find('"').unwrap_or(0)].trim();
                if link.len() > linkstore::MAX_URL_LEN {
                    continue;
                }
                for base in &bases {
                    let ours = linkstore::normalize_url(link, Some(base)).ok();
                    assert_eq!(
                        ours,
                        parsed(link, Some(base)),
                        "{}: {link:?} on {base}",
                        path.display()
                    );
                }
                checked += 1;
                root_relative += usize::from(link.starts_with('/') && !link.starts_with("//"));
            }
        }
    }
    assert!(checked > 40_000, "only {checked} links found");
    assert!(root_relative > 30_000, "only {root_relative} root-relative");
}
