//! Tests of the parent module.

use super::*;

fn keys(n: &Need) -> String {
    match n {
        Need::All => "*".into(),
        Need::Keys(ks) => {
            let inner: Vec<String> = ks
                .iter()
                .map(|(k, n)| format!("{}:{}", String::from_utf8_lossy(k), keys(n)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
    }
}

#[test]
fn one_value_per_object_only_where_jq_makes_exactly_one() {
    for yes in [
        ".",
        ".id",
        ".[\"id\"]",
        "{id, title}",
        "{id: .id, n: 1, \"t\": (.a // \"none\")}",
        "objects | {id, ns: .namespace}",
        "\"\\(.namespace)\\t\\(.title)\"",
        "[.a, .b]",
        ".a?",
        "try .a",
        "null",
        "$keyword",
        ". | {a}",
    ] {
        assert!(one_per_object(yes), "{yes}");
    }
    for no in [
        ".a.b",
        ".[]",
        ".tags[]",
        "select(.a)",
        "objects | .a | objects",
        "{(.k): 1}",
        "{$x}",
        "{a: (.x, .y)}",
        ".a, .b",
        "empty",
        "-.n",
        ".n + 1",
        "if .a then 1 else 2 end",
        "def f: .; f",
        "@csv \"\\(.a)\"",
        "length",
        ".[0]",
        "[.tags[]]",
        "limit(1; .)",
        "try .a catch 1",
        "(",
    ] {
        assert!(!one_per_object(no), "{no}");
    }
}

#[test]
fn reads_only_what_the_filter_touches() {
    let cases = [
        (
            "group_by(.namespace) | map({namespace: .[0].namespace, count: length})",
            true,
            "{namespace:*}",
        ),
        (
            "select(.provenance.confidence > 0.5) | {id, title, tags}",
            false,
            "{provenance:{confidence:*},id:*,title:*,tags:*}",
        ),
        (".[] | select(.a == $x) | .b", true, "{a:*,b:*}"),
        ("map(select(.a)) | length", true, "{a:{}}"),
        ("map(.a) | length", true, "{a:*}"),
        ("sort_by(.t) | .[0:3] | map(.id)", true, "{t:*,id:*}"),
        ("if .k then .x else .y end", false, "{k:{},x:*,y:*}"),
        ("1", false, "{}"),
        ("\"\\(.a.b)\"", false, "{a:{b:*}}"),
        ("try .a catch .", false, "{a:*}"),
        ("{\"a b\": .c, (.d): 1}", false, "{c:*,d:*}"),
        ("[limit(3; .[] | .id)]", true, "{id:*}"),
        ("length", true, "{}"),
        ("map(.a) | add", true, "{a:*}"),
    ];
    for (filter, slurp, want) in cases {
        assert_eq!(keys(&needs(filter, slurp)), want, "{filter}");
    }
}

#[test]
fn what_is_not_modelled_keeps_everything() {
    for (filter, slurp) in [
        (".", false),
        ("select(.a)", false),
        ("keys", false),
        (".a, .", false),
        ("def f: .; f | .a", false),
        ("reduce .[] as $r (0; . + $r.a)", true),
        ("to_entries", false),
        (".. | .a?", false),
        (".a |= 1", false),
        (".[.k]", false),
        ("map(.)", true),
        ("map(select(.a))", true),
        ("group_by(.a)", true),
        (".[0]", true),
        ("{a} | .b", false),
        ("$__loc__, input_line_number", false),
        ("getpath([\"a\"])", false),
        (". as [$a] | $a", false),
    ] {
        let got = needs(filter, slurp);
        let whole_a = keys(&got) == "{a:*}";
        assert!(
            got == Need::All || (filter == "{a} | .b" && whole_a),
            "{filter}: {}",
            keys(&got)
        );
    }
}
