//! The Site Explorer in headless Chromium against the real server: search an item of the
//! demo web, compare every number shown with the API's own answer, click through each
//! tab, sort and page, export, switch index and sandbox, show errors, and save
//! screenshots (under `target/tmp/explorer-screenshots/`).

use linkbase_tests::{create_account, create_key, run, Browser, Server};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn demo_data(dir: &Path) -> PathBuf {
    let spec = webgen::WebSpec {
        crawls: 2,
        ..webgen::WebSpec::demo(2_000)
    };
    let files = webgen::generate(&spec, &dir.join("crawl"), &mut |_, _| {}).unwrap();
    let data = dir.join("data");
    let d = data.to_str().unwrap().to_string();
    let mut args = vec!["ingest".to_string(), "--data".into(), d.clone()];
    args.extend(files.files.iter().map(|p| p.display().to_string()));
    run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/demo-seeds.tsv");
    run(&["flow", "--data", &d, "--seeds", seeds.to_str().unwrap()]);
    data
}

fn api(srv: &Server, key: &str, params: &[(&str, &str)]) -> Value {
    let mut all = vec![("app_api_key", key)];
    all.extend_from_slice(params);
    let r = srv.get("/api/json", &all);
    assert_eq!(r["Code"], "OK", "{params:?}: {r}");
    r
}

fn rows(reply: &Value, table: &str) -> Vec<Value> {
    reply["DataTables"][table]["Data"]
        .as_array()
        .unwrap()
        .clone()
}

/// A number as the page writes it (en-US grouping).
fn grouped(n: i64) -> String {
    let digits = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

fn int(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn site_explorer_in_chromium() {
    let Some(browser) = Browser::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = demo_data(dir.path());
    let account = create_account(&data, "explorer", [1_000, 10_000_000, 10_000_000], &[]);
    let key = create_key(&data, account);
    // The test's own reads are charged elsewhere, so the page's account sees only its own.
    let checker = create_account(&data, "checker", [1_000, 10_000_000, 10_000_000], &[]);
    let check_key = create_key(&data, checker);
    let srv = Server::start(&data, &[]);
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("explorer-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = |name: &str| browser.screenshot(&shots.join(format!("{name}.png")));
    let item = "tangoblue0.nl";

    // `/` leads to the tool; sign in and search.
    browser.goto(&format!("http://{}/", srv.addr));
    browser.wait("document.querySelector('#search')");
    assert!(browser.run("return location.pathname;").as_str() == Some("/explorer/"));
    browser.fill("#key", &key);
    browser.fill("#item", item);
    browser.click("#go");
    browser.wait("document.querySelector('#result').dataset.ready === '1' && document.querySelector('#panel').dataset.ready === '1'");
    assert_eq!(
        browser.run("return document.querySelector('#status').className;"),
        ""
    );

    // The summary shows what GetIndexItemInfo says.
    let info = api(
        &srv,
        &check_key,
        &[
            ("cmd", "GetIndexItemInfo"),
            ("items", "1"),
            ("item0", item),
            ("DesiredTopics", "10"),
        ],
    );
    let r = &rows(&info, "Results")[0];
    let shown = |field: &str| browser.text(&format!("#summary dd[data-field={field}]"));
    assert_eq!(shown("TrustFlow"), r["TrustFlow"].to_string());
    assert_eq!(shown("CitationFlow"), r["CitationFlow"].to_string());
    for field in ["ExtBackLinks", "RefDomains", "RefIPs"] {
        assert_eq!(shown(field), grouped(int(&r[field])), "{field}");
    }
    let total = int(&r["TotalNonUniqueLinks"]) as f64;
    let deleted = 100.0 * int(&r["NonUniqueLinkTypeDeleted"]) as f64 / total;
    assert_eq!(shown("DeletedShare"), format!("{deleted:.1}%"));
    let nofollow = 100.0 * int(&r["NonUniqueLinkTypeNoFollow"]) as f64 / total;
    assert_eq!(shown("NoFollowShare"), format!("{nofollow:.1}%"));
    assert!(int(&r["ExtBackLinks"]) > 1_000, "a well-linked demo item");

    // Overview: one bar per topic, one point per referring domain.
    let topics = (0..10)
        .filter(|i| {
            r[format!("TopicalTrustFlow_Topic_{i}")]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .count();
    assert!(topics > 0);
    assert_eq!(browser.count("#topics-chart rect.bar"), topics);
    let domains = rows(
        &api(
            &srv,
            &check_key,
            &[
                ("cmd", "GetRefDomains"),
                ("item0", item),
                ("Count", "1000"),
                ("AnalysisDepth", "1000"),
            ],
        ),
        "Results",
    );
    assert_eq!(browser.count("#flow-chart circle.point"), domains.len());
    shot("1-overview");

    let open_tab = |tab: &str| {
        browser.click(&format!("#tabs button[data-tab={tab}]"));
        browser.wait(&format!(
            "document.querySelector('#panel').dataset.tab === '{tab}' && document.querySelector('#panel').dataset.ready === '1'"
        ));
    };
    let table_info = || browser.text("#panel .toolbar .info");
    let first_cell = || browser.text("#panel tbody tr:first-child td:first-child");

    // Backlinks: the API's rows, paged by 100, sortable, exportable.
    open_tab("backlinks");
    let backlinks = rows(
        &api(
            &srv,
            &check_key,
            &[
                ("cmd", "GetBackLinkData"),
                ("item", item),
                ("Count", "1000"),
            ],
        ),
        "BackLinks",
    );
    assert_eq!(
        table_info(),
        format!("rows 1–100 of {}", grouped(backlinks.len() as i64))
    );
    assert_eq!(browser.count("#panel tbody tr"), 100);
    assert_eq!(first_cell(), backlinks[0]["SourceURL"].as_str().unwrap());
    browser.click("#panel button.next");
    assert_eq!(
        table_info(),
        format!("rows 101–200 of {}", grouped(backlinks.len() as i64))
    );
    assert_eq!(first_cell(), backlinks[100]["SourceURL"].as_str().unwrap());
    // Numeric columns sort descending first, then ascending.
    browser.click("#panel th[data-key=SourceTrustFlow]");
    browser.click("#panel th[data-key=SourceTrustFlow]");
    let lowest = backlinks
        .iter()
        .map(|b| int(&b["SourceTrustFlow"]))
        .min()
        .unwrap();
    assert_eq!(
        browser.text("#panel tbody tr:first-child td:nth-child(4)"),
        grouped(lowest)
    );
    assert_eq!(
        browser.run("return document.querySelector('#panel th[data-key=SourceTrustFlow]').getAttribute('aria-sort');"),
        "ascending"
    );
    let csv = browser.run("return explorer.csv('backlinks');");
    let csv = csv.as_str().unwrap();
    assert_eq!(csv.lines().count(), backlinks.len() + 1);
    assert!(
        csv.starts_with("SourceURL,ACRank,AnchorText,"),
        "{}",
        &csv[..80]
    );
    browser.click("#panel button.export");
    shot("2-backlinks");

    // Referring domains and anchor text: the API's order and counts.
    open_tab("refdomains");
    assert_eq!(
        table_info(),
        format!(
            "rows 1–{} of {}",
            domains.len().min(100),
            grouped(domains.len() as i64)
        )
    );
    assert_eq!(first_cell(), domains[0]["Domain"].as_str().unwrap());
    shot("3-referring-domains");
    open_tab("anchors");
    let anchors = rows(
        &api(
            &srv,
            &check_key,
            &[("cmd", "GetAnchorText"), ("item", item), ("Count", "1000")],
        ),
        "AnchorText",
    );
    assert_eq!(first_cell(), anchors[0]["AnchorText"].as_str().unwrap());
    assert_eq!(
        table_info(),
        format!(
            "rows 1–{} of {}",
            anchors.len().min(100),
            grouped(anchors.len() as i64)
        )
    );
    shot("4-anchor-text");

    // New and lost links: one pair of bars per day of the timeline.
    open_tab("newlost");
    let days = rows(
        &api(
            &srv,
            &check_key,
            &[("cmd", "GetNewLostBackLinkCalendar"), ("item", item)],
        ),
        "Calendar",
    );
    assert!(!days.is_empty() && days.len() <= 120);
    assert_eq!(browser.count("#newlost-chart rect.new"), days.len());
    assert_eq!(browser.count("#newlost-chart rect.lost"), days.len());
    assert!(
        days.iter().any(|d| int(&d["LostLinks"]) > 0),
        "the demo loses links"
    );
    shot("5-new-and-lost");

    // The remaining units shown are the account's (GetSubscriptionInfo is free).
    let sub = api(&srv, &key, &[("cmd", "GetSubscriptionInfo")]);
    let left = int(&rows(&sub, "Subscriptions")[0]["AnalysisResUnits"]);
    assert_eq!(
        int(&browser.run("return document.querySelector('#units').dataset.analysis;")),
        left
    );
    assert!(left < 10_000_000, "the page's requests were charged");

    // Errors from the API are shown as such.
    browser.fill("#item", "not a host!");
    browser.click("#go");
    browser.wait("document.querySelector('#status').classList.contains('error')");
    assert!(
        browser.text("#status").starts_with("InvalidItem:"),
        "{}",
        browser.text("#status")
    );
    shot("6-error");

    // The fresh index (empty here) answers for itself.
    browser.run("document.querySelector('#index').value = 'fresh';");
    browser.fill("#item", item);
    browser.click("#go");
    browser.wait("document.querySelector('#result').dataset.ready === '1' && !document.querySelector('#status').classList.contains('error') && document.querySelector('#title').textContent.includes('fresh')");
    let fresh = api(
        &srv,
        &check_key,
        &[
            ("cmd", "GetIndexItemInfo"),
            ("items", "1"),
            ("item0", item),
            ("datasource", "fresh"),
        ],
    );
    assert_eq!(
        shown("ExtBackLinks"),
        grouped(int(&rows(&fresh, "Results")[0]["ExtBackLinks"]))
    );

    // The sandbox: free, and said so.
    browser.run("document.querySelector('#index').value = 'historic';");
    browser.click("#sandbox");
    browser.click("#go");
    browser.wait("document.querySelector('#units').dataset.sandbox === '1' && document.querySelector('#result').dataset.ready === '1'");
    assert_eq!(browser.text("#units"), "Sandbox: nothing is charged");
    shot("7-sandbox");

    // A wrong key is refused with the API's code.
    browser.fill("#key", "WRONG");
    browser.click("#go");
    browser.wait("document.querySelector('#status').textContent.startsWith('FailedRequestViaAPI')");

    // 50,000 rows: sorting and paging stay interactive; only one page is in the DOM.
    let timing = browser.run(
        "const rows = Array.from({length: 50000}, (_, i) => ({SourceURL: 'http://s' + i + '.example/', TargetURL: 'http://t.example/', AnchorText: 'a' + (i % 97), SourceTrustFlow: (i * 7919) % 101, SourceCitationFlow: i % 100, LinkType: 'TextLink', FlagNoFollow: 0, FlagDeleted: 0, FirstIndexedDate: '2025-01-01', LastSeenDate: '2025-02-01'}));
         const t0 = performance.now();
         const node = explorer.table('backlinks', rows);
         document.querySelector('#panel').replaceChildren(node);
         const t1 = performance.now();
         node.querySelector('th[data-key=SourceTrustFlow]').click();
         const t2 = performance.now();
         return {render: t1 - t0, sort: t2 - t1, rows: node.querySelectorAll('tbody tr').length, info: node.querySelector('.info').textContent, top: node.querySelector('tbody td:nth-child(4)').textContent};",
    );
    assert_eq!(timing["rows"], 100);
    assert_eq!(timing["info"], "rows 1–100 of 50,000");
    assert_eq!(timing["top"], "100");
    let (render, sort) = (
        timing["render"].as_f64().unwrap(),
        timing["sort"].as_f64().unwrap(),
    );
    eprintln!("50,000 rows: first page {render:.1} ms, sort {sort:.1} ms");
    assert!(render < 500.0 && sort < 1_000.0, "{timing}");
    shot("8-fifty-thousand-rows");
    for name in ["1-overview", "5-new-and-lost"] {
        let png = std::fs::read(shots.join(format!("{name}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{name}");
    }
}
