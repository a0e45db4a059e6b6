//! What the layer remembers between requests (the calls of tasks, the
//! calls a dropped event stream never answered): bounded in count, bytes
//! and time, whatever clients send.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::wire::jsonrpc::RawCall;

/// Bytes a remembered value holds.
pub(crate) trait Weigh {
    fn weight(&self) -> usize;
}

impl Weigh for RawCall {
    fn weight(&self) -> usize {
        self.size()
    }
}

/// A mark (sessions that had an offload).
impl Weigh for bool {
    fn weight(&self) -> usize {
        1
    }
}

/// A client's name.
impl Weigh for String {
    fn weight(&self) -> usize {
        self.len()
    }
}

/// What a tool's `outputSchema` admits.
impl Weigh for crate::wire::call::OutputSchema {
    fn weight(&self) -> usize {
        1
    }
}

/// Calls by JSON-RPC id.
impl Weigh for Vec<(Value, RawCall)> {
    fn weight(&self) -> usize {
        self.iter()
            .map(|(id, call)| id.to_string().len() + call.size())
            .sum()
    }
}

/// The bounds of a [`Memo`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// Entries at most.
    pub capacity: usize,
    /// Bytes of keys and values at most.
    pub max_bytes: usize,
    /// An entry is forgotten this long after it was last set.
    pub ttl: Duration,
}

/// Characters of a key kept: longer keys are cut (they still match
/// themselves).
const MAX_KEY_CHARS: usize = 256;

/// A map from string keys to values, within [`Bounds`]: past a bound, the
/// entry set longest ago is forgotten first.
pub(crate) struct Memo<V> {
    bounds: Bounds,
    inner: Mutex<MemoMap<V>>,
}

struct MemoMap<V> {
    entries: HashMap<String, (V, Instant)>,
    /// Keys with the time they were set, oldest first; an entry set again
    /// leaves a stale pair behind, skipped when reached.
    order: VecDeque<(String, Instant)>,
    /// Bytes held by `entries` (keys and values).
    bytes: usize,
}

impl<V> std::fmt::Debug for Memo<V> {
    /// Counts and bounds only: keys and values are the clients' data.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let map = self.lock();
        f.debug_struct("Memo")
            .field("len", &map.entries.len())
            .field("bytes", &map.bytes)
            .field("bounds", &self.bounds)
            .finish()
    }
}

impl<V> Memo<V> {
    fn lock(&self) -> std::sync::MutexGuard<'_, MemoMap<V>> {
        // A panic while holding the lock leaves a valid map; keep using it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<V> MemoMap<V> {
    fn remove(&mut self, key: &str) -> Option<V>
    where
        V: Weigh,
    {
        let (value, _) = self.entries.remove(key)?;
        self.bytes -= key.len() + value.weight();
        Some(value)
    }

    /// Forgets entries set before `deadline`, and the oldest while over a
    /// bound.
    fn evict(&mut self, bounds: &Bounds, deadline: Option<Instant>)
    where
        V: Weigh,
    {
        while let Some((key, at)) = self.order.front() {
            let expired = deadline.is_some_and(|d| *at < d);
            let over = self.entries.len() > bounds.capacity
                || self.bytes > bounds.max_bytes
                || self.order.len() > 2 * bounds.capacity.max(1);
            let stale = self.entries.get(key).is_none_or(|(_, set)| set != at);
            if !expired && !over && !stale {
                break;
            }
            if let Some((key, at)) = self.order.pop_front()
                && self.entries.get(&key).is_some_and(|(_, set)| *set == at)
            {
                self.remove(&key);
            }
        }
    }
}

impl<V: Weigh + Clone> Memo<V> {
    pub(crate) fn new(bounds: Bounds) -> Self {
        Memo {
            bounds,
            inner: Mutex::new(MemoMap {
                entries: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
            }),
        }
    }

    /// Sets `key` to what `f` makes of its current value (if any).
    pub(crate) fn update(&self, key: &str, f: impl FnOnce(Option<V>) -> V) {
        self.update_at(key, f, Instant::now());
    }

    pub(crate) fn update_at(&self, key: &str, f: impl FnOnce(Option<V>) -> V, now: Instant) {
        let key = cut_key(key);
        let mut map = self.lock();
        map.evict(&self.bounds, now.checked_sub(self.bounds.ttl));
        let value = f(map.remove(key));
        map.bytes += key.len() + value.weight();
        map.entries.insert(key.to_owned(), (value, now));
        map.order.push_back((key.to_owned(), now));
        map.evict(&self.bounds, None);
    }

    /// Sets `key` to `value`.
    pub(crate) fn insert(&self, key: &str, value: V) {
        self.update(key, |_| value);
    }

    /// The value of `key`, if remembered (and not expired).
    pub(crate) fn get(&self, key: &str) -> Option<V> {
        self.get_at(key, Instant::now())
    }

    pub(crate) fn get_at(&self, key: &str, now: Instant) -> Option<V> {
        let mut map = self.lock();
        map.evict(&self.bounds, now.checked_sub(self.bounds.ttl));
        map.entries.get(cut_key(key)).map(|(v, _)| v.clone())
    }

    /// The value of `key`, forgotten.
    pub(crate) fn take(&self, key: &str) -> Option<V> {
        let mut map = self.lock();
        map.evict(&self.bounds, Instant::now().checked_sub(self.bounds.ttl));
        map.remove(cut_key(key))
    }

    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize) {
        let map = self.lock();
        let counted: usize = map
            .entries
            .iter()
            .map(|(k, (v, _))| k.len() + v.weight())
            .sum();
        assert_eq!(counted, map.bytes, "bytes counted as held");
        (map.entries.len(), map.bytes)
    }
}

fn cut_key(key: &str) -> &str {
    key.char_indices()
        .nth(MAX_KEY_CHARS)
        .map_or(key, |(at, _)| &key[..at])
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    const BOUNDS: Bounds = Bounds {
        capacity: 100,
        max_bytes: 64 << 10,
        ttl: Duration::from_secs(3600),
    };

    fn call_with(arguments: &str) -> RawCall {
        RawCall {
            name: "tool".into(),
            arguments: Some(Bytes::copy_from_slice(arguments.as_bytes())),
        }
    }

    #[test]
    fn the_oldest_is_forgotten_first_and_setting_again_refreshes() {
        let memo = Memo::new(BOUNDS);
        for i in 0..BOUNDS.capacity + 5 {
            memo.insert(&format!("t{i}"), RawCall::named(format!("tool{i}")));
            if i == BOUNDS.capacity {
                // Set again: now among the newest.
                memo.insert("t0", RawCall::named("again"));
            }
        }
        assert_eq!(memo.get("t0").unwrap().name, "again");
        for i in 1..6 {
            assert!(
                memo.get(&format!("t{i}")).is_none(),
                "t{i} is among the oldest"
            );
        }
        assert_eq!(memo.counts().0, BOUNDS.capacity);
        assert!(memo.take("t7").is_some());
        assert!(memo.get("t7").is_none());
    }

    #[test]
    fn entries_expire_and_bytes_are_bounded() {
        let memo = Memo::new(BOUNDS);
        let start = Instant::now();
        memo.update_at("old", |_| RawCall::named("a"), start);
        assert!(memo.get_at("old", start + BOUNDS.ttl / 2).is_some());
        assert!(memo.get_at("old", start + BOUNDS.ttl * 2).is_none());
        let call = RawCall::kept(&call_with(&format!(
            r#"{{"query":"{q}","filter":"{q}","q":"{q}"}}"#,
            q = "q".repeat(4096)
        )));
        for i in 0..1000 {
            memo.update_at(
                &format!("task-{i}-{}", "i".repeat(300)),
                |_| call.clone(),
                start,
            );
            assert!(memo.counts().1 <= BOUNDS.max_bytes);
        }
        assert!(memo.counts().0 <= BOUNDS.capacity);
    }
}
