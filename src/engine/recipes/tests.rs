//! Tests of the parent module.

use super::*;

#[test]
fn parameters_render_as_json_string_literals() {
    let p = RecipeProgram::new("", "select(.a == $value and .b == $other) | $value")
        .param("value", "it's \"x\"");
    assert_eq!(
        p.rendered(),
        r#"select(.a == "it's \"x\"" and .b == $other) | "it's \"x\"""#
    );
    let r = Recipe {
        description: String::new(),
        short: String::new(),
        role: Role::Filter,
        program: p,
        raw: false,
    };
    assert_eq!(
        command("/f", &r),
        r#"tail -n +2 /f | jq 'select(.a == "it'\''s \"x\"" and .b == $other) | "it'\''s \"x\""'"#
    );
}

#[test]
fn the_memory_table_names_its_roles() {
    let b = Builder {
        out: memory::memory_recipes(Detail::Light),
        each: String::new(),
        all: String::new(),
        raw: false,
    };
    assert_eq!(b.first(Role::Browse), Some((1, "titles+namespaces")));
    assert_eq!(b.first(Role::Filter), Some((2, "filter namespace")));
    assert_eq!(b.first(Role::Analyze), Some((6, "count by namespace")));
}
