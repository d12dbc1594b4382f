//! The per-request cost of accounts: authenticating a key and charging a request, for a
//! top-level account and for a reseller's sub-account (two usage rows per charge).

use accounts::{Accounts, Credential, NewAccount, Units};
use criterion::{criterion_group, criterion_main, Criterion};
use linkbase_benches as _; // the product's allocator (see the library)

fn account(store: &Accounts, parent: Option<i64>) -> i64 {
    store
        .create_account(&NewAccount {
            name: "bench".into(),
            parent,
            reseller: parent.is_none(),
            allowance: Units {
                index_item_info: u64::MAX / 4,
                analysis: u64::MAX / 4,
                retrieval: u64::MAX / 4,
            },
            period_days: 30,
        })
        .unwrap()
        .id
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Accounts::open(&dir.path().join("accounts.sqlite")).unwrap();
    let reseller = account(&store, None);
    let sub = account(&store, Some(reseller));
    let (_, key) = store.create_key(sub, &[]).unwrap();
    for _ in 0..1_000 {
        store.create_key(reseller, &[]).unwrap();
    }
    let one = Units {
        index_item_info: 1,
        ..Units::default()
    };
    let peer = Some("127.0.0.1".parse().unwrap());
    c.bench_function("authenticate key (1,001 keys)", |b| {
        b.iter(|| store.authenticate(Credential::Key(&key), peer).unwrap())
    });
    c.bench_function("charge top-level account", |b| {
        b.iter(|| store.charge(reseller, one).unwrap())
    });
    c.bench_function("charge sub-account (2 levels)", |b| {
        b.iter(|| store.charge(sub, one).unwrap())
    });
    // Per charge, with 8 threads charging at once (group commit at work).
    c.bench_function("charge sub-account, 8 threads at once", |b| {
        b.iter_custom(|iters| {
            let per_thread = iters.div_ceil(8);
            let started = std::time::Instant::now();
            std::thread::scope(|s| {
                for _ in 0..8 {
                    s.spawn(|| {
                        for _ in 0..per_thread {
                            store.charge(sub, one).unwrap();
                        }
                    });
                }
            });
            started.elapsed()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
