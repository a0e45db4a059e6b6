//! What the services of one history layer share.

use std::time::Duration;

use super::events::HistoryEvents;
use crate::history::HistoryOffloader;
use crate::offload::BufferBudget;

/// What the services of one [`HistoryOffloadLayer`](crate::history::HistoryOffloadLayer) share.
#[derive(Debug)]
pub(crate) struct HistoryShared {
    pub offloader: HistoryOffloader,
    pub max_body_bytes: usize,
    pub buffers: BufferBudget,
    pub rewrite_timeout: Duration,
    pub events: HistoryEvents,
}
