//! MCP sessions whose client declared itself an LRO proxy.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A bounded, expiring set of `Mcp-Session-Id`s.
///
/// A session is remembered when its `initialize` carried
/// `clientInfo.proxy: true`, forgotten on `DELETE` or after `ttl` without
/// use; past `capacity` the least recently used session is dropped (its
/// client then gets offloaded results, the safe default).
pub(crate) struct ProxySessions {
    map: Mutex<HashMap<String, Instant>>,
    len: AtomicUsize,
    capacity: usize,
    ttl: Duration,
}

impl std::fmt::Debug for ProxySessions {
    /// Counts and settings only: session ids are credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxySessions")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl ProxySessions {
    /// A set holding at most `capacity` sessions for `ttl` after last use.
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Self {
        ProxySessions {
            map: Mutex::new(HashMap::new()),
            len: AtomicUsize::new(0),
            capacity: capacity.max(1),
            ttl,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        // A panic while holding the lock leaves a valid map; keep using it.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers a proxy session.
    pub(crate) fn remember(&self, session: &str) {
        let now = Instant::now();
        let mut map = self.lock();
        if map.len() >= self.capacity {
            map.retain(|_, seen| now.duration_since(*seen) < self.ttl);
        }
        if map.len() >= self.capacity
            && let Some(oldest) = map.iter().min_by_key(|(_, t)| **t).map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(session.to_owned(), now);
        self.len.store(map.len(), Ordering::Relaxed);
    }

    /// Whether `session` is a live proxy session (refreshes its expiry).
    pub(crate) fn contains(&self, session: &str) -> bool {
        if self.len.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let now = Instant::now();
        let mut map = self.lock();
        match map.get_mut(session) {
            Some(seen) if now.duration_since(*seen) < self.ttl => {
                *seen = now;
                true
            }
            Some(_) => {
                map.remove(session);
                self.len.store(map.len(), Ordering::Relaxed);
                false
            }
            None => false,
        }
    }

    /// Forgets a session (on `DELETE`).
    pub(crate) fn forget(&self, session: &str) {
        if self.len.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut map = self.lock();
        map.remove(session);
        self.len.store(map.len(), Ordering::Relaxed);
    }

    /// Number of sessions held.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_expiring() {
        let s = ProxySessions::new(2, Duration::from_secs(60));
        s.remember("a");
        s.remember("b");
        s.remember("c");
        assert_eq!(s.len(), 2);
        assert!(!s.contains("a"));
        assert!(s.contains("c"));
        s.forget("c");
        assert!(!s.contains("c"));
        let short = ProxySessions::new(8, Duration::from_millis(0));
        short.remember("x");
        assert!(!short.contains("x"));
    }
}
