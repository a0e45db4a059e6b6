//! Compression: older messages, in groups of at most
//! `group_token_threshold` tokens, are replaced by one summary message each
//! (role `user`, its text starting with [`SUMMARY_MARKER`]); the group's
//! messages are stored as JSON lines in `history-{chat_id}-{digest}.jsonl`.
//!
//! A group is made of whole units: a call and its answers, and a Responses
//! `reasoning` item with the item after it, are never split, so no kept
//! message is left with half a pair. System messages and earlier summaries
//! are never in a group (they split the history into segments), nor are the
//! `keep_recent_compress` most recent messages (moved back to the start of
//! the unit they fall in).
//!
//! Stability: a group's summary is remembered by the digest of its
//! messages (in memory, and on disk as `history-summary-{digest}.txt`, so
//! another process gives the same text); a history that comes back with
//! the same messages gets the same groups (a remembered group is replaced
//! whenever it recurs, even when compression is not due), and a summary
//! message is left alone.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;

use serde_json::Value;

use super::files::{HISTORY_FILE_PREFIX, digest, hex, name_part};
use super::format::{ChatFormat, Shape, content_text};
use super::offloader::{Inner, calls_by_id};
use super::render;
use super::report::{HistoryError, HistoryReport};
use super::summarize::{SummaryError, SummaryRequest};

/// First words of a summary message's text.
pub const SUMMARY_MARKER: &str = "[history summary]";

/// A group to replace: its messages, digest and tokens, and its text when
/// remembered.
struct Group {
    range: Range<usize>,
    digest: [u8; 32],
    tokens: usize,
    remembered: Option<String>,
}

/// What the planner reads about the messages before the recent ones.
struct Facts<'a> {
    digests: Vec<[u8; 32]>,
    tokens: Vec<usize>,
    chat: &'a str,
}

impl Facts<'_> {
    fn group_digest(&self, range: Range<usize>) -> [u8; 32] {
        let mut parts: Vec<&[u8]> = vec![self.chat.as_bytes()];
        parts.extend(self.digests[range].iter().map(|d| d.as_slice()));
        digest(&parts)
    }

    fn tokens(&self, range: Range<usize>) -> usize {
        self.tokens[range].iter().sum()
    }
}

/// Which messages a compression may replace.
#[derive(Clone, Copy)]
pub(super) struct Scope {
    /// The messages before this index.
    pub(super) recent: usize,
    /// Everything before `recent` in one group per segment, earlier
    /// summaries included (summarized again), whatever
    /// `group_token_threshold` says; else groups by the threshold between
    /// the earlier summaries, which stay.
    pub(super) merge_all: bool,
}

/// Whether `m` is a summary message written by compression.
pub(super) fn is_summary(m: &Value) -> bool {
    m.get("content")
        .and_then(content_text)
        .is_some_and(|t| t.starts_with(SUMMARY_MARKER))
}

/// The units of the history: ranges of messages that must stay together.
fn units(shapes: &[Shape]) -> Vec<Range<usize>> {
    let mut reach: Vec<usize> = (0..shapes.len()).collect();
    let mut call_at: HashMap<&str, usize> = HashMap::new();
    for (i, shape) in shapes.iter().enumerate() {
        for call in &shape.calls {
            call_at.insert(&call.id, i);
        }
        for answer in &shape.answers {
            if let Some(&at) = answer.call_id.as_deref().and_then(|id| call_at.get(id)) {
                reach[at] = reach[at].max(i);
            }
        }
        if shape.binds_next && i + 1 < shapes.len() {
            reach[i] = reach[i].max(i + 1);
        }
    }
    let mut out = Vec::new();
    let mut start = 0;
    while start < shapes.len() {
        let mut end = reach[start];
        let mut k = start;
        while k < end {
            k += 1;
            end = end.max(reach[k]);
        }
        out.push(start..end + 1);
        start = end + 1;
    }
    out
}

impl Inner {
    /// Replaces the groups of the messages before `scope.recent` by
    /// summaries: remembered ones always, new ones when `run`.
    pub(super) async fn compress(
        &self,
        format: ChatFormat,
        messages: Vec<Value>,
        shapes: &[Shape],
        run: bool,
        scope: Scope,
        report: &mut HistoryReport,
    ) -> Result<Vec<Value>, HistoryError> {
        if !run && self.memo.lock().map_or(true, |m| m.no_groups()) {
            // Nothing due and nothing remembered: no need to look.
            return Ok(messages);
        }
        let chat = self.chat_id(&messages, shapes);
        let segments = self.segments(&messages, shapes, scope);
        let end = segments.last().and_then(|s| s.last()).map_or(0, |u| u.end);
        let facts = Facts {
            digests: messages[..end].iter().map(message_digest).collect(),
            tokens: messages[..end]
                .iter()
                .map(|m| self.message_tokens(m))
                .collect(),
            chat: &chat,
        };
        let groups: Vec<Group> = segments
            .iter()
            .flat_map(|units| self.plan(units, &facts, run, scope.merge_all))
            .collect();
        let mut texts = Vec::with_capacity(groups.len());
        for group in &groups {
            let text = match &group.remembered {
                Some(text) => text.clone(),
                None => {
                    self.summarize_group(format, &messages, shapes, group, &chat, report)
                        .await?
                }
            };
            texts.push((group.range.clone(), text));
        }
        report.compressed = run;
        report.groups_compressed = texts.len();
        Ok(splice(messages, texts))
    }

    /// The units before the recent messages, in segments between system
    /// messages (and earlier summaries, unless they join).
    fn segments(
        &self,
        messages: &[Value],
        shapes: &[Shape],
        scope: Scope,
    ) -> Vec<Vec<Range<usize>>> {
        let mut segments = vec![Vec::new()];
        for unit in units(shapes)
            .into_iter()
            .take_while(|u| u.end <= scope.recent)
        {
            let barrier = unit
                .clone()
                .any(|i| shapes[i].system || (!scope.merge_all && is_summary(&messages[i])));
            match segments.last_mut() {
                Some(segment) if !barrier => segment.push(unit),
                _ => segments.push(Vec::new()),
            }
        }
        segments.retain(|s| !s.is_empty());
        segments
    }

    /// The groups of one segment: remembered groups where they recur, and
    /// when `run`, greedy groups of whole units up to the group limit
    /// between them.
    fn plan(
        &self,
        units: &[Range<usize>],
        facts: &Facts<'_>,
        run: bool,
        merge_all: bool,
    ) -> Vec<Group> {
        let limit = self.config.group_limit().filter(|_| !merge_all);
        let mut groups = Vec::new();
        let mut p = 0;
        while p < units.len() {
            if let Some((q, group)) = self.remembered_at(units, p, facts) {
                groups.push(group);
                p = q;
                continue;
            }
            if !run {
                p += 1;
                continue;
            }
            let mut q = p;
            let mut tokens = 0;
            while q < units.len() {
                let t = facts.tokens(units[q].clone());
                let fits = limit.is_none_or(|l| tokens + t <= l);
                if q > p && (!fits || self.remembered_at(units, q, facts).is_some()) {
                    break;
                }
                tokens += t;
                q += 1;
            }
            let range = units[p].start..units[q - 1].end;
            let digest = facts.group_digest(range.clone());
            groups.push(Group {
                range,
                digest,
                tokens,
                remembered: None,
            });
            p = q;
        }
        groups
    }

    /// A remembered group starting at unit `p` and ending at a unit
    /// boundary of this segment: the unit after it, and the group.
    fn remembered_at(
        &self,
        units: &[Range<usize>],
        p: usize,
        facts: &Facts<'_>,
    ) -> Option<(usize, Group)> {
        let memo = self.memo.lock().ok()?;
        let start = units[p].start;
        let candidates = memo.starts(&facts.digests[start])?;
        candidates.iter().find_map(|&(count, digest)| {
            let end = start + count;
            let q = p + units[p..].iter().position(|u| u.end == end)? + 1;
            (facts.group_digest(start..end) == digest).then_some(())?;
            let text = memo.group(&digest)?;
            let tokens = facts.tokens(start..end);
            Some((
                q,
                Group {
                    range: start..end,
                    digest,
                    tokens,
                    remembered: Some(text),
                },
            ))
        })
    }

    /// The conversation's id for file names: `chat_id`, else derived from
    /// its first non-system message (the same every turn).
    fn chat_id(&self, messages: &[Value], shapes: &[Shape]) -> String {
        if let Some(id) = &self.config.chat_id {
            return name_part(id);
        }
        let first = messages.iter().zip(shapes).find(|(_, s)| !s.system);
        let seed = first.map(|(m, _)| message_digest(m)).unwrap_or_default();
        format!("chat-{}", hex(&seed, 6))
    }

    /// The summary message text of a new group: its summary (remembered on
    /// disk, else asked of the summarizer), its messages stored, both
    /// remembered.
    async fn summarize_group(
        &self,
        format: ChatFormat,
        messages: &[Value],
        shapes: &[Shape],
        group: &Group,
        chat: &str,
        report: &mut HistoryReport,
    ) -> Result<String, HistoryError> {
        let key = hex(&group.digest, 16);
        let summary_name = format!("{HISTORY_FILE_PREFIX}summary-{key}.txt");
        let store = self.store.clone();
        let name = summary_name.clone();
        let stored = tokio::task::spawn_blocking(move || store.read_summary(&name))
            .await
            .map_err(|_| HistoryError::Interrupted)?;
        let summary = match stored {
            Some(summary) => summary,
            None => {
                let summary = self
                    .ask_summary(format, &messages[group.range.clone()], shapes, group, chat)
                    .await?;
                report.summaries_made += 1;
                summary
            }
        };
        let originals_name = format!("{HISTORY_FILE_PREFIX}{chat}-{key}.jsonl");
        let originals = json_lines(&messages[group.range.clone()]);
        let files = [
            (summary_name, summary.clone().into_bytes()),
            (originals_name, originals),
        ];
        let (written, path) = self.put_files(files).await?;
        report.files_written.extend(written);
        let text = summary_text(group, &path, &summary);
        self.remember_group(
            group,
            &message_digest(&messages[group.range.start]),
            text.clone(),
        );
        Ok(text)
    }

    /// Asks the summarizer for a group's summary.
    async fn ask_summary(
        &self,
        format: ChatFormat,
        group_messages: &[Value],
        shapes: &[Shape],
        group: &Group,
        chat: &str,
    ) -> Result<String, HistoryError> {
        let calls = calls_by_id(shapes);
        let names: HashMap<&str, &str> =
            calls.iter().map(|(id, c)| (*id, c.name.as_str())).collect();
        let transcript = render::transcript(format, group_messages, &names);
        let budget = (group.tokens / 4)
            .min(self.config.summary_max_tokens)
            .max(32);
        let request = SummaryRequest::new(&transcript, budget).with_chat_id(Some(chat));
        let summary = self.summarizer.summarize(request).await?;
        if summary.trim().is_empty() {
            return Err(SummaryError::BadAnswer("empty summary".into()).into());
        }
        Ok(summary)
    }

    /// Writes the summary and the originals (blocking pool): the new files,
    /// and the originals' path.
    async fn put_files(
        &self,
        files: [(String, Vec<u8>); 2],
    ) -> Result<(Vec<PathBuf>, PathBuf), HistoryError> {
        let store = self.store.clone();
        let task = tokio::task::spawn_blocking(move || {
            let mut written = Vec::new();
            let mut last = PathBuf::new();
            for (name, bytes) in &files {
                let (path, new) = store.put(name, bytes)?;
                if new {
                    written.push(path.clone());
                }
                last = path;
            }
            Ok::<_, HistoryError>((written, last))
        });
        task.await.map_err(|_| HistoryError::Interrupted)?
    }

    fn remember_group(&self, group: &Group, first: &[u8; 32], text: String) {
        if let Ok(mut memo) = self.memo.lock() {
            memo.remember_group(*first, group.range.len(), group.digest, text);
        }
    }
}

/// The digest of one message (its JSON, members in their order).
pub(super) fn message_digest(m: &Value) -> [u8; 32] {
    digest(&[m.to_string().as_bytes()])
}

/// Messages as JSON lines.
fn json_lines(messages: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for m in messages {
        out.push_str(&m.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// The text of a summary message: nothing in it depends on when it was
/// made.
fn summary_text(group: &Group, originals: &std::path::Path, summary: &str) -> String {
    format!(
        "{SUMMARY_MARKER} {n} earlier messages (~{tokens} tokens) are summarized here; the \
         originals are in the file {path} (one JSON message per line).\n{summary}",
        n = group.range.len(),
        tokens = group.tokens,
        path = originals.display(),
    )
}

/// `messages` with each group replaced by one summary message.
fn splice(messages: Vec<Value>, groups: Vec<(Range<usize>, String)>) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    let mut groups = groups.into_iter().peekable();
    let mut skip_until = 0;
    for (i, m) in messages.into_iter().enumerate() {
        if i < skip_until {
            continue;
        }
        match groups.next_if(|(range, _)| range.start == i) {
            Some((range, text)) => {
                skip_until = range.end;
                out.push(serde_json::json!({"role": "user", "content": text}));
            }
            None => out.push(m),
        }
    }
    out
}
