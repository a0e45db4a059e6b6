//! `EndpointSummarizer` against HTTP servers on 127.0.0.1 speaking the
//! OpenAI chat completions API: the stand-in chat endpoint
//! (`examples/support/chat_endpoint.rs`) for the request's shape and key,
//! and small axum servers for the faults (error status, an answer that is
//! not a completion, an endpoint that never answers, a closed port). No real
//! model is involved.

use crate::chat_endpoint;

use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use chat_endpoint::{Endpoint, serve};
use tower_lro::history::{
    EndpointError, EndpointSummarizer, Summarizer, SummaryError, SummaryRequest,
};

const TRANSCRIPT: &str = "user: list the open tickets of project atlas\n\n\
tool (search_tickets): TCK-4411 login fails on Safari; TCK-4412 export times out";

async fn one_route(status: StatusCode, body: &'static str) -> String {
    let router = Router::new().route(
        "/v1/chat/completions",
        post(move || async move { (status, body) }),
    );
    format!("http://{}/v1", serve(router).await)
}

#[tokio::test]
async fn asks_the_endpoint_with_model_key_prompt_and_budget() {
    let endpoint = Endpoint::new(Some("sk-test-key"));
    let addr = serve(endpoint.router()).await;
    let summarizer = EndpointSummarizer::new(&format!("http://{addr}/v1/"), "small-model")
        .unwrap()
        .api_key("sk-test-key")
        .unwrap();
    let request = SummaryRequest::new(TRANSCRIPT, 300).with_chat_id(Some("chat-1"));
    let summary = summarizer.summarize(request).await.unwrap();
    assert_eq!(
        summary,
        "Summary: user: list the open tickets of project atlas tool (search_tickets): TCK-4411 login"
    );

    let received = endpoint.received();
    assert_eq!(received.len(), 1);
    let asked = &received[0];
    assert_eq!(asked.path, "/v1/chat/completions");
    assert_eq!(asked.headers["authorization"], "Bearer sk-test-key");
    assert_eq!(asked.headers["content-type"], "application/json");
    let body = asked.json();
    assert_eq!(body["model"], "small-model");
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(body["stream"], false);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    let prompt = messages[0]["content"].as_str().unwrap();
    assert!(
        prompt.contains("tool name") && prompt.contains("identifier"),
        "{prompt}"
    );
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages[1]["content"], TRANSCRIPT);
}

#[tokio::test]
async fn a_wrong_or_missing_key_is_the_status_error() {
    let endpoint = Endpoint::new(Some("sk-right"));
    let base = format!("http://{}/v1", serve(endpoint.router()).await);
    let wrong = EndpointSummarizer::new(&base, "m")
        .unwrap()
        .api_key("sk-wrong")
        .unwrap();
    let missing = EndpointSummarizer::new(&base, "m").unwrap();
    for summarizer in [wrong, missing] {
        let error = summarizer
            .complete(SummaryRequest::new(TRANSCRIPT, 50))
            .await;
        match error {
            Err(EndpointError::Status { status, body }) => {
                assert_eq!(status, 401);
                assert!(body.contains("invalid api key"), "{body}");
                assert!(!body.contains("sk-"), "{body}");
            }
            other => panic!("expected a 401, got {other:?}"),
        }
    }
    // Through the trait it is an endpoint error.
    let summarizer = EndpointSummarizer::new(&base, "m").unwrap();
    let error = summarizer
        .summarize(SummaryRequest::new(TRANSCRIPT, 50))
        .await;
    assert!(matches!(error, Err(SummaryError::Endpoint(m)) if m.contains("401")));
}

#[tokio::test]
async fn an_error_status_is_typed_with_the_start_of_its_body() {
    let base = one_route(
        StatusCode::SERVICE_UNAVAILABLE,
        "model overloaded\ntry later",
    )
    .await;
    let summarizer = EndpointSummarizer::new(&base, "m").unwrap();
    match summarizer
        .complete(SummaryRequest::new(TRANSCRIPT, 50))
        .await
    {
        Err(EndpointError::Status { status, body }) => {
            assert_eq!(status, 503);
            // Made safe for a log line.
            assert_eq!(body, "model overloaded\\ntry later");
        }
        other => panic!("expected a 503, got {other:?}"),
    }
}

#[tokio::test]
async fn an_answer_that_is_not_a_completion_is_a_bad_answer() {
    let cases = [
        "<html>gateway error</html>",
        r#"{"object":"list","data":[]}"#,
        r#"{"choices":[{"message":{"role":"assistant","content":"   "}}]}"#,
        r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[]}}]}"#,
    ];
    for garbage in cases {
        let base = one_route(StatusCode::OK, garbage).await;
        let summarizer = EndpointSummarizer::new(&base, "m").unwrap();
        let error = summarizer
            .complete(SummaryRequest::new(TRANSCRIPT, 50))
            .await;
        assert!(
            matches!(error, Err(EndpointError::BadAnswer(_))),
            "{garbage}: {error:?}"
        );
        let error = summarizer
            .summarize(SummaryRequest::new(TRANSCRIPT, 50))
            .await;
        assert!(
            matches!(error, Err(SummaryError::BadAnswer(_))),
            "{garbage}"
        );
    }
}

#[tokio::test]
async fn an_answer_over_the_size_cap_is_refused() {
    let base = one_route(
        StatusCode::OK,
        r#"{"choices":[{"message":{"content":"a long enough answer"}}]}"#,
    )
    .await;
    let summarizer = EndpointSummarizer::new(&base, "m")
        .unwrap()
        .max_answer_bytes(16);
    let error = summarizer
        .complete(SummaryRequest::new(TRANSCRIPT, 50))
        .await;
    assert!(
        matches!(&error, Err(EndpointError::BadAnswer(m)) if m.contains("16 bytes")),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_endpoint_that_never_answers_times_out() {
    let router = Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            "late"
        }),
    );
    let base = format!("http://{}/v1", serve(router).await);
    let summarizer = EndpointSummarizer::new(&base, "m")
        .unwrap()
        .timeout(Duration::from_millis(300));
    let error = summarizer
        .complete(SummaryRequest::new(TRANSCRIPT, 50))
        .await;
    assert!(matches!(error, Err(EndpointError::Timeout(d)) if d == Duration::from_millis(300)));
}

#[tokio::test]
async fn a_closed_port_is_a_transport_error() {
    // A port that was just free: bound, then released.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let summarizer = EndpointSummarizer::new(&format!("http://{addr}/v1"), "m").unwrap();
    let error = summarizer
        .complete(SummaryRequest::new(TRANSCRIPT, 50))
        .await;
    assert!(
        matches!(error, Err(EndpointError::Transport(_))),
        "{error:?}"
    );
}
