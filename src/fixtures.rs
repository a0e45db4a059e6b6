//! Realistic memory records for tests, examples and benchmarks.
//!
//! [`MemoryGenerator`] produces MIF-style memories at the three detail levels
//! of the specification, deterministically from a seed (its own SplitMix64
//! generator, so the same seed gives the same records on every platform and
//! every version of this crate). Full-detail records average about 200
//! tokens, as in the spec's example of 200 memories near 40,000 tokens;
//! medium about 110 and light about 45.
//!
//! ```
//! use tower_lro::descriptor::Detail;
//! use tower_lro::fixtures::MemoryGenerator;
//! let memories = MemoryGenerator::new(7).memories(200, Detail::Full);
//! assert_eq!(memories.len(), 200);
//! assert!(memories[0]["provenance"]["confidence"].is_number());
//! ```

use serde_json::{Value, json};

use crate::descriptor::Detail;

const NAMESPACES: [&str; 8] = [
    "_semantic/architecture",
    "_semantic/decisions",
    "_semantic/people",
    "_episodic/sessions",
    "_episodic/incidents",
    "_procedural/runbooks",
    "_procedural/reviews",
    "projects/atlatl",
];
const TYPES: [&str; 3] = ["semantic", "episodic", "procedural"];
const TAGS: [&str; 12] = [
    "architecture",
    "caching",
    "database",
    "latency",
    "security",
    "deploy",
    "api",
    "testing",
    "oncall",
    "design",
    "performance",
    "migration",
];
const SUBJECTS: [&str; 12] = [
    "the cache layer",
    "the billing service",
    "the search index",
    "our deploy pipeline",
    "the auth gateway",
    "the event bus",
    "the reporting job",
    "the mobile client",
    "the schema migration",
    "the rate limiter",
    "the embeddings store",
    "the nightly backup",
];
const VERBS: [&str; 10] = [
    "was moved behind",
    "now depends on",
    "times out when calling",
    "replaced",
    "was split from",
    "caches results from",
    "must be deployed before",
    "was load tested against",
    "reads through",
    "writes ahead of",
];
const DETAILS: [&str; 10] = [
    "after the incident review in March",
    "because p99 latency doubled under peak load",
    "to keep tenant data isolated",
    "as agreed in the architecture review",
    "which cut storage costs by a third",
    "with a feature flag for gradual rollout",
    "so that retries stay idempotent",
    "following the security audit findings",
    "while the old path is kept for one release",
    "to unblock the quarterly migration",
];
const AGENTS: [&str; 4] = ["claude-code", "cursor", "atlatl-cli", "review-bot"];
const SOURCES: [&str; 4] = ["conversation", "document", "code_review", "incident_report"];
const TRUST: [&str; 3] = ["high", "medium", "low"];
const ENTITIES: [&str; 10] = [
    "PostgreSQL",
    "Redis",
    "Kafka",
    "Alice Chen",
    "Bob Okafor",
    "us-east-1",
    "gRPC",
    "Terraform",
    "OpenTelemetry",
    "S3",
];

/// Deterministic generator of memory records.
#[derive(Debug, Clone)]
pub struct MemoryGenerator {
    state: u64,
}

impl MemoryGenerator {
    /// A generator; the same seed always gives the same records.
    pub fn new(seed: u64) -> Self {
        MemoryGenerator { state: seed }
    }

    fn next(&mut self) -> u64 {
        // SplitMix64.
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn sentence(&mut self) -> String {
        format!(
            "{} {} {} {}.",
            capitalize(self.pick(&SUBJECTS)),
            self.pick(&VERBS),
            self.pick(&SUBJECTS),
            self.pick(&DETAILS)
        )
    }

    fn date(&mut self, base_day: usize) -> String {
        let day = base_day % 28 + 1;
        let month = base_day / 28 % 12 + 1;
        format!(
            "2026-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            self.below(24),
            self.below(60),
            self.below(60)
        )
    }

    /// `n` memories at `detail`.
    pub fn memories(&mut self, n: usize, detail: Detail) -> Vec<Value> {
        (0..n).map(|i| self.memory(i, detail)).collect()
    }

    /// One memory; `index` makes the id unique within a set.
    pub fn memory(&mut self, index: usize, detail: Detail) -> Value {
        let id = format!("mem_{index:05}_{:08x}", self.next() as u32);
        let namespace = self.pick(&NAMESPACES);
        let memory_type = self.pick(&TYPES);
        let subject = self.pick(&SUBJECTS);
        let title = format!("{} {}", capitalize(subject), self.pick(&VERBS));
        let ntags = 1 + self.below(3);
        let mut tags: Vec<&str> = Vec::with_capacity(ntags);
        while tags.len() < ntags {
            let t = self.pick(&TAGS);
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
        let day = self.below(300);
        let created = self.date(day);
        let mut m = json!({
            "id": id,
            "title": title,
            "namespace": namespace,
            "memory_type": memory_type,
            "tags": tags,
            "created": created,
            "status": if self.below(10) == 0 { "archived" } else { "active" },
        });
        if detail == Detail::Light {
            return m;
        }
        let sentences = 2;
        let content: Vec<String> = (0..sentences).map(|_| self.sentence()).collect();
        let later = day + self.below(20);
        let modified = self.date(later);
        let confidence = ((0.5 + self.unit() * 0.5) * 1000.0).round() / 1000.0;
        let confidence = confidence.min(1.0);
        if let Some(obj) = m.as_object_mut() {
            obj.insert("content".into(), json!(content.join(" ")));
            obj.insert("modified".into(), json!(modified));
            if detail == Detail::Medium {
                obj.insert("confidence".into(), json!(confidence));
            }
        }
        if detail == Detail::Medium {
            return m;
        }
        let e1 = self.pick(&ENTITIES);
        let e2 = self.pick(&ENTITIES);
        let related = format!("mem_{:05}", self.below(index + 1));
        let full = json!({
            "summary": self.sentence(),
            "entities": [e1, e2],
            "relationships": [{"type": "relates_to", "target": related}],
            "wiki_links": [format!("[[{}]]", capitalize(self.pick(&SUBJECTS)))],
            "provenance": {
                "confidence": confidence,
                "trust_level": self.pick(&TRUST),
                "source_type": self.pick(&SOURCES),
                "agent": self.pick(&AGENTS),
            },
            "temporal": {
                "decay": {"model": "exponential", "half_life_days": 30 + self.below(60)},
                "ttl_days": null,
                "valid_from": created,
            },
            "citations": [],
        });
        if let (Some(obj), Value::Object(extra)) = (m.as_object_mut(), full) {
            obj.extend(extra);
        }
        m
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// An MCP `CallToolResult` for a memory tool, the way memory servers send
/// it: `structuredContent: {"memories": [...], "count": n}` and the same
/// object as pretty JSON in a text block.
pub fn memory_tool_result(memories: &[Value]) -> Value {
    let structured = json!({"count": memories.len(), "memories": memories});
    json!({
        "content": [{"type": "text", "text": serde_json::to_string_pretty(&structured).unwrap_or_default()}],
        "structuredContent": structured,
        "isError": false,
    })
}
