//! The `linkbase` binary end to end: ingest with a `kill -9` in the middle, then a re-run,
//! must leave exactly the counts of one clean run.

use linkbase_tests::{linkbase, run};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn generate(dir: &Path) -> Vec<String> {
    let spec = webgen::WebSpec {
        pages: 6_000,
        domains: 600,
        crawls: 2,
        ..Default::default()
    };
    let s = webgen::generate(&spec, dir, &mut |_, _| {}).unwrap();
    s.files.iter().map(|p| p.display().to_string()).collect()
}

fn stats(data: &Path, item: Option<&str>) -> String {
    let data = data.to_str().unwrap();
    let mut args = vec!["stats", "--data", data];
    args.extend(item);
    run(&args)
}

/// Starts `linkbase ARGS FILES`, waits for `ready` to exist (so a slow start does not
/// turn the kill into one before any work), lets it run `delay_ms` more, then SIGKILLs it:
/// no destructor, no flush.
fn kill_after(args: &[&str], files: &[String], ready: &Path, delay_ms: u64) {
    let mut child = Command::new(linkbase())
        .args(args)
        .args(files)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !ready.exists() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(delay_ms));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn kill_9_during_incremental_ingest_then_rerun_equals_one_clean_run() {
    let tmp = tempfile::tempdir().unwrap();
    let files = generate(&tmp.path().join("crawl"));
    let clean = tmp.path().join("clean");
    let killed = tmp.path().join("killed");

    let mut args = vec![
        "ingest",
        "--incremental",
        "--batch",
        "200",
        "--data",
        clean.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    run(&args);

    // Kill the ingest at several points; each re-run must converge to the clean state.
    for delay_ms in [300u64, 900] {
        let args = [
            "ingest",
            "--incremental",
            "--batch",
            "200",
            "--data",
            killed.to_str().unwrap(),
        ];
        kill_after(
            &args,
            &files,
            &killed.join("historic").join("CURRENT"),
            delay_ms,
        );
    }
    // The kills really interrupted the ingest: the store holds part of the data.
    let partial = stats(&killed, None);
    let full = stats(&clean, None);
    assert_ne!(
        partial.lines().skip(1).collect::<Vec<_>>(),
        full.lines().skip(1).collect::<Vec<_>>(),
        "the ingest finished before the kill; nothing was tested"
    );

    let mut args = vec![
        "ingest",
        "--incremental",
        "--batch",
        "200",
        "--data",
        killed.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    run(&args);

    let hot = webgen::Web::new(webgen::WebSpec {
        pages: 6_000,
        domains: 600,
        crawls: 2,
        ..Default::default()
    })
    .hot_url();
    let domain = hot
        .trim_start_matches("http://www.")
        .trim_end_matches('/')
        .to_string();
    for item in [None, Some(hot.as_str()), Some(domain.as_str())] {
        let a = stats(&clean, item);
        let b = stats(&killed, item);
        // The first line names the index path, which differs.
        let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
        assert_eq!(body(&a), body(&b), "stats of {item:?}");
        assert!(a.contains("external backlinks"));
    }
    let data = clean.to_str().unwrap();
    let a = run(&["backlinks", "--data", data, "--count", "500", &hot]);
    let b = run(&[
        "backlinks",
        "--data",
        killed.to_str().unwrap(),
        "--count",
        "500",
        &hot,
    ]);
    assert_eq!(a, b);
    assert!(a.lines().count() > 50, "the hot page has many backlinks");
}

#[test]
fn kill_9_during_a_bulk_build_changes_nothing_and_a_rerun_equals_the_incremental_store() {
    let tmp = tempfile::tempdir().unwrap();
    let files = generate(&tmp.path().join("crawl"));
    let incremental = tmp.path().join("incremental");
    let killed = tmp.path().join("killed");
    let mut args = vec![
        "ingest",
        "--incremental",
        "--data",
        incremental.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    run(&args);

    for delay_ms in [200u64, 600] {
        let args = [
            "ingest",
            "--memory",
            "16M",
            "--data",
            killed.to_str().unwrap(),
        ];
        let building = killed.join("historic.building").join("CURRENT");
        kill_after(&args, &files, &building, delay_ms);
        // Nothing was published: the index is still absent, and says so.
        assert!(
            !killed.join("historic").exists(),
            "a killed bulk build left an index behind"
        );
    }

    let mut args = vec![
        "ingest",
        "--memory",
        "16M",
        "--data",
        killed.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    let out = run(&args);
    assert!(out.contains("bulk build"), "{out}");
    assert!(!killed.join("historic.building").exists());
    let hot = webgen::Web::new(webgen::WebSpec {
        pages: 6_000,
        domains: 600,
        crawls: 2,
        ..Default::default()
    })
    .hot_url();
    let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    for item in [None, Some(hot.as_str())] {
        let a = stats(&incremental, item);
        assert_eq!(body(&a), body(&stats(&killed, item)), "stats of {item:?}");
    }
    let backlinks = |d: &Path| {
        run(&[
            "backlinks",
            "--data",
            d.to_str().unwrap(),
            "--count",
            "500",
            &hot,
        ])
    };
    let a = backlinks(&incremental);
    assert_eq!(a, backlinks(&killed));
    assert!(a.lines().count() > 50, "the hot page has many backlinks");
}

#[test]
fn cli_errors_name_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing-here");
    let out = Command::new(linkbase())
        .args(["stats", "--data", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no historic index"), "{err}");

    let out = Command::new(linkbase())
        .args([
            "ingest",
            "--data",
            tmp.path().to_str().unwrap(),
            "--index",
            "weekly",
            "x",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("weekly"));

    let bogus = tmp.path().join("bogus.txt");
    std::fs::write(&bogus, "just some text\n").unwrap();
    let out = Command::new(linkbase())
        .args([
            "ingest",
            "--data",
            tmp.path().join("d").to_str().unwrap(),
            bogus.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus.txt"));
}

#[test]
fn the_shipped_demo_seed_file_is_what_the_generator_writes() {
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/demo-seeds.tsv"),
    )
    .unwrap();
    let generated = webgen::Web::new(webgen::WebSpec::demo(20_000)).seed_file(10);
    assert_eq!(shipped, generated);
}

#[test]
fn flow_publishes_metrics_the_cli_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = webgen::WebSpec::demo(2_000);
    let files = webgen::generate(
        &webgen::WebSpec {
            crawls: 1,
            ..spec.clone()
        },
        &tmp.path().join("crawl"),
        &mut |_, _| {},
    )
    .unwrap();
    let data = tmp.path().join("data");
    let mut args = vec!["ingest", "--data", data.to_str().unwrap()];
    let names: Vec<String> = files
        .files
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    args.extend(names.iter().map(String::as_str));
    run(&args);
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/demo-seeds.tsv");
    let out = run(&[
        "flow",
        "--data",
        data.to_str().unwrap(),
        "--seeds",
        seeds.to_str().unwrap(),
    ]);
    assert!(out.contains("metrics rows"), "{out}");
    let hot = webgen::Web::new(spec).hot_url();
    let stats = run(&["stats", "--data", data.to_str().unwrap(), &hot]);
    let tf: u32 = stats
        .lines()
        .find_map(|l| l.strip_prefix("Trust Flow"))
        .expect("Trust Flow line")
        .trim()
        .parse()
        .unwrap();
    assert!(tf > 0, "the most linked page, linked from seeds, has trust");
    let rows = run(&[
        "backlinks",
        "--data",
        data.to_str().unwrap(),
        "--count",
        "50",
        &hot,
    ]);
    let tfs: Vec<u32> = rows
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap().parse().unwrap())
        .collect();
    assert!(
        tfs.windows(2).all(|w| w[0] >= w[1]),
        "ordered by SourceTrustFlow: {tfs:?}"
    );
    assert!(tfs[0] > 0);

    // A reader that closes the pipe before the rows come (`... | head`) ends the
    // command quietly, with the status of a process SIGPIPE ended (128 + 13): no panic.
    let mut early_close = Command::new(linkbase())
        .args([
            "backlinks",
            "--data",
            data.to_str().unwrap(),
            "--count",
            "5000",
        ])
        .arg(&hot)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(early_close.stdout.take());
    let out = early_close.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let bad = tmp.path().join("bad-seeds.tsv");
    std::fs::write(&bad, "tangoblue0.nl\tNot A Topic\n").unwrap();
    let out = Command::new(linkbase())
        .args([
            "flow",
            "--data",
            data.to_str().unwrap(),
            "--seeds",
            bad.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad-seeds.tsv:1") && err.contains("Not A Topic"),
        "{err}"
    );
}

/// `linkbase demo` on a 1,500-page web in `dir`: the server, its output up to the API
/// key, and the key.
fn demo(dir: &Path) -> (linkbase_tests::Server, String, String) {
    let srv = linkbase_tests::Server::spawn(&[
        "demo",
        "--dir",
        dir.to_str().unwrap(),
        "--pages",
        "1500",
        "--listen",
        "127.0.0.1:0",
    ]);
    let out = srv.wait_for_output("API key: ");
    let key = out
        .split("API key: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string();
    (srv, out, key)
}

#[test]
fn the_demo_fills_both_indexes_and_serves_them() {
    let dir = tempfile::tempdir().unwrap();
    let (srv, _, key) = demo(dir.path());
    let stats = srv.get(
        "/api/json",
        &[("app_api_key", &key), ("cmd", "GetIndexStats")],
    );
    let rows = stats["DataTables"]["IndexStats"]["Data"]
        .as_array()
        .unwrap();
    let (historic, fresh) = (&rows[0], &rows[1]);
    assert_eq!(fresh["IndexName"], "fresh");
    assert!(fresh["CrawledURLs"].as_i64().unwrap() > 0, "{fresh}");
    // Fresh holds the recent crawls, historic the whole history.
    assert!(
        fresh["FirstBackLinkDate"].as_str() > historic["FirstBackLinkDate"].as_str(),
        "{historic} {fresh}"
    );
    assert_eq!(
        fresh["MostRecentBackLinkDate"],
        historic["MostRecentBackLinkDate"]
    );
    let hot = webgen::Web::new(webgen::WebSpec::demo(1500)).hot_url();
    let info = |index: &str| {
        let r = srv.get(
            "/api/json",
            &[
                ("app_api_key", &key),
                ("cmd", "GetIndexItemInfo"),
                ("items", "1"),
                ("item0", &hot),
                ("datasource", index),
            ],
        );
        r["DataTables"]["Results"]["Data"][0].clone()
    };
    let (h, f) = (info("historic"), info("fresh"));
    assert!(f["ExtBackLinks"].as_i64().unwrap() > 0, "{f}");
    assert!(f["TrustFlow"].as_i64().unwrap() > 0, "fresh has flows: {f}");
    assert!(f["ExtBackLinks"].as_i64() <= h["ExtBackLinks"].as_i64());
}

/// A store as an earlier build left it: `meta/format` of another version.
fn older_store(path: &Path) {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let db = rocksdb::DB::open_cf(&opts, path, ["meta"]).unwrap();
    let meta = db.cf_handle("meta").unwrap();
    db.put_cf(meta, b"format", [linkstore::FORMAT_VERSION - 1, 64])
        .unwrap();
}

/// The demo's indexes and the sandbox hold only what they generate: ones an earlier
/// build wrote in another storage format are built again, not refused.
#[test]
fn the_demo_rebuilds_its_indexes_and_the_sandbox_from_another_storage_format() {
    let dir = tempfile::tempdir().unwrap();
    older_store(&dir.path().join("data/historic"));
    older_store(&dir.path().join("data/sandbox/historic"));
    let (srv, out, key) = demo(dir.path());
    assert!(out.contains("rebuilt in format"), "{out}");
    let hot = webgen::Web::new(webgen::WebSpec::demo(1500)).hot_url();
    for path in ["/api/json", "/sandbox/api/json"] {
        let r = srv.get(
            path,
            &[
                ("app_api_key", &key),
                ("cmd", "GetIndexItemInfo"),
                ("items", "1"),
                ("item0", &hot),
            ],
        );
        assert_eq!(r["Code"], "OK", "{path}: {r}");
        let row = &r["DataTables"]["Results"]["Data"][0];
        assert!(row["ExtBackLinks"].as_i64().unwrap() > 0, "{path}: {row}");
    }
}

#[test]
fn serve_reads_every_setting_from_a_config_file_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let account = linkbase_tests::create_account(&data, "c", [10, 10, 10], &[]);
    let key = linkbase_tests::create_key(&data, account);
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "data = {:?}\nlisten = \"not an address\"\nfresh_window_days = 30\nno_sandbox = true\ntoken_ttl = \"12h\"\ntrusted_proxies = [\"127.0.0.1\"]\nnotify_allow = [\"10.0.0.0/8\"]\nmax_connections = 100\nwrite_timeout = 10\nmax_heavy = 3\nmax_heavy_per_account = 1\n",
            data.display().to_string()
        ),
    )
    .unwrap();
    // The file's bad address is overridden by the flag.
    let srv = linkbase_tests::Server::spawn(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let r = srv.get(
        "/api/json",
        &[("app_api_key", &key), ("cmd", "GetIndexStats")],
    );
    assert_eq!(r["Code"], "OK", "{r}");
    let rows = r["DataTables"]["IndexStats"]["Data"].as_array().unwrap();
    assert_eq!(rows[1]["WindowDays"], 30, "fresh_window_days from the file");
    let sandbox = ureq::get(&format!("http://{}/sandbox/api/json", srv.addr))
        .query("app_api_key", &key)
        .query("cmd", "GetIndexStats")
        .call();
    assert!(sandbox.is_err(), "no_sandbox from the file");
    drop(srv);

    // Without the flag the file's address is used, and refused by name.
    let e = linkbase_tests::run_failing(&["serve", "--config", config.to_str().unwrap()]);
    assert!(e.contains("not an address"), "{e}");
    // Unknown settings and bad values name the file and the setting.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "data = \"x\"\ncolour = \"blue\"\n").unwrap();
    let e = linkbase_tests::run_failing(&["serve", "--config", bad.to_str().unwrap()]);
    assert!(e.contains("colour") && e.contains("bad.toml"), "{e}");
    std::fs::write(&bad, "data = \"x\"\ntrusted_proxies = [\"10.0.0.0/40\"]\n").unwrap();
    let e = linkbase_tests::run_failing(&["serve", "--config", bad.to_str().unwrap()]);
    assert!(
        e.contains("trusted_proxies") && e.contains("10.0.0.0/40"),
        "{e}"
    );
    let e = linkbase_tests::run_failing(&["serve"]);
    assert!(e.contains("--data"), "{e}");
}
