//! Every HTTP request an object store sends (retries included), counted by kind, with the
//! bytes its GETs returned.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};

/// Requests made to one object store, by kind, and the bytes its GETs returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestCounts {
    /// Listing requests (one per page of up to 1,000 keys).
    pub list: u64,
    /// Ranged or whole-object GETs.
    pub get: u64,
    pub head: u64,
    /// Any other request (none while scanning).
    pub other: u64,
    /// Bytes of object content received.
    pub bytes_read: u64,
}

impl RequestCounts {
    pub fn total(&self) -> u64 {
        self.list + self.get + self.head + self.other
    }

    /// What was counted since `earlier`.
    pub fn since(&self, earlier: &RequestCounts) -> RequestCounts {
        RequestCounts {
            list: self.list.saturating_sub(earlier.list),
            get: self.get.saturating_sub(earlier.get),
            head: self.head.saturating_sub(earlier.head),
            other: self.other.saturating_sub(earlier.other),
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Counters {
    list: AtomicU64,
    get: AtomicU64,
    head: AtomicU64,
    other: AtomicU64,
    bytes_read: AtomicU64,
}

impl Counters {
    /// Add what was counted elsewhere (a worker's reads of the same store).
    pub(super) fn add(&self, counts: &RequestCounts) {
        self.list.fetch_add(counts.list, Ordering::Relaxed);
        self.get.fetch_add(counts.get, Ordering::Relaxed);
        self.head.fetch_add(counts.head, Ordering::Relaxed);
        self.other.fetch_add(counts.other, Ordering::Relaxed);
        self.bytes_read
            .fetch_add(counts.bytes_read, Ordering::Relaxed);
    }

    pub(super) fn counts(&self) -> RequestCounts {
        RequestCounts {
            list: self.list.load(Ordering::Relaxed),
            get: self.get.load(Ordering::Relaxed),
            head: self.head.load(Ordering::Relaxed),
            other: self.other.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
        }
    }
}

/// Counts every HTTP request the store sends (retries included) by kind.
#[derive(Debug)]
pub(super) struct CountingConnector(pub(super) Arc<Counters>);

impl HttpConnector for CountingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        Ok(HttpClient::new(CountingService {
            inner: ReqwestConnector::default().connect(options)?,
            counters: self.0.clone(),
        }))
    }
}

#[derive(Debug)]
struct CountingService {
    inner: HttpClient,
    counters: Arc<Counters>,
}

#[async_trait::async_trait]
impl HttpService for CountingService {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let c = &self.counters;
        // S3 and GCS list with `list-type=2`, Azure with `comp=list`, WebDAV with PROPFIND.
        let is_list = req
            .uri()
            .query()
            .is_some_and(|q| q.contains("list-type") || q.contains("comp=list"));
        let counter = match req.method().as_str() {
            "GET" if is_list => &c.list,
            "PROPFIND" => &c.list,
            "GET" => &c.get,
            "HEAD" => &c.head,
            _ => &c.other,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let counts_bytes = req.method().as_str() == "GET" && !is_list;
        let (method, path) = (req.method().clone(), req.uri().path().to_string());
        let range = req
            .headers()
            .get("range")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let response = self.inner.execute(req).await?;
        let bytes = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        if counts_bytes && response.status().is_success() {
            c.bytes_read.fetch_add(bytes, Ordering::Relaxed);
        }
        // What a scan fetched, request by request (`--log framecull::storage=debug`); the
        // path holds the bucket and key, never a credential (those travel in headers).
        tracing::debug!(
            target: "framecull::storage",
            "{method} {path} range={} status={} bytes={bytes}",
            range.as_deref().unwrap_or("-"),
            response.status().as_u16(),
        );
        Ok(response)
    }
}
