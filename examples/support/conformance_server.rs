//! An rmcp MCP server with what the server scenarios of the MCP conformance
//! suite (`@modelcontextprotocol/conformance` 0.1.16) call: the `test_*`
//! tools, resources and prompts, logging, completion, subscriptions.
//! Served by `examples/conformance_server.rs` and by `tests/sdks/conformance.rs`,
//! which runs the suite against it with and without the offload layer.
//!
//! What rmcp 3.9 does not let a handler do is noted where it matters:
//! `test_reconnection` cannot close its own SSE stream mid-call (rmcp keeps
//! that on the session manager), so it answers on the open stream.
// The suite still tests logging, sampling and resources/subscribe, which
// SEP-2577 deprecates (protocol 2026-07-28); rmcp marks them deprecated.
#![allow(dead_code, deprecated)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock,
    CreateMessageRequestParams, ElicitRequestParams, ElicitationSchema, Implementation, JsonObject,
    ListResourceTemplatesResult, ListResourcesResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role, SamplingMessage, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, Peer, RoleServer, ServerHandler, prompt, prompt_handler, prompt_router, tool,
    tool_handler, tool_router,
};
use serde::Deserialize;
use serde_json::json;

/// A 1x1 PNG.
pub(super) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file (header only, 8 kHz mono, no samples).
pub(super) const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

fn level_rank(l: LoggingLevel) -> u8 {
    match l {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The conformance server (one per session).
#[derive(Clone)]
pub(super) struct ConformanceServer {
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
    /// The level set by `logging/setLevel` (info until then).
    level: Arc<Mutex<LoggingLevel>>,
    /// Resource URIs subscribed to.
    subscriptions: Arc<Mutex<HashSet<String>>>,
    /// Served without sessions: requests to the client (sampling,
    /// elicitation) are refused at once, since the client's answer would
    /// arrive in a new HTTP request that no session routes back here.
    stateless: bool,
}

impl Default for ConformanceServer {
    fn default() -> Self {
        Self::new()
    }
}

/// Arguments of `test_sampling`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(super) struct SamplingArgs {
    /// The prompt to send to the LLM.
    pub prompt: String,
}

/// Arguments of `test_elicitation`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(super) struct ElicitationArgs {
    /// The message to show the user.
    pub message: String,
}

/// Arguments of `test_prompt_with_arguments`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(super) struct PromptArgs {
    /// First test argument.
    pub arg1: String,
    /// Second test argument.
    pub arg2: String,
}

/// Arguments of `test_prompt_with_embedded_resource`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct EmbeddedPromptArgs {
    /// URI of the resource to embed.
    pub resource_uri: String,
}

fn schema_2020_12() -> Arc<JsonObject> {
    let v = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": false
    });
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

fn form(
    message: impl Into<String>,
    schema: serde_json::Value,
) -> Result<ElicitRequestParams, ErrorData> {
    let requested_schema: ElicitationSchema = serde_json::from_value(schema)
        .map_err(|e| ErrorData::internal_error(format!("elicitation schema: {e}"), None))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.into(),
        requested_schema,
    })
}

async fn elicit(
    peer: &Peer<RoleServer>,
    params: ElicitRequestParams,
) -> Result<CallToolResult, ErrorData> {
    let result = peer
        .create_elicitation(params)
        .await
        .map_err(|e| ErrorData::internal_error(format!("elicitation failed: {e}"), None))?;
    let r = serde_json::to_value(&result).unwrap_or_default();
    Ok(CallToolResult::success(vec![ContentBlock::text(format!(
        "Elicitation completed: action={}, content={}",
        r["action"].as_str().unwrap_or("?"),
        r.get("content").cloned().unwrap_or(json!({}))
    ))]))
}

#[tool_router]
impl ConformanceServer {
    /// A fresh server, for a transport with sessions.
    pub(super) fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
            prompt_router: Self::prompt_router(),
            level: Arc::new(Mutex::new(LoggingLevel::Info)),
            subscriptions: Arc::new(Mutex::new(HashSet::new())),
            stateless: false,
        }
    }

    /// A server for a stateless transport: sampling and elicitation answer
    /// an error result instead of waiting for a reply that cannot come.
    pub(super) fn stateless() -> Self {
        Self {
            stateless: true,
            ..Self::new()
        }
    }

    fn refuse_client_requests(&self) -> Option<CallToolResult> {
        self.stateless.then(|| {
            CallToolResult::error(vec![ContentBlock::text(
                "this server runs without sessions: it cannot receive the client's answer to a request of its own",
            )])
        })
    }

    #[tool(description = "Returns simple text")]
    async fn test_simple_text(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "This is a simple text response for testing.",
        )]))
    }

    #[tool(description = "Returns an image")]
    async fn test_image_content(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::image(
            PNG,
            "image/png",
        )]))
    }

    #[tool(description = "Returns audio")]
    async fn test_audio_content(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::audio(
            WAV,
            "audio/wav",
        )]))
    }

    #[tool(description = "Returns an embedded resource")]
    async fn test_embedded_resource(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::resource(
            ResourceContents::text(
                "This is an embedded resource content.",
                "test://embedded-resource",
            )
            .with_mime_type("text/plain"),
        )]))
    }

    #[tool(description = "Returns text, an image and a resource")]
    async fn test_multiple_content_types(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG, "image/png"),
            ContentBlock::resource(
                ResourceContents::text(
                    r#"{"test":"data","value":123}"#,
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json"),
            ),
        ]))
    }

    #[tool(description = "Sends three log messages while it runs")]
    async fn test_tool_with_logging(
        &self,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let min = *self.level.lock().unwrap_or_else(|e| e.into_inner());
        for (i, msg) in [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if level_rank(LoggingLevel::Info) >= level_rank(min) {
                let _ = peer
                    .notify_logging_message(LoggingMessageNotificationParam::new(
                        LoggingLevel::Info,
                        json!(msg),
                    ))
                    .await;
            }
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "Tool with logging executed successfully",
        )]))
    }

    #[tool(description = "Always fails")]
    async fn test_error_handling(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )]))
    }

    #[tool(description = "Reports progress 0, 50, 100 of 100")]
    async fn test_tool_with_progress(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let token = context.meta.get_progress_token();
        for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if let Some(token) = &token {
                let _ = context
                    .peer
                    .notify_progress(
                        ProgressNotificationParam::new(token.clone(), p).with_total(100.0),
                    )
                    .await;
            }
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "Tool with progress executed successfully",
        )]))
    }

    #[tool(description = "Asks the client's LLM (sampling)")]
    async fn test_sampling(
        &self,
        Parameters(args): Parameters<SamplingArgs>,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(refused) = self.refuse_client_requests() {
            return Ok(refused);
        }
        let result = peer
            .create_message(CreateMessageRequestParams::new(
                vec![SamplingMessage::user_text(args.prompt)],
                100,
            ))
            .await
            .map_err(|e| ErrorData::internal_error(format!("sampling failed: {e}"), None))?;
        let r = serde_json::to_value(&result).unwrap_or_default();
        let text = r["content"]["text"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| r["content"].to_string());
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "LLM response: {text}"
        ))]))
    }

    #[tool(description = "Asks the user for input (elicitation)")]
    async fn test_elicitation(
        &self,
        Parameters(args): Parameters<ElicitationArgs>,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(refused) = self.refuse_client_requests() {
            return Ok(refused);
        }
        let params = form(
            args.message,
            json!({
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}
                },
                "required": ["username", "email"]
            }),
        )?;
        elicit(&peer, params).await
    }

    #[tool(description = "Elicitation with defaults for every primitive type (SEP-1034)")]
    async fn test_elicitation_sep1034_defaults(
        &self,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(refused) = self.refuse_client_requests() {
            return Ok(refused);
        }
        let params = form(
            "Please review and update the form fields with defaults",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {"type": "string", "description": "User status",
                               "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}
                }
            }),
        )?;
        elicit(&peer, params).await
    }

    #[tool(description = "Elicitation with the five enum variants (SEP-1330)")]
    async fn test_elicitation_sep1330_enums(
        &self,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(refused) = self.refuse_client_requests() {
            return Ok(refused);
        }
        let params = form(
            "Please select options from the enum fields",
            json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                   "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array",
                                      "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}
                }
            }),
        )?;
        elicit(&peer, params).await
    }

    #[tool(
        name = "json_schema_2020_12_tool",
        description = "Tool with JSON Schema 2020-12 features",
        input_schema = schema_2020_12()
    )]
    async fn json_schema_2020_12_tool(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text("ok")]))
    }

    /// rmcp gives a handler no way to close its own POST SSE stream, so
    /// this answers on the open stream after a short wait.
    #[tool(description = "Answers after 100 ms (SSE polling scenario)")]
    async fn test_reconnection(&self) -> Result<CallToolResult, ErrorData> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "Reconnection test completed",
        )]))
    }
}

#[prompt_router]
impl ConformanceServer {
    #[prompt(
        name = "test_simple_prompt",
        description = "A simple prompt without arguments"
    )]
    async fn test_simple_prompt(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            "This is a simple prompt for testing.",
        )]
    }

    #[prompt(
        name = "test_prompt_with_arguments",
        description = "A prompt with two required arguments"
    )]
    async fn test_prompt_with_arguments(
        &self,
        Parameters(args): Parameters<PromptArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                args.arg1, args.arg2
            ),
        )]
    }

    #[prompt(
        name = "test_prompt_with_embedded_resource",
        description = "A prompt embedding a resource"
    )]
    async fn test_prompt_with_embedded_resource(
        &self,
        Parameters(args): Parameters<EmbeddedPromptArgs>,
    ) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new(
                Role::User,
                ContentBlock::resource(
                    ResourceContents::text(
                        "Embedded resource content for testing.",
                        args.resource_uri,
                    )
                    .with_mime_type("text/plain"),
                ),
            ),
            PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
        ]
    }

    #[prompt(
        name = "test_prompt_with_image",
        description = "A prompt with an image"
    )]
    async fn test_prompt_with_image(&self) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new(Role::User, ContentBlock::image(PNG, "image/png")),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_logging()
                .enable_completions()
                .build(),
        )
        .with_server_info(Implementation::new("tower-lro-conformance", "0.1.0"))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.level.lock().unwrap_or_else(|e| e.into_inner()) = request.level;
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let candidates = ["paris", "park", "party", "test", "testing", "tested"];
        let prefix = request.argument.value.to_lowercase();
        let values: Vec<String> = candidates
            .iter()
            .filter(|c| c.starts_with(&prefix))
            .map(|c| (*c).to_owned())
            .collect();
        let info = CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("test://static-text", "static-text")
                .with_description("A static text resource")
                .with_mime_type("text/plain"),
            Resource::new("test://static-binary", "static-binary")
                .with_description("A static binary resource (a PNG)")
                .with_mime_type("image/png"),
            Resource::new("test://watched-resource", "watched-resource")
                .with_description("A resource clients can subscribe to")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .with_description("Data for an id")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => {
                ResourceContents::text("This is the content of the static text resource.", uri)
                    .with_mime_type("text/plain")
            }
            "test://static-binary" => ResourceContents::blob(PNG, uri).with_mime_type("image/png"),
            "test://watched-resource" => ResourceContents::text("Watched resource content.", uri)
                .with_mime_type("text/plain"),
            _ => {
                let id = uri
                    .strip_prefix("test://template/")
                    .and_then(|r| r.strip_suffix("/data"))
                    .filter(|id| !id.is_empty() && !id.contains('/'))
                    .ok_or_else(|| {
                        ErrorData::resource_not_found(format!("no resource {uri}"), None)
                    })?;
                ResourceContents::text(
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                        .to_string(),
                    uri,
                )
                .with_mime_type("application/json")
            }
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&request.uri);
        Ok(())
    }
}
