//! Accounts end to end: keys, OpenApp tokens, metering, resellers and the sandbox,
//! through the real `linkbase serve` and `linkbase keys`, over real HTTP.

use linkbase_tests::{code, create_account, create_key, keys, run, Server};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A small indexed web in a fresh data directory.
fn data_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let spec = webgen::WebSpec {
        crawls: 1,
        ..webgen::WebSpec::demo(400)
    };
    let files = webgen::generate(&spec, &dir.path().join("crawl"), &mut |_, _| {}).unwrap();
    let data = dir.path().join("data");
    let mut args = vec![
        "ingest".to_string(),
        "--data".into(),
        data.display().to_string(),
    ];
    args.extend(files.files.iter().map(|p| p.display().to_string()));
    run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    (dir, data)
}

fn hot_item() -> String {
    webgen::Web::new(webgen::WebSpec::demo(400)).hot_url()
}

fn int(v: &Value, k: &str) -> i64 {
    v[k].as_i64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

fn api(srv: &Server, key: &str, params: &[(&str, &str)]) -> Value {
    let mut all = vec![("app_api_key", key)];
    all.extend_from_slice(params);
    srv.get("/api/json", &all)
}

fn remaining(srv: &Server, key: &str) -> [i64; 3] {
    let info = api(srv, key, &[("cmd", "GetSubscriptionInfo")]);
    let row = &info["DataTables"]["Subscriptions"]["Data"][0];
    [
        row["IndexItemInfoResUnits"].as_i64().unwrap(),
        row["AnalysisResUnits"].as_i64().unwrap(),
        row["RetrievalResUnits"].as_i64().unwrap(),
    ]
}

#[test]
fn requests_are_charged_per_the_cost_table() {
    let (_dir, data) = data_dir();
    let account = create_account(&data, "small", [5, 6_000, 100], &[]);
    let key = create_key(&data, account);
    let srv = Server::start(&data, &["--no-sandbox"]);
    let hot = hot_item();

    let info = api(&srv, &key, &[("cmd", "GetSubscriptionInfo")]);
    assert_eq!(code(&info), "OK");
    assert_eq!(int(&info, "TotalIndexItemInfoResUnits"), 5);
    assert_eq!(int(&info, "TotalAnalysisResUnits"), 6_000);
    assert!(info.get("ChargedAnalysisResUnits").is_none(), "free");

    let items = [
        ("cmd", "GetIndexItemInfo"),
        ("items", "2"),
        ("item0", hot.as_str()),
        ("item1", "tangoblue1.nl"),
    ];
    let r = api(&srv, &key, &items);
    assert_eq!(code(&r), "OK");
    assert_eq!(int(&r, "ChargedIndexItemInfoResUnits"), 2);
    assert_eq!(int(&r, "RemainingIndexItemInfoResUnits"), 3);
    assert_eq!(int(&r, "ChargedAnalysisResUnits"), 0);

    // Four items cost four units; three remain: refused, nothing charged.
    let four = [
        ("cmd", "GetIndexItemInfo"),
        ("items", "4"),
        ("item0", "a.com"),
        ("item1", "b.com"),
        ("item2", "c.com"),
        ("item3", "d.com"),
    ];
    let r = api(&srv, &key, &four);
    assert_eq!(code(&r), "InsufficientIndexItemInfoUnits", "{r}");
    assert!(r.get("DataTables").is_none());
    assert_eq!(remaining(&srv, &key), [3, 6_000, 100]);
    // With failover, the same request is paid in analysis and retrieval units.
    let mut failover = four.to_vec();
    failover.push(("EnableResourceUnitFailover", "1"));
    let r = api(&srv, &key, &failover);
    assert_eq!(code(&r), "OK", "{r}");
    assert_eq!(int(&r, "ChargedAnalysisResUnits"), 500 + 4 * 50);
    assert_eq!(int(&r, "ChargedRetrievalResUnits"), 4);
    assert_eq!(remaining(&srv, &key), [3, 5_300, 96]);

    // GetBackLinkData: 5,000 analysis units and one retrieval unit per row.
    let r = api(
        &srv,
        &key,
        &[("cmd", "GetBackLinkData"), ("item", &hot), ("Count", "7")],
    );
    assert_eq!(code(&r), "OK", "{r}");
    let rows = r["DataTables"]["BackLinks"]["Data"]
        .as_array()
        .unwrap()
        .len() as i64;
    assert_eq!(rows, 7);
    assert_eq!(int(&r, "ChargedAnalysisResUnits"), 5_000);
    assert_eq!(int(&r, "ChargedRetrievalResUnits"), rows);
    assert_eq!(int(&r, "RemainingAnalysisResUnits"), 300);
    let r = api(
        &srv,
        &key,
        &[("cmd", "GetBackLinkData"), ("item", &hot), ("Count", "1")],
    );
    assert_eq!(code(&r), "InsufficientAnalysisUnits");
    // A command the account cannot pay even the least of is refused before any work (so
    // before its malformed item is seen); one it can pay that fails charges nothing.
    let r = api(
        &srv,
        &key,
        &[("cmd", "GetBackLinkData"), ("item", "not a host!")],
    );
    assert_eq!(code(&r), "InsufficientAnalysisUnits");
    let r = api(
        &srv,
        &key,
        &[("cmd", "GetBackLinksHistory"), ("item0", "not a host!")],
    );
    assert_eq!(code(&r), "InvalidItem");
    assert_eq!(remaining(&srv, &key), [3, 300, 89]);
    let usage = keys(&data, &["usage", "--account", &account.to_string()]);
    assert!(
        usage.contains("used") && usage.contains(&format!("{:>16}", 5_700)),
        "{usage}"
    );
}

#[test]
fn concurrent_requests_never_overspend_and_charges_survive_kill_9() {
    let (_dir, data) = data_dir();
    let account = create_account(&data, "race", [40, 0, 0], &[]);
    let key = Arc::new(create_key(&data, account));
    let srv = Arc::new(Server::start(&data, &["--no-sandbox"]));
    let ok = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (srv, key, ok, refused) = (srv.clone(), key.clone(), ok.clone(), refused.clone());
            std::thread::spawn(move || {
                for _ in 0..15 {
                    let r = api(
                        &srv,
                        &key,
                        &[
                            ("cmd", "GetIndexItemInfo"),
                            ("items", "1"),
                            ("item0", "a.com"),
                        ],
                    );
                    match code(&r) {
                        "OK" => ok.fetch_add(1, Ordering::SeqCst),
                        "InsufficientIndexItemInfoUnits" => refused.fetch_add(1, Ordering::SeqCst),
                        other => panic!("{other}: {r}"),
                    };
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(ok.load(Ordering::SeqCst), 40, "exactly the allowance");
    assert_eq!(refused.load(Ordering::SeqCst), 120 - 40);

    // Durability: charges acknowledged before a kill -9 are all there after a restart.
    keys(
        &data,
        &[
            "allowance",
            "--account",
            &account.to_string(),
            "--index-item-info",
            "100000",
        ],
    );
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (addr, key, acknowledged) = (srv.addr.clone(), key.clone(), acknowledged.clone());
            std::thread::spawn(move || loop {
                let url = format!("http://{addr}/api/json");
                let r = ureq::get(&url)
                    .query("app_api_key", &key)
                    .query("cmd", "GetIndexItemInfo")
                    .query("items", "1")
                    .query("item0", "a.com")
                    .call();
                match r.ok().and_then(|r| r.into_string().ok()) {
                    Some(body) if body.starts_with("{\"Code\":\"OK\"") => {
                        acknowledged.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => return,
                }
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    Arc::into_inner(srv)
        .expect("load threads hold only the address")
        .kill();
    for t in threads {
        t.join().unwrap();
    }
    let acknowledged = acknowledged.load(Ordering::SeqCst) as i64;
    assert!(acknowledged > 50, "the load ran: {acknowledged}");
    let srv = Server::start(&data, &["--no-sandbox"]);
    let used = 100_000 - remaining(&srv, &key)[0] - 40;
    // Every acknowledged charge was kept; at most one in-flight request per client thread
    // may have been charged without its answer arriving.
    assert!(
        (acknowledged..=acknowledged + 4).contains(&used),
        "acknowledged {acknowledged}, charged {used}"
    );
}

#[test]
fn resellers_carve_allowances_and_see_only_their_own_sub_accounts() {
    let (_dir, data) = data_dir();
    let reseller = create_account(&data, "agency", [100, 20_000, 1_000], &["--reseller"]);
    let reseller_key = create_key(&data, reseller);
    let rival = create_account(&data, "rival", [100, 100, 100], &["--reseller"]);
    let rival_key = create_key(&data, rival);
    let srv = Server::start(&data, &["--no-sandbox"]);
    let create = |name: &str, au: &str| {
        api(
            &srv,
            &reseller_key,
            &[
                ("cmd", "CreateSubAccount"),
                ("Name", name),
                ("IndexItemInfoResUnits", "10"),
                ("AnalysisResUnits", au),
                ("RetrievalResUnits", "100"),
            ],
        )
    };
    let a = create("client a", "6000");
    assert_eq!(code(&a), "OK", "{a}");
    let a_row = &a["DataTables"]["SubAccount"]["Data"][0];
    let (a_id, a_key) = (
        a_row["AccountID"].as_i64().unwrap(),
        a_row["APIKey"].as_str().unwrap().to_string(),
    );
    let b = create("client b", "14000");
    let b_id = b["DataTables"]["SubAccount"]["Data"][0]["AccountID"]
        .as_i64()
        .unwrap();
    // Nothing is left to give.
    let c = create("client c", "1");
    assert_eq!(code(&c), "ExceedsResellerAllowance", "{c}");

    // The sub-account spends; both the sub-account and the reseller are charged.
    let r = api(
        &srv,
        &a_key,
        &[
            ("cmd", "GetBackLinkData"),
            ("item", &hot_item()),
            ("Count", "3"),
        ],
    );
    assert_eq!(code(&r), "OK", "{r}");
    assert_eq!(remaining(&srv, &a_key)[1], 1_000);
    assert_eq!(remaining(&srv, &reseller_key)[1], 15_000);
    let list = api(&srv, &reseller_key, &[("cmd", "GetSubAccounts")]);
    let rows = list["DataTables"]["SubAccounts"]["Data"]
        .as_array()
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["UsedAnalysisResUnits"], 5_000);
    assert_eq!(rows[0]["UsedRetrievalResUnits"], 3);
    assert_eq!(rows[1]["UsedAnalysisResUnits"], 0);

    // A sub-account cannot see or touch its sibling; another reseller cannot either.
    for (key, expected) in [(&a_key, "NotAReseller"), (&rival_key, "NotYourSubAccount")] {
        let r = api(
            &srv,
            key,
            &[
                ("cmd", "SetSubAccountAllowance"),
                ("AccountID", &b_id.to_string()),
                ("AnalysisResUnits", "0"),
            ],
        );
        assert_eq!(code(&r), expected, "{r}");
    }
    let mine = api(&srv, &rival_key, &[("cmd", "GetSubAccounts")]);
    assert_eq!(
        mine["DataTables"]["SubAccounts"]["Data"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        code(&api(&srv, &a_key, &[("cmd", "GetSubAccounts")])),
        "NotAReseller"
    );

    // The reseller moves units between its clients, never beyond what it has.
    let shrink = api(
        &srv,
        &reseller_key,
        &[
            ("cmd", "SetSubAccountAllowance"),
            ("AccountID", &b_id.to_string()),
            ("AnalysisResUnits", "4000"),
        ],
    );
    assert_eq!(code(&shrink), "OK", "{shrink}");
    let grow = |au: &str| {
        code(&api(
            &srv,
            &reseller_key,
            &[
                ("cmd", "SetSubAccountAllowance"),
                ("AccountID", &a_id.to_string()),
                ("AnalysisResUnits", au),
            ],
        ))
        .to_string()
    };
    assert_eq!(grow("16001"), "ExceedsResellerAllowance");
    assert_eq!(grow("16000"), "OK");
    // The reseller's own spending is limited by what it has left, as are its clients'.
    let r = api(
        &srv,
        &reseller_key,
        &[("cmd", "GetTopics"), ("item", "a.com")],
    );
    assert_eq!(code(&r), "OK");
    assert_eq!(int(&r, "RemainingAnalysisResUnits"), 14_000);
    let usage = keys(&data, &["usage", "--account", &reseller.to_string()]);
    assert!(
        usage.contains("\"client a\"") && usage.contains("\"client b\""),
        "{usage}"
    );
}

#[test]
fn the_sandbox_answers_any_valid_key_for_free() {
    let (_dir, data) = data_dir();
    let account = create_account(&data, "broke", [0, 0, 0], &[]);
    let key = create_key(&data, account);
    let srv = Server::start(&data, &[]);
    let live = api(
        &srv,
        &key,
        &[
            ("cmd", "GetIndexItemInfo"),
            ("items", "1"),
            ("item0", "tangoblue0.nl"),
        ],
    );
    assert_eq!(code(&live), "InsufficientIndexItemInfoUnits");
    let sandbox_hot = webgen::Web::new(webgen::WebSpec::demo(1_500)).hot_url();
    let r = srv.get(
        "/sandbox/api/json",
        &[
            ("app_api_key", key.as_str()),
            ("cmd", "GetBackLinkData"),
            ("item", sandbox_hot.as_str()),
            ("Count", "5"),
        ],
    );
    assert_eq!(code(&r), "OK", "{r}");
    assert_eq!(r["Sandbox"], 1);
    assert_eq!(
        r["DataTables"]["BackLinks"]["Data"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert!(r.get("ChargedAnalysisResUnits").is_none());
    let xml = ureq::get(&format!("http://{}/sandbox/api_command", srv.addr))
        .query("app_api_key", &key)
        .query("cmd", "GetTopics")
        .query("item", "tangoblue0.nl")
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(
        xml.contains("Code=\"OK\"") && xml.contains("Sandbox"),
        "{xml}"
    );
    let bad = srv.get(
        "/sandbox/api/json",
        &[
            ("app_api_key", "nope"),
            ("cmd", "GetTopics"),
            ("item", "a.com"),
        ],
    );
    assert_eq!(code(&bad), "FailedRequestViaAPI");
    assert_eq!(remaining(&srv, &key), [0, 0, 0]);
}

/// A client that does not follow redirects.
fn no_redirects() -> ureq::Agent {
    ureq::AgentBuilder::new().redirects(0).build()
}

fn status_and_body(r: Result<ureq::Response, ureq::Error>) -> (u16, String, Option<String>) {
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{e}"),
    };
    let location = resp.header("location").map(str::to_string);
    (resp.status(), resp.into_string().unwrap(), location)
}

fn query_value(url: &str, name: &str) -> Option<String> {
    url.split_once('?')?
        .1
        .split('&')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .map(str::to_string)
}

#[test]
fn open_apps_get_tokens_from_the_grant_page() {
    let (_dir, data) = data_dir();
    let developer = create_account(&data, "developer", [0, 0, 0], &[]);
    let user = create_account(&data, "user", [10, 0, 0], &[]);
    let user_key = create_key(&data, user);
    let private_key = keys(
        &data,
        &[
            "app-register",
            "--account",
            &developer.to_string(),
            "--name",
            "Rank <Tracker>",
            "--publisher",
            "Dev & Co",
            "--redirect-uri",
            "https://app.example/callback",
        ],
    );
    let other_private = keys(
        &data,
        &[
            "app-register",
            "--account",
            &developer.to_string(),
            "--name",
            "Other",
            "--redirect-uri",
            "https://other.example/cb",
        ],
    );
    let srv = Server::start(&data, &["--no-sandbox", "--token-ttl", "1h"]);
    let page = format!("http://{}/openapp/authorize", srv.addr);

    let (status, body, _) = status_and_body(
        no_redirects()
            .get(&page)
            .query("app", "1")
            .query("state", "xyz")
            .call(),
    );
    assert_eq!(status, 200);
    assert!(
        body.contains("Rank &lt;Tracker&gt;") && body.contains("Dev &amp; Co"),
        "escaped: {body}"
    );
    assert!(body.contains("type=password"));
    let (status, _, _) = status_and_body(no_redirects().get(&page).query("app", "99").call());
    assert_eq!(status, 404);

    // A wrong key is refused on the page; no token is issued.
    let post = |key: &str, decision: &str| {
        status_and_body(no_redirects().post(&page).send_form(&[
            ("app", "1"),
            ("state", "s 1&2"),
            ("key", key),
            ("decision", decision),
        ]))
    };
    let (status, body, location) = post("WRONG", "approve");
    assert_eq!((status, location), (403, None));
    assert!(body.contains("FailedRequestViaAPI"), "{body}");
    let (status, _, location) = post(&user_key, "deny");
    assert_eq!(status, 303);
    assert_eq!(
        location.as_deref(),
        Some("https://app.example/callback?error=access_denied&state=s%201%262")
    );

    let (status, _, location) = post(&user_key, "approve");
    assert_eq!(status, 303);
    let location = location.unwrap();
    assert!(
        location.starts_with("https://app.example/callback?access_token="),
        "{location}"
    );
    assert_eq!(
        query_value(&location, "state").as_deref(),
        Some("s%201%262")
    );
    assert_eq!(
        query_value(&location, "expires_in").as_deref(),
        Some("3600")
    );
    let token = query_value(&location, "access_token").unwrap();

    // The app acts for the user, on the user's allowance, with its own private key only.
    let openapp = |private: &str, token: &str| {
        srv.get(
            "/api/json",
            &[
                ("privatekey", private),
                ("accesstoken", token),
                ("cmd", "GetIndexItemInfo"),
                ("items", "1"),
                ("item0", "a.com"),
            ],
        )
    };
    let r = openapp(&private_key, &token);
    assert_eq!(code(&r), "OK", "{r}");
    assert_eq!(int(&r, "RemainingIndexItemInfoResUnits"), 9);
    assert_eq!(remaining(&srv, &user_key)[0], 9);
    // Connectors also send the token as authentication_token.
    let r = srv.get(
        "/api/json",
        &[
            ("privatekey", private_key.as_str()),
            ("authentication_token", token.as_str()),
            ("cmd", "GetSubscriptionInfo"),
        ],
    );
    assert_eq!(code(&r), "OK");
    assert_eq!(
        code(&openapp(&other_private, &token)),
        "AccessTokenNotForThisApp"
    );
    assert_eq!(
        code(&openapp("00000000000000000000000000000000", &token)),
        "InvalidPrivateKey"
    );
    assert_eq!(
        code(&openapp(&private_key, &user_key)),
        "InvalidAccessToken"
    );
    // The token is not an API key.
    assert_eq!(
        code(&api(&srv, &token, &[("cmd", "GetSubscriptionInfo")])),
        "FailedRequestViaAPI"
    );

    // Operator grants expire and can be revoked.
    let short = keys(
        &data,
        &[
            "grant",
            "--app",
            "1",
            "--account",
            &user.to_string(),
            "--ttl",
            "1s",
        ],
    );
    assert_eq!(code(&openapp(&private_key, &short)), "OK");
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(code(&openapp(&private_key, &short)), "AccessTokenExpired");
    let tokens = run(&[
        "keys",
        "--data",
        data.to_str().unwrap(),
        "tokens",
        "--app",
        "1",
    ]);
    assert_eq!(tokens.lines().count(), 3, "header and two tokens: {tokens}");
    keys(&data, &["token-revoke", "--token", "1"]);
    assert_eq!(code(&openapp(&private_key, &token)), "AccessTokenRevoked");
    let again = keys(
        &data,
        &["grant", "--app", "1", "--account", &user.to_string()],
    );
    keys(&data, &["app-revoke", "--app", "1"]);
    assert_eq!(code(&openapp(&private_key, &again)), "OpenAppRevoked");
    let secrets = [
        &user_key,
        &private_key,
        &other_private,
        &token,
        &short,
        &again,
    ];
    assert_no_secret_in(srv, &data, &secrets);
}

/// Neither the server's output (read to its end once it is stopped) nor the data
/// directory holds any of `secrets`.
fn assert_no_secret_in(srv: Server, data: &Path, secrets: &[&String]) {
    let output = srv.stop();
    assert!(
        output.contains("request") && output.contains("command="),
        "requests are logged: {output}"
    );
    for s in secrets {
        assert!(
            !output.contains(s.as_str()),
            "a secret in the server's output:\n{output}"
        );
    }
    let mut stack = vec![data.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e == "sqlite" || e == "sqlite-wal" || e == "json")
            {
                let bytes = std::fs::read(&path).unwrap();
                for s in secrets {
                    assert!(
                        !bytes.windows(s.len()).any(|w| w == s.as_bytes()),
                        "a secret in {}",
                        path.display()
                    );
                }
            }
        }
    }
}

#[test]
fn no_endpoint_answers_without_a_valid_credential() {
    let (_dir, data) = data_dir();
    let account = create_account(&data, "a", [1_000, 1_000_000, 1_000_000], &[]);
    let id = account.to_string();
    let good = create_key(&data, account);
    let revoked = create_key(&data, account);
    keys(&data, &["revoke", "--key", "2"]);
    let cycled = create_key(&data, account);
    let replacement = keys(&data, &["cycle", "--key", "3"]);
    let graced = create_key(&data, account);
    let graced_new = keys(&data, &["cycle", "--key", "5", "--grace", "1h"]);
    let restricted = create_key(&data, account);
    keys(&data, &["restrict", "--key", "7", "--ip", "203.0.113.0/24"]);
    let list = run(&[
        "keys",
        "--data",
        data.to_str().unwrap(),
        "list",
        "--account",
        &id,
    ]);
    assert!(
        list.contains("203.0.113.0/24") && !list.contains(&good),
        "{list}"
    );

    let srv = Server::start(&data, &[]);
    let data_commands = [
        "GetIndexItemInfo",
        "GetBackLinkData",
        "GetRefDomains",
        "GetAnchorText",
        "GetTopics",
        "GetNewLostBackLinks",
        "GetSubscriptionInfo",
        "DownloadBackLinks",
        "GetDownloadsList",
        "GetSubAccounts",
    ];
    let bad_credentials: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (vec![], "FailedRequestViaAPI"),
        (vec![("app_api_key", "")], "FailedRequestViaAPI"),
        (
            vec![("app_api_key", "0123456789ABCDEF0123456789ABCDEF")],
            "FailedRequestViaAPI",
        ),
        (
            vec![("authentication_token", revoked.as_str())],
            "APIKeyRevoked",
        ),
        (vec![("app_api_key", cycled.as_str())], "APIKeyCycled"),
        (
            vec![("app_api_key", restricted.as_str())],
            "IPAddressNotAllowed",
        ),
        (
            vec![("privatekey", "X"), ("accesstoken", good.as_str())],
            "InvalidPrivateKey",
        ),
        (vec![("privatekey", "X")], "MissingParameter"),
    ];
    for path in [
        "/api/json",
        "/api/xml",
        "/api_command",
        "/sandbox/api/json",
        "/sandbox/api/xml",
    ] {
        for cmd in data_commands {
            for (credential, expected) in &bad_credentials {
                let mut req = ureq::get(&format!("http://{}{path}", srv.addr))
                    .query("cmd", cmd)
                    .query("item", "tangoblue0.nl")
                    .query("item0", "tangoblue0.nl")
                    .query("Query", "tangoblue0.nl");
                for (k, v) in credential {
                    req = req.query(k, v);
                }
                let body = req.call().unwrap().into_string().unwrap();
                let ok = body.contains(&format!("\"Code\":\"{expected}\""))
                    || body.contains(&format!("Code=\"{expected}\""));
                assert!(ok, "{path} {cmd} {credential:?}: {body}");
                assert!(
                    !body.contains("DataTables"),
                    "{path} {cmd}: data without a credential"
                );
            }
        }
    }
    for key in [&good, &replacement, &graced, &graced_new] {
        assert_eq!(
            code(&api(&srv, key, &[("cmd", "GetTopics"), ("item", "a.com")])),
            "OK"
        );
    }
    // Unknown paths and download names answer nothing.
    for path in [
        "/explorer/x",
        "/admin/ingest",
        "/api",
        "/admin",
        "/downloads/x.csv.gz",
        "/sandbox/downloads/x",
    ] {
        let r = ureq::get(&format!("http://{}{path}", srv.addr)).call();
        assert!(matches!(r, Err(ureq::Error::Status(404, _))), "{path}");
    }
    // The operator's endpoints want the server's own token.
    for path in ["/admin/ingest", "/admin/flow"] {
        for token in [
            "",
            "Bearer ",
            "Bearer 0123456789ABCDEF0123456789ABCDEF",
            good.as_str(),
        ] {
            let r = ureq::post(&format!("http://{}{path}", srv.addr))
                .set("authorization", token)
                .send_form(&[("file", "/etc/passwd")]);
            assert!(
                matches!(r, Err(ureq::Error::Status(403, _))),
                "{path} {token:?}"
            );
        }
    }
    assert_no_secret_in(
        srv,
        &data,
        &[
            &good,
            &revoked,
            &cycled,
            &replacement,
            &graced,
            &graced_new,
            &restricted,
        ],
    );

    // Behind a trusted proxy, X-Forwarded-For names the client; from anyone else it is
    // ignored.
    let xff = |srv: &Server, from: &str| {
        let body = ureq::get(&format!("http://{}/api/json", srv.addr))
            .set("X-Forwarded-For", from)
            .query("app_api_key", &restricted)
            .query("cmd", "GetTopics")
            .query("item", "a.com")
            .call()
            .unwrap()
            .into_string()
            .unwrap();
        serde_json::from_str::<Value>(&body).unwrap()["Code"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let untrusting = Server::start(&data, &["--no-sandbox"]);
    assert_eq!(xff(&untrusting, "203.0.113.9"), "IPAddressNotAllowed");
    drop(untrusting);
    let proxied = Server::start(&data, &["--no-sandbox", "--trusted-proxy", "127.0.0.1"]);
    assert_eq!(xff(&proxied, "203.0.113.9"), "OK");
    assert_eq!(xff(&proxied, "203.0.113.9, 127.0.0.1"), "OK", "proxy chain");
    assert_eq!(xff(&proxied, "198.51.100.1"), "IPAddressNotAllowed");
    assert_eq!(
        xff(&proxied, "203.0.113.9, 198.51.100.1"),
        "IPAddressNotAllowed",
        "spoofed left entry ignored"
    );
    assert_eq!(xff(&proxied, "garbage"), "IPAddressNotAllowed");

    // A trusted proxy's header that is not text (bytes over 0x7f) names no client: a key
    // limited to the proxy's own address is refused, not let through as the proxy.
    let loopback_only = create_key(&data, account);
    keys(&data, &["restrict", "--key", "8", "--ip", "127.0.0.1/32"]);
    let raw_xff = |value: &[u8]| -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&proxied.addr).unwrap();
        let mut req = format!(
            "GET /api/json?app_api_key={loopback_only}&cmd=GetTopics&item=a.com HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: "
        )
        .into_bytes();
        req.extend_from_slice(value);
        req.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
        s.write_all(&req).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    assert!(
        raw_xff(b"127.0.0.1").contains("\"Code\":\"OK\""),
        "the proxy itself"
    );
    let spoofed = raw_xff(b"203.0.113.9\xff");
    assert!(spoofed.contains("IPAddressNotAllowed"), "{spoofed}");
}

#[test]
fn keys_cli_refuses_bad_input_by_name() {
    let (_dir, data) = data_dir();
    let d = data.to_str().unwrap();
    let e = linkbase_tests::run_failing(&["keys", "--data", d, "create", "--account", "7"]);
    assert!(e.contains("no account 7"), "{e}");
    let e = linkbase_tests::run_failing(&[
        "keys",
        "--data",
        d,
        "restrict",
        "--key",
        "1",
        "--ip",
        "10.0.0.0/40",
    ]);
    assert!(e.contains("10.0.0.0/40"), "{e}");
    let e =
        linkbase_tests::run_failing(&["keys", "--data", d, "cycle", "--key", "1", "--grace", "1w"]);
    assert!(e.contains("unknown unit"), "{e}");
    let reseller = create_account(&data, "r", [10, 10, 10], &["--reseller"]);
    let e = linkbase_tests::run_failing(&[
        "keys",
        "--data",
        d,
        "account-create",
        "--name",
        "big",
        "--parent",
        &reseller.to_string(),
        "--analysis",
        "11",
    ]);
    assert!(e.contains("11 asked") && e.contains("10 left"), "{e}");
}
