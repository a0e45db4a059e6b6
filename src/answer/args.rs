//! The arguments of `lro_extract`, checked: every mistake gets a message
//! that says what to change.

use serde_json::{Map, Value};

use crate::engine::descriptor::RecipeProgram;
use crate::extract::{JqFlags, Paging, Query};

/// Output values a page shows at most when the call names no `limit`
/// (the threshold may cut it shorter).
pub(crate) const DEFAULT_LIMIT: usize = 500;
/// Largest `limit` accepted.
pub(crate) const MAX_LIMIT: usize = 10_000;

/// What `lro_extract` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExtractArgs {
    /// `file_path`: a bare offload file name or a path in the output dir.
    pub file: String,
    /// A recipe (1-10) or a custom filter.
    pub what: Wanted,
    /// `params`: recipe parameters, as sent.
    pub params: Map<String, Value>,
    /// `offset` and `limit` over the output values.
    pub paging: Paging,
    /// `slurp`: a custom query sees all records as one array (jq's `-s`).
    pub slurp: bool,
}

/// A recipe number or a custom jq filter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Wanted {
    /// Recipe `n` (1-based) of the file.
    Recipe(usize),
    /// A custom filter (run with `-c`: one line per value).
    Query(String),
}

/// A mistake in the arguments; its text is the tool error shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ArgError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ArgError> {
    Err(ArgError(msg.into()))
}

impl ExtractArgs {
    /// Reads the call's `arguments` (an object, or absent).
    pub(crate) fn parse(arguments: Option<&Value>) -> Result<ExtractArgs, ArgError> {
        let empty = Map::new();
        let args = match arguments {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            Some(_) => return err("arguments must be an object"),
        };
        let file = match args.get("file_path") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                return err(
                    "missing file_path: give the file_path of the offloaded result (from its descriptor)",
                );
            }
            Some(_) => return err("file_path must be a string"),
        };
        Ok(ExtractArgs {
            file,
            what: wanted(args)?,
            params: params(args)?,
            paging: paging(args)?,
            slurp: match given(args, "slurp") {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(Value::String(s)) if s.trim() == "true" => true,
                Some(Value::String(s)) if s.trim() == "false" => false,
                Some(_) => return err("slurp must be true or false"),
            },
        })
    }
}

/// The argument `key`, unless it is absent, `null` or a blank string (what
/// some clients send for an optional argument left empty).
fn given<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    match args.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(v) => Some(v),
    }
}

/// A non-negative whole number, given as a JSON number (`4`, `4.0`) or as
/// a string of decimal digits (`"4"`: what the MCP Inspector CLI sends for
/// `--tool-arg recipe=4`, and what models send too).
fn whole_number(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 2f64.powi(53))
                .map(|f| f as u64)
        }),
        Value::String(s) => {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // All digits: only too many of them fails; saturate.
            Some(s.parse::<u64>().unwrap_or(u64::MAX))
        }
        _ => None,
    }
}

/// `recipe` or `query`, exactly one of them.
fn wanted(args: &Map<String, Value>) -> Result<Wanted, ArgError> {
    let recipe = given(args, "recipe");
    let query = args.get("query").filter(|v| !v.is_null());
    match (recipe, query) {
        (Some(_), Some(_)) => err("give either recipe or query, not both"),
        (None, None) => err("give a recipe number (1-10) or a jq query"),
        (Some(r), None) => match whole_number(r) {
            Some(n @ 1..=10) => Ok(Wanted::Recipe(n as usize)),
            _ => err(format!(
                "recipe must be an integer from 1 to 10, got {}",
                cut(&r.to_string())
            )),
        },
        (None, Some(Value::String(q))) if !q.trim().is_empty() => Ok(Wanted::Query(q.clone())),
        (None, Some(Value::String(_))) => err("query is empty: give a jq filter such as .id"),
        (None, Some(_)) => err("query must be a string (a jq filter)"),
    }
}

/// What `params` must be, for the messages.
const PARAMS_SHAPE: &str =
    "params must be an object, or a JSON string holding one, e.g. {\"keyword\": \"cache\"}";

/// `params`: an object whose values are strings or numbers, or the same
/// object as JSON text (clients that cannot send an object send that).
fn params(args: &Map<String, Value>) -> Result<Map<String, Value>, ArgError> {
    let parsed;
    let map = match given(args, "params") {
        None => return Ok(Map::new()),
        Some(Value::Object(m)) => m,
        Some(Value::String(text)) => {
            parsed = match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(m)) => m,
                Ok(other) => {
                    return err(format!(
                        "{PARAMS_SHAPE}; got the string {} (JSON {}, not an object)",
                        cut(&Value::from(text.as_str()).to_string()),
                        kind(&other)
                    ));
                }
                Err(_) => {
                    return err(format!(
                        "{PARAMS_SHAPE}; got the string {} (not JSON)",
                        cut(&Value::from(text.as_str()).to_string())
                    ));
                }
            };
            &parsed
        }
        Some(other) => return err(format!("{PARAMS_SHAPE}; got {}", kind(other))),
    };
    for (k, v) in map {
        if !(v.is_string() || v.is_number()) {
            return err(format!(
                "params.{}: values must be strings or numbers",
                cut(k)
            ));
        }
    }
    Ok(map.clone())
}

/// "an array", "a number"… for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `offset` (default 0) and `limit` (default [`DEFAULT_LIMIT`], at most
/// [`MAX_LIMIT`]), numbers or strings of digits.
fn paging(args: &Map<String, Value>) -> Result<Paging, ArgError> {
    let offset = match given(args, "offset") {
        None => 0,
        Some(v) => match whole_number(v) {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => {
                return err(format!(
                    "offset must be a non-negative integer (the output value to start at), got {}",
                    cut(&v.to_string())
                ));
            }
        },
    };
    let limit = match given(args, "limit") {
        None => DEFAULT_LIMIT,
        Some(v) => match whole_number(v) {
            Some(n @ 1..) => usize::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT),
            _ => {
                return err(format!(
                    "limit must be an integer from 1 to {MAX_LIMIT}, got {}",
                    cut(&v.to_string())
                ));
            }
        },
    };
    Ok(Paging { offset, limit })
}

/// The first 64 characters of `s` (what a message quotes of the input).
pub(crate) fn cut(s: &str) -> String {
    let mut out: String = s.chars().take(64).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

impl crate::descriptor::OffloadHeader {
    /// The jq query of this file's recipe `n` (1 to the number of its
    /// [`recipes`](crate::descriptor::OffloadHeader::recipes)), with `params` as its
    /// jq variables (a parameter not given keeps the value the descriptor's
    /// shell command shows; a number where the command shows one). The same
    /// query `lro_extract` runs. Errors name the recipes and parameters
    /// there are.
    pub fn recipe_query(
        &self,
        n: usize,
        params: &Map<String, Value>,
    ) -> Result<Query, crate::extract::ExtractError> {
        recipe_query(&self.recipes, n, params)
            .map_err(|e| crate::extract::ExtractError::BadArguments(e.0))
    }
}

/// The jq query of recipe `n` of a file whose recipes are `recipes`, with
/// `params` as its variables (each parameter not given keeps the value the
/// descriptor's shell command shows).
pub(crate) fn recipe_query(
    recipes: &[RecipeProgram],
    n: usize,
    params: &Map<String, Value>,
) -> Result<Query, ArgError> {
    let Some(program) = n.checked_sub(1).and_then(|i| recipes.get(i)) else {
        return err(format!(
            "recipe {n} does not exist for this file: it has {} recipes",
            recipes.len()
        ));
    };
    if let Some(unknown) = params.keys().find(|k| !program.params.contains_key(*k)) {
        let accepted: Vec<&str> = program.params.keys().map(String::as_str).collect();
        let accepted = if accepted.is_empty() {
            "none".to_owned()
        } else {
            accepted.join(", ")
        };
        return err(format!(
            "recipe {n} has no parameter {:?}; accepted parameters: {accepted}",
            cut(unknown)
        ));
    }
    let mut query = Query::new(program.filter.clone()).flags(flags(&program.flags));
    for (name, default) in &program.params {
        let value = match params.get(name) {
            Some(given) => typed_like(name, given, default)?,
            None => typed_like(name, &Value::String(default.clone()), default)?,
        };
        query = query.var(name.clone(), value);
    }
    Ok(query)
}

/// A parameter's value, of the type its default shows: a number when the
/// default is one (`"0.8"`), else a string (a number given becomes its
/// decimal text).
fn typed_like(name: &str, given: &Value, default: &str) -> Result<Value, ArgError> {
    let numeric = default.trim().parse::<serde_json::Number>().is_ok();
    match (given, numeric) {
        (Value::Number(_), true) => Ok(given.clone()),
        (Value::String(s), true) => match s.trim().parse::<serde_json::Number>() {
            Ok(n) => Ok(Value::Number(n)),
            Err(_) => err(format!("params.{name} must be a number, got {:?}", cut(s))),
        },
        (Value::Number(n), false) => Ok(Value::String(n.to_string())),
        (Value::String(_), false) => Ok(given.clone()),
        _ => err(format!("params.{name}: values must be strings or numbers")),
    }
}

/// jq flags from a recipe's letters (`s`, `r`, `c`).
fn flags(letters: &str) -> JqFlags {
    JqFlags {
        slurp: letters.contains('s'),
        raw: letters.contains('r'),
        compact: letters.contains('c'),
    }
}

/// The query of a custom filter: `-c`, so each value is one line (pages
/// count lines), no variables; `-s` when `slurp`.
pub(crate) fn custom_query(filter: &str, slurp: bool) -> Query {
    Query::new(filter).compact(true).slurp(slurp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<ExtractArgs, String> {
        ExtractArgs::parse(Some(&v)).map_err(|e| e.0)
    }

    // About 90 lines: one case per mistake, in one table.
    #[test]
    fn mistakes_get_messages_that_say_what_to_change() {
        let cases = [
            (json!({}), "missing file_path"),
            (
                json!({"file_path": 3, "recipe": 1}),
                "file_path must be a string",
            ),
            (json!({"file_path": "f"}), "give a recipe number"),
            (
                json!({"file_path": "f", "recipe": 1, "query": "."}),
                "not both",
            ),
            (
                json!({"file_path": "f", "recipe": 0}),
                "from 1 to 10, got 0",
            ),
            (
                json!({"file_path": "f", "recipe": 11}),
                "from 1 to 10, got 11",
            ),
            (
                json!({"file_path": "f", "recipe": "four"}),
                "from 1 to 10, got \"four\"",
            ),
            (json!({"file_path": "f", "recipe": "-2"}), "from 1 to 10"),
            (json!({"file_path": "f", "recipe": "11"}), "from 1 to 10"),
            (json!({"file_path": "f", "recipe": 2.5}), "from 1 to 10"),
            (
                json!({"file_path": "f", "recipe": 2, "params": "{not json"}),
                "(not JSON)",
            ),
            (
                json!({"file_path": "f", "recipe": 2, "params": "[1]"}),
                "JSON an array, not an object",
            ),
            (
                json!({"file_path": "f", "recipe": 2, "params": "{\"a\": true}"}),
                "params.a",
            ),
            (
                json!({"file_path": "f", "recipe": 2, "offset": "ten"}),
                "offset must be a non-negative integer",
            ),
            (
                json!({"file_path": "f", "recipe": 2, "limit": "0"}),
                "limit must be an integer from 1",
            ),
            (
                json!({"file_path": "f", "query": ".", "slurp": "yes"}),
                "slurp must be true or false",
            ),
            (
                json!({"file_path": "f", "query": 5}),
                "query must be a string",
            ),
            (json!({"file_path": "f", "query": "  "}), "query is empty"),
            (
                json!({"file_path": "f", "recipe": 2, "params": [1]}),
                "params must be an object",
            ),
            (
                json!({"file_path": "f", "recipe": 2, "params": {"a": true}}),
                "params.a",
            ),
            (
                json!({"file_path": "f", "recipe": 2, "offset": -1}),
                "offset must be",
            ),
            (
                json!({"file_path": "f", "recipe": 2, "limit": 0}),
                "limit must be",
            ),
        ];
        for (args, want) in cases {
            let got = parse(args.clone()).unwrap_err();
            assert!(got.contains(want), "{args}: {got}");
        }
        assert!(ExtractArgs::parse(Some(&json!("x"))).is_err());
        let ok = parse(json!({"file_path": " f ", "recipe": 3, "recipe_x": 1, "query": null, "limit": 1e9 as u64})).unwrap();
        assert_eq!(ok.file, "f");
        assert_eq!(ok.what, Wanted::Recipe(3));
        assert_eq!(
            ok.paging,
            Paging {
                offset: 0,
                limit: MAX_LIMIT
            }
        );
    }

    #[test]
    fn numbers_and_params_may_come_as_strings() {
        let ok = parse(json!({
            "file_path": "f", "recipe": " 4 ", "offset": "10", "limit": "5",
            "params": "{\"namespace\": \"x\"}", "query": null
        }))
        .unwrap();
        assert_eq!(ok.what, Wanted::Recipe(4));
        assert_eq!(
            ok.paging,
            Paging {
                offset: 10,
                limit: 5
            }
        );
        assert_eq!(ok.params, *json!({"namespace": "x"}).as_object().unwrap());
        // Blank optional arguments are absent ones; 4.0 is 4.
        let ok = parse(json!({
            "file_path": "f", "recipe": 4.0, "offset": "", "limit": " ", "params": "",
            "query": ".", "slurp": "true"
        }));
        assert_eq!(ok.unwrap_err(), "give either recipe or query, not both");
        let ok = parse(json!({
            "file_path": "f", "recipe": "", "offset": "", "limit": " ", "params": "",
            "query": ".", "slurp": "true"
        }))
        .unwrap();
        assert_eq!(ok.what, Wanted::Query(".".into()));
        assert!(ok.slurp && ok.params.is_empty());
        assert_eq!(
            ok.paging,
            Paging {
                offset: 0,
                limit: DEFAULT_LIMIT
            }
        );
        assert_eq!(
            parse(json!({"file_path": "f", "recipe": 4.0}))
                .unwrap()
                .what,
            Wanted::Recipe(4)
        );
    }

    #[test]
    fn recipe_parameters_are_variables_of_their_default_type() {
        let recipes = vec![
            RecipeProgram::new("r", "[.title, .namespace] | @tsv"),
            RecipeProgram::new("", "select(.namespace | startswith($namespace))")
                .param("namespace", "_semantic"),
            RecipeProgram::new("", "select(.confidence > $min)").param("min", "0.8"),
        ];
        let q = recipe_query(&recipes, 1, &Map::new()).unwrap();
        assert!(q.jq_flags().raw && !q.jq_flags().slurp);
        let q = recipe_query(&recipes, 2, &Map::new()).unwrap();
        assert_eq!(q.vars(), &[("namespace".to_owned(), json!("_semantic"))]);
        let given = json!({"namespace": 7}).as_object().unwrap().clone();
        let q = recipe_query(&recipes, 2, &given).unwrap();
        assert_eq!(q.vars(), &[("namespace".to_owned(), json!("7"))]);
        let given = json!({"min": "0.5"}).as_object().unwrap().clone();
        assert_eq!(
            recipe_query(&recipes, 3, &given).unwrap().vars()[0].1,
            json!(0.5)
        );
        let given = json!({"min": "high"}).as_object().unwrap().clone();
        assert!(
            recipe_query(&recipes, 3, &given)
                .unwrap_err()
                .0
                .contains("must be a number")
        );
        let given = json!({"keyword": "x"}).as_object().unwrap().clone();
        let e = recipe_query(&recipes, 2, &given).unwrap_err().0;
        assert!(
            e.contains("\"keyword\"") && e.contains("accepted parameters: namespace"),
            "{e}"
        );
        let e = recipe_query(&recipes, 1, &given).unwrap_err().0;
        assert!(e.contains("accepted parameters: none"), "{e}");
        let e = recipe_query(&recipes, 4, &Map::new()).unwrap_err().0;
        assert!(
            e.contains("recipe 4 does not exist") && e.contains("3 recipes"),
            "{e}"
        );
    }
}
