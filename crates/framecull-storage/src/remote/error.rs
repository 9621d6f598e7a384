//! Why a request to an object store failed, in words that name the object and the cause and
//! point at the settings to check, never at a credential.

use object_store::client::{HttpError, HttpErrorKind};

/// Why a request to the object store failed. Messages name the object (or bucket) and the
/// cause; they never hold a credential.
#[derive(Debug, Clone, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum StorageError {
    #[error("not a dataset URL: {url}: {reason}")]
    Url { url: String, reason: String },
    /// The server did not answer, or answered with a server error, after retries: worth
    /// retrying later (exit status 3).
    #[error(
        "cannot reach the object store for {url}: {cause}; try again later (what was done is kept)"
    )]
    Unreachable { url: String, cause: String },
    #[error("access to {url} was refused: {cause} (check {}; see docs/STORAGE.md)", Cloud::of(url).credentials())]
    Denied { url: String, cause: String },
    #[error("{url} does not exist: {cause}")]
    NotFound { url: String, cause: String },
    #[error("cannot read {url}: {cause}")]
    Other { url: String, cause: String },
}

impl StorageError {
    /// A passing failure: the same command may succeed later.
    pub fn is_transient(&self) -> bool {
        matches!(self, StorageError::Unreachable { .. })
    }

    /// A failure that is not about one object: the scan stops instead of recording it per file.
    pub fn stops_scan(&self) -> bool {
        matches!(
            self,
            StorageError::Unreachable { .. } | StorageError::Denied { .. }
        )
    }

    /// Classify an `object_store` error about `url`.
    pub(super) fn of(url: String, e: &object_store::Error) -> StorageError {
        let raw = cause_text(e);
        let cause = concise(&raw);
        let transport = error_chain(e).any(|s| {
            s.downcast_ref::<HttpError>().is_some_and(|h| {
                matches!(
                    h.kind(),
                    HttpErrorKind::Connect
                        | HttpErrorKind::Request
                        | HttpErrorKind::Timeout
                        | HttpErrorKind::Interrupted
                )
            })
        });
        let has = |needles: &[&str]| needles.iter().any(|n| raw.contains(n));
        match e {
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => StorageError::Denied { url, cause },
            object_store::Error::NotFound { .. } => StorageError::NotFound { url, cause },
            _ if transport
                || has(&[
                    "status code: 5",
                    "status code: 429",
                    "SlowDown",
                    "error sending",
                ]) =>
            {
                StorageError::Unreachable { url, cause }
            }
            _ if has(&[
                "status code: 403",
                "status code: 401",
                "AccessDenied",
                "InvalidAccessKeyId",
                "SignatureDoesNotMatch",
                "AuthenticationFailed",
                "AuthorizationFailure",
            ]) =>
            {
                StorageError::Denied { url, cause }
            }
            _ if has(&[
                "status code: 404",
                "NoSuchBucket",
                "NoSuchKey",
                "ContainerNotFound",
                "BlobNotFound",
            ]) =>
            {
                StorageError::NotFound { url, cause }
            }
            _ => StorageError::Other { url, cause },
        }
    }
}

fn error_chain<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(e), |e| e.source())
}

/// The innermost distinct messages of an error chain, joined: `object_store` wraps the
/// server's answer several times.
pub(super) fn cause_text(e: &object_store::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for s in error_chain(e) {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.retain(|p| !text.contains(p.as_str()));
            parts.push(text);
        }
    }
    parts.last().cloned().unwrap_or_default()
}

/// A server's error answer as its status and S3 error code and message (`403 Forbidden:
/// InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records.`)
/// instead of the request and the XML body; other causes on one line.
pub(super) fn concise(raw: &str) -> String {
    let between = |open: &str, close: &str| {
        let (_, rest) = raw.split_once(open)?;
        let (value, _) = rest.split_once(close)?;
        Some(value.trim())
    };
    let status = raw
        .split_once("status code: ")
        .and_then(|(_, rest)| rest.split(':').next())
        .map(str::trim);
    match (status, between("<Code>", "</Code>")) {
        (Some(status), Some(code)) => {
            // Azure's message goes on with `RequestId:` and `Time:` lines: its first line.
            let message = between("<Message>", "</Message>")
                .and_then(|m| m.lines().next())
                .unwrap_or_default()
                .trim();
            format!("the server answered {status}: {code}: {message}")
        }
        _ => raw.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// The kind of object store a URL names, by its scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cloud {
    /// `s3://bucket/prefix`: AWS S3 or a server that speaks its API.
    S3,
    /// `az://container/prefix`: Azure Blob Storage (or Azurite).
    Azure,
    /// `gs://bucket/prefix`: Google Cloud Storage.
    Gcs,
    /// `https://host/path` (or `http://`): a web server; listing needs WebDAV (`PROPFIND`),
    /// single objects only ranged GETs.
    Http,
}

impl Cloud {
    /// The cloud of a URL (S3 for anything unknown: only the messages use this).
    pub(super) fn of(url: &str) -> Cloud {
        match url.split_once("://").map(|(scheme, _)| scheme) {
            Some("az") => Cloud::Azure,
            Some("gs") => Cloud::Gcs,
            Some("http" | "https") => Cloud::Http,
            _ => Cloud::S3,
        }
    }

    /// The settings a refused request points at.
    pub(super) fn credentials(self) -> &'static str {
        match self {
            Cloud::S3 => "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION",
            Cloud::Azure => {
                "AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY (or another Azure \
                 credential)"
            }
            Cloud::Gcs => {
                "GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT, or `gcloud auth \
                 application-default login`)"
            }
            Cloud::Http => "that the server lets this machine read the URL",
        }
    }
}
