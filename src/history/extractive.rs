//! [`ExtractiveSummarizer`]: the default summarizer, no model needed.
//!
//! It keeps what an agent needs to go on: the names of the tools that ran,
//! the identifiers the conversation mentions (ids, paths, snake_case and
//! CamelCase names, anything mixing letters and digits), and the most
//! informative sentences, in their original order, within the budget.
//! A sentence's information is the rarity of its words across the
//! transcript (inverse document frequency), per word, plus a bonus for the
//! identifiers and numbers it holds. CJK characters count as words (they
//! are not separated by spaces). The same transcript always gives the same
//! summary.

use std::collections::{BTreeMap, HashMap};

use super::summarize::{Summarizer, SummaryFuture, SummaryRequest};
use crate::estimate::{ScriptAwareEstimator, TokenEstimator};

/// The built-in summarizer: extracts tool names, identifiers and the most
/// informative sentences within the token budget (estimated with
/// [`ScriptAwareEstimator`]). Deterministic.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveSummarizer;

impl Summarizer for ExtractiveSummarizer {
    fn summarize<'a>(&'a self, request: SummaryRequest<'a>) -> SummaryFuture<'a> {
        let summary = ExtractiveSummarizer::summary(request.transcript, request.budget_tokens);
        Box::pin(std::future::ready(Ok(summary)))
    }
}

/// At most this share of the budget goes to the identifier list.
const IDENTIFIER_SHARE: usize = 4;
/// A sentence longer than this many characters is cut (with `…`).
const MAX_SENTENCE_CHARS: usize = 400;

/// A sentence of the transcript.
struct Sentence {
    role: String,
    text: String,
    terms: Vec<String>,
    score: f64,
}

impl ExtractiveSummarizer {
    /// The summary of `transcript` within `budget_tokens` (the work of
    /// [`Summarizer::summarize`], callable without a runtime).
    pub fn summary(transcript: &str, budget_tokens: usize) -> String {
        let estimator = ScriptAwareEstimator;
        // Estimates of parts add up to at least the estimate of the whole,
        // so a running sum keeps the whole within the budget.
        let mut budget = Budget {
            left: budget_tokens,
            estimator,
        };
        let mut out = String::new();
        let tools = tool_names(transcript);
        out.push_str(&budget.list("Tools used: ", &tools, budget_tokens));
        let identifiers = identifiers(transcript, &tools);
        let share = budget_tokens / IDENTIFIER_SHARE;
        out.push_str(&budget.list("\nIdentifiers: ", &identifiers, share));
        let sentences = scored_sentences(transcript);
        let mut order: Vec<usize> = (0..sentences.len()).collect();
        order.sort_by(|&a, &b| {
            let (sa, sb) = (sentences[a].score, sentences[b].score);
            sb.total_cmp(&sa).then(a.cmp(&b))
        });
        let lines: Vec<String> = sentences
            .iter()
            .map(|s| format!("\n- {}: {}", s.role, s.text))
            .collect();
        let chosen = choose(&order, &lines, &mut budget);
        for (line, _) in lines.iter().zip(&chosen).filter(|(_, c)| **c) {
            out.push_str(line);
        }
        out.trim_start().to_owned()
    }
}

/// The sentences kept: the best first, each when it fits in what is left.
fn choose(order: &[usize], lines: &[String], budget: &mut Budget) -> Vec<bool> {
    let mut chosen = vec![false; lines.len()];
    for &i in order {
        chosen[i] = budget.take(&lines[i]);
    }
    chosen
}

/// What is left of the summary's budget.
struct Budget {
    left: usize,
    estimator: ScriptAwareEstimator,
}

impl Budget {
    /// Takes the cost of `text` when it fits.
    fn take(&mut self, text: &str) -> bool {
        let cost = self.estimator.estimate(text);
        let fits = cost <= self.left;
        if fits {
            self.left -= cost;
        }
        fits
    }

    /// `label` and as many of `items` as fit in `most` tokens (and in what
    /// is left), comma-separated, ending with a full stop; empty when none
    /// fits.
    fn list(&mut self, label: &str, items: &[String], most: usize) -> String {
        let mut list = Budget {
            left: most.min(self.left),
            estimator: self.estimator,
        };
        if items.is_empty() || !list.take(label) || !list.take(".") {
            return String::new();
        }
        let mut line = label.to_owned();
        for (n, item) in items.iter().enumerate() {
            let part = if n == 0 {
                item.clone()
            } else {
                format!(", {item}")
            };
            if !list.take(&part) {
                break;
            }
            line.push_str(&part);
        }
        if line.len() == label.len() {
            return String::new();
        }
        line.push('.');
        self.left -= most.min(self.left) - list.left;
        line
    }
}

/// The tools named in the transcript (`tool (name):` headers and
/// `calls name(` lines), in order of first appearance.
fn tool_names(transcript: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |name: &str| {
        let name = name.trim();
        if !name.is_empty() && name.len() <= 64 && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    };
    for line in transcript.lines() {
        if let Some(rest) = line.strip_prefix("tool (")
            && let Some((name, _)) = rest.split_once("):")
        {
            add(name);
        }
        let mut rest = line;
        while let Some(at) = rest.find("calls ") {
            rest = &rest[at + 6..];
            if let Some((name, _)) = rest.split_once('(')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
            {
                add(name);
            }
        }
    }
    names
}

/// Whether `word` looks like an identifier: letters mixed with digits,
/// `snake_case`, a path or dotted name, or `CamelCase` inside.
fn is_identifier(word: &str) -> bool {
    let letters = word.chars().filter(char::is_ascii_alphabetic).count();
    let digits = word.chars().filter(char::is_ascii_digit).count();
    let inner_upper = word.chars().skip(1).any(|c| c.is_ascii_uppercase())
        && word.chars().any(|c| c.is_ascii_lowercase());
    let joined = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let separated = joined.contains(['_', '/', '.', ':', '-']);
    letters > 0
        && letters * 2 >= digits
        && word.len() >= 3
        && (digits > 0 && (letters >= digits || separated)
            || separated && joined.len() >= 5
            || inner_upper)
}

/// Words of a text: runs of ASCII letters, digits and `_./:-`, trimmed of
/// trailing punctuation.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "_./:-#@".contains(c)))
        .map(|w| w.trim_end_matches(['.', ':', '-', '/']))
        .filter(|w| !w.is_empty())
}

/// Identifiers in order of first appearance, the most frequent first among
/// equals, tool names left out.
fn identifiers(transcript: &str, tools: &[String]) -> Vec<String> {
    let mut seen: HashMap<&str, (usize, usize)> = HashMap::new();
    for (at, word) in words(transcript).enumerate() {
        if is_identifier(word) && !tools.iter().any(|t| t == word) {
            seen.entry(word).or_insert((at, 0)).1 += 1;
        }
    }
    let mut found: Vec<(&str, (usize, usize))> = seen.into_iter().collect();
    found.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.1.0.cmp(&b.1.0)));
    found.into_iter().map(|(w, _)| w.to_owned()).collect()
}

/// The terms of a sentence: its lower-cased words of three or more
/// characters, and each CJK character.
fn terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = words(text)
        .filter(|w| w.len() >= 3)
        .map(str::to_ascii_lowercase)
        .collect();
    terms.extend(text.chars().filter(|c| is_cjk(*c)).map(String::from));
    terms.sort();
    terms.dedup();
    terms
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x2E80..=0x9FFF | 0xAC00..=0xD7FF | 0xF900..=0xFFEF)
}

/// The transcript's sentences with their role and score.
fn scored_sentences(transcript: &str) -> Vec<Sentence> {
    let mut sentences = Vec::new();
    for paragraph in transcript.split("\n\n") {
        let (role, body) = split_role(paragraph.trim_start());
        for text in split_sentences(body) {
            let text = cut(text);
            sentences.push(Sentence {
                role: role.to_owned(),
                terms: terms(&text),
                text,
                score: 0.0,
            });
        }
    }
    let mut df: BTreeMap<String, usize> = BTreeMap::new();
    for t in sentences.iter().flat_map(|s| &s.terms) {
        *df.entry(t.clone()).or_default() += 1;
    }
    let n = sentences.len().max(1) as f64;
    for s in &mut sentences {
        let list = &s.terms;
        let idf: f64 = list
            .iter()
            .map(|t| (n / df[t.as_str()] as f64).ln() + 1.0)
            .sum();
        let bonus = words(&s.text).filter(|w| is_identifier(w)).count() as f64 * 1.5
            + f64::from(u8::from(s.text.bytes().any(|b| b.is_ascii_digit())));
        s.score = (idf + bonus) / (list.len().max(1) as f64).sqrt();
    }
    sentences
}

/// A paragraph's role label (`user`, `assistant`, `tool (name)`) and text.
fn split_role(paragraph: &str) -> (&str, &str) {
    match paragraph.split_once(':') {
        Some((role, rest)) if role.len() <= 80 && !role.contains('\n') => (role.trim(), rest),
        _ => ("note", paragraph),
    }
}

/// Sentences: split at line breaks and after `.`, `!`, `?` followed by a
/// space, and after `。`, `！`, `？`.
fn split_sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_space = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        let end = c == '\n'
            || matches!(c, '。' | '！' | '？')
            || matches!(c, '.' | '!' | '?') && next_space;
        if end {
            out.push(&text[start..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| s.chars().count() >= 3)
        .collect()
}

/// `text` cut to [`MAX_SENTENCE_CHARS`] characters.
fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_SENTENCE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
