//! One object store (an S3 or GCS bucket, an Azure container or a web server, and a prefix): listing, ranged GETs, request counters, and the
//! error that stops a scan. Blocking calls from worker threads run on one shared tokio runtime.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};

mod counting;
mod error;
pub use counting::RequestCounts;
use counting::{Counters, CountingConnector};
pub use error::StorageError;
use error::{Cloud, cause_text};

/// The runtime every object store's requests run on; worker threads block on it.
fn runtime(url: &str) -> Result<&'static tokio::runtime::Runtime, StorageError> {
    static RUNTIME: OnceLock<std::io::Result<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("framecull-storage")
                .enable_all()
                .build()
        })
        .as_ref()
        .map_err(|e| StorageError::Other {
            url: url.to_string(),
            cause: format!("cannot start the storage threads: {e}"),
        })
}

/// The size of an upload's parts ([`Remote::put_file`]); a file up to it goes in one request.
pub const PART_BYTES: usize = 16 << 20;

/// One object as a listing gave it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Key relative to the root prefix, `/`-separated.
    pub rel_path: String,
    pub size_bytes: u64,
    pub modified_ns: i64,
    pub e_tag: Option<String>,
    pub version: Option<String>,
}

/// Settings named as environment variables (`AWS_REGION`, `AZURE_STORAGE_ACCOUNT_NAME`) as a
/// builder's configuration keys; a name the builder does not know is an error about `url`.
fn config_keys<'a, K: std::str::FromStr<Err = object_store::Error>>(
    settings: impl Iterator<Item = (&'a str, &'a str)>,
    url: &str,
) -> Result<Vec<(K, &'a str)>, StorageError> {
    settings
        .map(|(name, value)| {
            let key = name
                .to_ascii_lowercase()
                .parse::<K>()
                .map_err(|e| StorageError::Url {
                    url: url.to_string(),
                    reason: format!("{name}: {e}"),
                })?;
            Ok((key, value))
        })
        .collect()
}

/// An ETag in its quoted form (`"0x8DC..."`): Azure's listing gives it bare and its HEAD
/// quoted, S3 quotes both. One form, so a listing's fingerprint equals a HEAD's.
fn quoted(e_tag: String) -> String {
    if e_tag.starts_with('"') || e_tag.starts_with("W/\"") {
        e_tag
    } else {
        format!("\"{e_tag}\"")
    }
}

/// An object store and the prefix a dataset lives under.
#[derive(Debug)]
pub struct Remote {
    /// `s3://bucket/prefix`, `gs://...`, `az://container/prefix` or `https://host/path`,
    /// without a trailing `/`.
    url: String,
    prefix: String,
    store: Arc<dyn ObjectStore>,
    counters: Arc<Counters>,
    /// The first error that stops a scan (network, permission), kept for the scan to report.
    failure: Mutex<Option<StorageError>>,
    /// The settings it was opened with ([`Remote::open_with`]), for a worker process to open
    /// the same store.
    settings: Settings,
}

/// Settings that may hold credentials: never shown.
struct Settings(Vec<(String, String)>);

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} settings", self.0.len())
    }
}

impl Remote {
    /// Parse `s3://bucket[/prefix]`, `gs://bucket[/prefix]`, `az://container[/prefix]` or
    /// `https://host[/path]` and configure the client
    /// from the environment (nothing is requested yet).
    pub fn open(url: &str) -> Result<Remote, StorageError> {
        Remote::open_with(url, &[])
    }

    /// As [`Remote::open`], with `settings` (named as the environment variables are:
    /// `AWS_ENDPOINT_URL`, `AZURE_STORAGE_ACCOUNT_NAME`, ...) taking precedence over the
    /// environment: for a process that holds its credentials itself (a test, an embedding
    /// program).
    pub fn open_with(url: &str, settings: &[(&str, &str)]) -> Result<Remote, StorageError> {
        let parts = StoreUrl::parse(url)?;
        let StoreUrl {
            scheme,
            bucket,
            prefix,
            ..
        } = parts;
        let prefix = prefix.trim_matches('/').to_string();
        let counters = Arc::new(Counters::default());
        let store = build_store(url, &parts, settings, &counters)?;
        let url = if prefix.is_empty() {
            format!("{scheme}://{bucket}")
        } else {
            format!("{scheme}://{bucket}/{prefix}")
        };
        Ok(Remote {
            url,
            prefix,
            store,
            counters,
            failure: Mutex::new(None),
            settings: Settings(
                settings
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
        })
    }

    /// The settings it was opened with, over the environment: with [`Remote::url`], what
    /// a child process (which inherits the environment) opens the same store from. They may
    /// hold credentials: for a pipe to such a process, never for a message or a file.
    pub fn settings(&self) -> &[(String, String)] {
        &self.settings.0
    }

    /// Take in what reading this store in a worker process cost and met: its requests join
    /// this store's counts, and a failure that stops a scan is this store's failure, as if
    /// met here.
    pub fn absorb(&self, counts: &RequestCounts, failure: Option<StorageError>) {
        self.counters.add(counts);
        if let Some(e) = failure {
            self.failed(e);
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL of an object under the root.
    pub fn url_of(&self, rel_path: &str) -> String {
        format!("{}/{rel_path}", self.url)
    }

    fn location(&self, rel_path: &str) -> ObjectPath {
        let key = if self.prefix.is_empty() {
            rel_path.to_string()
        } else {
            format!("{}/{rel_path}", self.prefix)
        };
        ObjectPath::parse(&key).unwrap_or_else(|_| ObjectPath::from(key))
    }

    /// Every object under the root, sorted by key, skipping hidden ones (a segment starting
    /// with `.`), as a local walk does.
    pub fn list(&self) -> Result<Vec<Listed>, StorageError> {
        let prefix = (!self.prefix.is_empty()).then(|| ObjectPath::from(self.prefix.as_str()));
        let result = runtime(&self.url)?.block_on(async {
            let mut stream = self.store.list(prefix.as_ref());
            let mut found = Vec::new();
            while let Some(meta) = stream.next().await {
                found.push(meta?);
            }
            Ok::<_, object_store::Error>(found)
        });
        let metas = result.map_err(|e| self.failed(StorageError::of(self.url.clone(), &e)))?;
        let mut listed: Vec<Listed> = metas
            .into_iter()
            .filter_map(|meta| {
                let key = meta.location.as_ref();
                let rel = if self.prefix.is_empty() {
                    key
                } else {
                    key.strip_prefix(self.prefix.as_str())?.strip_prefix('/')?
                };
                if rel.split('/').any(|part| part.starts_with('.')) {
                    return None;
                }
                Some(Listed {
                    rel_path: rel.to_string(),
                    size_bytes: meta.size,
                    modified_ns: meta.last_modified.timestamp_nanos_opt().unwrap_or(0),
                    e_tag: meta.e_tag.map(quoted),
                    version: meta.version,
                })
            })
            .collect();
        listed.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
        Ok(listed)
    }

    /// An object's size, ETag and version now (one HEAD request): what the loader checks
    /// before reading a manifest's objects.
    pub fn head(&self, rel_path: &str) -> Result<Listed, StorageError> {
        let location = self.location(rel_path);
        let meta = runtime(&self.url)?
            .block_on(self.store.head(&location))
            .map_err(|e| self.failed(StorageError::of(self.url_of(rel_path), &e)))?;
        Ok(Listed {
            rel_path: rel_path.to_string(),
            size_bytes: meta.size,
            modified_ns: meta.last_modified.timestamp_nanos_opt().unwrap_or(0),
            e_tag: meta.e_tag.map(quoted),
            version: meta.version,
        })
    }

    /// Bytes `range` of an object (fewer at its end).
    pub fn get_range(&self, rel_path: &str, range: Range<u64>) -> Result<Vec<u8>, StorageError> {
        let location = self.location(rel_path);
        runtime(&self.url)?
            .block_on(self.store.get_range(&location, range))
            .map(|bytes| bytes.to_vec())
            .map_err(|e| self.failed(StorageError::of(self.url_of(rel_path), &e)))
    }

    /// An object's bytes, whole; `Ok(None)` where there is no such object.
    pub fn get_all(&self, rel_path: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let location = self.location(rel_path);
        let got = runtime(&self.url)?.block_on(async {
            match self.store.get(&location).await {
                Ok(result) => result.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        });
        got.map(|b| b.map(|b| b.to_vec()))
            .map_err(|e| self.failed(StorageError::of(self.url_of(rel_path), &e)))
    }

    /// Write `bytes` as object `rel_path`: it appears, or is replaced, only when whole.
    pub fn put(&self, rel_path: &str, bytes: Vec<u8>) -> Result<Listed, StorageError> {
        let location = self.location(rel_path);
        let size = bytes.len() as u64;
        runtime(&self.url)?
            .block_on(self.store.put(&location, bytes.into()))
            .map(|done| self.written(rel_path, size, done))
            .map_err(|e| self.failed(StorageError::of(self.url_of(rel_path), &e)))
    }

    /// An object just written, as a listing or a HEAD gives it (its ETag in the same form).
    fn written(&self, rel_path: &str, size: u64, done: object_store::PutResult) -> Listed {
        Listed {
            rel_path: rel_path.to_string(),
            size_bytes: size,
            modified_ns: 0,
            e_tag: done.e_tag.map(quoted),
            version: done.version,
        }
    }

    /// Upload the local file `file` as object `rel_path`: in one request up to
    /// [`PART_BYTES`], else in parts of that size (a multipart upload, aborted where a part
    /// fails). Either way the object appears, or is replaced, only when whole; as a listing
    /// gives it.
    pub fn put_file(&self, rel_path: &str, file: &std::path::Path) -> Result<Listed, StorageError> {
        use std::io::Read;
        let url = self.url_of(rel_path);
        let local = |e: std::io::Error| StorageError::Other {
            url: url.clone(),
            cause: format!("{}: {e}", file.display()),
        };
        let mut reader = std::fs::File::open(file).map_err(local)?;
        let size = reader.metadata().map_err(local)?.len();
        if size <= PART_BYTES as u64 {
            let mut bytes = Vec::with_capacity(size as usize);
            reader.read_to_end(&mut bytes).map_err(local)?;
            return self.put(rel_path, bytes);
        }
        let location = self.location(rel_path);
        let failed = |e: object_store::Error| self.failed(StorageError::of(url.clone(), &e));
        let runtime = runtime(&self.url)?;
        let upload = runtime
            .block_on(self.store.put_multipart(&location))
            .map_err(failed)?;
        // The parts are sent by tasks spawned on the storage threads as they fill.
        let _inside = runtime.enter();
        let mut writer = object_store::WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut buffer = vec![0u8; PART_BYTES];
        loop {
            let n = match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    let _ = runtime.block_on(writer.abort());
                    return Err(local(e));
                }
            };
            // At most two parts in flight, each held in memory until sent.
            if let Err(e) = runtime.block_on(writer.wait_for_capacity(2)) {
                let _ = runtime.block_on(writer.abort());
                return Err(failed(e));
            }
            writer.write(&buffer[..n]);
        }
        // Every part sent, else the upload aborted (finish() would leave it open).
        if let Err(e) = runtime.block_on(writer.wait_for_capacity(0)) {
            let _ = runtime.block_on(writer.abort());
            return Err(failed(e));
        }
        let done = runtime.block_on(writer.finish()).map_err(failed)?;
        Ok(self.written(rel_path, size, done))
    }

    /// Start GETting bytes `range` of an object in the background (a read-ahead): the
    /// request runs on the storage threads while the caller goes on; [`PendingRange::wait`]
    /// takes its bytes, and dropping it cancels the request.
    pub fn spawn_range(
        self: &Arc<Self>,
        rel_path: &str,
        range: Range<u64>,
    ) -> Result<PendingRange, StorageError> {
        let runtime = runtime(&self.url)?;
        let (remote, location, url) =
            (self.clone(), self.location(rel_path), self.url_of(rel_path));
        let task = runtime.spawn(async move {
            remote
                .store
                .get_range(&location, range)
                .await
                .map(|bytes| bytes.to_vec())
                .map_err(|e| remote.failed(StorageError::of(url, &e)))
        });
        Ok(PendingRange {
            url: self.url_of(rel_path),
            task,
        })
    }

    /// Remember the first error that stops a scan; return `e`.
    fn failed(&self, e: StorageError) -> StorageError {
        if e.stops_scan()
            && let Ok(mut failure) = self.failure.lock()
            && failure.is_none()
        {
            *failure = Some(e.clone());
        }
        e
    }

    /// The first network or permission error met so far: a scan stops on it.
    pub fn failure(&self) -> Option<StorageError> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    pub fn counts(&self) -> RequestCounts {
        self.counters.counts()
    }
}

/// The parts of an object store's URL: `scheme://bucket/prefix`.
struct StoreUrl<'a> {
    scheme: &'a str,
    cloud: Cloud,
    /// The bucket, the container or the host: never empty.
    bucket: &'a str,
    /// As the URL gives it, `/` and all.
    prefix: &'a str,
}

impl<'a> StoreUrl<'a> {
    /// Split `url`; an error where its scheme is none of the stores' or it names no bucket
    /// (container, host).
    fn parse(url: &'a str) -> Result<StoreUrl<'a>, StorageError> {
        let (scheme, rest) = url.split_once("://").unwrap_or_default();
        let cloud = match scheme {
            "s3" => Cloud::S3,
            "az" => Cloud::Azure,
            "gs" => Cloud::Gcs,
            "http" | "https" => Cloud::Http,
            _ => {
                return Err(bad_url(
                    url,
                    &format!(
                        "{scheme}:// is not supported (s3://, gs://, az:// and https:// are; see \
                         docs/STORAGE.md)"
                    ),
                ));
            }
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad_url(
                url,
                match cloud {
                    Cloud::S3 => "no bucket name (s3://BUCKET/PREFIX)",
                    Cloud::Gcs => "no bucket name (gs://BUCKET/PREFIX)",
                    Cloud::Azure => "no container name (az://CONTAINER/PREFIX)",
                    Cloud::Http => "no host name (https://HOST/PATH)",
                },
            ));
        }
        Ok(StoreUrl {
            scheme,
            cloud,
            bucket,
            prefix,
        })
    }
}

/// The error about the store URL `url` that `reason` gives.
fn bad_url(url: &str, reason: &str) -> StorageError {
    StorageError::Url {
        url: url.to_string(),
        reason: reason.to_string(),
    }
}

/// The client of the store `parts` of `url` names, configured from the environment with
/// `settings` over it, retrying, its requests counted in `counters` (nothing is requested
/// yet).
fn build_store(
    url: &str,
    parts: &StoreUrl<'_>,
    settings: &[(&str, &str)],
    counters: &Arc<Counters>,
) -> Result<Arc<dyn ObjectStore>, StorageError> {
    let &StoreUrl {
        scheme,
        cloud,
        bucket,
        ..
    } = parts;
    let bad = |reason: &str| bad_url(url, reason);
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: 4,
        retry_timeout: Duration::from_secs(60),
    };
    let connector = CountingConnector(counters.clone());
    // Every builder takes `settings` as configuration keys, the retries and the counting
    // connector the same way; their types share no trait.
    macro_rules! with_settings {
        ($builder:expr, $key:ty) => {{
            let mut builder = $builder;
            for (key, value) in config_keys::<$key>(settings.iter().copied(), url)? {
                builder = builder.with_config(key, value);
            }
            builder
        }};
    }
    macro_rules! build {
        ($builder:expr) => {
            Arc::new(
                $builder
                    .with_retry(retry)
                    .with_http_connector(connector)
                    .build()
                    .map_err(|e| bad(&cause_text(&e)))?,
            )
        };
    }
    let store: Arc<dyn ObjectStore> = match cloud {
        Cloud::S3 => build!(s3_builder(url, settings)?.with_bucket_name(bucket)),
        Cloud::Azure => build!(
            with_settings!(MicrosoftAzureBuilder::from_env(), AzureConfigKey)
                .with_container_name(bucket)
        ),
        Cloud::Gcs => build!(
            with_settings!(GoogleCloudStorageBuilder::from_env(), GoogleConfigKey)
                .with_bucket_name(bucket)
        ),
        // The host is the store; the path is the prefix. `http://` was asked for by name,
        // so it is allowed. No credential is sent.
        Cloud::Http => build!(
            HttpBuilder::new()
                .with_url(format!("{scheme}://{bucket}"))
                .with_client_options(ClientOptions::new().with_allow_http(scheme == "http"))
        ),
    };
    Ok(store)
}

/// An S3 client's builder, its bucket not yet named: configured from the `AWS_` environment
/// variables, the shared config files' profile and `settings`.
fn s3_builder(url: &str, settings: &[(&str, &str)]) -> Result<AmazonS3Builder, StorageError> {
    // Under the environment, the shared config files' profile (as AWS's tools
    // read them); `settings` over both.
    let mut env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k.starts_with("AWS_"))
        .collect();
    let mut builder = AmazonS3Builder::new();
    for (name, value) in &env {
        if let Ok(key) = name.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            builder = builder.with_config(key, value);
        }
    }
    env.extend(settings.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let profile = super::aws_profile::settings(&env, home.as_deref()).map_err(|cause| {
        StorageError::Other {
            url: url.to_string(),
            cause: cause.to_string(),
        }
    })?;
    let profile = profile.iter().map(|(k, v)| (*k, v.as_str()));
    for (key, value) in
        config_keys::<AmazonS3ConfigKey>(profile.chain(settings.iter().copied()), url)?
    {
        builder = builder.with_config(key, value);
    }
    Ok(builder)
}

/// A ranged GET running in the background ([`Remote::spawn_range`]); dropped, it is
/// cancelled.
#[derive(Debug)]
pub struct PendingRange {
    url: String,
    task: tokio::task::JoinHandle<Result<Vec<u8>, StorageError>>,
}

impl PendingRange {
    /// Its bytes, once the request is answered (the caller's thread waits).
    pub fn wait(mut self) -> Result<Vec<u8>, StorageError> {
        let task = &mut self.task;
        match runtime(&self.url)?.block_on(task) {
            Ok(result) => result,
            Err(e) => Err(StorageError::Other {
                url: self.url.clone(),
                cause: format!("the read-ahead request failed: {e}"),
            }),
        }
    }
}

impl Drop for PendingRange {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An object of a remote dataset, as a listing described it (nothing fetched).
#[derive(Debug, Clone)]
pub struct Object {
    pub remote: Arc<Remote>,
    pub rel_path: String,
    pub size_bytes: u64,
}

impl Object {
    pub fn url(&self) -> String {
        self.remote.url_of(&self.rel_path)
    }
}

#[cfg(test)]
mod tests {
    use super::error::concise;
    use super::*;

    #[test]
    fn server_answers_read_as_one_line_with_status_code_and_message() {
        let s3 = "Client error with status code: 403 Forbidden: <?xml version=\"1.0\"?>\
                  <Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you \
                  provided does not exist in our records.</Message></Error>";
        assert_eq!(
            concise(s3),
            "the server answered 403 Forbidden: InvalidAccessKeyId: The AWS Access Key Id you \
             provided does not exist in our records."
        );
        let azure = "Client error with status code: 403 Forbidden: <?xml version=\"1.0\"?>\
                     <Error><Code>AuthorizationFailure</Code><Message>Server failed to \
                     authenticate the request.\nRequestId:9f54\nTime:2026-12-02T05:35:41Z\
                     </Message></Error>";
        assert_eq!(
            concise(azure),
            "the server answered 403 Forbidden: AuthorizationFailure: Server failed to \
             authenticate the request."
        );
        assert_eq!(concise("connection\n  refused"), "connection refused");
    }

    #[test]
    fn etags_are_kept_quoted_whichever_form_the_server_gives() {
        assert_eq!(quoted("0x8DC1".into()), "\"0x8DC1\"");
        assert_eq!(quoted("\"0x8DC1\"".into()), "\"0x8DC1\"");
        assert_eq!(quoted("W/\"abc\"".into()), "W/\"abc\"");
    }

    #[test]
    fn urls_name_a_cloud_and_a_bucket_or_container() {
        let remote = Remote::open_with(
            "az://datasets/a/b/",
            &[
                ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
                ("AZURE_STORAGE_ACCOUNT_KEY", "a2V5"),
            ],
        )
        .unwrap();
        assert_eq!(remote.url(), "az://datasets/a/b");
        assert_eq!(remote.url_of("c.mp4"), "az://datasets/a/b/c.mp4");
        let remote = Remote::open_with("s3://bucket", &[("AWS_REGION", "us-east-1")]).unwrap();
        assert_eq!(remote.url(), "s3://bucket");
        // The host is the store, the path the prefix; the scheme stays as written.
        let remote = Remote::open("http://127.0.0.1:8080/data/set/").unwrap();
        assert_eq!(remote.url(), "http://127.0.0.1:8080/data/set");
        assert_eq!(remote.location("a b.mp4").as_ref(), "data/set/a b.mp4");
        for (url, reason) in [
            ("ftp://host/x", "ftp:// is not supported"),
            ("gs:///x", "no bucket name (gs://"),
            ("https:///x", "no host name"),
            ("az:///x", "no container name"),
            ("s3://", "no bucket name"),
        ] {
            let e = Remote::open_with(url, &[]).unwrap_err().to_string();
            assert!(e.contains(reason), "{url}: {e}");
        }
        let denied = StorageError::Denied {
            url: "az://c/p".into(),
            cause: "403".into(),
        };
        assert!(denied.to_string().contains("AZURE_STORAGE_ACCOUNT_KEY"));
        let denied = StorageError::Denied {
            url: "s3://b/p".into(),
            cause: "403".into(),
        };
        assert!(denied.to_string().contains("AWS_ACCESS_KEY_ID"));
    }
}
