//! A bulk build cuts each file into records on one worker and parses the records on
//! every worker. What it reports of a file is what reading the file alone on one thread
//! reports: the same counts, the same first problems in the same order, the same damage.

use bulkbuild::{build, BuildOptions};
use ingest::{read_file, CrawlSink, FileSummary, ReadOptions, SinkError};
use linkstore::{ApplyStats, PageCrawl};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Takes crawls and applies nothing, as a bulk build's reading does.
struct Discard;

impl CrawlSink for Discard {
    fn accept(&mut self, _: PageCrawl) -> Result<Option<ApplyStats>, SinkError> {
        Ok(None)
    }
}

fn read_alone(path: &Path) -> FileSummary {
    read_file(path, &ReadOptions::default(), &mut Discard, &mut |_| {}).unwrap()
}

fn built(dir: &Path, files: &[PathBuf], workers: usize) -> Vec<FileSummary> {
    let opts = BuildOptions {
        workers,
        ..BuildOptions::default()
    };
    build(dir, files, &opts, &|_| {}).unwrap().files
}

/// Good pages, bad records and pages with bad links, interleaved, so that every worker
/// parses some of each and the problems outnumber those a summary lists.
fn mixed_jsonl(path: &Path) {
    let mut text = String::new();
    for i in 0..300 {
        match i % 5 {
            4 => text.push_str("not json at all\n"),
            1 => writeln!(
                text,
                r#"{{"url":"http://p{i}.com/","fetched_at":1700000000,"status":200,"links":[{{"url":"http://[bad","text":"x"}},{{"url":"http://t.com/{i}","text":"t"}}]}}"#
            )
            .unwrap(),
            2 => text.push_str("\n   \n"),
            _ => writeln!(
                text,
                r#"{{"url":"http://q{i}.com/","fetched_at":1700000000,"status":200,"links":[{{"url":"http://t.com/","text":"t"}}]}}"#
            )
            .unwrap(),
        }
    }
    // An unfinished last record.
    text.push_str(r#"{"url":"http://last.com/""#);
    std::fs::write(path, text).unwrap();
}

/// WARC responses with bad links, garbage between records and broken headers (both
/// found by the reader), ending in a truncated record.
fn damaged_warc(path: &Path) {
    let mut out = String::new();
    for i in 0..120 {
        let block = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<a href=\"http://[bad\">x</a><a href=\"/p{i}\">y</a>"
        );
        let header = match i % 7 {
            3 => "WARC-Type response\r\n".to_string(),
            _ => format!("WARC-Type: response\r\nWARC-Target-URI: http://a{i}.com/\r\n"),
        };
        write!(
            out,
            "WARC/1.0\r\n{header}WARC-Date: 2023-11-14T22:13:20Z\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{block}\r\n\r\n",
            block.len()
        )
        .unwrap();
        if i % 5 == 2 {
            out.push_str("garbage between records\r\n");
        }
    }
    out.push_str("WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 999\r\n\r\ncut short");
    std::fs::write(path, out).unwrap();
}

#[test]
fn a_file_parsed_on_every_worker_reports_what_reading_it_alone_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let mixed = tmp.path().join("mixed.jsonl");
    mixed_jsonl(&mixed);
    let warc = tmp.path().join("damaged.warc");
    damaged_warc(&warc);
    for file in [mixed, warc] {
        let alone = read_alone(&file);
        assert!(alone.problems.len() == 20 && alone.bad_records > 20 && alone.bad_links > 20);
        assert_eq!(alone.truncated.is_some(), file.ends_with("damaged.warc"));
        for workers in [1, 2] {
            let dir = tmp.path().join(format!("b{workers}"));
            let got = built(&dir, std::slice::from_ref(&file), workers);
            assert_eq!(
                got,
                std::slice::from_ref(&alone),
                "{}, {workers} workers",
                file.display()
            );
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}

#[test]
fn real_crawl_files_report_the_same_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(files) = testdata::crawl_files() else {
        return;
    };
    let alone: Vec<FileSummary> = files.iter().map(|f| read_alone(f)).collect();
    assert!(alone.iter().any(|s| !s.problems.is_empty()));
    // More files than workers: each worker reads some and parses a share of all.
    let got = built(&tmp.path().join("b"), &files, 2);
    assert_eq!(got, alone);
}
