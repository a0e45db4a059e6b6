//! What to run and what comes back: [`Query`] with its [`JqFlags`], the
//! [`Paging`] asked for and the [`Page`] answered.

use super::limits::{ExtractError, ExtractLimits};

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
    pub(super) filter: String,
    pub(super) flags: JqFlags,
    pub(super) vars: Vec<(String, serde_json::Value)>,
    pub(super) by_value: bool,
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

    /// Whether every record that is a JSON object makes exactly one value
    /// of the output and never an error: no `-s`, pages by value, and a
    /// filter of `.`, `.key`, object and array construction, string
    /// interpolation, `//`, `try`, `objects`, literals and variables (see
    /// `project::one_per_object`). A page of such a query can start at
    /// its first record.
    pub(crate) fn one_value_per_object(&self) -> bool {
        self.by_value && !self.flags.slurp && super::project::one_per_object(&self.filter)
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
    pub(super) fn validate(&self, limits: &ExtractLimits) -> Result<(), ExtractError> {
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
