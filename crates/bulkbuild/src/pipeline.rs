//! The build's dataflow, one copy per timely worker:
//!
//! ```text
//!  crawl files ─► read (files split among workers) ─► records
//!    ─► exchange round robin ─► parse ─► PageCrawl, keyed by page and replay order
//!    ─► exchange by page hash ─► [pages]  sort by page, replay crawls ─► links, pages SSTs
//!    ─► view rows in batches, exchange by key hash ─► [views]  sort, reduce stages 1-4 ─► view SSTs
//!    ─► counters rows in batches, exchange by key hash ─► [counters]  sort, reduce ─► counters SST
//! ```
//!
//! The views operator reduces what the pages sent (backlinks, URL and expiry rows, and
//! pages' distinct members) in stage 1, by partition hash: an item's backlinks and its
//! pages' members come together, and an item whose sums fit in memory gets all its view
//! rows there, in key order. Only items too large for that (the hot ones) have their
//! partial sums sorted and reduced in stages 2 to 4, and the files of those stages' tables
//! are cut around each such item, so that no two files of a table overlap.
//!
//! A historic build keeps the graph's edges (from the `links` rows) and the backlink rows
//! (instead of their SST files) for its flow build ([`crate::FlowInput`]).
//!
//! Rows are routed by ranges of their partition hash (worker `w` of `n` owns
//! `[w·2⁶⁴/n, (w+1)·2⁶⁴/n)`), so the SST files of one table never overlap and go
//! straight to the bottom level. Operators that emit many rows do it in slices and ask
//! to be scheduled again, so downstream operators drain their input meanwhile: memory is
//! the sorters' budgets, not the data.

use crate::error::{Error, Result};
use crate::flow_input::{KeptFiles, KeptRows};
use crate::progress::{Counters, LocalCount};
use crate::row_batch::{rows, Batcher, RowBatch};
use crate::sorter::{Groups, RunPolicy, Sorter};
use ingest::{CrawlSink, FileReader, FileSummary, RawRecord, ReadOptions, RecordParser, SinkError};
use linkstore::build::{
    crawl_sort_key, stored_backlink, PageReport, PageRows, ReduceOut, Reducer, Table,
    TableFileWriter, Values, CRAWL_SORT_SUFFIX,
};
use linkstore::{ApplyStats, PageCrawl};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::Input;
use timely::dataflow::{InputHandleVec, StreamVec};
use timely::progress::frontier::MutableAntichain;

/// A parsed crawl on its way to its page's worker: the page's partition hash, the
/// crawl's sort key ([`crawl_sort_key`]: by page, then in replay order) and the crawl
/// ([`PageCrawl::encode`]), keyed where it was parsed so that its worker need not decode
/// it to sort it.
type SortedCrawl = (u64, Vec<u8>, Vec<u8>);

/// Groups handled per activation before yielding to other operators.
const GROUPS_PER_SLICE: usize = 4096;

/// What every worker shares.
pub(crate) struct Plan {
    pub files: Vec<PathBuf>,
    pub read: ReadOptions,
    pub hash_bits: u8,
    /// Where sorted runs and SST files go until they are ingested.
    pub scratch: PathBuf,
    /// Memory budget of each sorter.
    pub sorter_budget: usize,
    /// Which sorted runs are written as they are.
    pub runs: RunPolicy,
    /// Raw bytes of rows after which an SST file is finished ([`crate::BuildOptions`]).
    pub file_bytes: u64,
    pub progress: Arc<Counters>,
    /// Where to keep the graph and the backlink rows for a flow build, instead of
    /// writing backlinks to the store ([`crate::FlowInput`]); `None`: write them.
    pub flow_input: Option<PathBuf>,
    /// [`crate::BuildOptions::writer_rows`].
    pub writer_rows: bool,
}

impl Plan {
    /// A sorter of the plan's budget, its runs in the scratch directory.
    fn sorter(&self, name: &str) -> Sorter {
        Sorter::new(&self.scratch, name, self.sorter_budget, self.runs.clone())
    }
}

/// What one worker made.
#[derive(Default)]
pub(crate) struct WorkerOutput {
    pub files: Vec<(Table, PathBuf)>,
    pub kept: KeptFiles,
    /// What reading each of this worker's files found, by file index.
    pub summaries: Vec<(usize, FileSummary)>,
    /// What parsing this worker's share of each file's records found, by file index.
    pub parsed: Vec<(usize, FileSummary)>,
    pub pages: PageReport,
}

/// The worker `partition_hash` belongs to.
pub(crate) fn owner(hash: u64, peers: usize) -> u64 {
    ((u128::from(hash) * peers as u128) >> 64) as u64
}

/// Shared by a worker's operators: its output and the first error.
#[derive(Default)]
struct Shared {
    out: WorkerOutput,
    error: Option<Error>,
}

type SharedRef = Rc<RefCell<Shared>>;

fn fail(shared: &SharedRef, e: Error) {
    let mut s = shared.borrow_mut();
    if s.error.is_none() {
        s.error = Some(e);
    }
}

/// SST files being written by one worker, one per table at a time, and the rows kept
/// for a flow build.
struct Files {
    dir: PathBuf,
    prefix: String,
    open: BTreeMap<Table, TableFileWriter>,
    /// Files finished before [`Files::finish`] ([`Files::cut`]).
    done: Vec<(Table, PathBuf)>,
    count: usize,
    progress: Arc<Counters>,
    rows_written: LocalCount,
    kept: Option<KeptRows>,
    /// Raw bytes after which a file is finished and the table's next rows start another.
    file_bytes: u64,
}

impl Files {
    /// Files in the plan's scratch directory, rows kept in its
    /// [`Plan::flow_input`]; `prefix` names them.
    fn new(plan: &Plan, prefix: String) -> Files {
        Files {
            dir: plan.scratch.clone(),
            file_bytes: plan.file_bytes,
            kept: plan
                .flow_input
                .as_deref()
                .map(|d| KeptRows::new(d, &prefix)),
            prefix,
            open: BTreeMap::new(),
            done: Vec::new(),
            count: 0,
            progress: plan.progress.clone(),
            rows_written: LocalCount::default(),
        }
    }

    /// A `backlinks` row: kept whole for the flow build when rows are kept, else
    /// written as the store keeps it (a pointer, unless it is the link's URL row).
    fn put_backlink(&mut self, key: &[u8], value: &[u8], is_url_row: bool) -> Result<()> {
        if let Some(kept) = &mut self.kept {
            kept.put_backlink(key, value, is_url_row)?;
            self.rows_written.bump(&self.progress.rows_written);
            return Ok(());
        }
        self.put(Table::Backlinks, key, stored_backlink(value, is_url_row))
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        if !self.open.contains_key(&table) {
            self.count += 1;
            let path = self.dir.join(format!(
                "{}-{}-{}.sst",
                self.prefix,
                table.cf_name(),
                self.count
            ));
            self.open
                .insert(table, TableFileWriter::create(table, &path)?);
        }
        let w = self.open.get_mut(&table).expect("opened above");
        let written = w.put(key, value)?;
        let full = w.is_full(self.file_bytes);
        if let (Some(kept), Table::Links | Table::Pages, true) = (&mut self.kept, table, written) {
            kept.put_internal_edges(table, key, value)?;
        }
        self.rows_written.bump(&self.progress.rows_written);
        if full {
            self.cut(|t| t == table)?;
        }
        Ok(())
    }

    /// Finishes the open files of the tables `which` picks: their next rows start new
    /// files.
    fn cut(&mut self, which: impl Fn(Table) -> bool) -> Result<()> {
        self.rows_written.flush(&self.progress.rows_written);
        let tables: Vec<Table> = self.open.keys().copied().filter(|&t| which(t)).collect();
        for table in tables {
            let w = self.open.remove(&table).expect("listed above");
            if let Some(path) = w.finish()? {
                let size = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?;
                self.progress.add(&self.progress.sst_bytes, size.len());
                self.done.push((table, path));
            }
        }
        Ok(())
    }

    fn finish(&mut self, into: &mut WorkerOutput) -> Result<()> {
        self.cut(|_| true)?;
        into.files.append(&mut self.done);
        if let Some(kept) = &mut self.kept {
            kept.finish(&mut into.kept)?;
        }
        Ok(())
    }
}

/// Runs one worker: builds the dataflow, feeds it this worker's share of the files, and
/// steps it to completion.
pub(crate) fn run_worker(
    worker: &mut timely::worker::Worker,
    plan: &Arc<Plan>,
) -> Result<WorkerOutput> {
    let index = worker.index();
    let peers = worker.peers();
    let shared: SharedRef = Rc::default();
    let mut input = InputHandleVec::<u64, (usize, RawRecord)>::new();

    worker.dataflow::<u64, _, _>(|scope| {
        let records = scope.input_from(&mut input);
        let crawls = parse(records, plan, peers, shared.clone());
        let pages = PagesOp::new(plan, index, peers, shared.clone());
        let views_shared = shared.clone();
        let counters_shared = shared.clone();
        let views_plan = plan.clone();
        let views = crawls
            .unary_frontier::<timely::container::CapacityContainerBuilder<Vec<RowBatch>>, _, _, _>(
                Exchange::new(move |c: &SortedCrawl| owner(c.0, peers)),
                "pages",
                |cap, info| {
                    let mut op = pages;
                    let mut cap = Some(cap);
                    let activator = scope.activator_for(info.address);
                    move |(input, frontier), output| {
                        input.for_each(|_, data| {
                            for crawl in data.drain(..) {
                                op.collect(&crawl);
                            }
                        });
                        if frontier.is_empty() {
                            if let Some(c) = &cap {
                                let mut session = output.session(c);
                                let done = op.replay(&mut |row| session.give(row));
                                drop(session);
                                if done {
                                    cap = None;
                                } else {
                                    activator.activate();
                                }
                            }
                        }
                    }
                },
            );
        let counters = views
            .unary_frontier::<timely::container::CapacityContainerBuilder<Vec<RowBatch>>, _, _, _>(
                Exchange::new(|b: &RowBatch| b.0),
                "views",
                |cap, info| {
                    let plan = views_plan;
                    let files = Files::new(&plan, format!("w{index:03}-v"));
                    let mut op = ViewsOp::new(&plan, files, index, peers, views_shared);
                    let mut cap = Some(cap);
                    let activator = scope.activator_for(info.address);
                    move |(input, frontier), output| {
                        let mut session = cap.as_ref().map(|c| output.session(c));
                        input.for_each(|_, data| {
                            for (_, batch) in data.drain(..) {
                                match &mut session {
                                    Some(s) => op.collect(&batch, &mut |b| s.give(b)),
                                    None => op.collect(&batch, &mut |_| {}),
                                }
                            }
                        });
                        if let Some(s) = &mut session {
                            op.flush(&mut |b| s.give(b));
                        }
                        if frontier.is_empty() {
                            if let Some(s) = &mut session {
                                let done = op.reduce(&mut |row| s.give(row));
                                drop(session);
                                if done {
                                    cap = None;
                                } else {
                                    activator.activate();
                                }
                            }
                        }
                    }
                },
            );
        counters.sink(Exchange::new(|b: &RowBatch| b.0), "counters", {
            let plan = plan.clone();
            let mut sorter = Some(plan.sorter(&format!("w{index}-counters")));
            move |(input, frontier): (_, &MutableAntichain<u64>)| {
                input.for_each(|_, data| {
                    if let Some(s) = &mut sorter {
                        for (_, batch) in data.drain(..) {
                            for (table, k, v) in rows(&batch) {
                                if let Err(e) = s.push(table, k, v) {
                                    fail(&counters_shared, e);
                                }
                            }
                        }
                    }
                });
                if frontier.is_empty() {
                    if let Some(s) = sorter.take() {
                        let mut files = Files::new(&plan, format!("w{index:03}-c"));
                        let r = reduce_counters(s, plan.hash_bits, &mut files, &plan.progress)
                            .and_then(|()| {
                                let mut sh = counters_shared.borrow_mut();
                                files.finish(&mut sh.out)
                            });
                        if let Err(e) = r {
                            fail(&counters_shared, e);
                        }
                    }
                }
            }
        });
    });

    // Read this worker's files (file i goes to worker i mod peers); every worker parses.
    for (i, path) in plan.files.iter().enumerate() {
        if i % peers != index {
            continue;
        }
        let read_err = |source| Error::Read {
            path: path.clone(),
            source,
        };
        let mut reader = FileReader::open(path).map_err(read_err)?;
        let progress = &plan.progress;
        let mut reported = 0;
        let mut report = |reader: &FileReader| {
            let read = reader.bytes().0;
            progress.add(&progress.bytes_read, read - reported);
            reported = read;
        };
        while let Some(record) = reader.next_record() {
            input.send((i, record));
            // Let the records flow on instead of piling up at the input.
            if reader.records().is_multiple_of(256) {
                report(&reader);
                worker.step();
            }
        }
        report(&reader);
        progress.add(&progress.files_read, 1);
        shared.borrow_mut().out.summaries.push((i, reader.finish()));
    }
    input.close();
    // Parked while waiting for the other workers (timely wakes a worker when data comes
    // for it): spinning here was a tenth of a build's CPU, taken from whatever else runs.
    while worker.step_or_park(None) {}
    let mut shared = shared.borrow_mut();
    match shared.error.take() {
        Some(e) => Err(e),
        None => Ok(std::mem::take(&mut shared.out)),
    }
}

/// Parses the records that come this worker's way (spread over the workers whichever
/// worker read them) into crawls, routed to their page's worker.
fn parse<'scope>(
    records: StreamVec<'scope, u64, (usize, RawRecord)>,
    plan: &Plan,
    peers: usize,
    shared: SharedRef,
) -> StreamVec<'scope, u64, SortedCrawl> {
    let peers = peers as u64;
    let (files, read) = (plan.files.clone(), plan.read.clone());
    records
        .unary_frontier::<timely::container::CapacityContainerBuilder<Vec<SortedCrawl>>, _, _, _>(
            Exchange::new(move |(file, r): &(usize, RawRecord)| (*file as u64 + r.seq) % peers),
            "parse",
            |cap, _info| {
                let mut parsers: BTreeMap<usize, RecordParser> = BTreeMap::new();
                let mut cap = Some(cap);
                move |(input, frontier), output| {
                    let Some(c) = &cap else {
                        return;
                    };
                    let mut session = output.session(c);
                    input.for_each(|_, data| {
                        for (file, record) in data.drain(..) {
                            let parser = parsers
                                .entry(file)
                                .or_insert_with(|| RecordParser::new(&files[file], read.clone()));
                            let mut sink = GiveCrawls(|crawl: PageCrawl| {
                                let encoded = crawl.encode();
                                let key = crawl_sort_key(&crawl, &encoded);
                                let hash = Table::Pages.partition_hash(&key);
                                session.give((hash, key, encoded));
                            });
                            if let Err(e) = parser.parse(&record, &mut sink) {
                                fail(
                                    &shared,
                                    Error::Read {
                                        path: files[file].clone(),
                                        source: e,
                                    },
                                );
                            }
                        }
                    });
                    drop(session);
                    if frontier.is_empty() {
                        let mut sh = shared.borrow_mut();
                        for (file, parser) in std::mem::take(&mut parsers) {
                            sh.out.parsed.push((file, parser.finish()));
                        }
                        cap = None;
                    }
                }
            },
        )
}

/// Hands parsed crawls on; a bulk build applies them later.
struct GiveCrawls<F>(F);

impl<F: FnMut(PageCrawl)> CrawlSink for GiveCrawls<F> {
    fn accept(&mut self, crawl: PageCrawl) -> Result<Option<ApplyStats>, SinkError> {
        (self.0)(crawl);
        Ok(None)
    }
}

/// Sorts crawls by page and replays each page.
struct PagesOp {
    sorter: Option<Sorter>,
    groups: Option<Groups>,
    rows: PageRows,
    files: Files,
    /// View rows on their way to the views operator.
    batcher: Batcher,
    shared: SharedRef,
    progress: Arc<Counters>,
    /// Key of the page being replayed.
    key: Vec<u8>,
}

impl PagesOp {
    fn new(plan: &Plan, index: usize, peers: usize, shared: SharedRef) -> PagesOp {
        PagesOp {
            batcher: Batcher::new(peers),
            sorter: Some(plan.sorter(&format!("w{index}-pages"))),
            groups: None,
            rows: PageRows::new(plan.hash_bits, plan.writer_rows, plan.flow_input.is_some()),
            files: Files::new(plan, format!("w{index:03}-p")),
            shared,
            progress: plan.progress.clone(),
            key: Vec::new(),
        }
    }

    fn collect(&mut self, (_, key, crawl): &SortedCrawl) {
        let Some(sorter) = &mut self.sorter else {
            return;
        };
        let r = sorter.push(Table::Pages, key, crawl);
        self.progress.add(&self.progress.crawls, 1);
        if let Err(e) = r {
            fail(&self.shared, e);
        }
    }

    /// Replays the next slice of pages; true when every page is done.
    fn replay(&mut self, give: &mut dyn FnMut(RowBatch)) -> bool {
        let r = self.replay_slice(give);
        self.batcher.flush(give);
        match r {
            Ok(done) => done,
            Err(e) => {
                fail(&self.shared, e);
                self.groups = None;
                true
            }
        }
    }

    fn replay_slice(&mut self, give: &mut dyn FnMut(RowBatch)) -> Result<bool> {
        if let Some(sorter) = self.sorter.take() {
            // A page's crawls make one group, streamed in replay order: a page crawled
            // more often than memory holds is still replayed.
            self.groups = Some(sorter.into_groups(|k| k.len() - CRAWL_SORT_SUFFIX)?);
        }
        let Some(groups) = &mut self.groups else {
            return Ok(true);
        };
        let (files, batcher) = (&mut self.files, &mut self.batcher);
        let mut failed = None;
        for _ in 0..GROUPS_PER_SLICE {
            let Some(_) = groups.next_group(&mut self.key)? else {
                self.groups = None;
                let mut shared = self.shared.borrow_mut();
                files.finish(&mut shared.out)?;
                shared.out.pages = self.rows.report;
                return Ok(true);
            };
            let mut crawls = || groups.next_value().map(PageCrawl::decode).transpose();
            self.rows.page(&mut crawls, &mut |table, key, value| {
                let r = if table.stage() == 0 {
                    files.put(table, &key, &value)
                } else {
                    batcher.put(table, &key, &value, give);
                    Ok(())
                };
                if let Err(e) = r {
                    failed.get_or_insert(e);
                }
            })?;
            groups.take_error()?;
            self.progress.add(&self.progress.pages, 1);
            if let Some(e) = failed.take() {
                return Err(e);
            }
        }
        Ok(false)
    }
}

/// Sorts view rows and reduces them stage by stage.
struct ViewsOp {
    /// Sorters of stages 1 to 4 (counters, stage 5, go to the counters operator).
    sorters: Vec<Option<Sorter>>,
    /// The groups of the stage being reduced.
    reducing: Option<Groups>,
    /// The stage being reduced (1 to 4).
    stage: u8,
    /// Partition hash of the last group of a later stage reduced.
    last_hash: Option<u64>,
    reducer: Reducer,
    /// Key of the group being reduced.
    key: Vec<u8>,
    files: Files,
    /// Counters rows on their way to the counters operator.
    batcher: Batcher,
    shared: SharedRef,
    progress: Arc<Counters>,
    groups: LocalCount,
}

/// Share of a sorter's budget that one item's sums may take before the item is reduced
/// stage by stage instead of in memory.
const ITEM_BUDGET_SHARE: usize = 4;

impl ViewsOp {
    fn new(plan: &Plan, files: Files, index: usize, peers: usize, shared: SharedRef) -> ViewsOp {
        let item_budget = plan.sorter_budget / ITEM_BUDGET_SHARE;
        ViewsOp {
            sorters: (1..=4)
                .map(|s| Some(plan.sorter(&format!("w{index}-views{s}"))))
                .collect(),
            reducing: None,
            stage: 0,
            last_hash: None,
            reducer: Reducer::new(plan.hash_bits, item_budget, plan.writer_rows),
            key: Vec::new(),
            files,
            batcher: Batcher::new(peers),
            shared,
            progress: plan.progress.clone(),
            groups: LocalCount::default(),
        }
    }

    /// Takes a batch of rows the pages sent: counters rows go on to the counters
    /// operator through `give`, every other row is reduced in the first stage (see the
    /// module documentation).
    fn collect(&mut self, batch: &[u8], give: &mut dyn FnMut(RowBatch)) {
        for (table, k, v) in rows(batch) {
            if table == Table::Counters {
                self.batcher.put(table, k, v, give);
            } else if let Some(Some(s)) = self.sorters.first_mut() {
                if let Err(e) = s.push(table, k, v) {
                    fail(&self.shared, e);
                }
            }
        }
    }

    /// Hands on the counters rows collected or reduced so far.
    fn flush(&mut self, give: &mut dyn FnMut(RowBatch)) {
        self.batcher.flush(give);
    }

    /// Reduces the next slice of groups; true when every stage is done.
    fn reduce(&mut self, give: &mut dyn FnMut(RowBatch)) -> bool {
        let r = self.reduce_slice(give);
        self.flush(give);
        match r {
            Ok(done) => done,
            Err(e) => {
                fail(&self.shared, e);
                self.reducing = None;
                self.sorters.clear();
                true
            }
        }
    }

    fn reduce_slice(&mut self, give: &mut dyn FnMut(RowBatch)) -> Result<bool> {
        if self.reducing.is_none() {
            let Some(stage) = self.sorters.iter().position(Option::is_some) else {
                return Ok(true);
            };
            let sorter = self.sorters[stage].take().expect("found above");
            self.reducing = Some(sorter.into_groups(<[u8]>::len)?);
            self.stage = stage as u8 + 1;
            self.reducer.start_stage(self.stage);
            self.last_hash = None;
        }
        let groups = self.reducing.as_mut().expect("set above");
        let mut out = StageOut {
            files: &mut self.files,
            sorters: &mut self.sorters,
            counters: Some((&mut self.batcher, give)),
            failed: None,
        };
        for _ in 0..GROUPS_PER_SLICE {
            let Some(table) = groups.next_group(&mut self.key)? else {
                self.groups.flush(&self.progress.groups);
                // Every row this stage feeds is sorted before the next stage starts.
                self.reducer.finish(&mut out);
                self.reducing = None;
                if let Some(e) = out.failed {
                    return Err(e);
                }
                let mut shared = self.shared.borrow_mut();
                self.files.finish(&mut shared.out)?;
                return Ok(self.sorters.iter().all(Option::is_none));
            };
            if self.stage > Table::Backlinks.stage() {
                // Later stages hold only items too large to reduce in memory, each
                // between two of the first stage's files: one file per item and table.
                let hash = table.partition_hash(&self.key);
                if self.last_hash.is_some_and(|h| h != hash) {
                    out.cut();
                }
                self.last_hash = Some(hash);
            }
            self.reducer.reduce(table, &self.key, groups, &mut out)?;
            groups.take_error()?;
            self.groups.bump(&self.progress.groups);
            if let Some(e) = out.failed.take() {
                return Err(e);
            }
        }
        Ok(false)
    }
}

/// Where a stage's reductions go: final rows to SST files, fed rows to the sorter of
/// their stage, counters rows to the counters operator.
struct StageOut<'a> {
    files: &'a mut Files,
    /// Sorters of stages 1 to 4; `None` for a sorter already reduced or being reduced.
    sorters: &'a mut Vec<Option<Sorter>>,
    /// Where counters rows go: `None` when reducing counters, which feed nothing.
    counters: Option<(&'a mut Batcher, &'a mut dyn FnMut(RowBatch))>,
    failed: Option<Error>,
}

impl ReduceOut for StageOut<'_> {
    fn row(&mut self, table: Table, key: &[u8], value: &[u8]) {
        if let Err(e) = self.files.put(table, key, value) {
            self.failed.get_or_insert(e);
        }
    }

    fn backlink(&mut self, key: &[u8], value: &[u8], is_url_row: bool) {
        if let Err(e) = self.files.put_backlink(key, value, is_url_row) {
            self.failed.get_or_insert(e);
        }
    }

    fn feed(&mut self, table: Table, key: Vec<u8>, value: Vec<u8>) {
        if table == Table::Counters {
            let (batcher, give) = self
                .counters
                .as_mut()
                .expect("counters feed no other table");
            batcher.put(table, &key, &value, *give);
            return;
        }
        let r = match self.sorters.get_mut(usize::from(table.stage()) - 1) {
            Some(Some(s)) => s.push(table, &key, &value),
            _ => unreachable!("a reduction feeds only later stages"),
        };
        if let Err(e) = r {
            self.failed.get_or_insert(e);
        }
    }

    fn cut(&mut self) {
        if let Err(e) = self.files.cut(|t| t.stage() > Table::Backlinks.stage()) {
            self.failed.get_or_insert(e);
        }
    }
}

/// Reduces every group of the counters' sorter: counters feed nothing.
fn reduce_counters(sorter: Sorter, bits: u8, files: &mut Files, progress: &Counters) -> Result<()> {
    // Counters feed no `distinct` row: whether writer-only ones are written is moot.
    let mut reducer = Reducer::new(bits, 0, true);
    reducer.start_stage(Table::Counters.stage());
    let mut groups = sorter.into_groups(<[u8]>::len)?;
    let mut key = Vec::new();
    let mut reduced = LocalCount::default();
    let mut out = StageOut {
        files,
        sorters: &mut Vec::new(),
        counters: None,
        failed: None,
    };
    while let Some(table) = groups.next_group(&mut key)? {
        reducer.reduce(table, &key, &mut groups, &mut out)?;
        groups.take_error()?;
        reduced.bump(&progress.groups);
        if let Some(e) = out.failed.take() {
            return Err(e);
        }
    }
    reduced.flush(&progress.groups);
    reducer.finish(&mut out);
    out.failed.map_or(Ok(()), Err)
}
