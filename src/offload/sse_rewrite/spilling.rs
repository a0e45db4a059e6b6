//! A watched event too large to hold: spilled to a private temporary file
//! as it arrives (`sse_spill`), offloaded from there, and sent rewritten,
//! or played back unchanged when it stays.

use super::*;

/// What became of a spilled event.
pub(super) enum SpillDone {
    /// Rewritten: the reply's id, the rewritten event, and whether its
    /// result was offloaded (else cut).
    Event(serde_json::Value, Bytes, bool),
    /// Kept: the event's file and length, played back (`None`: the disk
    /// failed under the spill).
    Replay(Option<std::fs::File>, u64),
}

/// A watched event too large to hold (see `sse_spill`).
impl<E> SseRewriter<E> {
    /// What a spilled event is at, if one is.
    pub(super) fn busy_spilling(&self) -> Option<()> {
        (self.spill.is_some() || self.spilled.is_some() || self.replaying.is_some()).then_some(())
    }

    /// Starts spilling the incomplete event held (only the event being
    /// read is held when nothing is pending); false when no spill file
    /// can be made (the caller falls back to passing it through).
    pub(super) fn start_spill(&mut self) -> bool {
        if self.busy_spilling().is_some() || self.watched.is_empty() {
            return false;
        }
        let held = self.splitter.take_rest();
        match EventSpill::new(&held) {
            Some(spill) => {
                self.spill = Some(spill);
                self.hold(self.pending_len);
                true
            }
            None => {
                self.push(&held);
                false
            }
        }
    }

    /// The spilled event is whole: offload it on the blocking pool.
    pub(super) fn end_spill(&mut self) {
        let Some(spill) = self.spill.take() else {
            return;
        };
        let Some(watch) = self.watched.iter().find(|w| w.kind == WatchKind::Result) else {
            self.spilled = Some(Box::pin(async move { kept(spill) }));
            return;
        };
        let call = self.shared.call_of(watch);
        let offloader = self.shared.offloader.clone();
        let ids: Vec<serde_json::Value> = self.watched.iter().map(|w| w.id.clone()).collect();
        self.spilled = Some(Box::pin(async move {
            let Ok((file, len)) = spill.finish() else {
                return SpillDone::Replay(None, 0);
            };
            let Ok(mut back) = file.try_clone() else {
                return SpillDone::Replay(Some(file), len);
            };
            let done =
                tokio::task::spawn_blocking(move || offload_event(&offloader, &call, &file)).await;
            let _ = back.rewind();
            match done {
                Ok(Some((id, event, outcome))) if ids.contains(&id) => {
                    SpillDone::Event(id, event, matches!(outcome, Outcome::Offloaded(_)))
                }
                Ok(Some((_, _, outcome))) => {
                    if let Outcome::Offloaded(o) = &outcome {
                        // Not a watched answer: no one hears of this file.
                        let _ = std::fs::remove_file(&o.file.path);
                    }
                    SpillDone::Replay(Some(back), len)
                }
                _ => SpillDone::Replay(Some(back), len),
            }
        }));
    }

    /// Plays back what the spill holds, unchanged.
    pub(super) fn replay_spill(&mut self) {
        if let Some(spill) = self.spill.take()
            && let SpillDone::Replay(Some(file), len) = kept(spill)
        {
            self.replaying = Some(SpillReplay::plain(file, len));
        }
    }

    /// The spilled event was offloaded or is played back.
    pub(super) fn spill_done(&mut self, done: SpillDone) {
        match done {
            SpillDone::Event(id, event, offloaded) => {
                let event = match self.watched.iter().position(|w| w.id == id) {
                    Some(pos) => {
                        let w = self.watched.swap_remove(pos);
                        if offloaded && self.shared.note_offload(&w) {
                            after_notice(event)
                        } else {
                            event
                        }
                    }
                    // Checked before: only a watched id gets here.
                    None => event,
                };
                self.ready.push_back(Frame::data(event));
            }
            SpillDone::Replay(Some(file), len) => {
                self.replaying = Some(SpillReplay::plain(file, len));
            }
            SpillDone::Replay(None, _) => {}
        }
        if self.replaying.is_none() {
            self.drain_events();
            self.account();
        }
    }
}

/// A spill's file, rewound, to play back.
fn kept(spill: EventSpill) -> SpillDone {
    match spill.finish() {
        Ok((file, len)) => SpillDone::Replay(Some(file), len),
        // The disk failed: nothing can be played back (the bytes are lost).
        Err(_) => SpillDone::Replay(None, 0),
    }
}
