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
//! byte for byte, what `jq` 1.6 prints for it (`tests/extract.rs`).
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
//! errors as jq does. Over the bench's file (`benches/extract.rs`) recipe
//! 6 runs about 7 times as fast as jq 1.6 and the custom filter 3 to 4
//! times (`benches/README.md`).
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
//!   bounded by [`ExtractLimits::max_input_bytes`] (64 MiB). `"x" * 1e12`
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
mod natives;
mod print;
mod project;
mod recipe;
mod run;
mod traits;
mod update;
mod value;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use recipe::RecipeCommand;

use guard::{Budget, Stop};
use run::{Full, Pager};

/// jq's command-line flags that change what is printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JqFlags {
    /// `-s`: all inputs as one array.
    pub slurp: bool,
    /// `-r`: strings printed without quotes or escapes.
    pub raw: bool,
    /// `-c`: one line per value.
    pub compact: bool,
}

/// A jq filter with its flags and named variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    filter: String,
    flags: JqFlags,
    vars: Vec<(String, serde_json::Value)>,
    by_value: bool,
}

impl Query {
    /// The filter `filter`, no flags, no variables.
    pub fn new(filter: impl Into<String>) -> Query {
        Query {
            filter: filter.into(),
            flags: JqFlags::default(),
            vars: Vec::new(),
            by_value: false,
        }
    }

    /// All flags at once.
    pub fn flags(mut self, flags: JqFlags) -> Query {
        self.flags = flags;
        self
    }

    /// `-s`.
    pub fn slurp(mut self, on: bool) -> Query {
        self.flags.slurp = on;
        self
    }

    /// `-r`.
    pub fn raw(mut self, on: bool) -> Query {
        self.flags.raw = on;
        self
    }

    /// `-c`.
    pub fn compact(mut self, on: bool) -> Query {
        self.flags.compact = on;
        self
    }

    /// Pages count output values rather than lines: each entry of
    /// [`Page::lines`] is one whole value as printed (with `-c`, one line;
    /// with `-r`, a string's own line breaks stay inside its entry), so a
    /// page never ends inside a value, and [`Paging`] counts values. A
    /// first value of a page longer than [`ExtractLimits::max_page_bytes`]
    /// comes cut to that length ([`Page::cut`]) rather than as an error.
    /// The text of the whole output is the same either way.
    pub fn by_value(mut self, on: bool) -> Query {
        self.by_value = on;
        self
    }

    /// Whether pages count values (see [`by_value`](Self::by_value)).
    pub fn is_by_value(&self) -> bool {
        self.by_value
    }

    /// The variable `$name` holds `value` (jq's `--argjson name value`; a
    /// string value is jq's `--arg`). Setting a name again replaces it.
    pub fn var(mut self, name: impl Into<String>, value: serde_json::Value) -> Query {
        let name = name.into();
        self.vars.retain(|(n, _)| *n != name);
        self.vars.push((name, value));
        self
    }

    /// The filter.
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// The flags.
    pub fn jq_flags(&self) -> JqFlags {
        self.flags
    }

    /// The variables, in the order they were set.
    pub fn vars(&self) -> &[(String, serde_json::Value)] {
        &self.vars
    }

    /// Checks sizes and variable names before any work is queued.
    fn validate(&self, limits: &ExtractLimits) -> Result<(), ExtractError> {
        if self.filter.len() > limits.max_filter_bytes {
            return Err(ExtractError::FilterTooLong {
                max: limits.max_filter_bytes,
            });
        }
        let mut bytes = 0usize;
        for (name, value) in &self.vars {
            if !is_identifier(name) {
                return Err(ExtractError::BadVariable(name.chars().take(64).collect()));
            }
            bytes = bytes.saturating_add(name.len() + value.to_string().len());
        }
        if bytes > limits.max_vars_bytes {
            return Err(ExtractError::VariablesTooLarge {
                max: limits.max_vars_bytes,
            });
        }
        Ok(())
    }
}

/// A jq identifier: `[A-Za-z_][A-Za-z0-9_]*`, not `ARGS` (which jq sets).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name != "ARGS"
}

/// Which lines of the output to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    /// Lines to skip.
    pub offset: usize,
    /// Lines to return at most.
    pub limit: usize,
}

impl Paging {
    /// Every line (up to the limits on output).
    pub const ALL: Paging = Paging {
        offset: 0,
        limit: usize::MAX,
    };
}

impl Default for Paging {
    /// The first 1,000 lines.
    fn default() -> Self {
        Paging {
            offset: 0,
            limit: 1000,
        }
    }
}

/// A page of jq's output.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Page {
    /// The page's lines, without their line breaks (whole values, with
    /// [`Query::by_value`]). jq's output is these lines, each followed by
    /// `\n` (see [`Page::text`]).
    pub lines: Vec<String>,
    /// With [`Query::by_value`]: the page's only entry is the start of a
    /// value longer than [`ExtractLimits::max_page_bytes`], cut there (on
    /// a character boundary).
    pub cut: bool,
    /// Index of the first line of the page.
    pub offset: usize,
    /// Lines in the whole output, when the evaluation ran to its end.
    pub total_lines: Option<usize>,
    /// Whether lines follow the page.
    pub more: bool,
    /// Errors jq would have printed on stderr (the first ten): an error
    /// ends the outputs of the input it happened on, then jq goes on with
    /// the next input.
    pub errors: Vec<String>,
    /// How many errors there were in all.
    pub error_count: usize,
}

impl Page {
    /// The page as jq prints it: each line followed by `\n`.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }
}

/// The limits every query runs under (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractLimits {
    /// Time one evaluation may take, parsing the file included.
    pub time_limit: Duration,
    /// Largest file read.
    pub max_input_bytes: u64,
    /// Longest filter.
    pub max_filter_bytes: usize,
    /// Largest total of variable names and values (as JSON).
    pub max_vars_bytes: usize,
    /// Bytes of values a query may build, over its whole evaluation.
    pub max_alloc_bytes: usize,
    /// Stack of the evaluation thread.
    pub stack_bytes: usize,
    /// Bytes printed in all, lines before the page and counted lines
    /// included.
    pub max_output_bytes: usize,
    /// Bytes of the lines of one page.
    pub max_page_bytes: usize,
    /// Lines counted past the page before counting stops.
    pub max_counted_lines: usize,
    /// Evaluations running at once.
    pub max_concurrent: usize,
    /// How long a query waits for a free evaluation slot.
    pub queue_wait: Duration,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits {
            time_limit: Duration::from_secs(10),
            max_input_bytes: 64 << 20,
            max_filter_bytes: 16 << 10,
            max_vars_bytes: 64 << 10,
            max_alloc_bytes: 256 << 20,
            stack_bytes: 256 << 20,
            max_output_bytes: 64 << 20,
            max_page_bytes: 1 << 20,
            max_counted_lines: 1_000_000,
            max_concurrent: 2,
            queue_wait: Duration::from_secs(2),
        }
    }
}

impl ExtractLimits {
    /// Sets [`time_limit`](Self::time_limit).
    pub fn time_limit(mut self, d: Duration) -> Self {
        self.time_limit = d;
        self
    }

    /// Sets [`max_input_bytes`](Self::max_input_bytes).
    pub fn max_input_bytes(mut self, n: u64) -> Self {
        self.max_input_bytes = n;
        self
    }

    /// Sets [`max_alloc_bytes`](Self::max_alloc_bytes).
    pub fn max_alloc_bytes(mut self, n: usize) -> Self {
        self.max_alloc_bytes = n;
        self
    }

    /// Sets [`max_output_bytes`](Self::max_output_bytes).
    pub fn max_output_bytes(mut self, n: usize) -> Self {
        self.max_output_bytes = n;
        self
    }

    /// Sets [`max_page_bytes`](Self::max_page_bytes).
    pub fn max_page_bytes(mut self, n: usize) -> Self {
        self.max_page_bytes = n;
        self
    }

    /// Sets [`max_counted_lines`](Self::max_counted_lines).
    pub fn max_counted_lines(mut self, n: usize) -> Self {
        self.max_counted_lines = n;
        self
    }

    /// Sets [`max_concurrent`](Self::max_concurrent) (at least 1).
    pub fn max_concurrent(mut self, n: usize) -> Self {
        self.max_concurrent = n.max(1);
        self
    }

    /// Sets [`queue_wait`](Self::queue_wait).
    pub fn queue_wait(mut self, d: Duration) -> Self {
        self.queue_wait = d;
        self
    }
}

/// Why a query gave no page. Messages show no path and no OS error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The file cannot be read (missing, not a file, permissions).
    #[error("the offloaded file cannot be read")]
    Unreadable,
    /// The file is not one of this server's offload files, or expired.
    #[error("not an offloaded file of this server, or it has expired")]
    NotOffloaded,
    /// The file is larger than [`ExtractLimits::max_input_bytes`].
    #[error("the file is larger than the extraction limit ({max} bytes)")]
    InputTooLarge {
        /// The limit.
        max: u64,
    },
    /// A record of the file is not JSON that jq 1.6 reads.
    #[error("bad input: {0}")]
    BadInput(String),
    /// The filter is longer than [`ExtractLimits::max_filter_bytes`].
    #[error("the filter is longer than {max} bytes")]
    FilterTooLong {
        /// The limit.
        max: usize,
    },
    /// The filter does not compile (syntax, or an undefined name).
    #[error("jq syntax: {0}")]
    Syntax(String),
    /// A variable name is not a jq identifier (or is `ARGS`).
    #[error("bad variable name {0:?}")]
    BadVariable(String),
    /// The variables are larger than [`ExtractLimits::max_vars_bytes`].
    #[error("the variables are larger than {max} bytes")]
    VariablesTooLarge {
        /// The limit.
        max: usize,
    },
    /// A recipe command that is not `tail -n +2 FILE | jq [FLAGS] FILTER`.
    #[error("not a recipe command: {0}")]
    BadRecipe(String),
    /// A recipe number or parameters a file's recipes do not take (see
    /// [`OffloadHeader::recipe_query`](crate::descriptor::OffloadHeader::recipe_query)).
    #[error("{0}")]
    BadArguments(String),
    /// The evaluation did not finish within [`ExtractLimits::time_limit`].
    #[error("the query did not finish within {0:?}")]
    Timeout(Duration),
    /// The query built more than [`ExtractLimits::max_alloc_bytes`] of values.
    #[error("the query built more than {max} bytes of values")]
    Memory {
        /// The limit.
        max: usize,
    },
    /// The query recursed too deeply.
    #[error("the query recursed too deeply")]
    TooDeep,
    /// More than [`ExtractLimits::max_output_bytes`] printed before the page
    /// was complete.
    #[error("the output passed {max} bytes before the requested page: narrow the filter")]
    OutputTooLarge {
        /// The limit.
        max: usize,
    },
    /// One line of the page alone is longer than
    /// [`ExtractLimits::max_page_bytes`].
    #[error("an output line is longer than {max} bytes: print without -c, or narrow the filter")]
    LineTooLong {
        /// The limit.
        max: usize,
    },
    /// Every evaluation slot stayed taken for [`ExtractLimits::queue_wait`].
    #[error("too many queries at once; try again")]
    Busy,
    /// The caller gave up.
    #[error("the query was cancelled")]
    Cancelled,
    /// This build cannot stop an evaluation (`panic = "abort"`).
    #[error("extraction is not available in this build (it needs panic = \"unwind\")")]
    Unsupported,
    /// The evaluation thread could not start or failed (a bug).
    #[error("internal extraction error")]
    Internal,
}

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
        query.validate(&self.limits)?;
        let permit =
            tokio::time::timeout(self.limits.queue_wait, self.slots.clone().acquire_owned())
                .await
                .map_err(|_| ExtractError::Busy)?
                .map_err(|_| ExtractError::Internal)?;
        let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job = self.job(file.as_ref(), query, paging, permit, &cancel.0);
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
        let job = self.job(file.as_ref(), query, paging, permit, &cancel.0);
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
        file: &Path,
        query: &Query,
        paging: Paging,
        permit: OwnedSemaphorePermit,
        cancel: &Arc<AtomicBool>,
    ) -> Job {
        Job {
            file: file.to_owned(),
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
    file: PathBuf,
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
    fn run(self) -> Result<Page, ExtractError> {
        if !cfg!(panic = "unwind") {
            return Err(ExtractError::Unsupported);
        }
        let deadline = Instant::now() + self.limits.time_limit;
        let bytes = read_capped(&self.file, self.limits.max_input_bytes)?;
        let compiled = run::compile(&self.query)?;
        let inputs = read_inputs(bytes, compiled.needs());
        let budget = Budget {
            deadline,
            alloc_bytes: self.limits.max_alloc_bytes,
            stack_bytes: self.limits.stack_bytes.saturating_sub(STACK_MARGIN),
            cancel: self.cancel.clone(),
        };
        let mut pager = Pager::new(self.paging, &self.limits, self.query.by_value);
        let stopped =
            match guard::run_guarded(budget, || run::evaluate(&compiled, inputs, &mut pager)) {
                Ok(Ok(())) => None,
                Ok(Err(e)) => return Err(ExtractError::BadInput(e.to_string())),
                Err(stop) => Some(stop),
            };
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

/// The input values after the header line, read as the evaluation asks
/// for them, each only as far as the filter reads it.
fn read_inputs(file: Vec<u8>, need: project::Need) -> fast::Records {
    let file = bytes::Bytes::from(file);
    let after = file.slice_ref(input::after_header(&file));
    fast::Records::new(after, need)
}

/// The file's bytes, if it is a regular file no larger than `max`.
fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, ExtractError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|_| ExtractError::Unreadable)?;
    let meta = file.metadata().map_err(|_| ExtractError::Unreadable)?;
    if !meta.is_file() {
        return Err(ExtractError::Unreadable);
    }
    if meta.len() > max {
        return Err(ExtractError::InputTooLarge { max });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|_| ExtractError::Unreadable)?;
    if bytes.len() as u64 > max {
        return Err(ExtractError::InputTooLarge { max });
    }
    Ok(bytes)
}
