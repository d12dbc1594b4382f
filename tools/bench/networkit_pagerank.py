"""PageRank with networkit on an edge list, timed per iteration, as the peer of
`flow-bench`. Usage: networkit_pagerank.py EDGES.tsv NODES THREADS ITERATIONS"""
import sys
import time

import networkit as nk

path, nodes, threads, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
nk.setNumberOfThreads(threads)
reader = nk.graphio.EdgeListReader("\t", 0, directed=True, continuous=True)
g = reader.read(path)
while g.numberOfNodes() < nodes:
    g.addNode()
edges = g.numberOfEdges()
pr = nk.centrality.PageRank(g, damp=0.85, tol=0.0, distributeSinks=nk.centrality.SinkHandling.DistributeSinks)
pr.maxIterations = iterations
start = time.perf_counter()
pr.run()
secs = time.perf_counter() - start
done = pr.numberOfIterations()
print(
    f"networkit {nk.__version__} pagerank: {edges} edges, {done} iterations, {threads} thread(s): "
    f"{secs:.3f}s, {secs * 1e9 / (edges * done):.2f} ns/edge/iteration"
)
