//! Search terms for recipes: a short real word that the data repeats.
//!
//! A word is a run of letters of 4 to [`MAX_WORD_CHARS`] characters, in a
//! script that separates words with spaces (so no CJK clause), cased as
//! words are (`word`, `Word`, `WORD`), with vowels and enough distinct
//! letters (so no DNA run, no piece of base64), and no stop word. It must
//! occur in at least two texts and not in every one (in one text: at least
//! twice). Only the first [`SCAN_BYTES`] of each text are read.

use std::collections::HashMap;

/// Longest word used as a search term.
pub(crate) const MAX_WORD_CHARS: usize = 16;
/// Bytes read of each text.
const SCAN_BYTES: usize = 64 * 1024;
/// Distinct words counted in all.
const MAX_WORDS: usize = 4096;

const STOP_WORDS: [&str; 40] = [
    "that", "with", "this", "from", "have", "were", "they", "their", "which", "there", "been",
    "will", "would", "what", "when", "into", "than", "then", "them", "these", "some", "only",
    "also", "more", "most", "such", "very", "just", "over", "your", "about", "each", "other",
    "true", "false", "null", "none", "does", "could", "should",
];

/// Picks a frequent real word from the texts.
pub(crate) fn pick<'t>(texts: impl Iterator<Item = &'t str>) -> Option<String> {
    // word -> (texts it occurs in, occurrences, last text seen in)
    let mut counts: HashMap<String, (usize, usize, usize)> = HashMap::new();
    let mut docs = 0usize;
    for (n, text) in texts.enumerate() {
        docs = n + 1;
        for word in words(head(text)) {
            let w = word.to_lowercase();
            if !counts.contains_key(&w) && counts.len() >= MAX_WORDS {
                continue;
            }
            let e = counts.entry(w).or_insert((0, 0, usize::MAX));
            e.1 += 1;
            if e.2 != n {
                e.0 += 1;
                e.2 = n;
            }
        }
    }
    counts
        .into_iter()
        .filter(|(_, (d, total, _))| {
            match docs {
                0 | 1 => *total >= 2,
                2 | 3 => *d >= 2 && *d < docs,
                // Not in most texts: such a word finds nearly everything.
                _ => *d >= 2 && *d * 2 <= docs,
            }
        })
        .max_by(|a, b| {
            (a.1.0, a.1.1)
                .cmp(&(b.1.0, b.1.1))
                .then_with(|| b.0.cmp(&a.0))
        })
        .map(|(w, _)| w)
}

/// At most [`SCAN_BYTES`] of `text`, cut on a character boundary.
fn head(text: &str) -> &str {
    if text.len() <= SCAN_BYTES {
        return text;
    }
    let mut end = SCAN_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The real words of a text.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphabetic())
        .filter(|w| is_word(w))
}

/// Whether `w` (a run of letters) looks like a word (see the module docs).
pub(crate) fn is_word(w: &str) -> bool {
    let n = w.chars().count();
    if !(4..=MAX_WORD_CHARS).contains(&n) || w.chars().any(|c| c as u32 >= 0x2E80) {
        return false;
    }
    let mut rest = w.chars().skip(1);
    let cased = rest.clone().all(char::is_lowercase) || w.chars().all(char::is_uppercase);
    if !cased || rest.any(|c| !c.is_alphabetic()) {
        return false;
    }
    let lower = w.to_lowercase();
    if STOP_WORDS.contains(&lower.as_str()) {
        return false;
    }
    let mut distinct: Vec<char> = lower.chars().collect();
    distinct.sort_unstable();
    distinct.dedup();
    let vowels = lower.chars().filter(|c| "aeiouy".contains(*c)).count();
    let ascii = lower.is_ascii();
    distinct.len() * 5 >= n * 2 && (!ascii || (vowels > 0 && vowels < n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_real_words() {
        for good in ["cache", "Worker", "ERROR", "handled", "über", "данные"] {
            assert!(is_word(good), "{good}");
        }
        let long = "a".repeat(6401);
        for bad in [
            "abc",
            "GATTACAGATTA",
            "aGVsbG8gd29y",
            "xkcdqwrtzplm",
            long.as_str(),
            "数据处理流程",
            "that",
            "internationalization",
        ] {
            assert!(!is_word(bad), "{bad}");
        }
    }

    #[test]
    fn a_word_the_texts_repeat_but_not_all() {
        let texts = ["the cache missed", "cache hit", "worker started"];
        assert_eq!(pick(texts.into_iter()), Some("cache".into()));
        assert_eq!(
            pick(["worker worker idle"].into_iter()),
            Some("worker".into())
        );
        assert_eq!(pick(["zzzz qqqq"].into_iter()), None);
        let dna = ["GATTACAGATTACA ACGTTGCA"; 3];
        assert_eq!(pick(dna.into_iter()), None);
    }
}
