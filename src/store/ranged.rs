//! A shared store's object read as a stream of ranged `GET`s: a first
//! range of [`FIRST_RANGE`], each next one twice as large up to
//! [`MAX_RANGE`], the next always requested while the reader consumes the
//! current one. A `GET` costs about a round trip whether it asks for
//! 64 KiB or 1 MiB (moto, which reads the whole object for each, costs in
//! proportion to the object), so the first range is 1 MiB: the first page
//! of most results in one `GET`. A reader that stops early (a page
//! complete) has fetched about what it read; memory holds two ranges. One
//! that reads to the end checks the file's completeness contract.

use std::io::{self, Read};
use std::ops::Range;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::bridge::Bridge;
use super::shared::ContractCheck;

/// The first range requested.
pub(super) const FIRST_RANGE: u64 = 1 << 20;
/// The largest range requested.
pub(super) const MAX_RANGE: u64 = 8 << 20;

type Fetch = tokio::task::JoinHandle<object_store::Result<Bytes>>;

/// A reader of one object of `size` bytes through ranged `GET`s.
pub(super) struct Ranged {
    store: Arc<dyn ObjectStore>,
    key: Path,
    size: u64,
    bridge: Arc<Bridge>,
    /// The next byte to request.
    next: u64,
    /// The length of the next range to request.
    span: u64,
    /// The range in flight, and what it covers.
    pending: Option<(Fetch, Range<u64>)>,
    current: Bytes,
    /// The completeness contract, checked when the whole object was read.
    check: Option<ContractCheck>,
}

impl Ranged {
    /// A reader of `key`, `size` bytes long (its manifest says so), from
    /// byte `from`; read to its end from byte 0, it is checked by `check`
    /// (an error of kind `InvalidData` when it differs).
    pub(super) fn new(
        store: Arc<dyn ObjectStore>,
        (key, size): (Path, u64),
        from: u64,
        bridge: Arc<Bridge>,
        check: Option<ContractCheck>,
    ) -> Ranged {
        Ranged {
            store,
            key,
            size,
            bridge,
            next: from.min(size),
            span: FIRST_RANGE,
            pending: None,
            current: Bytes::new(),
            check: check.filter(|_| from == 0),
        }
    }

    /// Requests the next range, if any is left and none is in flight.
    fn request(&mut self) {
        if self.pending.is_some() || self.next >= self.size {
            return;
        }
        let range = self.next..self.size.min(self.next + self.span);
        self.next = range.end;
        self.span = (self.span * 2).min(MAX_RANGE);
        let (store, key, r) = (self.store.clone(), self.key.clone(), range.clone());
        if let Some(fetch) = self
            .bridge
            .spawn(async move { store.get_range(&key, r).await })
        {
            self.pending = Some((fetch, range));
        }
    }

    /// The range in flight, waited for; `None` past the end.
    fn take_pending(&mut self) -> io::Result<Option<Bytes>> {
        self.request();
        let Some((fetch, range)) = self.pending.take() else {
            return if self.next >= self.size {
                Ok(None)
            } else {
                Err(io::Error::other("the store's runtime is shut down"))
            };
        };
        let got = self
            .bridge
            .run(self.key.as_ref(), fetch)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let bytes = match got {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(e)) => return Err(io::Error::other(e.to_string())),
            Err(e) => return Err(io::Error::other(e.to_string())),
        };
        if bytes.len() as u64 != range.end - range.start {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: bytes {}..{} came back as {} bytes",
                    self.key,
                    range.start,
                    range.end,
                    bytes.len()
                ),
            ));
        }
        Ok(Some(bytes))
    }
}

impl Read for Ranged {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.current.is_empty() {
            match self.take_pending()? {
                Some(bytes) => self.current = bytes,
                None => {
                    return match self.check.take().map(ContractCheck::finish) {
                        Some(Err(detail)) => {
                            Err(io::Error::new(io::ErrorKind::InvalidData, detail))
                        }
                        _ => Ok(0),
                    };
                }
            }
            // The next range comes while this one is read.
            self.request();
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        if let Some(check) = &mut self.check {
            check.update(&buf[..n]);
        }
        self.current.advance(n);
        Ok(n)
    }
}

impl Drop for Ranged {
    fn drop(&mut self) {
        if let Some((fetch, _)) = self.pending.take() {
            fetch.abort();
        }
    }
}
