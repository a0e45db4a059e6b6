//! The JSON response path: collect the body within the buffer budget,
//! rewrite the watched results in it, fix `Content-Length`.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use http::header::{CONTENT_LENGTH, HeaderValue, TRANSFER_ENCODING};
use http::{HeaderMap, Response};
use http_body::{Body, Frame};
use http_body_util::BodyExt;

use super::body::OffloadBody;
use super::budget::Lease;
use super::spill::{SPILL_AT, broke_off, failed_calls, read_spilled};
use super::state::{Shared, Watch};
use super::tools_changed::as_stream_after_notice;
use crate::wire::jsonrpc::{Found, created_task_id, find_results};

/// Collects a JSON response and rewrites the watched results in it.
pub(crate) async fn read_json<B>(
    shared: Arc<Shared>,
    mut parts: http::response::Parts,
    body: B,
    watched: Vec<Watch>,
) -> Response<OffloadBody<B>>
where
    B: Body<Data = Bytes>,
{
    let mut lease = shared.buffers.lease();
    let (data, trailers, error) = match collect(body, &mut lease).await {
        Collected::Done {
            data,
            trailers,
            error,
        } => (data, trailers, error),
        Collected::OverCap { frames, rest } => {
            // Too large to hold: spilled and offloaded from the spill.
            drop(lease);
            let (parts, frames, rest) =
                match read_spilled(shared.clone(), parts, frames, rest, &watched).await {
                    Ok(response) => return response,
                    Err(back) => back,
                };
            for w in watched {
                shared.over_buffer_cap(w.call.name);
            }
            let lease = shared.buffers.lease();
            return Response::from_parts(parts, OffloadBody::resume(frames, rest, lease));
        }
    };
    if error.is_some() {
        if parts.status.is_success() && !watched.is_empty() {
            // Held back and cut short before a byte was sent: each call
            // fails alone, with an error the client can read, instead of
            // a 200 whose body breaks off (and the connection with it).
            tracing::warn!(
                received = data.len(),
                "an upstream answer broke off before its end"
            );
            return failed_calls(parts, &watched, &broke_off(data.len() as u64));
        }
        // Sent as it came, the error after it.
        return Response::from_parts(parts, OffloadBody::full(data, trailers, error, lease));
    }
    let (data, notify) = if shared.passes_unread(&watched, data.len()) {
        (data, false)
    } else {
        rewrite_json(&shared, data, &watched).await
    };
    let data = if notify {
        as_stream_after_notice(&mut parts, &data)
    } else {
        data
    };
    lease.resize(data.len());
    // Whatever the server's framing said (a stale Content-Length beside
    // Transfer-Encoding, a wrong one), the body sent is exactly `data`.
    parts.headers.remove(TRANSFER_ENCODING);
    if parts.headers.contains_key(CONTENT_LENGTH) {
        parts
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(data.len()));
    }
    Response::from_parts(parts, OffloadBody::full(data, trailers, None, lease))
}

/// A response body read by [`collect`].
enum Collected<B: Body> {
    /// The whole body: its data, trailers, and the error that ended it early.
    Done {
        data: Bytes,
        trailers: Option<HeaderMap>,
        error: Option<B::Error>,
    },
    /// Over [`SPILL_AT`] or the buffer budget: the frames read so far and the rest.
    OverCap {
        frames: VecDeque<Frame<Bytes>>,
        rest: Pin<Box<B>>,
    },
}

/// Collects a body, holding its bytes in `lease`.
async fn collect<B>(body: B, lease: &mut Lease) -> Collected<B>
where
    B: Body<Data = Bytes>,
{
    let mut body = Box::pin(body);
    // One chunk is kept as is; more are copied, as they come, into one
    // buffer sized from the body's hint (Content-Length), so a large body is
    // copied once and its chunks are freed on the way (capped in case the
    // hint is wrong, and by the buffer budget).
    let hint = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
    let mut first: Option<Bytes> = None;
    let mut buf: Vec<u8> = Vec::new();
    let mut trailers = None;
    let mut error = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => match frame.into_data() {
                Ok(d) => {
                    let held = first.as_ref().map_or(buf.len(), Bytes::len);
                    if held + d.len() > SPILL_AT || !lease.grow(d.len()) {
                        let mut frames = VecDeque::with_capacity(2);
                        if let Some(f) = first.take() {
                            frames.push_back(Frame::data(f));
                        } else if !buf.is_empty() {
                            frames.push_back(Frame::data(Bytes::from(std::mem::take(&mut buf))));
                        }
                        frames.push_back(Frame::data(d));
                        return Collected::OverCap { frames, rest: body };
                    }
                    match first.take() {
                        None if buf.is_empty() => first = Some(d),
                        Some(f) => {
                            let want = hint.min(lease.limit()).min(SPILL_AT);
                            buf = lease.buffer(want.max(f.len() + d.len()));
                            buf.extend_from_slice(&f);
                            buf.extend_from_slice(&d);
                        }
                        None => {
                            buf = lease.grow_into_spare(buf, d.len());
                            buf.extend_from_slice(&d);
                        }
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
    Collected::Done {
        data: first.unwrap_or_else(|| lease.freeze(buf)),
        trailers,
        error,
    }
}

/// Rewrites the watched results in a JSON body (one message or a batch);
/// `true` when the client must first be notified that the layer's tools
/// changed (see [`Shared::note_offload`]).
async fn rewrite_json(shared: &Shared, data: Bytes, watched: &[Watch]) -> (Bytes, bool) {
    // Checked as UTF-8 once: the results are handed on as text.
    let Ok(body) = ByteString::try_from(data.clone()) else {
        return (data, false);
    };
    let mut notify = false;
    let text: &str = &body;
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for found in find_results(text) {
        let (id, range, members) = match found {
            Found::Result { id, range, members } => (id, range, members),
            Found::Broken { id, why } => {
                if let Some(w) = watched.iter().find(|w| w.id == id) {
                    shared.unreadable(w.call.name.clone(), why);
                }
                continue;
            }
        };
        let Some(w) = watched.iter().find(|w| w.id == id) else {
            continue;
        };
        // Only a task-augmented call may be answered with a CreateTaskResult
        // (a server that does not run it as a task answers it directly).
        if w.task_augmented
            && let Some(task) = created_task_id(&text[range.clone()])
        {
            shared.tasks.insert(&task, w.call.kept());
            continue;
        }
        if let Some((new, first_offload)) = shared
            .transform(w, body.slice_ref(&text[range.clone()]), members)
            .await
        {
            notify |= first_offload;
            edits.push((range, new));
        }
    }
    if edits.is_empty() {
        return (data, false);
    }
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = BytesMut::with_capacity(data.len());
    let mut at = 0;
    for (range, new) in edits {
        out.extend_from_slice(&data[at..range.start]);
        out.extend_from_slice(new.as_bytes());
        at = range.end;
    }
    out.extend_from_slice(&data[at..]);
    (out.freeze(), notify)
}
