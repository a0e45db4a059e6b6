//! The read side: the original result back from a file.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::descriptor::{HEADER_TYPE, OffloadHeader};
use super::records::{self, RebuildError};
use crate::wire::mcp::RawResult;

/// Rebuilds the original `CallToolResult` JSON from the contents of an
/// offloaded file. The result equals the original as JSON; every literal is
/// as the server wrote it (the layout of a JSON text block too, unless it
/// was irregular and large: see the engine docs). Refuses a file whose
/// header's `expires_at` has passed, and one whose header leaves large kept
/// parts to the rewritten result ([`RebuildError::NeedsRewrittenResult`]:
/// use [`rebuild_with`]).
pub fn rebuild(jsonl: &str) -> Result<String, RebuildError> {
    rebuild_at(jsonl, Utc::now())
}

/// [`rebuild`], as if the time were `now`: the header's `expires_at` is
/// compared with `now` instead of the system clock (for callers with their
/// own clock, and for tests of expiry that do not wait).
pub fn rebuild_at(jsonl: &str, now: DateTime<Utc>) -> Result<String, RebuildError> {
    rebuild_from(jsonl, None, now)
}

/// [`rebuild`] from the file and the rewritten result the client got
/// (`CallToolResult` JSON): the header leaves the large parts that result
/// carries unchanged (an image, a large `_meta`, the text around
/// `structuredContent`'s record array) to it, so that the file's first
/// line stays small.
pub fn rebuild_with(jsonl: &str, rewritten: &str) -> Result<String, RebuildError> {
    rebuild_from(jsonl, Some(rewritten), Utc::now())
}

fn rebuild_from(
    jsonl: &str,
    rewritten: Option<&str>,
    now: DateTime<Utc>,
) -> Result<String, RebuildError> {
    let mut lines = jsonl.split('\n');
    let header_line = lines
        .next()
        .filter(|l| !l.is_empty())
        .ok_or(RebuildError::NotLroFile("empty file"))?;
    let header: OffloadHeader = serde_json::from_str(header_line)
        .map_err(|_| RebuildError::NotLroFile("the first line is not an LRO header"))?;
    if header.header_type != HEADER_TYPE {
        return Err(RebuildError::NotLroFile(
            "the header type is not \"lro_header\"",
        ));
    }
    if let Some(expires_at) = header.expires_at.as_deref() {
        let expired_at = DateTime::parse_from_rfc3339(expires_at)
            .map_err(|_| RebuildError::Corrupt(format!("bad expires_at {expires_at:?}")))?
            .with_timezone(&Utc);
        if now >= expired_at {
            return Err(RebuildError::Expired { expired_at });
        }
    }
    let rebuild = header.rebuild.ok_or(RebuildError::NoRebuildInfo)?;
    let records: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    if records.len() != header.count {
        return Err(RebuildError::CountMismatch {
            expected: header.count,
            found: records.len(),
        });
    }
    let rewritten = rewritten
        .map(RawResult::parse)
        .transpose()
        .map_err(|e| RebuildError::Corrupt(format!("the rewritten result: {e}")))?;
    let source = rewritten.as_ref().map(records::KeptSource::Rewritten);
    records::assemble(&rebuild, &records, true, source)
}

/// When a file created at `created_at` with time-to-live `ttl` expires.
pub(crate) fn expiry(created_at: DateTime<Utc>, ttl: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(ttl)
        .ok()
        .and_then(|d| created_at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Reads an offloaded file and rebuilds the original `CallToolResult` JSON.
/// Refuses a file whose header's `expires_at` has passed.
pub fn rebuild_file(path: impl AsRef<std::path::Path>) -> Result<String, RebuildError> {
    let text = std::fs::read_to_string(path)?;
    rebuild(&text)
}
