//! Issue 12: every recipe of every record kind gives the same output run
//! by the `Extractor` from the header's `RecipeProgram` (parameters as jq
//! variables) as the descriptor's shell command under the real `jq` 1.6,
//! with the default parameters and with other values (an existing
//! namespace, a keyword holding `"` and `'`).

use crate::common;
use crate::shapes;

use std::process::Command;

use common::require_jq;
use serde_json::{Value, json};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::RecipeProgram;
use tower_lro::extract::{ExtractLimits, Extractor, JqFlags, Paging, Query};
use tower_lro::offload::{Offloaded, Offloader, Outcome};

fn offload(o: &Offloader, case: &shapes::Case) -> Box<Offloaded> {
    match o
        .process(&case.call, case.result.to_string().as_bytes())
        .unwrap()
    {
        Outcome::Offloaded(off) => off,
        other => panic!("{}: expected an offload, got {other:?}", case.name),
    }
}

/// What `sh -c command` prints; the command must succeed.
fn shell(command: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(command).output().unwrap();
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What the extractor prints for `program` over `file`.
fn extracted(x: &Extractor, file: &std::path::Path, program: &RecipeProgram) -> String {
    let flags = JqFlags {
        slurp: program.flags.contains('s'),
        raw: program.flags.contains('r'),
        compact: program.flags.contains('c'),
    };
    let mut query = Query::new(program.filter.clone()).flags(flags);
    for (name, value) in &program.params {
        query = query.var(name.clone(), json!(value));
    }
    let page = x.extract_blocking(file, &query, Paging::ALL).unwrap();
    assert_eq!(
        page.error_count, 0,
        "{:?}: {:?}",
        program.filter, page.errors
    );
    page.text()
}

/// Another value for a parameter: an existing namespace, type or value,
/// or a keyword with both kinds of quotes.
fn other_value(name: &str) -> &'static str {
    match name {
        "namespace" => "_episodic",
        "memory_type" => "episodic",
        "tag" => "caching",
        "value" => "warn",
        "key" => "HOME",
        _ => "it's \"quoted\"",
    }
}

#[test]
fn recipes_print_the_same_in_the_extractor_and_under_jq() {
    require_jq();
    let dir = tempfile::tempdir().unwrap();
    let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    let x = Extractor::new(ExtractLimits::default());
    for case in shapes::all() {
        let off = offload(&o, &case);
        let (path, d) = (&off.file.path, &off.response);
        let programs = &off.file.header.recipes;
        assert_eq!(programs.len(), 10, "{}", case.name);
        let file = path.to_str().unwrap();
        for (n, (program, recipe)) in programs.iter().zip(&d.jq_recipes).enumerate() {
            let what = format!("{} recipe {} ({})", case.name, n + 1, recipe.description);
            assert!(program.flags.chars().all(|c| "src".contains(c)), "{what}");
            assert_eq!(program.command(file), recipe.command, "{what}");
            let jq = shell(&recipe.command);
            assert_eq!(extracted(&x, path, program), jq, "{what}");
            for name in program.params.keys() {
                let other = program.clone().param(name.clone(), other_value(name));
                let jq = shell(&other.command(file));
                assert_eq!(extracted(&x, path, &other), jq, "{what} with {name}");
            }
        }
    }
}

#[test]
fn the_header_stays_small_with_its_recipes() {
    let dir = tempfile::tempdir().unwrap();
    let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    for case in shapes::all() {
        let off = offload(&o, &case);
        let text = std::fs::read_to_string(&off.file.path).unwrap();
        let header = text.lines().next().unwrap();
        let recipes: Value = serde_json::from_str::<Value>(header).unwrap()["recipes"].clone();
        let bytes = recipes.to_string().len();
        assert!(bytes < 4096, "{}: recipes take {bytes} bytes", case.name);
        assert_eq!(recipes.as_array().unwrap().len(), 10);
    }
}
