//! The account store through its public API: carve-outs, metering, periods, keys and
//! OpenApp tokens.

use accounts::{
    Accounts, AuthError, ChargeError, Credential, IpRange, NewAccount, Principal, UnitKind, Units,
};
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

const DAY: i64 = 86_400;

fn units(index_item_info: u64, analysis: u64, retrieval: u64) -> Units {
    Units {
        index_item_info,
        analysis,
        retrieval,
    }
}

fn account(name: &str, parent: Option<i64>, reseller: bool, allowance: Units) -> NewAccount {
    NewAccount {
        name: name.into(),
        parent,
        reseller,
        allowance,
        period_days: 30,
    }
}

/// A store whose clock the test moves.
fn store_with_clock() -> (tempfile::TempDir, Accounts, Arc<AtomicI64>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_700_000_000));
    let c = clock.clone();
    let store = Accounts::open_with_clock(
        &dir.path().join("accounts.sqlite"),
        Box::new(move || c.load(Ordering::SeqCst)),
    )
    .unwrap();
    (dir, store, clock)
}

fn ip(s: &str) -> Option<IpAddr> {
    Some(s.parse().unwrap())
}

fn insufficient(r: Result<accounts::Balance, ChargeError>) -> accounts::Insufficient {
    match r {
        Err(ChargeError::Insufficient(i)) => i,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn concurrent_charges_never_overspend() {
    let (_dir, store, _) = store_with_clock();
    let store = Arc::new(store);
    let a = store
        .create_account(&account("small", None, false, units(0, 1_000, 0)))
        .unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || {
                (0..300)
                    .filter(|_| store.charge(a.id, units(0, 7, 0)).is_ok())
                    .count()
            })
        })
        .collect();
    let granted: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    // 1000 / 7 = 142 charges fit; 2400 were tried.
    assert_eq!(granted, 142);
    let usage = store.usage(a.id).unwrap();
    assert_eq!(usage.used.analysis, 994);
    assert_eq!(usage.remaining.analysis, 6);
}

#[test]
fn a_refused_charge_charges_nothing() {
    let (_dir, store, _) = store_with_clock();
    let a = store
        .create_account(&account("a", None, false, units(10, 100, 50)))
        .unwrap();
    let b = store.charge(a.id, units(2, 30, 20)).unwrap();
    assert_eq!(b.charged, units(2, 30, 20));
    assert_eq!(b.remaining, units(8, 70, 30));
    // Enough analysis units but not enough retrieval units: nothing of either is taken.
    let refused = insufficient(store.charge(a.id, units(0, 10, 31)));
    assert_eq!(refused.kind, UnitKind::Retrieval);
    assert_eq!((refused.cost, refused.remaining), (31, 30));
    assert_eq!(refused.code(), "InsufficientRetrievalUnits");
    assert_eq!(store.usage(a.id).unwrap().used, units(2, 30, 20));
    assert_eq!(
        insufficient(store.charge(a.id, units(9, 0, 0))).code(),
        "InsufficientIndexItemInfoUnits"
    );
    assert_eq!(
        insufficient(store.charge(a.id, units(0, 71, 0))).code(),
        "InsufficientAnalysisUnits"
    );
    // Exactly what is left is allowed.
    store.charge(a.id, units(8, 70, 30)).unwrap();
    assert_eq!(store.usage(a.id).unwrap().remaining, units(0, 0, 0));
}

#[test]
fn allowances_renew_each_period() {
    let (_dir, store, clock) = store_with_clock();
    let a = store
        .create_account(&account("a", None, false, units(0, 100, 0)))
        .unwrap();
    store.charge(a.id, units(0, 100, 0)).unwrap();
    insufficient(store.charge(a.id, units(0, 1, 0)));
    let (start, end) = store.usage(a.id).unwrap().period;
    assert_eq!(end - start, 30 * DAY);
    clock.store(end, Ordering::SeqCst);
    let u = store.usage(a.id).unwrap();
    assert_eq!((u.used.analysis, u.remaining.analysis), (0, 100));
    assert_eq!(u.period, (end, end + 30 * DAY));
    store.charge(a.id, units(0, 60, 0)).unwrap();
}

#[test]
fn resellers_carve_sub_accounts_out_of_their_allowance() {
    let (_dir, store, _) = store_with_clock();
    let reseller = store
        .create_account(&account("agency", None, true, units(100, 1_000, 500)))
        .unwrap();
    let c1 = store
        .create_account(&account(
            "client 1",
            Some(reseller.id),
            false,
            units(60, 600, 300),
        ))
        .unwrap();
    // The second client can have what is left, not more.
    let e = store
        .create_account(&account(
            "client 2",
            Some(reseller.id),
            false,
            units(41, 100, 100),
        ))
        .unwrap_err();
    assert!(
        matches!(
            e,
            accounts::Error::ExceedsReseller {
                kind: UnitKind::IndexItemInfo,
                asked: 41,
                left: 40,
                ..
            }
        ),
        "{e}"
    );
    let c2 = store
        .create_account(&account(
            "client 2",
            Some(reseller.id),
            false,
            units(40, 400, 200),
        ))
        .unwrap();
    assert!(store.set_allowance(c2.id, units(40, 401, 200)).is_err());
    assert!(
        store
            .set_allowance(reseller.id, units(100, 999, 500))
            .is_err(),
        "the reseller cannot shrink below what it gave away"
    );
    // Sub-accounts of a non-reseller are refused.
    assert!(store
        .create_account(&account("x", Some(c1.id), false, units(0, 0, 0)))
        .is_err());

    // A sub-account's spending counts against both.
    store.charge(c1.id, units(10, 100, 50)).unwrap();
    assert_eq!(store.usage(reseller.id).unwrap().used, units(10, 100, 50));
    assert_eq!(store.usage(c1.id).unwrap().remaining, units(50, 500, 250));
    // The reseller spends its own share too, which leaves less for its clients.
    store.charge(reseller.id, units(0, 850, 0)).unwrap();
    let u = store.usage(c1.id).unwrap();
    assert_eq!(
        u.remaining.analysis, 50,
        "min of own 500 and the reseller's 50"
    );
    let refused = insufficient(store.charge(c1.id, units(0, 51, 0)));
    assert!(refused.by_reseller);
    assert_eq!(refused.remaining, 50);
    assert_eq!(
        store.usage(c1.id).unwrap().used.analysis,
        100,
        "nothing charged"
    );
    let children = store.accounts(Some(reseller.id)).unwrap();
    assert_eq!(
        children.iter().map(|a| a.id).collect::<Vec<_>>(),
        [c1.id, c2.id]
    );
}

#[test]
fn keys_cycle_revoke_and_keep_to_their_addresses() {
    let (dir, store, clock) = store_with_clock();
    let a = store
        .create_account(&account("a", None, false, units(1, 1, 1)))
        .unwrap();
    let (k1, secret1) = store.create_key(a.id, &[]).unwrap();
    let auth = |s: &str, from: &str| store.authenticate(Credential::Key(s), ip(from));
    assert_eq!(
        auth(&secret1, "192.0.2.1"),
        Ok(Principal {
            account: a.id,
            app: None
        })
    );
    assert_eq!(
        auth("0123456789ABCDEF0123456789ABCDEF", "192.0.2.1"),
        Err(AuthError::UnknownKey)
    );
    assert_eq!(
        auth(&secret1.to_lowercase(), "192.0.2.1"),
        Err(AuthError::UnknownKey)
    );

    // Cycling with a grace period: both work until it ends, then only the new key.
    let (k2, secret2) = store.cycle_key(k1.id, 3600).unwrap();
    assert!(auth(&secret1, "192.0.2.1").is_ok());
    assert!(auth(&secret2, "192.0.2.1").is_ok());
    clock.fetch_add(3600, Ordering::SeqCst);
    assert_eq!(auth(&secret1, "192.0.2.1"), Err(AuthError::KeyCycled));
    assert!(auth(&secret2, "192.0.2.1").is_ok());
    assert!(
        store.cycle_key(k1.id, 0).is_err(),
        "a cycled key cannot be cycled again"
    );
    // Without grace the old key fails at once.
    let (_, secret3) = store.cycle_key(k2.id, 0).unwrap();
    assert_eq!(auth(&secret2, "192.0.2.1"), Err(AuthError::KeyCycled));

    let k3 = store.keys(Some(a.id)).unwrap().pop().unwrap();
    let ranges: Vec<IpRange> = [
        "10.0.0.0/8".parse().unwrap(),
        "2001:db8::1".parse().unwrap(),
    ]
    .to_vec();
    store.restrict_key(k3.id, &ranges).unwrap();
    assert!(auth(&secret3, "10.20.30.40").is_ok());
    assert!(auth(&secret3, "2001:db8::1").is_ok());
    assert_eq!(
        auth(&secret3, "192.0.2.1"),
        Err(AuthError::IpNotAllowed("192.0.2.1".into()))
    );
    assert!(store.authenticate(Credential::Key(&secret3), None).is_err());
    store.restrict_key(k3.id, &[]).unwrap();
    assert!(auth(&secret3, "192.0.2.1").is_ok());
    store.revoke_key(k3.id).unwrap();
    assert_eq!(auth(&secret3, "10.0.0.1"), Err(AuthError::KeyRevoked));

    // Only digests are stored: no secret appears in the database files.
    drop(store);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for s in [&secret1, &secret2, &secret3] {
            assert!(!bytes.windows(s.len()).any(|w| w == s.as_bytes()));
        }
    }
}

#[test]
fn a_key_changed_by_another_process_counts_on_its_next_use() {
    // The server caches keys that authenticated; `linkbase keys` changes them from another
    // process (here: another handle on the same file).
    let (dir, server, _) = store_with_clock();
    let cli = Accounts::open(&dir.path().join("accounts.sqlite")).unwrap();
    let a = cli
        .create_account(&account("a", None, false, units(1, 1, 1)))
        .unwrap();
    let (k, secret) = cli.create_key(a.id, &[]).unwrap();
    let auth = |from: &str| server.authenticate(Credential::Key(&secret), ip(from));
    for _ in 0..3 {
        assert!(auth("192.0.2.1").is_ok(), "cached after the first use");
    }
    cli.restrict_key(k.id, &["10.0.0.0/8".parse().unwrap()])
        .unwrap();
    assert_eq!(
        auth("192.0.2.1"),
        Err(AuthError::IpNotAllowed("192.0.2.1".into()))
    );
    assert!(auth("10.1.2.3").is_ok());
    cli.revoke_key(k.id).unwrap();
    assert_eq!(auth("10.1.2.3"), Err(AuthError::KeyRevoked));
}

#[test]
fn open_app_tokens_are_bound_to_their_app_and_expire() {
    let (_dir, store, clock) = store_with_clock();
    let developer = store
        .create_account(&account("dev", None, false, units(1, 1, 1)))
        .unwrap();
    let user = store
        .create_account(&account("user", None, false, units(1, 1, 1)))
        .unwrap();
    let (app, private) = store
        .register_app(
            developer.id,
            "Rank Tracker",
            "Dev Ltd",
            "https://app.example/cb",
        )
        .unwrap();
    let (other, other_private) = store
        .register_app(developer.id, "Other", "", "https://other.example/cb")
        .unwrap();
    assert!(store
        .register_app(developer.id, "Bad", "", "javascript:alert(1)")
        .is_err());
    let (t, token) = store.grant(app.id, user.id, 3600).unwrap();
    let auth = |p: &str, t: &str| {
        store.authenticate(
            Credential::OpenApp {
                private_key: p,
                token: t,
            },
            ip("192.0.2.1"),
        )
    };
    assert_eq!(
        auth(&private, &token),
        Ok(Principal {
            account: user.id,
            app: Some(app.id)
        })
    );
    assert_eq!(
        auth(&other_private, &token),
        Err(AuthError::TokenOfAnotherApp)
    );
    assert_eq!(
        auth("00000000000000000000000000000000", &token),
        Err(AuthError::UnknownApp)
    );
    assert_eq!(auth(&private, &private), Err(AuthError::UnknownToken));
    // A token is not an API key.
    assert_eq!(
        store.authenticate(Credential::Key(&token), ip("192.0.2.1")),
        Err(AuthError::UnknownKey)
    );
    clock.fetch_add(3600, Ordering::SeqCst);
    assert_eq!(auth(&private, &token), Err(AuthError::TokenExpired));

    let (t2, token2) = store.grant(app.id, user.id, 3600).unwrap();
    assert!(auth(&private, &token2).is_ok());
    store.revoke_token(t2.id).unwrap();
    assert_eq!(auth(&private, &token2), Err(AuthError::TokenRevoked));

    let (_, token3) = store.grant(other.id, user.id, 3600).unwrap();
    assert!(auth(&other_private, &token3).is_ok());
    store.revoke_app(other.id).unwrap();
    assert_eq!(auth(&other_private, &token3), Err(AuthError::AppRevoked));
    assert!(store.grant(other.id, user.id, 60).is_err());
    assert_eq!(store.tokens(Some(app.id), None).unwrap().len(), 2);
    assert_eq!(store.tokens(None, Some(user.id)).unwrap()[0].id, t.id);
}

#[test]
fn a_newer_schema_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("accounts.sqlite");
    drop(Accounts::open(&path).unwrap());
    let conn = bump_schema_version(&path);
    assert!(conn.contains("schema version 99"), "{conn}");
}

/// Writes schema version 99 into the database header and opens the store again.
fn bump_schema_version(path: &std::path::Path) -> String {
    // `PRAGMA user_version` lives at byte offset 60 of the database header (big-endian).
    let mut bytes = std::fs::read(path).unwrap();
    bytes[60..64].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(path, bytes).unwrap();
    match Accounts::open(path) {
        Ok(_) => "opened".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_period_too_long_to_count_in_seconds_is_refused() {
    let (_dir, store, _clock) = store_with_clock();
    for days in [1_i64 << 57, i64::MAX, 36_501] {
        let e = store
            .create_account(&NewAccount {
                period_days: days,
                ..account("far", None, false, units(1, 1, 1))
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("period_days"), "{days}: {e}");
    }
    // The longest accepted period still meters.
    let a = store
        .create_account(&NewAccount {
            period_days: 36_500,
            ..account("century", None, false, units(1, 1, 1))
        })
        .unwrap();
    assert!(store.usage(a.id).is_ok());
}

#[test]
fn a_refund_gives_back_a_charge_to_the_account_and_its_reseller() {
    let (_dir, store, _clock) = store_with_clock();
    let reseller = store
        .create_account(&account("r", None, true, units(0, 1_000, 1_000)))
        .unwrap();
    let sub = store
        .create_account(&account("s", Some(reseller.id), false, units(0, 500, 500)))
        .unwrap();
    store.charge(sub.id, units(0, 400, 10)).unwrap();
    store.refund(sub.id, units(0, 400, 10)).unwrap();
    for id in [sub.id, reseller.id] {
        assert_eq!(
            store.usage(id).unwrap().used,
            units(0, 0, 0),
            "account {id}"
        );
    }
    // Never below zero.
    store.refund(sub.id, units(5, 5, 5)).unwrap();
    assert_eq!(store.usage(sub.id).unwrap().used, units(0, 0, 0));
    assert!(
        store.charge(sub.id, units(0, 500, 500)).is_ok(),
        "the whole allowance again"
    );
}
