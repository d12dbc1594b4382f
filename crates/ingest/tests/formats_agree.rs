//! One synthetic web written as JSON-lines and as WAT reads to the same page crawls.
//! (Its WARC form differs by design: HTML has no `rel` on frames, which JSON-lines and WAT
//! links carry.)

use linkstore::{CrawlOutcome, PageCrawl};
use webgen::{generate, OutputFormat, WebSpec};

/// Collects the crawls a file reads to.
#[derive(Default)]
struct Crawls(Vec<PageCrawl>);

impl ingest::CrawlSink for Crawls {
    fn accept(
        &mut self,
        crawl: PageCrawl,
    ) -> Result<Option<linkstore::ApplyStats>, ingest::SinkError> {
        self.0.push(crawl);
        Ok(None)
    }
}

fn crawls(format: OutputFormat, dir: &std::path::Path) -> (Vec<Vec<PageCrawl>>, u64) {
    let spec = WebSpec {
        domains: 40,
        pages: 400,
        crawls: 3,
        hot_share: 0.5,
        format,
        ..Default::default()
    };
    let generated = generate(&spec, dir, &mut |_, _| {}).unwrap();
    let mut rounds = Vec::new();
    for path in &generated.files {
        let mut sink = Crawls::default();
        let summary = ingest::read_file(path, &Default::default(), &mut sink, &mut |_| {}).unwrap();
        assert_eq!(summary.bad_records, 0, "{}", path.display());
        rounds.push(sink.0);
    }
    (rounds, generated.links)
}

#[test]
fn json_lines_and_wat_read_to_the_same_crawls() {
    let dir = tempfile::tempdir().unwrap();
    let (jsonl, links) = crawls(OutputFormat::JsonLines, &dir.path().join("jsonl"));
    let (wat, _) = crawls(OutputFormat::Wat, &dir.path().join("wat"));
    let html_links = |c: &PageCrawl| match &c.outcome {
        CrawlOutcome::Html { links } => links.len(),
        _ => 0,
    };
    let read: usize = jsonl.iter().flatten().map(html_links).sum();
    assert!(
        read > 10_000 && read as u64 <= links,
        "{read} of {links} links"
    );
    // Redirects and lost pages are among them.
    let outcomes = |f: fn(&CrawlOutcome) -> bool| jsonl.iter().flatten().any(|c| f(&c.outcome));
    assert!(outcomes(|o| matches!(o, CrawlOutcome::Redirect { .. })));
    assert!(outcomes(|o| matches!(o, CrawlOutcome::Gone { .. })));
    assert_eq!(wat, jsonl, "WAT");
}
