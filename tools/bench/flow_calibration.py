"""Checks an export of `flow-calibration` against the calibration targets of docs/flow.md
and plots its histograms.

Usage: flow_calibration.py EXPORT_DIR SEEDS NAME PLOT.png [--rank]

With --rank, also compares the order of hosts by Citation Flow with networkit's PageRank
and by Trust Flow with TrustRank from the same seeds, on the same graph (Spearman)."""
import sys
from collections import Counter

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from scipy.stats import spearmanr

out, seeds_path, name, plot = sys.argv[1:5]
with_rank = "--rank" in sys.argv[5:]

items = {"url": {}, "host": {}, "domain": {}}
for line in open(f"{out}/items.tsv"):
    level, item, inbound, cf, tf, topics = line.rstrip("\n").split("\t")
    values = [int(t) for t in topics.split(",") if t]
    items[level][item] = (inbound == "1", int(cf), int(tf), values)

print(f"### {name}\n")
print("| level | items | with inbound links | TF <= CF | most common value (CF) | most common value (TF) | CF 0 | TF 0 |")
print("|---|---|---|---|---|---|---|---|")
for level in ("url", "host", "domain"):
    rows = [v for v in items[level].values() if v[0]]
    if not rows:
        continue
    cf = np.array([r[1] for r in rows])
    tf = np.array([r[2] for r in rows])

    def top(values):
        c = Counter(values[values > 0].tolist())
        value, count = c.most_common(1)[0]
        return f"{value} ({100 * count / len(values):.1f}%)"

    print(
        f"| {level} | {len(items[level]):,} | {len(rows):,} | {100 * np.mean(tf <= cf):.1f}% | "
        f"{top(cf)} | {top(tf)} | {100 * np.mean(cf == 0):.1f}% | {100 * np.mean(tf == 0):.1f}% |"
    )

topical = [v for lv in items.values() for v in lv.values() if v[3]]
above = sum(1 for v in topical if max(v[3]) > v[2])
several = [v for v in topical if len(v[3]) >= 2]
flat = sum(1 for v in several if len(set(v[3])) == 1)
print(
    f"\nTopics: {len(topical):,} items have topics, {above} with a topic above their Trust Flow; "
    f"of {len(several):,} with two or more, {flat} show them all at one value."
)

seeds = []
for line in open(seeds_path):
    line = line.strip()
    if line and not line.startswith("#"):
        seeds.append(line.split("\t")[0])
print("\n| seed | level | Citation Flow | Trust Flow |\n|---|---|---|---|")
for s in seeds:
    for level in ("url", "domain", "host"):
        if s in items[level]:
            _, cf, tf, _ = items[level][s]
            print(f"| {s} | {level} | {cf} | {tf} |")
            break

top = sorted(items["host"].items(), key=lambda kv: (-kv[1][2], -kv[1][1], kv[0]))[:15]
print("\n| # | host | Trust Flow | Citation Flow | topics |\n|---|---|---|---|---|")
for i, (host, (_, cf, tf, topics)) in enumerate(top, 1):
    print(f"| {i} | {host} | {tf} | {cf} | {', '.join(map(str, topics))} |")

if with_rank:
    import networkit as nk

    urls, host_of = [], []
    for line in open(f"{out}/urls.tsv"):
        _, url, host, _domain = line.rstrip("\n").split("\t")
        urls.append(url)
        host_of.append(host)
    n = len(urls)
    e = np.loadtxt(f"{out}/edges.tsv", dtype=np.int64, ndmin=2)
    g = nk.Graph(n, directed=True)
    for s, t in e:
        g.addEdge(int(s), int(t))
    pr = nk.centrality.PageRank(g, damp=0.85, tol=1e-12, distributeSinks=nk.centrality.SinkHandling.DistributeSinks)
    pr.run()
    pagerank = np.array(pr.scores())
    # TrustRank: PageRank whose teleport (and dangling mass) goes to the seed URLs only.
    seed_hosts = set(seeds)
    tele = np.array([1.0 if h in seed_hosts or u in seed_hosts else 0.0 for u, h in zip(urls, host_of)])
    tele /= tele.sum()
    outdeg = np.bincount(e[:, 0], minlength=n).astype(float)
    a = sp.csr_matrix((np.ones(len(e)), (e[:, 1], e[:, 0])), shape=(n, n))
    inv = np.where(outdeg > 0, 1 / np.maximum(outdeg, 1), 0)
    x = tele.copy()
    for _ in range(1000):
        nx = 0.15 * tele + 0.85 * a.dot(x * inv) + 0.85 * x[outdeg == 0].sum() * tele
        if np.abs(nx - x).sum() < 1e-14:
            x = nx
            break
        x = nx
    trustrank = x
    hosts = sorted(items["host"])
    index = {h: i for i, h in enumerate(hosts)}
    host_pr, host_tr = np.zeros(len(hosts)), np.zeros(len(hosts))
    for v, h in enumerate(host_of):
        host_pr[index[h]] += pagerank[v]
        host_tr[index[h]] += trustrank[v]
    cf = np.array([items["host"][h][1] for h in hosts])
    tf = np.array([items["host"][h][2] for h in hosts])
    inbound = np.array([items["host"][h][0] for h in hosts])
    print("\n| hosts | Spearman: Citation Flow / PageRank (networkit) | Spearman: Trust Flow / TrustRank |\n|---|---|---|")
    for label, m in (("all", np.ones(len(hosts), bool)), ("with inbound links", inbound)):
        print(f"| {label} ({m.sum():,}) | {spearmanr(cf[m], host_pr[m])[0]:.3f} | {spearmanr(tf[m], host_tr[m])[0]:.3f} |")

fig, axes = plt.subplots(1, 3, figsize=(15, 4))
for ax, level in zip(axes[:2], ("host", "domain")):
    rows = [v for v in items[level].values() if v[0]]
    bins = np.arange(0, 102) - 0.5
    ax.hist([r[1] for r in rows], bins=bins, alpha=0.6, label="Citation Flow")
    ax.hist([r[2] for r in rows], bins=bins, alpha=0.6, label="Trust Flow")
    ax.set_title(f"{name}: {level}s with inbound links ({len(rows):,})")
    ax.set_xlabel("value")
    ax.set_ylabel("items")
    ax.legend()
rows = [v for v in items["host"].values() if v[0]]
h = axes[2].hist2d([r[1] for r in rows], [r[2] for r in rows], bins=[np.arange(0, 102, 2)] * 2, cmin=1, norm=matplotlib.colors.LogNorm())
axes[2].plot([0, 100], [0, 100], color="grey", linewidth=0.8)
axes[2].set_title(f"{name}: Trust Flow against Citation Flow (hosts)")
axes[2].set_xlabel("Citation Flow")
axes[2].set_ylabel("Trust Flow")
fig.colorbar(h[3], ax=axes[2], label="hosts")
fig.tight_layout()
fig.savefig(plot, dpi=80)
print(f"\nplot: {plot}")
