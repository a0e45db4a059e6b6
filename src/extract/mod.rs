//! Extraction: a jq query over an offloaded file, answered in-process, with
//! the output exactly as jq 1.6 prints it for the descriptor's shell
//! command `tail -n +2 FILE | jq FLAGS --argjson NAME VALUE ... 'FILTER'`,
//! a page of its lines at a time (the memory-pointer pattern's
//! `getArtifact`, with paging).
//!
//! * [`Query`] — a filter, its flags ([`JqFlags`]: `-s`, `-r`, `-c`) and
//!   named variables (jq's `$name`, never pasted into the filter);
//!   [`RecipeCommand::parse`] reads one back from a descriptor's recipe.
//! * [`Extractor`] — runs queries over files, bounded by [`ExtractLimits`],
//!   and answers a [`Page`] of output lines ([`Paging`]: `offset`, `limit`),
//!   with the total when it is known.
//! * [`ExtractError`] — why there is no page; its messages never show a
//!   path or an OS error.
//!
//! The interpreter is jaq (`jaq-core`, `jaq-std`, `jaq-json`), with jq 1.6's
//! semantics where jaq's differ and they matter for the output: numbers are
//! doubles printed in jq 1.6's format (`1e+17`, `1e-05`, `-0`), strings
//! escaped as jq 1.6 escapes them, objects keep their keys' order, values
//! compare in jq's order, `@csv`, `@tsv`, `@html`, `@uri`, `join`,
//! `from_entries`, `tostring`, `%`, slices and string repetition behave as
//! in jq 1.6, and values nested deeper than 256 print as
//! `<stripped: exceeds max depth>`. Every recipe the engine writes prints,
//! byte for byte, what `jq` 1.6 prints for it (`tests/engine/extract.rs`).
//! Known differences, all outside the recipes: regular expressions are
//! Rust's (`regex-bites`) rather than Oniguruma's, and refused when too
//! costly (see below); `tostream`, `input`, `inputs`, `env`, `$ENV`,
//! `$__loc__`, `debug`, `stderr`, `input_filename`, `halt`, `halt_error`,
//! `localtime`, `strflocaltime` and modules are not there (see below);
//! inputs nested deeper than 256 levels are refused, as jq 1.6 refuses them.
//!
//! # Speed: reading only what the filter reads
//!
//! Most of the time of a query over a large file goes into building the
//! records' values. Before reading, a conservative analysis of the parsed
//! filter (`extract/project.rs`) finds which keys of each record it can
//! see (`select(.provenance.confidence > 0.5) | {id, title, tags}` reads
//! four; `-s 'group_by(.namespace) | ...'` one); the reader builds those
//! and validates the rest without building it. Whatever form the analysis
//! does not model keeps its whole input, so a filter it cannot follow reads
//! whole records. Records are read one at a time as the evaluation asks
//! for them (all of them first with `-s`); a record the fast reader finds
//! unusual hands the rest of the file to jaq's reader, which reports
//! errors as jq does. `benches/extract.rs` compares it with jq 1.6 on the
//! same file (figures in `benches/README.md`).
//!
//! # Bounds: a query is untrusted code
//!
//! jq is a full language: `def f: f; f` loops forever (jaq turns the tail
//! call into a loop), `def f: 1 + f; f` overflows the native stack, which
//! aborts the whole process, `repeat(.)` and `range(1e12)` never end,
//! `reduce range(64) as $_ ("x"; . + .)` doubles a string 64 times, and
//! nothing statically decidable tells these from useful queries. So the
//! bounds are dynamic, measured as the query runs, and nothing is refused
//! for its shape. Checks before the evaluation: the filter's length, the
//! variables' names and size, and that every name it uses is defined (an
//! unbound `$name` or an unknown filter is [`ExtractError::Syntax`], which
//! names it). Then, as it runs:
//!
//! * **Time**: every step of the interpreter (each look-up of the program,
//!   which jaq makes for every term it evaluates), every element `range`
//!   yields, and every array or object compared, printed or iterated, is a
//!   tick; every 128 ticks the clock is read. Past the deadline
//!   ([`ExtractLimits::time_limit`], default 10 s) the evaluation stops.
//! * **Memory**: every value a query builds (strings, arrays, objects, by
//!   any operator or builtin) is charged to a budget *before* it is built
//!   ([`ExtractLimits::max_alloc_bytes`], default 256 MiB, counted over the
//!   whole evaluation, so it bounds what is alive as well); the input is
//!   read a chunk of lines at a time as the evaluation asks for it, so a
//!   query that does not slurp holds about 1 MiB of it whatever the
//!   file's size, and one that slurps reads a file of at most
//!   [`ExtractLimits::max_input_bytes`] (64 MiB). `"x" * 1e12`
//!   stops before allocating. Arrays and objects are charged 256 bytes
//!   more than they hold, so the budget also bounds how deeply values can
//!   nest (one million levels at most), which bounds the stack that
//!   dropping, comparing or printing them takes.
//! * **Stack**: each evaluation runs on a thread of its own with a stack of
//!   [`ExtractLimits::stack_bytes`] (256 MiB, reserved, not committed);
//!   each tick checks how much of it is used, and the evaluation stops
//!   1 MiB before its end.
//! * **Output**: at most [`ExtractLimits::max_output_bytes`] printed in all
//!   (64 MiB, lines before the page included), a page of at most
//!   [`ExtractLimits::max_page_bytes`] (1 MiB), and at most
//!   [`ExtractLimits::max_counted_lines`] lines counted past the page.
//! * **Concurrency**: at most [`ExtractLimits::max_concurrent`] evaluations
//!   at once (default 2); others wait up to
//!   [`ExtractLimits::queue_wait`] (2 s), then get [`ExtractError::Busy`].
//! * **Regular expressions**: a match runs inside the regex engine, where
//!   no tick can stop it, in time proportional to the string's length
//!   times the pattern's automaton; so each call's work is estimated first
//!   (string bytes times the pattern's length, times every counted
//!   repetition `{n}` in it) and past about a second's worth the call is an
//!   error of the query, like any jq error. jaq's matching natives run
//!   under names no filter can write, behind definitions that check.
//! * **Reach**: a query sees its input and its variables only. Not
//!   defined, so a query using them does not compile: `env` and `$ENV`
//!   (the server's environment variables), `localtime` and `strflocaltime`
//!   (its time zone), `input`, `inputs` and `input_filename` (there is one
//!   input stream, the file), `debug` and `stderr` (the server's stderr),
//!   `halt` and `halt_error` (they end the process), `$__loc__`, and module
//!   `import` and `include` (the server's disk). Filters are at most
//!   [`ExtractLimits::max_filter_bytes`] (16 KiB).
//!
//! Stopping needs a way out of jaq's interpreter, which has none: a stop
//! unwinds the evaluation's own thread ([`std::panic::resume_unwind`], no
//! panic hook, no message), caught where the thread starts, and every
//! value of the evaluation is dropped with it. So extraction needs
//! `panic = "unwind"` (Rust's default); a binary built with
//! `panic = "abort"` gets [`ExtractError::Unsupported`] for every query
//! rather than an evaluation that cannot be stopped. A caller that gives up
//! (its future dropped, or its own timeout) sets a flag the evaluation sees
//! at its next clock reading; the thread ends then and gives its permit
//! back, so threads never pile up. Unwinding takes time in proportion to
//! the depth of the evaluation's stack: a query stopped a hundred thousand
//! calls deep (`setpath` of a path that long) unwinds for about a second;
//! its caller has its error at the time limit plus one second whatever
//! happens, and the slot comes back when the unwinding ends (the stack, so
//! the unwinding, is bounded by [`ExtractLimits::stack_bytes`]).
//!
//! # Example
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use tower_lro::extract::{ExtractLimits, Extractor, Paging, Query};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let file = dir.path().join("atlatl-logs-01J0000000000000000000000.jsonl");
//! std::fs::write(&file, "{\"type\":\"lro_header\"}\n{\"level\":\"info\"}\n{\"level\":\"error\"}\n").unwrap();
//! let extractor = Extractor::new(ExtractLimits::default());
//! let query = Query::new("select(.level == $level) | .level")
//!     .raw(true)
//!     .var("level", serde_json::json!("error"));
//! let page = extractor.extract(&file, &query, Paging::default()).await.unwrap();
//! assert_eq!(page.lines, ["error"]);
//! assert_eq!(page.total_lines, Some(1));
//! # });
//! ```

mod fast;
mod guard;
mod input;
mod limits;
mod natives;
mod print;
mod project;
mod query;
mod recipe;
mod run;
mod stream;
mod traits;
mod update;
mod value;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use limits::{ExtractError, ExtractLimits};
pub use query::{JqFlags, Page, Paging, Query};
pub use recipe::RecipeCommand;

use guard::{Budget, Stop};
use run::{Full, Pager};

/// Runs jq queries over offloaded files, within [`ExtractLimits`].
///
/// Cloning shares the evaluation slots.
#[derive(Debug, Clone)]
pub struct Extractor {
    limits: Arc<ExtractLimits>,
    slots: Arc<Semaphore>,
}

/// How long past the time limit a caller waits for the evaluation thread
/// to report before giving up on it.
const GRACE: Duration = Duration::from_secs(1);
/// Stack kept free below the guard's floor for code that does not tick.
const STACK_MARGIN: usize = 1 << 20;

impl Extractor {
    /// An extractor with these limits.
    pub fn new(limits: ExtractLimits) -> Extractor {
        let slots = Arc::new(Semaphore::new(limits.max_concurrent.max(1)));
        Extractor {
            limits: Arc::new(limits),
            slots,
        }
    }

    /// The limits.
    pub fn limits(&self) -> &ExtractLimits {
        &self.limits
    }

    /// Runs `query` over `file` (one the caller has checked, for example
    /// with [`Offloader::check_readable`](crate::offload::Offloader::check_readable))
    /// and returns the page `paging` of its output. The work runs on a
    /// thread of its own; the async runtime only waits.
    pub async fn extract(
        &self,
        file: impl AsRef<Path>,
        query: &Query,
        paging: Paging,
    ) -> Result<Page, ExtractError> {
        self.extract_from(Source::Path(file.as_ref().to_owned()), query, paging)
            .await
    }

    /// [`extract`](Self::extract) over `reader`, the whole offload file
    /// (header line first) of `size` bytes, read as the evaluation goes:
    /// a shared store's object through ranged reads, for example. A query
    /// that does not slurp reads only as far as its page needs, and one
    /// line further (so the page says whether more follows, not how much:
    /// counting would read the rest).
    pub async fn extract_reader(
        &self,
        reader: Box<dyn std::io::Read + Send>,
        size: u64,
        query: &Query,
        paging: Paging,
    ) -> Result<Page, ExtractError> {
        self.extract_from(Source::Reader(reader, size), query, paging)
            .await
    }

    /// [`extract_reader`](Self::extract_reader) over `reader`, which
    /// starts at the line of record `first` (0 the first after the header)
    /// of a file whose `records` record lines are each one JSON object
    /// jq reads, for a query that makes one value of any object
    /// ([`Query::one_value_per_object`]): value `n` of its output is then
    /// record `n`'s, so the page needs no record before `first`, and its
    /// total is `records`.
    pub(crate) async fn extract_from_record(
        &self,
        reader: Box<dyn std::io::Read + Send>,
        (first, records): (u64, u64),
        query: &Query,
        paging: Paging,
    ) -> Result<Page, ExtractError> {
        let first = usize::try_from(first)
            .unwrap_or(usize::MAX)
            .min(paging.offset);
        let records = usize::try_from(records).unwrap_or(usize::MAX);
        let within = Paging {
            offset: paging.offset - first,
            limit: paging.limit,
        };
        let mut page = self
            .extract_from(Source::Records(reader), query, within)
            .await?;
        page.offset = paging.offset;
        page.total_lines = Some(records);
        page.more = records > paging.offset.saturating_add(page.lines.len());
        Ok(page)
    }

    async fn extract_from(
        &self,
        file: Source,
        query: &Query,
        paging: Paging,
    ) -> Result<Page, ExtractError> {
        query.validate(&self.limits)?;
        let permit =
            tokio::time::timeout(self.limits.queue_wait, self.slots.clone().acquire_owned())
                .await
                .map_err(|_| ExtractError::Busy)?
                .map_err(|_| ExtractError::Internal)?;
        let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job = self.job(file, query, paging, permit, &cancel.0);
        spawn(job, self.limits.stack_bytes, move |r| {
            let _ = tx.send(r);
        })?;
        match tokio::time::timeout(self.limits.time_limit + GRACE, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(ExtractError::Internal),
            Err(_) => Err(ExtractError::Timeout(self.limits.time_limit)),
        }
    }

    /// [`extract`](Self::extract) for callers without an async runtime:
    /// blocks the calling thread. With every slot taken, waits up to
    /// [`ExtractLimits::queue_wait`].
    pub fn extract_blocking(
        &self,
        file: impl AsRef<Path>,
        query: &Query,
        paging: Paging,
    ) -> Result<Page, ExtractError> {
        query.validate(&self.limits)?;
        let permit = self.wait_for_slot()?;
        let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
        let (tx, rx) = std::sync::mpsc::channel();
        let job = self.job(
            Source::Path(file.as_ref().to_owned()),
            query,
            paging,
            permit,
            &cancel.0,
        );
        spawn(job, self.limits.stack_bytes, move |r| {
            let _ = tx.send(r);
        })?;
        match rx.recv_timeout(self.limits.time_limit + GRACE) {
            Ok(result) => result,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                Err(ExtractError::Timeout(self.limits.time_limit))
            }
            Err(_) => Err(ExtractError::Internal),
        }
    }

    fn wait_for_slot(&self) -> Result<OwnedSemaphorePermit, ExtractError> {
        let until = Instant::now() + self.limits.queue_wait;
        loop {
            if let Ok(p) = self.slots.clone().try_acquire_owned() {
                return Ok(p);
            }
            if Instant::now() >= until {
                return Err(ExtractError::Busy);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn job(
        &self,
        file: Source,
        query: &Query,
        paging: Paging,
        permit: OwnedSemaphorePermit,
        cancel: &Arc<AtomicBool>,
    ) -> Job {
        Job {
            file,
            query: query.clone(),
            paging,
            limits: self.limits.clone(),
            cancel: cancel.clone(),
            _permit: permit,
        }
    }
}

/// Sets the cancel flag when the caller's future or call ends, so an
/// evaluation nobody waits for any more stops at its next clock reading.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Everything one evaluation thread needs; it holds its slot until it ends.
struct Job {
    file: Source,
    query: Query,
    paging: Paging,
    limits: Arc<ExtractLimits>,
    cancel: Arc<AtomicBool>,
    _permit: OwnedSemaphorePermit,
}

/// Starts the evaluation thread; `reply` gets its result.
fn spawn(
    job: Job,
    stack: usize,
    reply: impl FnOnce(Result<Page, ExtractError>) + Send + 'static,
) -> Result<(), ExtractError> {
    std::thread::Builder::new()
        .name("lro-extract".into())
        .stack_size(stack.saturating_add(STACK_MARGIN))
        .spawn(move || reply(job.run()))
        .map(drop)
        .map_err(|_| ExtractError::Internal)
}

impl Job {
    fn run(mut self) -> Result<Page, ExtractError> {
        if !cfg!(panic = "unwind") {
            return Err(ExtractError::Unsupported);
        }
        let deadline = Instant::now() + self.limits.time_limit;
        let compiled = run::compile(&self.query)?;
        let max = self.limits.max_input_bytes;
        let mut pager = Pager::new(self.paging, &self.limits, self.query.by_value);
        let (reader, size) = match self.file {
            Source::Path(ref path) => open_file(path)?,
            Source::Reader(ref mut reader, size) => {
                // Each byte past the page would be fetched to count lines.
                pager.count_one_past_the_page();
                (std::mem::replace(reader, Box::new(std::io::empty())), size)
            }
            Source::Records(ref mut reader) => {
                // The caller knows the total.
                pager.count_one_past_the_page();
                let reader = std::mem::replace(reader, Box::new(std::io::empty()));
                (reader, 0)
            }
        };
        // A slurping query holds every value; others one chunk at a time.
        if self.query.jq_flags().slurp && size > max {
            return Err(ExtractError::InputTooLarge { max });
        }
        let mut inputs = stream::Chunks::new(reader, compiled.needs(), max);
        if matches!(self.file, Source::Records(_)) {
            inputs = inputs.at_a_record();
        }
        let budget = Budget {
            deadline,
            alloc_bytes: self.limits.max_alloc_bytes,
            stack_bytes: self.limits.stack_bytes.saturating_sub(STACK_MARGIN),
            cancel: self.cancel.clone(),
        };
        let stopped = match guard::run_guarded(budget, || {
            run::evaluate(&compiled, &mut inputs, &mut pager)
        }) {
            Ok(Ok(())) => None,
            Ok(Err(e)) => return Err(ExtractError::BadInput(e.to_string())),
            Err(stop) => Some(stop),
        };
        if let Some(failure) = inputs.failure.take() {
            return Err(failure);
        }
        self.page(pager, stopped)
    }

    /// The page, or why there is none.
    fn page(&self, pager: Pager, stopped: Option<Stop>) -> Result<Page, ExtractError> {
        let complete = pager.page_complete();
        match (stopped, pager.full) {
            (Some(_), _) if complete => {}
            (Some(stop), _) => return Err(self.stop_error(stop)),
            (None, Some(Full::Output)) if !complete => {
                return Err(ExtractError::OutputTooLarge {
                    max: self.limits.max_output_bytes,
                });
            }
            (None, Some(Full::PageBytes)) if pager.lines.is_empty() => {
                return Err(ExtractError::LineTooLong {
                    max: self.limits.max_page_bytes,
                });
            }
            _ => {}
        }
        let total = pager.finished.then(|| pager.lines_seen());
        let shown_end = self.paging.offset.saturating_add(pager.lines.len());
        Ok(Page {
            more: total.is_none_or(|t| t > shown_end),
            cut: pager.cut,
            offset: self.paging.offset,
            total_lines: total,
            lines: pager.lines,
            errors: pager.errors,
            error_count: pager.error_count,
        })
    }

    fn stop_error(&self, stop: Stop) -> ExtractError {
        match stop {
            Stop::Timeout => ExtractError::Timeout(self.limits.time_limit),
            Stop::Cancelled => ExtractError::Cancelled,
            Stop::Memory => ExtractError::Memory {
                max: self.limits.max_alloc_bytes,
            },
            Stop::Depth => ExtractError::TooDeep,
        }
    }
}

/// Where a query's input comes from.
enum Source {
    /// A file of this machine.
    Path(PathBuf),
    /// A reader of the whole file, and its size in bytes.
    Reader(Box<dyn std::io::Read + Send>, u64),
    /// A reader from a record line to the end, for a query that does not
    /// slurp.
    Records(Box<dyn std::io::Read + Send>),
}

/// The regular file at `path`, opened, and its size.
fn open_file(path: &Path) -> Result<(Box<dyn std::io::Read + Send>, u64), ExtractError> {
    let file = std::fs::File::open(path).map_err(|_| ExtractError::Unreadable)?;
    let meta = file.metadata().map_err(|_| ExtractError::Unreadable)?;
    if !meta.is_file() {
        return Err(ExtractError::Unreadable);
    }
    Ok((Box::new(file), meta.len()))
}
