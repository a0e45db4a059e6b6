//! The bounds of a query ([`ExtractLimits`]) and why there is no page
//! ([`ExtractError`]).

use std::time::Duration;

/// The limits every query runs under (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractLimits {
    /// Time one evaluation may take, parsing the file included.
    pub time_limit: Duration,
    /// Largest file a slurping query reads (it holds every value). Other
    /// queries read a file of any size a chunk at a time; a chunk grows
    /// past 1 MiB only to end on a line break, up to this size.
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
    /// The file, read to its end, is not what its header's completeness
    /// contract says (a shared store's object checked on a whole read).
    #[error("the offloaded file is damaged: {0}")]
    Damaged(String),
    /// The file is not one of this server's offload files, or expired.
    #[error("not an offloaded file of this server, or it has expired")]
    NotOffloaded,
    /// The file is larger than [`ExtractLimits::max_input_bytes`] (for a
    /// slurping query), or one of its lines is.
    #[error("the file (or one of its lines) is larger than the extraction limit ({max} bytes)")]
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
