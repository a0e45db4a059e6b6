//! `--ignore-tool` (mcp-remote's flag): tools the user hides from the
//! agent. Their calls are refused by the proxy itself, and `tools/list`
//! answers are relayed without them; every other message passes unchanged.

use serde_json::Value;

/// The name patterns of hidden tools: `*` stands for any run of
/// characters; case does not matter.
#[derive(Debug, Clone, Default)]
pub(crate) struct HiddenTools {
    patterns: Vec<String>,
}

impl HiddenTools {
    /// Tools whose names match one of `patterns`.
    pub(crate) fn new(patterns: &[String]) -> Self {
        HiddenTools {
            patterns: patterns.iter().map(|p| p.to_lowercase()).collect(),
        }
    }

    /// Whether the tool `name` is hidden.
    pub(crate) fn hides(&self, name: &str) -> bool {
        let name = name.to_lowercase();
        self.patterns
            .iter()
            .any(|p| glob(p.as_bytes(), name.as_bytes()))
    }

    /// A `tools/list` answer without the hidden tools; `None` when it has
    /// none of them (it is then relayed byte for byte).
    pub(crate) fn list_without(&self, answer: &str) -> Option<String> {
        if self.patterns.is_empty() {
            return None;
        }
        let mut value: Value = serde_json::from_str(answer).ok()?;
        let tools = value.pointer_mut("/result/tools")?.as_array_mut()?;
        let before = tools.len();
        tools.retain(|t| {
            !t.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| self.hides(n))
        });
        (tools.len() != before).then(|| value.to_string())
    }

    /// The JSON-RPC error a call of a hidden tool gets (mcp-remote's).
    pub(crate) fn refusal(id: &Value, name: &str) -> String {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32603, "message": format!("Tool \"{name}\" is not available")},
        })
        .to_string()
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of bytes.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    // The last `*` seen, and the name position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, n));
            p += 1;
        } else if p < pattern.len() && pattern[p] == name[n] {
            p += 1;
            n += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|b| *b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_mcp_remote_documents() {
        let h = HiddenTools::new(&["delete*".into(), "*account".into(), "exactTool".into()]);
        for hidden in [
            "deleteTask",
            "DELETE",
            "getAccount",
            "updateaccount",
            "exacttool",
        ] {
            assert!(h.hides(hidden), "{hidden}");
        }
        for shown in ["undelete", "accounts", "exactTool2", "status"] {
            assert!(!h.hides(shown), "{shown}");
        }
        assert!(HiddenTools::new(&["a*b*c".into()]).hides("axxbyyc"));
        assert!(!HiddenTools::new(&["a*b*c".into()]).hides("axxbyy"));
    }

    #[test]
    fn a_list_loses_its_hidden_tools_only() {
        let h = HiddenTools::new(&["del*".into()]);
        let list = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"status"},{"name":"delete_all"}],"nextCursor":"x"}}"#;
        let v: Value = serde_json::from_str(&h.list_without(list).unwrap()).unwrap();
        assert_eq!(
            v["result"]["tools"],
            serde_json::json!([{"name": "status"}])
        );
        assert_eq!(v["result"]["nextCursor"], "x");
        let kept = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"status"}]}}"#;
        assert_eq!(h.list_without(kept), None, "unchanged: relayed as is");
    }
}
