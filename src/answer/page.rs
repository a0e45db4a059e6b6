//! An extraction page cut to the token budget, with a trailer that tells
//! how to get the rest. The page's entries are whole output values (the
//! extractor pages by values), so a page ends on a whole value; only a
//! value alone over the budget is cut.

use serde_json::Value;

use crate::estimate::TokenEstimator;
use crate::extract::Page;

/// Tokens kept for the trailer block.
const TRAILER_TOKENS: usize = 80;
/// jq errors quoted in the trailer at most.
const ERRORS_SHOWN: usize = 3;

/// The budget for the page itself, out of `threshold` tokens.
fn page_budget(threshold: usize) -> usize {
    threshold
        .saturating_sub(TRAILER_TOKENS)
        .max(threshold / 2)
        .max(1)
}

/// The lines of `page` that fit in `budget` tokens: how many, and whether
/// the first had to be cut (it alone is over the budget).
struct Fitted {
    text: String,
    whole_lines: usize,
    cut: bool,
}

fn fit(lines: &[String], estimator: &dyn TokenEstimator, budget: usize) -> Fitted {
    let mut text = String::new();
    let mut used = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let cost = estimator.estimate(line) + 1;
        if used + cost > budget {
            if i == 0 {
                text = cut_to(line, estimator, budget);
                text.push('\n');
                return Fitted {
                    text,
                    whole_lines: 0,
                    cut: true,
                };
            }
            return Fitted {
                text,
                whole_lines: i,
                cut: false,
            };
        }
        used += cost;
        text.push_str(line);
        text.push('\n');
    }
    Fitted {
        text,
        whole_lines: lines.len(),
        cut: false,
    }
}

/// The longest prefix of `line` (on a character boundary) within `budget`
/// tokens, found by halving.
fn cut_to(line: &str, estimator: &dyn TokenEstimator, budget: usize) -> String {
    let mut end = line.len().min(budget.saturating_mul(4));
    loop {
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        if end == 0 || estimator.estimate(&line[..end]) <= budget {
            return line[..end].to_owned();
        }
        end /= 2;
    }
}

/// The blocks of an `lro_extract` answer: the page (the output values, one
/// per line, that fit in `threshold` tokens), and a trailer when there is
/// more, a value was cut, jq reported errors, or nothing was printed.
/// `spread`: the arguments that read an array value an element at a time,
/// suggested when a cut value is an array.
pub(crate) fn answer(
    page: &Page,
    estimator: &dyn TokenEstimator,
    threshold: usize,
    spread: Option<&str>,
) -> Vec<String> {
    let mut fitted = fit(&page.lines, estimator, page_budget(threshold));
    // A value the extractor cut (over its byte cap) is cut even if its
    // start fits the budget.
    if page.cut && fitted.whole_lines == page.lines.len() {
        fitted.cut = true;
        fitted.whole_lines = 0;
    }
    let first = page.offset;
    let shown_end = first + fitted.whole_lines;
    let mut notes = Vec::new();
    if fitted.cut {
        let array = page.lines.first().is_some_and(|l| l.starts_with('['));
        let how = match spread {
            Some(args) if array => format!(
                "it is an array: to read its elements a page at a time, call lro_extract with \
                 {args}; or narrow the query (select fewer fields)"
            ),
            _ => "narrow the query (select fewer fields) to read it whole".to_owned(),
        };
        notes.push(format!(
            "Value {} alone is longer than the answer budget ({threshold} tokens) and was cut: \
             {how}.",
            first + 1
        ));
    }
    let more = fitted.whole_lines < page.lines.len() || page.more;
    let of = match page.total_lines {
        Some(t) => format!(" of {t}"),
        None => String::new(),
    };
    if page.lines.is_empty() {
        match page.total_lines {
            Some(0) => notes.push("The query printed nothing.".into()),
            Some(t) => notes.push(format!(
                "No output value at offset {first}: the output has {t} values."
            )),
            None => {}
        }
    } else if more {
        let next = if fitted.cut { first + 1 } else { shown_end };
        notes.push(format!(
            "Output values {}-{}{of} shown. More follows: call lro_extract again with the same \
             arguments and offset={next}.",
            first + 1,
            next.max(first + 1)
        ));
    }
    if page.error_count > 0 {
        let quoted: Vec<&str> = page
            .errors
            .iter()
            .take(ERRORS_SHOWN)
            .map(String::as_str)
            .collect();
        notes.push(format!(
            "jq reported {} error(s) (records it could not process), first: {}",
            page.error_count,
            quoted.join("; ")
        ));
    }
    let mut blocks = vec![fitted.text];
    if !notes.is_empty() {
        blocks.push(format!("[lro_extract] {}", notes.join(" ")));
    }
    blocks
}

/// The text of an `lro_list` answer: a JSON object with the entries that
/// fit in `threshold` tokens.
pub(crate) fn listing(
    entries: &[Value],
    estimator: &dyn TokenEstimator,
    threshold: usize,
) -> String {
    let budget = page_budget(threshold);
    let mut shown = Vec::new();
    let mut used = 0;
    for e in entries {
        let cost = estimator.estimate(&e.to_string()) + 1;
        if used + cost > budget && !shown.is_empty() {
            break;
        }
        used += cost;
        shown.push(e.clone());
    }
    let mut out = serde_json::json!({"files": shown});
    if shown.len() < entries.len() {
        out["note"] = Value::from(format!(
            "{} older files not shown (the newest come first)",
            entries.len() - shown.len()
        ));
    }
    if entries.is_empty() {
        out["note"] = Value::from("no offloaded results available to this client");
    }
    out.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::CharsPerTokenEstimator;

    fn page(lines: &[&str], total: Option<usize>, more: bool, offset: usize) -> Page {
        let mut p = Page {
            lines: lines.iter().map(|s| s.to_string()).collect(),
            cut: false,
            offset,
            total_lines: total,
            more,
            errors: Vec::new(),
            error_count: 0,
        };
        p.more = more;
        p
    }

    #[test]
    fn pages_stay_within_the_threshold_and_say_where_to_go_on() {
        let est = CharsPerTokenEstimator;
        let line = "x".repeat(396); // 99 tokens + newline
        let lines: Vec<&str> = std::iter::repeat_n(line.as_str(), 30).collect();
        let blocks = answer(&page(&lines, Some(30), false, 10), &est, 1000, None);
        assert_eq!(blocks[0].lines().count(), 9);
        assert!(
            blocks[1].contains("values 11-19 of 30") && blocks[1].contains("offset=19"),
            "{}",
            blocks[1]
        );
        let total: usize = blocks.iter().map(|b| est.estimate(b)).sum();
        assert!(total <= 1000, "{total}");
        // All of it fits: the page alone, exactly jq's lines.
        let blocks = answer(&page(&["a", "b"], Some(2), false, 0), &est, 1000, None);
        assert_eq!(blocks, ["a\nb\n"]);
        // One line over the budget: cut, and the next offset skips it.
        let huge = "y".repeat(100_000);
        let blocks = answer(&page(&[&huge], None, true, 0), &est, 500, None);
        assert!(est.estimate(&blocks[0]) <= 500);
        assert!(
            blocks[1].contains("was cut") && blocks[1].contains("offset=1"),
            "{}",
            blocks[1]
        );
        let blocks = answer(&page(&[], Some(0), false, 0), &est, 500, None);
        assert!(blocks[1].contains("printed nothing"));
        let blocks = answer(&page(&[], Some(3), false, 7), &est, 500, None);
        assert!(blocks[1].contains("No output value at offset 7"));
        // An array over the budget: how to read its elements.
        let array = format!("[{}]", "1,".repeat(5000) + "1");
        let hint = Some("query=\"sort_by(.a) | .[]\", slurp=true");
        let blocks = answer(&page(&[&array], None, true, 0), &est, 500, hint);
        assert!(
            blocks[1].contains("was cut") && blocks[1].contains("sort_by(.a) | .[]"),
            "{}",
            blocks[1]
        );
        // A value the extractor cut is cut, even when its start fits.
        let mut p = page(&["{\"a\":"], None, true, 4);
        p.cut = true;
        let blocks = answer(&p, &est, 500, None);
        assert!(
            blocks[1].contains("Value 5 alone") && blocks[1].contains("offset=5"),
            "{}",
            blocks[1]
        );
    }
}
