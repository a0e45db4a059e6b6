//! The gateway's metrics, served on the metrics path in the OpenMetrics
//! text format (which Prometheus scrapes; `prometheus-client`, the
//! Prometheus project's Rust client, encodes them).
//!
//! Every label value is bounded: `route` is a path the gateway serves
//! (configured, not sent by clients), `outcome`, `reason` and `operation`
//! come from fixed lists. Never a tool argument, a tool name or a session.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `lro_gateway_requests_total` | counter | `route`, `outcome` |
//! | `lro_gateway_request_duration_seconds` | histogram (to the answer's head) | `route` |
//! | `lro_upstream_response_duration_seconds` | histogram (to the upstream's head) | `route` |
//! | `lro_gateway_connections_open` | gauge | — |
//! | `lro_offloaded_results_total` | counter | `route` |
//! | `lro_offloaded_estimated_tokens_total` | counter | `route` |
//! | `lro_offloaded_result_bytes_total` | counter | `route` |
//! | `lro_offload_write_fallbacks_total` | counter | `route`, `reason` |
//! | `lro_passed_through_total` | counter | `route`, `reason` |
//! | `lro_offload_files_expired_total` | counter | `route` |
//! | `lro_extract_calls_total` | counter | `route`, `outcome` |
//! | `lro_extract_duration_seconds` | histogram | `route` |
//! | `lro_store_errors_total` | counter | `route`, `operation` |
//! | `lro_gateway_ready` | gauge (1 when the last readiness probe passed) | — |

use std::sync::Arc;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use tower_lro::history::HistoryEvent;
use tower_lro::offload::{EventHook, OffloadEvent};

/// A label set: names fixed here, values from bounded lists.
type Labels = Vec<(&'static str, String)>;
/// A histogram family (a constructor per histogram: the buckets).
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// The content type of the metrics answer.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Latency buckets, seconds: 1 ms to ~65 s.
fn latency() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.001, 2.0, 17,
    ))
}

/// All the gateway's metrics and their registry.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    request_duration: Histograms,
    upstream_duration: Histograms,
    pub(crate) connections_open: Gauge,
    offloaded: Family<Labels, Counter>,
    offloaded_tokens: Family<Labels, Counter>,
    offloaded_bytes: Family<Labels, Counter>,
    write_fallbacks: Family<Labels, Counter>,
    passed_through: Family<Labels, Counter>,
    expired: Family<Labels, Counter>,
    damaged: Family<Labels, Counter>,
    extract_calls: Family<Labels, Counter>,
    extract_duration: Histograms,
    store_errors: Family<Labels, Counter>,
    history_requests: Family<Labels, Counter>,
    history_tokens_saved: Family<Labels, Counter>,
    history_reads: Family<Labels, Counter>,
    pub(crate) ready: Gauge,
}

impl Metrics {
    /// The metrics, registered. (About 95 lines: one registration per
    /// metric, with its help text, as a list.)
    pub(crate) fn new() -> Arc<Self> {
        let mut registry = Registry::default();
        let m = Metrics {
            requests: Family::default(),
            request_duration: Family::new_with_constructor(latency),
            upstream_duration: Family::new_with_constructor(latency),
            connections_open: Gauge::default(),
            offloaded: Family::default(),
            offloaded_tokens: Family::default(),
            offloaded_bytes: Family::default(),
            write_fallbacks: Family::default(),
            passed_through: Family::default(),
            expired: Family::default(),
            damaged: Family::default(),
            extract_calls: Family::default(),
            extract_duration: Family::new_with_constructor(latency),
            store_errors: Family::default(),
            history_requests: Family::default(),
            history_tokens_saved: Family::default(),
            history_reads: Family::default(),
            ready: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register(
            "lro_gateway_requests",
            "Requests answered, by route (the served path, `other` for none) and outcome (ok, client_error, not_found, bad_gateway, gateway_timeout, server_error)",
            m.requests.clone(),
        );
        registry.register_with_unit(
            "lro_gateway_request_duration",
            "Time from a request to the head of its answer",
            Unit::Seconds,
            m.request_duration.clone(),
        );
        registry.register_with_unit(
            "lro_upstream_response_duration",
            "Time from a request sent upstream to the head of the upstream's answer",
            Unit::Seconds,
            m.upstream_duration.clone(),
        );
        registry.register(
            "lro_gateway_connections_open",
            "Client connections open",
            m.connections_open.clone(),
        );
        registry.register(
            "lro_offloaded_results",
            "Tool results written to a file and replaced by a descriptor",
            m.offloaded.clone(),
        );
        registry.register(
            "lro_offloaded_estimated_tokens",
            "Estimated tokens of the offloaded results, kept out of the agents' context (less their descriptors)",
            m.offloaded_tokens.clone(),
        );
        registry.register_with_unit(
            "lro_offloaded_result",
            "Bytes of the offloaded results, written to files",
            Unit::Bytes,
            m.offloaded_bytes.clone(),
        );
        registry.register(
            "lro_offload_write_fallbacks",
            "Results over the threshold whose file could not be written, truncated inline instead, by reason (untrusted, permission_denied, no_space, not_found, read_only, other)",
            m.write_fallbacks.clone(),
        );
        registry.register(
            "lro_passed_through",
            "Tool results passed to the client untouched, by reason (under_threshold, excluded, disabled, is_error, proxy, ...)",
            m.passed_through.clone(),
        );
        registry.register(
            "lro_offload_files_expired",
            "Offload files deleted by the cleanup task after their time-to-live",
            m.expired.clone(),
        );
        registry.register(
            "lro_offload_files_damaged",
            "Offload files refused because their records are not what their header counts (cut short on disk)",
            m.damaged.clone(),
        );
        registry.register(
            "lro_extract_calls",
            "lro_extract calls answered by the gateway, by outcome (ok, error)",
            m.extract_calls.clone(),
        );
        registry.register_with_unit(
            "lro_extract_duration",
            "Time to answer an lro_extract call",
            Unit::Seconds,
            m.extract_duration.clone(),
        );
        registry.register(
            "lro_store_errors",
            "Errors of the output store, by operation (write: an offload file; probe: the readiness probe)",
            m.store_errors.clone(),
        );
        registry.register(
            "lro_history_requests",
            "Chat requests seen by a history route, by outcome (rewritten, unchanged, fell_back) and, when fell_back, reason",
            m.history_requests.clone(),
        );
        registry.register(
            "lro_history_estimated_tokens_saved",
            "Estimated tokens taken out of the chat requests' histories (before less after)",
            m.history_tokens_saved.clone(),
        );
        registry.register(
            "lro_history_reads",
            "Calls of lro_history_read a history route answered (the model reading offloaded history back)",
            m.history_reads.clone(),
        );
        registry.register(
            "lro_gateway_ready",
            "1 when the last readiness probe could write to the output store, else 0",
            m.ready.clone(),
        );
        Arc::new(Metrics { registry, ..m })
    }

    /// The metrics in the OpenMetrics text format.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String does not fail.
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// One request answered on `route` with `status`, its head after
    /// `seconds`.
    pub(crate) fn request(&self, route: &str, status: u16, seconds: f64) {
        let outcome = match status {
            404 => "not_found",
            502 => "bad_gateway",
            504 => "gateway_timeout",
            400..=499 => "client_error",
            500..=599 => "server_error",
            _ => "ok",
        };
        self.requests
            .get_or_create(&vec![
                ("route", route.to_owned()),
                ("outcome", outcome.to_owned()),
            ])
            .inc();
        if status != 404 || route != OTHER_ROUTE {
            self.request_duration
                .get_or_create(&route_labels(route))
                .observe(seconds);
        }
    }

    /// The upstream latency histogram of `route`.
    pub(crate) fn upstream_duration(&self, route: &str) -> Histogram {
        self.upstream_duration
            .get_or_create_owned(&route_labels(route))
    }

    /// One `lro_extract` call on `route`.
    pub(crate) fn extract(&self, route: &str, ok: bool, seconds: f64) {
        let outcome = if ok { "ok" } else { "error" };
        self.extract_calls
            .get_or_create(&vec![
                ("route", route.to_owned()),
                ("outcome", outcome.to_owned()),
            ])
            .inc();
        self.extract_duration
            .get_or_create(&route_labels(route))
            .observe(seconds);
    }

    /// A failed readiness probe of `route`'s store.
    pub(crate) fn probe_failed(&self, route: &str) {
        {
            self.store_errors
                .get_or_create(&vec![
                    ("route", route.to_owned()),
                    ("operation", "probe".to_owned()),
                ])
                .inc();
        }
    }

    /// The offload layer's event hook for `route`: its events counted.
    pub(crate) fn event_hook(self: &Arc<Self>, route: &str) -> EventHook {
        let metrics = self.clone();
        let route = route.to_owned();
        EventHook::callback(move |event| metrics.event(&route, event))
    }

    /// The history layer's event hook for `route`: its requests, by
    /// outcome, and the tokens saved.
    pub(crate) fn history_hook(
        self: &Arc<Self>,
        route: &str,
    ) -> impl Fn(&HistoryEvent) + Send + Sync + 'static {
        let metrics = self.clone();
        let route = route.to_owned();
        move |event| metrics.history_event(&route, event)
    }

    /// The count of `lro_history_read` calls answered on `route`.
    pub(crate) fn history_reads(&self, route: &str) -> Counter {
        self.history_reads
            .get_or_create(&route_labels(route))
            .clone()
    }

    fn history_event(&self, route: &str, event: &HistoryEvent) {
        let mut labels = route_labels(route);
        match event {
            HistoryEvent::Rewritten { report, .. } => {
                labels.push(("outcome", "rewritten".to_owned()));
                let saved = report.tokens_before.saturating_sub(report.tokens_after);
                self.history_tokens_saved
                    .get_or_create(&route_labels(route))
                    .inc_by(saved as u64);
            }
            HistoryEvent::FellBack { reason, .. } => {
                labels.push(("outcome", "fell_back".to_owned()));
                labels.push(("reason", reason.as_str().to_owned()));
            }
            _ => labels.push(("outcome", "unchanged".to_owned())),
        }
        self.history_requests.get_or_create(&labels).inc();
    }

    fn event(&self, route: &str, event: &OffloadEvent) {
        let labels = route_labels(route);
        let with = |name: &'static str, value: &str| {
            let mut l = labels.clone();
            l.push((name, value.to_owned()));
            l
        };
        match event {
            OffloadEvent::Offloaded {
                estimated_tokens,
                bytes,
                ..
            } => {
                self.offloaded.get_or_create(&labels).inc();
                self.offloaded_tokens
                    .get_or_create(&labels)
                    .inc_by(*estimated_tokens as u64);
                self.offloaded_bytes
                    .get_or_create(&labels)
                    .inc_by(*bytes as u64);
            }
            OffloadEvent::OffloadWriteFailed { error, .. } => {
                self.write_fallbacks
                    .get_or_create(&with("reason", write_failure(error)))
                    .inc();
                self.store_errors
                    .get_or_create(&with("operation", "write"))
                    .inc();
            }
            OffloadEvent::OffloadFileExpired { .. } => {
                self.expired.get_or_create(&labels).inc();
            }
            OffloadEvent::OffloadFileDamaged { .. } => {
                self.damaged.get_or_create(&labels).inc();
            }
            OffloadEvent::PassedThrough { reason, .. } => {
                self.passed_through
                    .get_or_create(&with("reason", reason.as_str()))
                    .inc();
            }
            // A kind of event added later: not counted until it has a metric.
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
}

/// The `route` label of requests to no route.
pub(crate) const OTHER_ROUTE: &str = "other";

fn route_labels(route: &str) -> Labels {
    vec![("route", route.to_owned())]
}

/// A bounded reason for a write failure, from the error's text (the event
/// carries the text only).
fn write_failure(error: &str) -> &'static str {
    let e = error.to_ascii_lowercase();
    if e.contains("is not private") {
        "untrusted"
    } else if e.contains("permission denied") {
        "permission_denied"
    } else if e.contains("no space") || e.contains("quota") {
        "no_space"
    } else if e.contains("no such file") || e.contains("not found") {
        "not_found"
    } else if e.contains("read-only") {
        "read_only"
    } else if e.contains("object store") {
        "object_store"
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_failures_have_bounded_reasons() {
        assert_eq!(
            write_failure("Permission denied (os error 13)"),
            "permission_denied"
        );
        assert_eq!(
            write_failure("No space left on device (os error 28)"),
            "no_space"
        );
        assert_eq!(
            write_failure(
                "output directory /x is not private: it is writable by group or others (mode 777)"
            ),
            "untrusted"
        );
        assert_eq!(write_failure("something else"), "other");
    }

    /// Names in base units with `_total` on counters; families not yet
    /// touched are left out.
    #[test]
    fn encoded_names_follow_the_conventions() {
        let m = Metrics::new();
        m.request("/mcp", 200, 0.01);
        m.extract("/mcp", true, 0.002);
        let text = m.encode();
        for name in [
            "lro_gateway_requests_total{route=\"/mcp\",outcome=\"ok\"} 1",
            "# TYPE lro_gateway_request_duration_seconds histogram",
            "lro_extract_calls_total{route=\"/mcp\",outcome=\"ok\"} 1",
            "lro_extract_duration_seconds_count{route=\"/mcp\"} 1",
            "# EOF",
        ] {
            assert!(text.contains(name), "{name} missing from\n{text}");
        }
        assert!(!text.contains("lro_offloaded_results"), "{text}");
    }
}
