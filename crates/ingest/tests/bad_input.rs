//! Bad input is skipped, counted and located; it never stops a file and never leaves a
//! half-applied record in the store.

use flate2::write::GzEncoder;
use flate2::Compression;
use indexes::{ingest_file, IngestOptions};
use ingest::{Error, FileSummary};
use linkstore::{Item, Store, StoreOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn run(path: &Path) -> (tempfile::TempDir, Store, FileSummary) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let s = ingest_file(
        &store,
        path,
        &IngestOptions {
            batch_pages: 3,
            ..Default::default()
        },
        &mut |_| {},
    )
    .unwrap();
    (dir, store, s)
}

fn page(n: usize) -> String {
    format!(
        r#"{{"url":"http://src{n}.com/","fetched_at":"2025-01-0{}T00:00:00Z","links":[{{"url":"http://t.com/","text":"t{n}"}}]}}"#,
        1 + n % 9
    )
}

fn backlinks_of_t(store: &Store) -> i64 {
    store
        .read()
        .counters(&Item::parse("t.com").unwrap())
        .unwrap()
        .map_or(0, |c| c.ext_backlinks)
}

#[test]
fn invalid_json_and_non_utf8_records_are_skipped_and_located() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(page(1).as_bytes());
    body.extend_from_slice(b"\n{\"url\": \"http://x.com/\", \"fetched_at\": \n");
    body.extend_from_slice(b"{\"url\":\"http://bad\xff\xfe.com/\",\"fetched_at\":0}\n");
    body.extend_from_slice(b"{\"url\":\"http://nodate.com/\",\"fetched_at\":\"soon\"}\n");
    body.extend_from_slice(b"{\"url\":\"http://y.com/\",\"fetched_at\":1,\"links\":[{\"url\":\"/a\",\"type\":\"blink\"}]}\n");
    body.extend_from_slice(page(2).as_bytes());
    body.push(b'\n');
    let (_d, store, s) = run(&write(dir.path(), "mixed.jsonl", &body));
    assert_eq!(s.records, 6);
    assert_eq!(s.pages, 2);
    assert_eq!(s.bad_records, 4);
    let at: Vec<&str> = s.problems.iter().map(|p| p.at.as_str()).collect();
    assert_eq!(at, ["line 2", "line 3", "line 4", "line 5"]);
    assert!(s.problems[0].reason.starts_with("invalid JSON"));
    assert!(s.problems[2].reason.contains("fetch date"));
    assert!(s.problems[3].reason.contains("blink"));
    assert_eq!(backlinks_of_t(&store), 2);
}

#[test]
fn invalid_oversized_and_odd_urls_are_counted_and_the_page_kept() {
    let dir = tempfile::tempdir().unwrap();
    let huge_url = format!("http://t.com/{}", "a".repeat(100_000));
    let huge_anchor = "word ".repeat(50_000);
    let line = serde_json::json!({
        "url": "http://src.com/",
        "fetched_at": 1_735_689_600,
        "links": [
            {"url": "http://[::1"},
            {"url": huge_url},
            {"url": "javascript:void(0)"},
            {"url": "http://t.com/ok", "text": huge_anchor},
        ]
    });
    let bad_page = serde_json::json!({"url": "http://", "fetched_at": 1});
    let body = format!("{line}\n{bad_page}\n");
    let (_d, store, s) = run(&write(dir.path(), "urls.jsonl", body.as_bytes()));
    assert_eq!(s.pages, 1);
    assert_eq!(s.bad_links, 2, "{:?}", s.problems);
    assert_eq!(s.bad_records, 1, "a page URL without host");
    assert!(s.problem_counts.keys().any(|k| k.contains("longer than")));
    let rows = store
        .read()
        .backlinks(&Item::parse("t.com").unwrap(), &Default::default())
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].anchor_text.chars().count(),
        ingest::html::MAX_ANCHOR_CHARS
    );
}

#[test]
fn a_truncated_gzip_keeps_every_whole_record_before_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..200).map(|n| page(n) + "\n").collect();
    let gz = gzip(lines.as_bytes());
    let (_d, store, s) = run(&write(dir.path(), "cut.jsonl.gz", &gz[..gz.len() / 2]));
    let t = s.truncated.as_ref().expect("truncation is reported");
    assert!(
        t.reason.contains("truncated") || t.reason.contains("unreadable"),
        "{t:?}"
    );
    assert!(s.pages > 0 && s.pages < 200, "{} pages", s.pages);
    assert_eq!(
        backlinks_of_t(&store),
        s.pages as i64,
        "exactly the whole records"
    );
    assert_eq!(s.bad_records, 0);
}

/// A WARC response record for `url` whose HTML links to t.com and carries a Latin-1
/// byte (not UTF-8: it must still parse).
fn warc_response(url: &str) -> Vec<u8> {
    let mut http =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><a href=\"http://t.com/\">T</a>"
            .to_vec();
    http.push(0xe9);
    http.extend_from_slice(b"</html>");
    let mut rec = format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\nWARC-Date: 2025-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
        http.len()
    )
    .into_bytes();
    rec.extend_from_slice(&http);
    rec.extend_from_slice(b"\r\n\r\n");
    rec
}

#[test]
fn broken_warc_headers_and_garbage_are_skipped_and_reading_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(b"WARC/1.0\r\nWARC-Type: response\r\nthis line has no colon\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n");
    body.extend_from_slice(b"\x00\x01binary garbage \xff\xfe between records\n");
    body.extend_from_slice(b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: banana\r\n\r\n");
    body.extend_from_slice(&warc_response("http://src.com/"));
    let (_d, store, s) = run(&write(dir.path(), "broken.warc", &body));
    assert_eq!(s.pages, 1, "{:?}", s.problems);
    assert_eq!(s.bad_records, 3, "{:?}", s.problems);
    assert!(s
        .problems
        .iter()
        .any(|p| p.reason.contains("broken WARC header")));
    assert!(s.problems.iter().any(|p| p.reason.contains("garbage")));
    assert!(s
        .problems
        .iter()
        .any(|p| p.reason.contains("Content-Length")));
    assert!(s.problems.iter().all(|p| p.at.starts_with("byte ")));
    assert_eq!(backlinks_of_t(&store), 1);
}

#[test]
fn a_record_cut_short_is_reported_not_applied() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = warc_response("http://src.com/");
    body.extend_from_slice(&warc_response("http://other.com/"));
    let cut = &body[..body.len() - 30];
    let (_d, store, s) = run(&write(dir.path(), "short.warc", cut));
    assert_eq!(s.pages, 1);
    assert!(s.truncated.is_some());
    assert_eq!(backlinks_of_t(&store), 1);
}

#[test]
fn binary_garbage_is_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 0x80)
        .collect();
    let path = write(dir.path(), "noise.bin", &noise);
    let store = Store::open(dir.path().join("db"), &StoreOptions::default()).unwrap();
    let err = ingest_file(&store, &path, &IngestOptions::default(), &mut |_| {}).unwrap_err();
    assert!(matches!(err, Error::UnknownFormat { .. }));
    assert!(err.to_string().contains("noise.bin"), "{err}");
    assert_eq!(store.read().index_counters().unwrap().crawled_urls, 0);

    // Garbage that merely looks gzipped fails as a stream, reported, nothing applied.
    let mut fake_gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    fake_gz.extend_from_slice(&noise);
    let path = write(dir.path(), "noise.gz", &fake_gz);
    let s = ingest_file(&store, &path, &IngestOptions::default(), &mut |_| {}).unwrap();
    assert!(s.truncated.is_some());
    assert_eq!(s.pages, 0);
}

/// A sink that takes `left` crawls, then fails.
struct FailingSink {
    left: usize,
}

impl ingest::CrawlSink for FailingSink {
    fn accept(
        &mut self,
        _: linkstore::PageCrawl,
    ) -> Result<Option<linkstore::ApplyStats>, ingest::SinkError> {
        if self.left == 0 {
            return Err("disk full".into());
        }
        self.left -= 1;
        Ok(None)
    }
}

#[test]
fn a_failing_sink_ends_the_file_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..5).map(|n| page(n) + "\n").collect();
    let path = write(dir.path(), "pages.jsonl", body.as_bytes());
    let mut sink = FailingSink { left: 2 };
    let mut records = 0;
    let err = ingest::read_file(&path, &Default::default(), &mut sink, &mut |p| {
        records = p.records
    })
    .unwrap_err();
    assert!(matches!(err, Error::Sink(_)), "{err:?}");
    assert_eq!(err.to_string(), "disk full");
    assert_eq!(records, 2, "reading stopped at the record the sink refused");
}
