//! The byte-level JSON helpers of `json`: `minify`, `minifies_to`,
//! `is_minified` and `Style`, on generated JSON text (checked against
//! `serde_json`'s reading, [`Json`]) and on arbitrary text (no panic).

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::bounds::{config, timed};
use super::model::{Json, same_json};
use super::values::json_text;
use crate::json::{Style, is_minified, minifies_to, minify};

/// `minify`, `minifies_to` and `Style` on valid JSON.
fn check_minify(text: &str) -> Result<(), TestCaseError> {
    let Some(original) = Json::read(text) else {
        return Ok(());
    };
    let m = minify(text);
    same_json(&m, text)?;
    // Every value as written (numbers, escapes), in order.
    prop_assert_eq!(Json::read(&m), Some(original), "minify keeps each value");
    prop_assert_eq!(minify(&m), m.clone(), "minified twice");
    prop_assert!(minifies_to(text, &m));
    let longer = format!("{m} ");
    prop_assert!(!minifies_to(text, &longer));
    check_styles(text, &m)
}

/// The detected style lays the minified text `m` out as `text` was; each
/// style's layout minifies back to `m` and is detected again.
/// `lays_out` answers exactly whether `apply` gives the text, on the
/// text itself, on every style's layout and on near misses of them.
fn check_styles(text: &str, m: &str) -> Result<(), TestCaseError> {
    const STYLES: [Style; 7] = [
        Style::Compact,
        Style::Spaced,
        Style::Indent(2),
        Style::Indent(4),
        Style::Tabs,
        Style::Indent(1),
        Style::Indent(0),
    ];
    if let Some(style) = Style::detect(text, m) {
        prop_assert_eq!(style.apply(m), text, "detected style {:?}", style);
    }
    prop_assert_eq!(is_minified(text), minifies_to(text, text));
    prop_assert!(is_minified(m));
    let layouts: Vec<String> = STYLES.iter().map(|s| s.apply(m)).collect();
    for style in STYLES {
        let expected = style.apply(m);
        let mut texts = vec![text.to_owned()];
        for laid_out in &layouts {
            texts.push(laid_out.clone());
            texts.extend(near_misses(laid_out));
        }
        for t in &texts {
            prop_assert_eq!(
                style.lays_out(t, m),
                *t == expected,
                "{:?} on {:?}",
                style,
                t
            );
        }
    }
    // Indent(0) is no candidate of `detect`.
    for style in &STYLES[..6] {
        let laid_out = style.apply(m);
        same_json(&laid_out, m)?;
        prop_assert_eq!(minify(&laid_out), m);
        let again = Style::detect(&laid_out, m);
        prop_assert!(again.is_some(), "{:?} not detected", style);
        prop_assert_eq!(again.map(|s| s.apply(m)), Some(laid_out));
    }
    Ok(())
}

/// `text` with one byte changed, dropped or added, at a few places
/// (ASCII positions only, so each stays UTF-8).
fn near_misses(text: &str) -> Vec<String> {
    let ascii: Vec<usize> = (0..text.len())
        .filter(|&i| text.as_bytes()[i].is_ascii())
        .collect();
    let mut out = vec![format!("{text} "), format!("{text}\n")];
    let step = (ascii.len() / 6).max(1);
    for &i in ascii.iter().step_by(step) {
        let (a, b) = text.split_at(i);
        let c = text.as_bytes()[i];
        let other = if c == b' ' { '\t' } else { ' ' };
        out.push(format!("{a}{other}{}", &b[1..]));
        out.push(format!("{a}{}", &b[1..]));
        out.push(format!("{a} {b}"));
    }
    out
}

proptest! {
    #![proptest_config(config(1))]

    #[test]
    fn fuzz_minify(text in json_text()) {
        timed(|| check_minify(&text))?;
    }

    /// Arbitrary text: no panic (the helpers require valid JSON; the engine
    /// checks before calling them, but a panic here would still be a
    /// hazard).
    #[test]
    fn fuzz_minify_arbitrary(text in "\\PC{0,80}|[\" \\\\\\[\\]{},:\n]{0,40}") {
        let _ = minify(&text);
        let _ = minifies_to(&text, "[]");
        let _ = is_minified(&text);
        for style in [Style::Spaced, Style::Indent(2), Style::Tabs] {
            prop_assert_eq!(style.lays_out(&text, &text), style.apply(&text) == text);
            let _ = style.lays_out("[\n  1\n]", &text);
        }
    }
}
