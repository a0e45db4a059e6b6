//! A JSON response too large to hold (over [`SPILL_AT`], or past the
//! layer's `max_buffered_bytes` budget): spilled to a private temporary
//! file as it arrives, offloaded from there by the engine in bounded memory
//! ([`Offloader::process_spilled`](crate::offload::Offloader::process_spilled)),
//! and sent as the rewritten message, or played back from the spill byte
//! for byte when it stays (not a result, under the threshold after all, a
//! stream cut short, a store that failed without a fallback).
//!
//! Memory: at most [`QUEUE`] chunks between the body and the writer
//! thread, and one read buffer when playing back.

use std::collections::VecDeque;
use std::io::{Seek, Write};
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, HeaderValue, TRANSFER_ENCODING};
use http::{HeaderMap, Response};
use http_body::{Body, Frame};
use http_body_util::BodyExt;

use super::body::OffloadBody;
use super::replay::SpillReplay;
use super::state::{Shared, Watch, WatchKind};
use super::tools_changed::as_stream_after_notice;
use crate::offload::Outcome;

/// A single response holds at most this many bytes in memory; past it, it
/// is spilled (the in-memory path costs a few times the result: this keeps
/// it to tens of MiB whatever the result's size).
pub(crate) const SPILL_AT: usize = 16 << 20;
/// Chunks queued for the writer thread.
const QUEUE: usize = 8;
/// Bytes written at a time to a spill.
const READ_CHUNK: usize = 256 * 1024;

/// A response not spilled, given back whole: its head, the frames read
/// and the rest of its body.
pub(crate) type Back<B> = (http::response::Parts, VecDeque<Frame<Bytes>>, Pin<Box<B>>);

/// What spilling a body gave.
struct Spilled<E> {
    file: std::fs::File,
    len: u64,
    trailers: Option<HeaderMap>,
    error: Option<E>,
}

/// Spills `frames` and the `rest` of a JSON response, offloads the watched
/// result in it, and answers with the rewritten message or the spill
/// played back. `None` when no spill file could be made or written: the
/// caller passes the body through as before (frames, then the rest).
pub(crate) async fn read_spilled<B>(
    shared: Arc<Shared>,
    parts: http::response::Parts,
    frames: VecDeque<Frame<Bytes>>,
    rest: Pin<Box<B>>,
    watched: &[Watch],
) -> Result<Response<OffloadBody<B>>, Back<B>>
where
    B: Body<Data = Bytes>,
{
    let Ok(file) = tempfile::tempfile() else {
        return Err((parts, frames, rest));
    };
    let spilled = match spill(file, frames, rest).await {
        Ok(s) => s,
        Err(Failed::Untouched(frames, rest)) => return Err((parts, frames, rest)),
        Err(Failed::Lost) => return Ok(lost(parts, watched)),
    };
    if spilled.error.is_some() && parts.status.is_success() && !watched.is_empty() {
        // Held back and cut short before a byte was sent: each call fails
        // alone instead of a 200 whose body breaks off.
        tracing::warn!(
            received = spilled.len,
            "an upstream answer broke off before its end"
        );
        return Ok(failed_calls(parts, watched, &broke_off(spilled.len)));
    }
    let watch = watched.iter().find(|w| w.kind == WatchKind::Result);
    let (Some(w), None) = (watch, &spilled.error) else {
        // Cut short (sent as it came, the error after it), or nothing to offload.
        return Ok(Response::from_parts(parts, OffloadBody::spilled(spilled)));
    };
    let call = shared.call_of(w);
    let offloader = shared.offloader.clone();
    let Ok(mut kept) = spilled.file.try_clone() else {
        return Ok(Response::from_parts(parts, OffloadBody::spilled(spilled)));
    };
    let (file, len) = (spilled.file, spilled.len);
    let done =
        tokio::task::spawn_blocking(move || offloader.process_spilled(&call, &file, len)).await;
    // The engine read the spill through its own handles: play it back from the start.
    let rewound = kept.rewind();
    let spilled = Spilled {
        file: kept,
        ..spilled
    };
    let reply = match (done, rewound) {
        (Ok(reply), Ok(())) => reply,
        (Ok(reply), Err(_)) => {
            if let Outcome::Offloaded(o) = &reply.outcome {
                let _ = std::fs::remove_file(&o.file.path);
            }
            return Ok(lost(parts, watched));
        }
        // The blocking task did not complete (runtime shutting down).
        (Err(_), _) => return Ok(Response::from_parts(parts, OffloadBody::spilled(spilled))),
    };
    match reply.message {
        Some(message) if reply.id == w.id && !matches!(reply.outcome, Outcome::Inline(_)) => {
            let mut parts = parts;
            let first = matches!(reply.outcome, Outcome::Offloaded(_)) && shared.note_offload(w);
            let data = if first {
                as_stream_after_notice(&mut parts, message.as_bytes())
            } else {
                Bytes::from(message)
            };
            Ok(own(parts, data, spilled.trailers))
        }
        _ => {
            if let Outcome::Offloaded(o) = &reply.outcome {
                // Another message than the one watched: no one ever heard of this file.
                let _ = std::fs::remove_file(&o.file.path);
            }
            Ok(Response::from_parts(parts, OffloadBody::spilled(spilled)))
        }
    }
}

/// `data` as the whole body, its length in `Content-Length` when the
/// response had one.
fn own<B: Body>(
    mut parts: http::response::Parts,
    data: Bytes,
    trailers: Option<HeaderMap>,
) -> Response<OffloadBody<B>> {
    parts.headers.remove(TRANSFER_ENCODING);
    if parts.headers.contains_key(CONTENT_LENGTH) {
        parts
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(data.len()));
    }
    Response::from_parts(parts, OffloadBody::own_with(data, trailers))
}

/// The answer when the spill failed after bytes of the body were read (a
/// full disk): a JSON-RPC error for the watched request, never a response
/// with bytes missing.
fn lost<B: Body>(parts: http::response::Parts, watched: &[Watch]) -> Response<OffloadBody<B>> {
    let message = "The result was too large to hold and could not be spilled to disk.";
    failed_calls(parts, watched, message)
}

/// The answer to the watched calls of a response whose body cannot be
/// passed on whole (it broke off, or could not be held): a JSON-RPC
/// "internal error" (-32603) with `message` for each call (one object, or
/// an array for several), `application/json`, so each call fails alone
/// and the client's connection and session go on.
pub(super) fn failed_calls<B: Body>(
    mut parts: http::response::Parts,
    watched: &[Watch],
    message: &str,
) -> Response<OffloadBody<B>> {
    let errors: Vec<serde_json::Value> = watched
        .iter()
        .map(|w| {
            serde_json::json!({
                "jsonrpc": "2.0",
                "id": w.id,
                "error": {"code": -32603, "message": message},
            })
        })
        .collect();
    let body = match errors.as_slice() {
        [one] => one.to_string(),
        [] => serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": message}}).to_string(),
        _ => serde_json::Value::Array(errors).to_string(),
    };
    parts.headers.remove(TRANSFER_ENCODING);
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts
        .headers
        .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    Response::from_parts(parts, OffloadBody::own_with(Bytes::from(body), None))
}

/// What a call whose upstream answer broke off after `received` bytes is
/// answered (see [`failed_calls`]).
pub(super) fn broke_off(received: u64) -> String {
    format!(
        "The upstream server's answer broke off after {received} bytes, before its end; \
         the call may be retried."
    )
}

/// Why a body was not spilled.
enum Failed<B: Body> {
    /// Nothing of the body was read: its frames and the rest, given back.
    Untouched(VecDeque<Frame<Bytes>>, Pin<Box<B>>),
    /// The spill failed after bytes of the body were read.
    Lost,
}

/// Writes `frames` and the rest of `body` to `file` on a blocking thread,
/// fed through a bounded queue.
async fn spill<B>(
    file: std::fs::File,
    frames: VecDeque<Frame<Bytes>>,
    mut body: Pin<Box<B>>,
) -> Result<Spilled<B::Error>, Failed<B>>
where
    B: Body<Data = Bytes>,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(QUEUE);
    let writer = tokio::task::spawn_blocking(move || -> std::io::Result<(std::fs::File, u64)> {
        let mut out = std::io::BufWriter::with_capacity(READ_CHUNK, file);
        let mut len = 0u64;
        while let Some(chunk) = rx.blocking_recv() {
            out.write_all(&chunk)?;
            len += chunk.len() as u64;
        }
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        Ok((file, len))
    });
    // The frames held are sent first (clones: they are given back whole
    // if the spill fails before the body is read further).
    let mut ok = true;
    for d in frames.iter().filter_map(|f| f.data_ref()) {
        ok = ok && tx.send(d.clone()).await.is_ok();
    }
    if !ok {
        return Err(Failed::Untouched(frames, body));
    }
    drop(frames);
    let mut trailers = None;
    let mut error = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => match frame.into_data() {
                Ok(d) => {
                    if tx.send(d).await.is_err() {
                        return Err(Failed::Lost);
                    }
                }
                Err(frame) => trailers = frame.into_trailers().ok(),
            },
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    drop(tx);
    match writer.await {
        Ok(Ok((file, len))) => Ok(Spilled {
            file,
            len,
            trailers,
            error,
        }),
        _ => Err(Failed::Lost),
    }
}

impl<B: Body> OffloadBody<B> {
    fn spilled(s: Spilled<B::Error>) -> Self {
        OffloadBody::replay_spill(SpillReplay::new(s.file, s.len, s.trailers, s.error))
    }
}
