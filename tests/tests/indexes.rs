//! The fresh and historic indexes end to end: crawls ingested into fresh while a load of
//! API requests runs, the fresh window expiring, historic builds swapped in while serving
//! (and one killed half-way), `datasource` choosing the data of every command, and a
//! snapshot's root domains with one linked host answering as a full index does.

use linkbase_tests::{code, create_account, create_key, linkbase, run, run_failing, Server};
use serde_json::Value;
use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Crawl files of a generated web, one per round, 30 days apart.
fn crawls(dir: &Path, pages: usize, rounds: usize) -> (webgen::WebSpec, Vec<String>) {
    let spec = webgen::WebSpec {
        crawls: rounds,
        ..webgen::WebSpec::demo(pages)
    };
    let files = webgen::generate(&spec, &dir.join("crawl"), &mut |_, _| {}).unwrap();
    (
        spec,
        files
            .files
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    )
}

fn seeds() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/demo-seeds.tsv")
        .display()
        .to_string()
}

fn api(srv: &Server, key: &str, params: &[(&str, &str)]) -> Value {
    let mut all = vec![("app_api_key", key)];
    all.extend_from_slice(params);
    srv.get("/api/json", &all)
}

fn ok(v: Value) -> Value {
    assert_eq!(code(&v), "OK", "{v}");
    v
}

fn rows(reply: &Value, table: &str) -> Vec<Value> {
    reply["DataTables"][table]["Data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn int(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Statistics row of one index from GetIndexStats.
fn stats(srv: &Server, key: &str, index: &str) -> Value {
    let r = ok(api(srv, key, &[("cmd", "GetIndexStats")]));
    rows(&r, "IndexStats")
        .into_iter()
        .find(|row| row["IndexName"] == index)
        .unwrap()
}

fn ext_backlinks(srv: &Server, key: &str, item: &str, index: &str) -> i64 {
    let r = ok(api(
        srv,
        key,
        &[
            ("cmd", "GetIndexItemInfo"),
            ("items", "1"),
            ("item0", item),
            ("datasource", index),
        ],
    ));
    int(&rows(&r, "Results")[0]["ExtBackLinks"])
}

/// Every backlink (up to 50,000) of an item in one index.
fn backlinks(srv: &Server, key: &str, item: &str, index: &str) -> Vec<Value> {
    rows(
        &ok(api(
            srv,
            key,
            &[
                ("cmd", "GetBackLinkData"),
                ("item", item),
                ("Count", "50000"),
                ("datasource", index),
            ],
        )),
        "BackLinks",
    )
}

fn account(data: &Path) -> String {
    let id = create_account(data, "ops", [1 << 40, 1 << 50, 1 << 50], &[]);
    create_key(data, id)
}

#[test]
fn fresh_ingest_while_serving_is_seen_one_whole_file_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, files) = crawls(dir.path(), 3_000, 3);
    let hot = webgen::Web::new(spec).hot_url();

    // The states readers may see: after 0, 1, 2 or 3 whole files (measured on a copy
    // ingested without a server).
    let reference = dir.path().join("reference");
    let r = reference.to_str().unwrap();
    let mut whole_file_states = vec![0];
    for f in &files {
        run(&["ingest", "--data", r, "--index", "fresh", f]);
        let out = run(&["stats", "--data", r, "--index", "fresh", &hot]);
        let n = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("external backlinks"))
            .map(|v| v.trim().replace(',', "").parse::<i64>().unwrap())
            .unwrap_or_else(|| panic!("no backlinks line in {out}"));
        whole_file_states.push(n);
    }
    assert!(
        whole_file_states.windows(2).all(|w| w[0] < w[1]),
        "{whole_file_states:?}"
    );

    let data = dir.path().join("data");
    let key = account(&data);
    let srv = Arc::new(Server::start(&data, &["--no-sandbox"]));
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..3)
        .map(|_| {
            let (srv, key, stop, hot) = (srv.clone(), key.clone(), stop.clone(), hot.clone());
            std::thread::spawn(move || {
                // What this reader saw, in order: backlinks of the hot page, URLs found.
                let mut seen: Vec<(i64, i64)> = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let n = ext_backlinks(&srv, &key, &hot, "fresh");
                    let found = int(&stats(&srv, &key, "fresh")["IndexedURLs"]);
                    seen.push((n, found));
                }
                seen
            })
        })
        .collect();
    let d = data.to_str().unwrap();
    for f in &files {
        let out = run(&["ingest", "--data", d, "--index", "fresh", f]);
        assert!(
            out.contains("handing the files to it") && out.contains("pages="),
            "{out}"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<Vec<(i64, i64)>> = load.into_iter().map(|t| t.join().unwrap()).collect();
    let requests: usize = seen.iter().map(Vec::len).sum();
    assert!(requests > 50, "the load ran: {requests}");
    for reader in &seen {
        assert!(
            reader
                .windows(2)
                .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1),
            "counts went back: {reader:?}"
        );
    }
    let distinct: BTreeSet<i64> = seen.iter().flatten().map(|s| s.0).collect();
    assert!(
        distinct.iter().all(|n| whole_file_states.contains(n)),
        "a half-applied file was visible: saw {distinct:?}, whole files give {whole_file_states:?}"
    );
    assert!(
        distinct.len() >= 2,
        "the load saw the index grow: {distinct:?}"
    );
    assert_eq!(
        ext_backlinks(&srv, &key, &hot, "fresh"),
        *whole_file_states.last().unwrap()
    );
    // The historic index was not touched.
    assert_eq!(ext_backlinks(&srv, &key, &hot, "historic"), 0);
}

#[test]
fn the_fresh_window_keeps_only_its_days() {
    let dir = tempfile::tempdir().unwrap();
    // Five rounds 30 days apart: 120 days of crawls, a 45-day window.
    let (spec, files) = crawls(dir.path(), 2_000, 5);
    let hot = webgen::Web::new(spec).hot_url();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let mut args = vec!["ingest", "--data", d, "--index", "historic"];
    args.extend(files.iter().map(String::as_str));
    run(&args);
    let key = account(&data);
    let srv = Server::start(&data, &["--no-sandbox", "--fresh-window-days", "45"]);
    for f in &files {
        run(&["ingest", "--data", d, "--index", "fresh", f]);
    }
    let fresh = stats(&srv, &key, "fresh");
    let historic = stats(&srv, &key, "historic");
    assert_eq!(fresh["WindowDays"], 45);
    let last = linkstore::parse_day(fresh["MostRecentBackLinkDate"].as_str().unwrap()).unwrap();
    let first = linkstore::parse_day(fresh["FirstBackLinkDate"].as_str().unwrap()).unwrap();
    assert_eq!(first, last - 44, "the window's first day: {fresh}");
    assert!(int(&fresh["CrawledURLs"]) < int(&historic["CrawledURLs"]));
    assert!(int(&fresh["IndexedURLs"]) < int(&historic["IndexedURLs"]));

    // Fresh holds exactly the historic links still inside the window.
    let backlinks = |index: &str| backlinks(&srv, &key, &hot, index);
    let day = |v: &Value| v.as_str().and_then(linkstore::parse_day).unwrap_or(0);
    let in_window: HashSet<(String, String)> = backlinks("historic")
        .iter()
        .filter(|r| day(&r["LastSeenDate"]) >= first)
        .filter(|r| r["FlagDeleted"] == 0 || day(&r["DateLost"]) >= first)
        .map(|r| (r["SourceURL"].to_string(), r["TargetURL"].to_string()))
        .collect();
    let fresh_rows = backlinks("fresh");
    let in_fresh: HashSet<(String, String)> = fresh_rows
        .iter()
        .map(|r| (r["SourceURL"].to_string(), r["TargetURL"].to_string()))
        .collect();
    assert!(!in_fresh.is_empty());
    assert_eq!(in_fresh, in_window);
    assert!(in_fresh.len() < backlinks("historic").len());
    // Its counters describe the window too.
    assert_eq!(
        ext_backlinks(&srv, &key, &hot, "fresh"),
        fresh_rows.len() as i64
    );
    let fresh_info = ok(api(
        &srv,
        &key,
        &[
            ("cmd", "GetIndexItemInfo"),
            ("items", "1"),
            ("item0", &hot),
            ("datasource", "fresh"),
        ],
    ));
    let deleted = fresh_rows.iter().filter(|r| r["FlagDeleted"] == 1).count() as i64;
    assert_eq!(
        int(&rows(&fresh_info, "Results")[0]["NonUniqueLinkTypeDeleted"]),
        deleted
    );
    assert!(fresh_info["UniqueIndexID"]
        .as_str()
        .unwrap()
        .ends_with("-FRESH"));
    assert_eq!(fresh_info["FirstBackLinkDate"], fresh["FirstBackLinkDate"]);

    // Flow metrics of fresh, computed by the running server, are served at once.
    let trust = || {
        let r = ok(api(
            &srv,
            &key,
            &[
                ("cmd", "GetIndexItemInfo"),
                ("items", "1"),
                ("item0", &hot),
                ("datasource", "fresh"),
            ],
        ));
        int(&rows(&r, "Results")[0]["TrustFlow"])
    };
    assert_eq!(trust(), 0, "no flow build on fresh yet");
    let out = run(&["flow", "--data", d, "--index", "fresh", "--seeds", &seeds()]);
    assert!(out.contains("fresh flow: urls="), "{out}");
    assert!(trust() > 0);
    let top = backlinks("fresh");
    assert!(top
        .windows(2)
        .all(|w| int(&w[0]["SourceTrustFlow"]) >= int(&w[1]["SourceTrustFlow"])));
    assert!(int(&top[0]["SourceTrustFlow"]) > 0);
    assert_eq!(top.len(), fresh_rows.len());
}

fn unique_index_id(srv: &Server, key: &str) -> String {
    stats(srv, key, "historic")["UniqueIndexID"]
        .as_str()
        .unwrap()
        .to_string()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn snapshots(data: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("historic") && !n.contains('.'))
        .collect();
    names.sort();
    names
}

#[test]
fn historic_builds_swap_in_while_serving_and_a_killed_build_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, files) = crawls(dir.path(), 2_000, 3);
    let hot = webgen::Web::new(spec.clone()).hot_url();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let seeds = seeds();

    // A first snapshot of the first crawl round only, by date range.
    let round = |r: i64| linkstore::format_day(linkstore::day_of(spec.start + r * 30 * 86_400));
    let first_round = round(0);
    let mut args = vec!["historic", "build", "--data", d, "--seeds", &seeds];
    let to = round(1);
    let range = ["--from", first_round.as_str(), "--to", to.as_str()];
    args.extend(range);
    args.extend(files.iter().map(String::as_str));
    let out = run(&args);
    assert!(out.contains("outside the date range"), "{out}");
    assert_eq!(snapshots(&data).len(), 1);
    let key = account(&data);
    let srv = Arc::new(Server::start(&data, &["--no-sandbox"]));
    let first_id = unique_index_id(&srv, &key);
    let before = ext_backlinks(&srv, &key, &hot, "historic");
    assert!(before > 0);
    let s = stats(&srv, &key, "historic");
    assert_eq!(s["FirstBackLinkDate"], first_round.as_str());
    assert_eq!(s["MostRecentBackLinkDate"], to.as_str());

    // A load on historic while a full build runs and is swapped in.
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let load: Vec<_> = (0..2)
        .map(|_| {
            let (srv, key, stop, errors, hot) = (
                srv.clone(),
                key.clone(),
                stop.clone(),
                errors.clone(),
                hot.clone(),
            );
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let r = api(
                        &srv,
                        &key,
                        &[("cmd", "GetBackLinkData"), ("item", &hot), ("Count", "100")],
                    );
                    if code(&r) != "OK" {
                        errors.lock().unwrap().push(r.to_string());
                    }
                    n += 1;
                }
                n
            })
        })
        .collect();
    // Sleep a second: snapshot names carry the build time to the second.
    std::thread::sleep(Duration::from_millis(1100));
    let mut args = vec!["historic", "build", "--data", d, "--seeds", &seeds];
    args.extend(files.iter().map(String::as_str));
    let out = run(&args);
    assert!(out.contains("historic snapshot historic-"), "{out}");
    assert!(out.contains("the running server removes it"), "{out}");
    wait_for("the server to switch", || {
        unique_index_id(&srv, &key) != first_id
    });
    let after = ext_backlinks(&srv, &key, &hot, "historic");
    assert!(after > before, "{before} -> {after}");
    stop.store(true, Ordering::SeqCst);
    let requests: usize = load.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(requests > 10);
    assert_eq!(errors.lock().unwrap().as_slice(), &[] as &[String]);
    wait_for("the old snapshot to be removed", || {
        snapshots(&data).len() == 1
    });
    let serving = std::fs::read_to_string(data.join("historic.current")).unwrap();
    assert_eq!(snapshots(&data), [serving.trim().to_string()]);

    // A build killed half-way changes nothing that is served.
    let big = dir.path().join("big");
    let (_, big_files) = crawls(&big, 40_000, 1);
    let second_id = unique_index_id(&srv, &key);
    std::thread::sleep(Duration::from_millis(1100));
    let mut child = std::process::Command::new(linkbase())
        .args(["historic", "build", "--data", d])
        .args(&big_files)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The build's directory, or the scratch and kept files beside it.
    let building = || {
        std::fs::read_dir(&data)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains(".building"))
    };
    wait_for("the build to start", building);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "killed while still running"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(building(), "the killed build left its work");
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(unique_index_id(&srv, &key), second_id);
    assert_eq!(ext_backlinks(&srv, &key, &hot, "historic"), after);
    assert_eq!(
        std::fs::read_to_string(data.join("historic.current")).unwrap(),
        serving
    );
    // The next build clears the leftovers.
    std::thread::sleep(Duration::from_millis(1100));
    let mut args = vec!["historic", "build", "--data", d, "--seeds", &seeds];
    args.extend(files.iter().map(String::as_str));
    run(&args);
    assert!(!building());
    wait_for("the third snapshot", || {
        unique_index_id(&srv, &key) != second_id
    });
    assert_eq!(
        ext_backlinks(&srv, &key, &hot, "historic"),
        after,
        "same files, same data"
    );
}

#[test]
fn datasource_selects_the_index_of_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, files) = crawls(dir.path(), 1_500, 2);
    let hot = webgen::Web::new(spec).hot_url();
    let domain = {
        let host = linkstore::host_of(&hot).to_string();
        linkstore::root_domain(&host).unwrap().to_string()
    };
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    // Historic: both rounds; fresh: the first round only. Different data, same items.
    let mut args = vec!["ingest", "--data", d, "--index", "historic"];
    args.extend(files.iter().map(String::as_str));
    run(&args);
    run(&["ingest", "--data", d, "--index", "fresh", &files[0]]);
    for index in ["historic", "fresh"] {
        run(&["flow", "--data", d, "--index", index, "--seeds", &seeds()]);
    }
    let key = account(&data);
    let srv = Server::start(&data, &["--no-sandbox"]);

    let fresh_n = ext_backlinks(&srv, &key, &hot, "fresh");
    let historic_n = ext_backlinks(&srv, &key, &hot, "historic");
    assert!(
        fresh_n > 0 && fresh_n < historic_n,
        "{fresh_n} {historic_n}"
    );
    assert_eq!(ext_backlinks(&srv, &key, &hot, "HISTORIC"), historic_n);
    let commands: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("GetIndexItemInfo", vec![("items", "1"), ("item0", &hot)]),
        ("GetBackLinkData", vec![("item", &hot), ("Count", "50000")]),
        (
            "GetRefDomains",
            vec![
                ("item0", &domain),
                ("Count", "50000"),
                ("AnalysisDepth", "100000"),
            ],
        ),
        ("GetAnchorText", vec![("item", &domain), ("Count", "1000")]),
        ("GetNewLostBackLinks", vec![("item", &domain)]),
        ("GetNewLostBackLinkCalendar", vec![("item", &domain)]),
        ("GetTopics", vec![("item", &domain)]),
        ("GetSubscriptionInfo", vec![]),
        ("GetIndexStats", vec![]),
    ];
    let mut differing = 0;
    for (cmd, params) in &commands {
        let mut answers = Vec::new();
        for index in ["historic", "fresh"] {
            let mut p = vec![("cmd", *cmd), ("datasource", index)];
            p.extend(params.iter().copied());
            let r = ok(api(&srv, &key, &p));
            let fresh = index == "fresh";
            assert_eq!(r["IndexType"], i64::from(fresh), "{cmd} {index}");
            let id = r["UniqueIndexID"].as_str().unwrap();
            assert!(
                id.ends_with(if fresh { "-FRESH" } else { "-HISTORICAL" }),
                "{cmd}: {id}"
            );
            answers.push(r["DataTables"].clone());
        }
        differing += usize::from(answers[0] != answers[1]);
    }
    // Every data command answers differently for the two indexes (the two statistics
    // commands list both indexes whichever is named).
    assert_eq!(differing, commands.len() - 2);
    let backlink_rows = |index: &str| backlinks(&srv, &key, &hot, index).len() as i64;
    assert_eq!(backlink_rows("fresh"), fresh_n);
    assert_eq!(backlink_rows("historic"), historic_n);

    // DownloadBackLinks exports the named index.
    for (index, expected) in [("fresh", fresh_n), ("historic", historic_n)] {
        let r = api(
            &srv,
            &key,
            &[
                ("cmd", "DownloadBackLinks"),
                ("Query", &hot),
                ("datasource", index),
            ],
        );
        assert_eq!(code(&r), "QueuedForProcessing");
        let id = r["DownloadJobID"].as_str().unwrap().to_string();
        let mut done = None;
        wait_for("the export", || {
            let list = ok(api(
                &srv,
                &key,
                &[("cmd", "GetDownloadsList"), ("DownloadJobID", &id)],
            ));
            let job = rows(&list, "Downloads")[0].clone();
            let finished = job["Status"] == 4;
            done = finished.then_some(job);
            finished
        });
        let info = done.unwrap()["AnalysisProgressInfo"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(info, format!("{expected} rows"), "{index}");
    }
}

#[test]
fn a_historic_snapshot_is_rebuilt_not_ingested_into() {
    let dir = tempfile::tempdir().unwrap();
    let (_, files) = crawls(dir.path(), 500, 2);
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let seeds = seeds();
    run(&[
        "historic", "build", "--data", d, "--seeds", &seeds, &files[0],
    ]);
    let totals = || run(&["stats", "--data", d]);
    let before = totals();

    let err = run_failing(&["ingest", "--data", d, &files[1]]);
    assert!(
        err.contains("historic build") && err.contains("--index fresh"),
        "{err}"
    );
    assert_eq!(totals(), before, "the refused ingest changed the snapshot");

    // The same files make a new snapshot; the fresh index takes crawls one by one.
    run(&[
        "historic", "build", "--data", d, "--seeds", &seeds, &files[0], &files[1],
    ]);
    assert_ne!(totals(), before);
    run(&["ingest", "--data", d, "--index", "fresh", &files[0]]);
    run(&["ingest", "--data", d, "--index", "fresh", &files[1]]);
}

/// A first ingest into the historic index builds a snapshot, as a historic build does:
/// a later ingest into it is refused and changes nothing, while the fresh index, and a
/// historic index filled with `--incremental`, take crawls one by one. Rebuilt from both
/// files, the snapshot answers as the index that took them one by one.
#[test]
fn a_first_ingest_into_historic_makes_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (_, files) = crawls(dir.path(), 500, 2);
    let path = |name: &str| dir.path().join(name).display().to_string();
    let (snapshot, one_by_one, rebuilt) = (path("bulk"), path("one-by-one"), path("rebuilt"));
    // The first line names the index's directory.
    let totals = |d: &str| {
        let out = run(&["stats", "--data", d]);
        out.lines().skip(1).collect::<Vec<_>>().join("\n")
    };

    run(&["ingest", "--data", &snapshot, &files[0]]);
    let before = totals(&snapshot);
    let err = run_failing(&["ingest", "--data", &snapshot, &files[1], &files[0]]);
    assert!(
        err.contains("snapshot") && err.contains("historic build") && err.contains("--index fresh"),
        "{err}"
    );
    assert_eq!(err.matches("snapshot").count(), 1, "refused once: {err}");
    assert_eq!(
        totals(&snapshot),
        before,
        "the refused ingest changed the snapshot"
    );
    run(&["ingest", "--data", &snapshot, "--index", "fresh", &files[0]]);
    run(&["ingest", "--data", &snapshot, "--index", "fresh", &files[1]]);

    run(&["ingest", "--incremental", "--data", &one_by_one, &files[0]]);
    run(&["ingest", "--data", &one_by_one, &files[1]]);
    run(&["ingest", "--data", &rebuilt, &files[0], &files[1]]);
    assert_ne!(totals(&rebuilt), before);
    assert_eq!(totals(&rebuilt), totals(&one_by_one));
}

/// A snapshot's root domain whose backlinks all point to one host keeps no views of its
/// own and reads the host's (`docs/format.md`, "Snapshots"): over HTTP every command
/// answers for it as the fresh index, built from the same files with all its rows, does.
#[test]
fn a_snapshots_root_domains_with_one_host_answer_as_a_full_index() {
    let dir = tempfile::tempdir().unwrap();
    let (_, files) = crawls(dir.path(), 1_000, 2);
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let seeds = seeds();
    let mut build = vec!["historic", "build", "--data", d, "--seeds", &seeds];
    build.extend(files.iter().map(String::as_str));
    run(&build);
    let mut ingest = vec!["ingest", "--data", d, "--index", "fresh"];
    ingest.extend(files.iter().map(String::as_str));
    run(&ingest);
    run(&["flow", "--data", d, "--index", "fresh", "--seeds", &seeds]);

    // The root domains the snapshot names a host for, among every linked root domain.
    let snapshot = std::fs::read_to_string(data.join("historic.current")).unwrap();
    let store = linkstore::Store::open(data.join(snapshot.trim()), &Default::default()).unwrap();
    let read = store.read();
    let mut linked = BTreeSet::new();
    read.scan_links(|rec| {
        let [.., domain] = linkstore::Item::levels_of_url(&rec.target_url);
        linked.insert(domain);
    })
    .unwrap();
    let mut domains = BTreeSet::new();
    for domain in linked {
        if read.linked_host(&domain).unwrap().is_some() {
            domains.insert(domain.name);
        }
    }
    drop(read);
    drop(store);
    assert!(domains.len() > 20, "{} root domains", domains.len());

    let key = account(&data);
    let srv = Server::start(&data, &["--no-sandbox"]);
    for domain in &domains {
        let commands: Vec<(&str, Vec<(&str, &str)>)> = vec![
            ("GetIndexItemInfo", vec![("items", "1"), ("item0", domain)]),
            (
                "GetBackLinkData",
                vec![("item", domain), ("Count", "50000")],
            ),
            (
                "GetBackLinkData",
                vec![
                    ("item", domain),
                    ("Count", "1000"),
                    ("MaxSourceURLsPerRefDomain", "1"),
                ],
            ),
            (
                "GetRefDomains",
                vec![
                    ("item0", domain),
                    ("Count", "50000"),
                    ("AnalysisDepth", "100000"),
                ],
            ),
            ("GetAnchorText", vec![("item", domain), ("Count", "1000")]),
            ("GetNewLostBackLinks", vec![("item", domain)]),
            ("GetNewLostBackLinkCalendar", vec![("item", domain)]),
        ];
        for (cmd, params) in &commands {
            let answer = |index: &str| {
                let mut p = vec![("cmd", *cmd), ("datasource", index)];
                p.extend(params.iter().copied());
                ok(api(&srv, &key, &p))["DataTables"].clone()
            };
            assert_eq!(answer("historic"), answer("fresh"), "{cmd} {domain}");
        }
    }
}
