//! The cap on response bytes buffered at once, across all in-flight
//! responses of one layer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes buffered by all services of one layer, against a limit.
#[derive(Debug, Clone)]
pub(crate) struct BufferBudget {
    limit: usize,
    used: Arc<AtomicUsize>,
}

impl BufferBudget {
    pub(crate) fn new(limit: usize) -> Self {
        BufferBudget {
            limit,
            used: Arc::new(AtomicUsize::new(0)),
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn in_use(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// A lease holding nothing yet; what it holds is given back on drop.
    pub(crate) fn lease(&self) -> Lease {
        Lease {
            budget: self.clone(),
            held: 0,
        }
    }

    fn try_take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.limit)
            })
            .is_ok()
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
        self.budget.used.fetch_sub(self.held - n, Ordering::AcqRel);
        self.held = n;
        true
    }

    pub(crate) fn limit(&self) -> usize {
        self.budget.limit()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.held > 0 {
            self.budget.used.fetch_sub(self.held, Ordering::AcqRel);
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
}
