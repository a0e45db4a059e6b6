//! The cap on response bytes buffered at once, across all in-flight
//! responses of one layer, and the spare buffer a large body is collected
//! into.
//!
//! The spare: the buffer of the last large body collected, kept for the
//! next one. A fresh buffer's pages are mapped and zeroed by the kernel as
//! they are first written, a kept one's are not (what that saves on a
//! large body: `benches/README.md`, `SPARE_FROM`). One at most, from
//! [`SPARE_FROM`] to [`SPARE_UP_TO`] bytes; it counts against the budget
//! while kept (so the limit bounds it too) and is let go when the budget
//! needs the room.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};

/// A body of this many bytes or more is collected into the spare buffer.
pub(crate) const SPARE_FROM: usize = 1 << 20;
/// The largest spare kept (a larger body is spilled to a file anyway:
/// [`SPILL_AT`](super::spill::SPILL_AT)).
pub(crate) const SPARE_UP_TO: usize = 16 << 20;

/// Bytes buffered by all services of one layer, against a limit.
#[derive(Debug, Clone)]
pub(crate) struct BufferBudget {
    limit: usize,
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Bytes held by leases, and the spare's capacity.
    used: AtomicUsize,
    spare: Mutex<Option<Vec<u8>>>,
}

impl BufferBudget {
    pub(crate) fn new(limit: usize) -> Self {
        BufferBudget {
            limit,
            inner: Arc::default(),
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes the leases hold (the spare, which counts against the limit
    /// too, is not response bytes).
    pub(crate) fn in_use(&self) -> usize {
        let spare = self.spare();
        let kept = spare.as_ref().map_or(0, Vec::capacity);
        self.inner.used.load(Ordering::Acquire) - kept
    }

    /// A lease holding nothing yet; what it holds is given back on drop.
    pub(crate) fn lease(&self) -> Lease {
        Lease {
            budget: self.clone(),
            held: 0,
        }
    }

    /// An empty buffer for a body of `len` bytes: the spare when the body
    /// is large (its pages mapped already) and fills at least half of it,
    /// grown to `len` if need be.
    pub(crate) fn buffer(&self, len: usize) -> Vec<u8> {
        let fits = |spare: &Vec<u8>| spare.capacity() / 2 <= len;
        let mut buf = match len >= SPARE_FROM {
            true => self.take_spare(fits).unwrap_or_default(),
            false => Vec::new(),
        };
        buf.reserve_exact(len);
        buf
    }

    /// `buf`, about to hold `more` bytes more: moved into the spare when
    /// that makes it large and the spare holds it all (a body of unknown
    /// size, found large as it comes), else as it is.
    pub(crate) fn grow_into_spare(&self, buf: Vec<u8>, more: usize) -> Vec<u8> {
        match self.reuse_buffer_for_growth(buf.len(), buf.capacity(), more) {
            Some(mut spare) => {
                spare.extend_from_slice(&buf);
                spare
            }
            None => buf,
        }
    }

    /// The spare (emptied) for a buffer holding `len` bytes of `capacity`,
    /// about to take `more`: when it would have to grow, grows large, and
    /// the spare holds it all.
    pub(crate) fn reuse_buffer_for_growth(
        &self,
        len: usize,
        capacity: usize,
        more: usize,
    ) -> Option<Vec<u8>> {
        let need = len + more;
        if need <= capacity || need < SPARE_FROM {
            return None;
        }
        let mut spare = self.take_spare(|spare| spare.capacity() >= need)?;
        spare.clear();
        Some(spare)
    }

    /// `buf` as bytes; a large buffer comes back as the spare when they
    /// are dropped (unless there is one, or no room in the budget).
    pub(crate) fn freeze(&self, buf: Vec<u8>) -> Bytes {
        if !(SPARE_FROM..=SPARE_UP_TO).contains(&buf.capacity()) {
            return Bytes::from(buf);
        }
        self.freeze_bytes_mut(BytesMut::from(Bytes::from(buf)))
    }

    /// [`freeze`](Self::freeze) for a `BytesMut` (as an event splitter
    /// hands over its whole buffer): its allocation comes back as the spare
    /// once the bytes are dropped, if nothing else shares it then.
    pub(crate) fn freeze_bytes_mut(&self, buf: BytesMut) -> Bytes {
        if !(SPARE_FROM..=SPARE_UP_TO).contains(&buf.capacity()) {
            return buf.freeze();
        }
        Bytes::from_owner(Lent {
            buf,
            budget: self.clone(),
        })
    }

    fn spare(&self) -> std::sync::MutexGuard<'_, Option<Vec<u8>>> {
        self.inner
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The spare, if `fits` it.
    fn take_spare(&self, fits: impl Fn(&Vec<u8>) -> bool) -> Option<Vec<u8>> {
        let mut kept = self.spare();
        let spare = kept.take_if(|spare| fits(spare))?;
        // Under the lock: `in_use` sees the spare and its count together.
        self.inner
            .used
            .fetch_sub(spare.capacity(), Ordering::AcqRel);
        Some(spare)
    }

    /// Keeps `buf` as the spare, when there is none, it is of a spare's
    /// size and there is room for it.
    fn keep(&self, mut buf: Vec<u8>) {
        if !(SPARE_FROM..=SPARE_UP_TO).contains(&buf.capacity()) {
            return;
        }
        let mut spare = self.spare();
        if spare.is_none() && self.try_take_exact(buf.capacity()) {
            buf.clear();
            *spare = Some(buf);
        }
    }

    /// Takes `n` bytes of the limit, letting the spare go if that makes
    /// room.
    fn try_take(&self, n: usize) -> bool {
        self.try_take_exact(n) || (self.take_spare(|_| true).is_some() && self.try_take_exact(n))
    }

    fn try_take_exact(&self, n: usize) -> bool {
        self.inner
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }
}

/// A buffer lent out as [`Bytes`], the spare again when they are dropped.
struct Lent {
    buf: BytesMut,
    budget: BufferBudget,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        // Emptied first: nothing is copied to the allocation's start. Shared
        // still (by bytes split off before it), it is not kept: `Vec::from`
        // then makes an empty vector of its own.
        buf.clear();
        self.budget.keep(Vec::from(buf));
    }
}

/// Bytes one response holds of a [`BufferBudget`].
#[derive(Debug)]
pub(crate) struct Lease {
    budget: BufferBudget,
    held: usize,
}

impl Lease {
    /// Holds `n` more bytes; false (holding the same as before) if that
    /// would pass the limit.
    pub(crate) fn grow(&mut self, n: usize) -> bool {
        if self.budget.try_take(n) {
            self.held += n;
            true
        } else {
            false
        }
    }

    /// Holds exactly `n` bytes; false (unchanged) if growing to `n` would
    /// pass the limit.
    pub(crate) fn resize(&mut self, n: usize) -> bool {
        if n > self.held {
            return self.grow(n - self.held);
        }
        if n == self.held {
            // Nothing to give back: the shared counter is left alone.
            return true;
        }
        self.budget
            .inner
            .used
            .fetch_sub(self.held - n, Ordering::AcqRel);
        self.held = n;
        true
    }

    pub(crate) fn limit(&self) -> usize {
        self.budget.limit()
    }

    /// [`BufferBudget::buffer`].
    pub(crate) fn buffer(&self, len: usize) -> Vec<u8> {
        self.budget.buffer(len)
    }

    /// [`BufferBudget::freeze`].
    pub(crate) fn freeze(&self, buf: Vec<u8>) -> Bytes {
        self.budget.freeze(buf)
    }

    /// [`BufferBudget::grow_into_spare`].
    pub(crate) fn grow_into_spare(&self, buf: Vec<u8>, more: usize) -> Vec<u8> {
        self.budget.grow_into_spare(buf, more)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.held > 0 {
            self.budget
                .inner
                .used
                .fetch_sub(self.held, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_share_the_limit_and_give_back_on_drop() {
        let budget = BufferBudget::new(100);
        let mut a = budget.lease();
        let mut b = budget.lease();
        assert!(a.grow(60));
        assert!(!b.grow(41));
        assert!(b.grow(40));
        assert_eq!(budget.in_use(), 100);
        assert!(a.resize(10));
        assert_eq!(budget.in_use(), 50);
        drop(b);
        assert_eq!(budget.in_use(), 10);
        drop(a);
        assert_eq!(budget.in_use(), 0);
    }

    /// Collects `len` bytes as the layer does: a buffer, filled, frozen.
    fn collected(budget: &BufferBudget, len: usize) -> (Bytes, *const u8) {
        let mut buf = budget.buffer(len);
        let at = buf.as_ptr();
        buf.resize(len, b'x');
        (budget.freeze(buf), at)
    }

    #[test]
    fn a_large_body_buffer_is_kept_for_the_next_one() {
        let budget = BufferBudget::new(64 << 20);
        let (first, at) = collected(&budget, 3 << 20);
        assert_eq!(first.len(), 3 << 20);
        assert!(first.iter().all(|&b| b == b'x'));
        drop(first);
        // Kept: counted against the limit, not as response bytes.
        assert_eq!(budget.in_use(), 0);
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 3 << 20);
        let (second, again) = collected(&budget, (3 << 20) - 10);
        assert_eq!(at, again, "the same pages");
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 0);
        drop(second);
        // Larger: grown (the spare let go); much smaller: a buffer of its own.
        let (third, _) = collected(&budget, 5 << 20);
        let (fourth, _) = collected(&budget, 2 << 20);
        assert_eq!((third.len(), fourth.len()), (5 << 20, 2 << 20));
        drop(third);
        drop(fourth);
        // One spare at most.
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 5 << 20);
        let (small, _) = collected(&budget, 100);
        drop(small);
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 5 << 20);
    }

    #[test]
    fn the_spare_makes_room_for_response_bytes_and_keeps_to_the_limit() {
        let budget = BufferBudget::new(4 << 20);
        let (body, _) = collected(&budget, 3 << 20);
        drop(body);
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 3 << 20);
        let mut lease = budget.lease();
        assert!(lease.grow(2 << 20), "the spare let go for it");
        assert_eq!(budget.in_use(), 2 << 20);
        // No room to keep another while the lease holds its bytes.
        let (body, _) = collected(&budget, 3 << 20);
        drop(body);
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 2 << 20);
        drop(lease);
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 0);
        // Over the largest spare: not kept.
        let big = BufferBudget::new(64 << 20);
        let (body, _) = collected(&big, SPARE_UP_TO + 1);
        drop(body);
        assert_eq!(big.inner.used.load(Ordering::Acquire), 0);
    }

    #[test]
    fn a_body_of_unknown_size_moves_into_the_spare_once_large() {
        let budget = BufferBudget::new(64 << 20);
        let (body, at) = collected(&budget, 4 << 20);
        drop(body);
        // Chunks of 64 KiB, no size known: small, it stays where it is.
        let chunk = vec![b'y'; 64 << 10];
        let mut buf = budget.buffer(2 * chunk.len());
        let mut moved_at = None;
        for n in 1..=50 {
            buf = budget.grow_into_spare(buf, chunk.len());
            buf.extend_from_slice(&chunk);
            if buf.as_ptr() == at && moved_at.is_none() {
                moved_at = Some(n);
            }
        }
        // Into the spare once past a megabyte (at its next growth), whole,
        // and kept there.
        let moved_at = moved_at.expect("moved into the spare");
        assert!((16..=32).contains(&moved_at), "after {moved_at} chunks");
        assert_eq!(buf.as_ptr(), at);
        assert_eq!(buf.len(), 50 * chunk.len());
        assert!(buf.iter().all(|&b| b == b'y'));
    }

    #[test]
    fn a_bytes_mut_handed_over_whole_comes_back_unless_still_shared() {
        let budget = BufferBudget::new(64 << 20);
        let mut buf = BytesMut::with_capacity(3 << 20);
        buf.resize(3 << 20, b'z');
        let at = buf.as_ptr();
        let event = budget.freeze_bytes_mut(buf);
        let slice = event.slice(10..20);
        drop(event);
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 0, "still used");
        drop(slice);
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 3 << 20);
        let spare = budget
            .reuse_buffer_for_growth(0, 0, 2 << 20)
            .expect("the spare");
        assert_eq!((spare.as_ptr(), spare.len()), (at, 0));
        assert!(
            budget.reuse_buffer_for_growth(0, 0, 2 << 20).is_none(),
            "one spare"
        );
        assert!(
            budget
                .reuse_buffer_for_growth(1 << 10, 4 << 20, 1 << 20)
                .is_none(),
            "room left"
        );

        // Sharing its allocation with bytes split off before it (and still
        // alive): not kept, and no empty spare stands in the way after it.
        let mut buf = BytesMut::with_capacity(3 << 20);
        buf.resize(3 << 20, b'z');
        let before = buf.split_to(100).freeze();
        drop(budget.freeze_bytes_mut(buf));
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 0);
        assert_eq!(&before[..], &[b'z'; 100][..]);
        let (body, _) = collected(&budget, 2 << 20);
        drop(body);
        assert_eq!(budget.inner.used.load(Ordering::Acquire), 2 << 20);
    }
}
