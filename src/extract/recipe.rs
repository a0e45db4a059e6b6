//! A descriptor's recipe command, `tail -n +2 'FILE' | jq -s -r 'FILTER'`,
//! read back into its file, flags and filter (the POSIX shell quoting that
//! `descriptor::shell_quote` writes, undone).

use super::{ExtractError, JqFlags, Query};

/// A recipe command of a descriptor, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct RecipeCommand {
    /// The file the command reads (as written in the command, unquoted).
    pub file: String,
    /// The jq filter and flags of the command.
    pub query: Query,
}

impl RecipeCommand {
    /// Parses `tail -n +2 FILE | jq [-s] [-r] [-c] FILTER`, with the shell
    /// quoting of the descriptor's recipes (single quotes, `'\''` for a
    /// quote, bare words when safe). Anything else is refused.
    pub fn parse(command: &str) -> Result<RecipeCommand, ExtractError> {
        let words = shell_words(command)?;
        let bad = || ExtractError::BadRecipe("expected tail -n +2 FILE | jq [FLAGS] FILTER".into());
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let [tail, n, two, file, pipe, jq, rest @ ..] = w.as_slice() else {
            return Err(bad());
        };
        if (*tail, *n, *two, *pipe, *jq) != ("tail", "-n", "+2", "|", "jq") {
            return Err(bad());
        }
        let [flags @ .., filter] = rest else {
            return Err(bad());
        };
        let mut parsed = JqFlags::default();
        for flag in flags {
            parse_flag(flag, &mut parsed)?;
        }
        Ok(RecipeCommand {
            file: (*file).to_owned(),
            query: Query::new(*filter).flags(parsed),
        })
    }
}

/// One flag word: `-s`, `-r`, `-c`, or several letters at once (`-sr`).
fn parse_flag(flag: &str, flags: &mut JqFlags) -> Result<(), ExtractError> {
    let letters = flag
        .strip_prefix('-')
        .filter(|l| !l.is_empty() && !l.starts_with('-'))
        .ok_or_else(|| ExtractError::BadRecipe(format!("unsupported jq option {flag:?}")))?;
    for c in letters.chars() {
        match c {
            's' => flags.slurp = true,
            'r' => flags.raw = true,
            'c' => flags.compact = true,
            _ => {
                return Err(ExtractError::BadRecipe(format!(
                    "unsupported jq option -{c}"
                )));
            }
        }
    }
    Ok(())
}

/// Splits a command into shell words: bare characters, `'...'` literally,
/// `"..."` with `\"`, `\\`, `\$`, `` \` `` escapes, and `\x` outside quotes.
/// The pipe is a word of its own. Expansions (`$`, `` ` ``, globs) are
/// refused rather than guessed at.
fn shell_words(command: &str) -> Result<Vec<String>, ExtractError> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '|' => {
                words.extend(word.take());
                words.push("|".to_owned());
            }
            '\'' => single_quoted(&mut chars, word.get_or_insert_default())?,
            '"' => double_quoted(&mut chars, word.get_or_insert_default())?,
            '\\' => word.get_or_insert_default().extend(chars.next()),
            '$' | '`' | '*' | '?' | ';' | '&' | '<' | '>' | '(' | ')' | '\n' => {
                return Err(ExtractError::BadRecipe(format!(
                    "unsupported shell syntax {c:?}"
                )));
            }
            c => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

fn single_quoted(chars: &mut std::str::Chars<'_>, word: &mut String) -> Result<(), ExtractError> {
    for c in chars.by_ref() {
        if c == '\'' {
            return Ok(());
        }
        word.push(c);
    }
    Err(ExtractError::BadRecipe("unterminated single quote".into()))
}

fn double_quoted(chars: &mut std::str::Chars<'_>, word: &mut String) -> Result<(), ExtractError> {
    while let Some(c) = chars.next() {
        match c {
            '"' => return Ok(()),
            '\\' => match chars.next() {
                Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                Some(e) => {
                    word.push('\\');
                    word.push(e);
                }
                None => break,
            },
            '$' | '`' => {
                return Err(ExtractError::BadRecipe(format!(
                    "unsupported shell syntax {c:?}"
                )));
            }
            c => word.push(c),
        }
    }
    Err(ExtractError::BadRecipe("unterminated double quote".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recipe_command_gives_its_file_flags_and_filter() {
        let r = RecipeCommand::parse(
            r#"tail -n +2 '/tmp/a b/atlatl-x.jsonl' | jq -s -r 'map(.a) | "it'\''s"'"#,
        )
        .unwrap();
        assert_eq!(r.file, "/tmp/a b/atlatl-x.jsonl");
        assert_eq!(r.query.filter(), r#"map(.a) | "it's""#);
        let f = r.query.jq_flags();
        assert!(f.slurp && f.raw && !f.compact);
        let bare = RecipeCommand::parse("tail -n +2 /tmp/x.jsonl | jq -c .").unwrap();
        assert_eq!(bare.file, "/tmp/x.jsonl");
        assert_eq!(bare.query.filter(), ".");
        assert!(bare.query.jq_flags().compact);
    }

    #[test]
    fn other_commands_are_refused() {
        for bad in [
            "cat x | jq .",
            "tail -n +2 x | jq --arg a b .",
            "tail -n +2 $HOME | jq .",
            "tail -n +2 x | jq . ; rm x",
            "tail -n +2 x | jq 'unterminated",
        ] {
            assert!(RecipeCommand::parse(bad).is_err(), "{bad}");
        }
    }
}
