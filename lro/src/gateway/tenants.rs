//! A chat route's callers kept apart: each caller (by its credentials:
//! `Authorization`, `x-api-key`, `api-key`, `x-goog-api-key`) gets a history
//! offload of its own, whose files go to `store_dir/owner-{MAC}` (a keyed
//! MAC of the credentials, [`BindingKey::credentials`]), and a read-back
//! tool that reads that directory only. So a caller's files, checkpoints
//! and summaries are never another's, and `lro_history_read` answers a
//! caller from its own files whatever its history names.
//!
//! The services of the most recent [`MAX_CALLERS`] callers are kept, each
//! remembering at most [`CALLER_MEMO_BYTES`]; an older caller's comes back
//! with its directory, where its checkpoints and summaries are (a new
//! service reads them back).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http::Request;
use tower_lro::history::{
    HistoryConfig, HistoryOffloadLayer, HistoryOffloadService, HistoryOffloader,
};
use tower_lro::offload::BindingKey;
use tower_service::Service;

use super::forward::Forward;
use super::metrics::Metrics;
use super::read_back::ReadBack;
use super::{Bucket, GatewayBody};

/// Callers whose services are kept at once.
pub(crate) const MAX_CALLERS: usize = 256;
/// What each caller's history offload remembers in memory at most: with
/// [`MAX_CALLERS`], 1 GiB in all at worst (an active conversation needs
/// far less: its pointers and its last checkpoint).
pub(crate) const CALLER_MEMO_BYTES: usize = 4 << 20;

/// The request headers that carry a chat provider's credentials.
const CREDENTIAL_HEADERS: [&str; 4] = ["authorization", "x-api-key", "api-key", "x-goog-api-key"];

type History = HistoryOffloadService<ReadBack>;

/// What a chat route's callers share.
struct Shared {
    config: HistoryConfig,
    key: BindingKey,
    forward: Forward,
    metrics: Arc<Metrics>,
    route: String,
    /// The object store the files also go to (a fleet's).
    #[cfg_attr(not(feature = "object-store"), allow(dead_code))]
    bucket: Option<Arc<Bucket>>,
    callers: Mutex<Callers>,
}

/// Each caller's service and when it was last used, by a clock that
/// counts requests.
#[derive(Default)]
struct Callers {
    services: HashMap<String, (History, u64)>,
    clock: u64,
}

/// The chat route's service (see the module docs).
#[derive(Clone)]
pub(crate) struct Tenants(Arc<Shared>);

impl std::fmt::Debug for Tenants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenants")
            .field("route", &self.0.route)
            .finish_non_exhaustive()
    }
}

impl Tenants {
    /// The callers of `route`, each with `config` in a directory of its own
    /// under `config.store_dir`, bound by `key`.
    pub(crate) fn new(
        config: HistoryConfig,
        key: BindingKey,
        forward: Forward,
        metrics: Arc<Metrics>,
        route: &str,
        bucket: Option<Arc<Bucket>>,
    ) -> Tenants {
        Tenants(Arc::new(Shared {
            config,
            key,
            forward,
            metrics,
            route: route.to_owned(),
            bucket,
            callers: Mutex::new(Callers::default()),
        }))
    }

    /// The owner digest of the caller of a request with `headers`.
    fn owner(&self, headers: &http::HeaderMap) -> String {
        let values: Vec<Vec<u8>> = CREDENTIAL_HEADERS
            .iter()
            .flat_map(|name| {
                headers.get_all(*name).iter().map(move |v| {
                    let mut value = format!("{name}:").into_bytes();
                    value.extend_from_slice(v.as_bytes());
                    value
                })
            })
            .collect();
        self.0.key.credentials(values.iter().map(Vec::as_slice))
    }

    /// The service of the caller `owner`, made if need be.
    fn service(&self, owner: String) -> History {
        let shared = &self.0;
        let mut guard = shared.callers.lock().unwrap_or_else(|e| e.into_inner());
        let Callers { services, clock } = &mut *guard;
        *clock += 1;
        if let Some((service, used)) = services.get_mut(&owner) {
            *used = *clock;
            return service.clone();
        }
        if services.len() >= MAX_CALLERS
            && let Some(oldest) = services
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
        {
            services.remove(&oldest);
        }
        let config = shared
            .config
            .clone()
            .store_dir(shared.config.store_dir.join(format!("owner-{owner}")));
        let read_tool = config.read_tool;
        let offloader = HistoryOffloader::new(config).with_memo_limit(CALLER_MEMO_BYTES);
        // Its files under `owner-{MAC}` (hex: always a valid name).
        #[cfg(feature = "object-store")]
        let offloader = match &shared.bucket {
            Some(bucket) => {
                let under = format!("owner-{owner}");
                let fallback = offloader.clone();
                offloader
                    .with_bucket(bucket.clone(), &under)
                    .unwrap_or(fallback)
            }
            None => offloader,
        };
        let layer = HistoryOffloadLayer::builder(offloader.clone())
            .event_hook(shared.metrics.history_hook(&shared.route))
            .build();
        let read_back = ReadBack {
            forward: shared.forward.clone(),
            offloader,
            on: read_tool,
            reads: shared.metrics.history_reads(&shared.route),
        };
        let service = tower_layer::Layer::layer(&layer, read_back);
        services.insert(owner, (service.clone(), *clock));
        service
    }
}

impl Service<Request<GatewayBody>> for Tenants {
    type Response = http::Response<GatewayBody>;
    type Error = Infallible;
    type Future = <History as Service<Request<GatewayBody>>>::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<GatewayBody>) -> Self::Future {
        let owner = self.owner(request.headers());
        self.service(owner).call(request)
    }
}
