//! Objects in object storage — S3 and S3-compatible services (R2, MinIO, ...), Google Cloud
//! Storage, Azure Blob Storage, or a local directory — through the `object_store` crate.
//!
//! Layout: `PREFIX/p/HH/HASH` for pages and `PREFIX/n/HH/HASH` for nodes (`HASH` the BLAKE3
//! hash in hex, `HH` its first two digits, which spreads a local directory's entries).
//!
//! - **Put overwrites.** An object's key is its content's hash, so writing it again writes
//!   the same bytes; and the write refreshes its Last-Modified time, which is what GC's grace
//!   period is measured from (the [`ObjectStore`] contract's "refreshes its write time").
//!   A conditional put (`If-None-Match: *`) would leave an old object's time alone, so a
//!   commit that reuses the bytes of a garbage object would not protect it; it is not used.
//! - **Deletes cannot re-check the write time** (object storage has no
//!   `DELETE ... WHERE created < $cutoff`), so GC and commits coordinate through the sweep
//!   fence in the catalog ([`ObjectStore::needs_sweep_fence`], described in `gc`).
//! - **Reads are verified**: an object whose bytes do not hash to its key is an error, not
//!   data.
//! - Puts and gets of a batch run concurrently (up to [`CONCURRENCY`] requests); every
//!   request is retried a bounded number of times (`retry`) with exponential backoff.
//! - Credentials come from each cloud's usual environment variables (`AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `GOOGLE_SERVICE_ACCOUNT`,
//!   `AZURE_STORAGE_ACCOUNT_KEY`, ...), never from the URL, which the catalog records.
//!
//! The client is async (reqwest/hyper); it runs on a small runtime of this backend's own, so
//! the store's synchronous API can be called from any thread, inside an async runtime or not.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore as Remote, PutPayload, RetryConfig};

use super::{NewObject, ObjectKind, ObjectStore};
use crate::error::{Error, Result};
use crate::node::Hash;

/// Requests in flight at once for one batch.
pub const CONCURRENCY: usize = 32;

/// Objects in object storage.
pub struct ObjectStorage {
    /// Always present until drop.
    runtime: Option<tokio::runtime::Runtime>,
    remote: Arc<dyn Remote>,
    prefix: Path,
    location: String,
}

/// The retry policy of every request: a few tries within 30 s, then the error.
fn retry() -> RetryConfig {
    RetryConfig {
        max_retries: 4,
        retry_timeout: Duration::from_secs(30),
        ..RetryConfig::default()
    }
}

fn client_options() -> ClientOptions {
    ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(60))
}

fn remote_err(e: object_store::Error) -> Error {
    Error::Server(format!("object storage: {e}"))
}

fn bad(msg: String) -> Error {
    Error::Config(msg)
}

/// Query parameters that would put a credential into the URL the catalog records.
fn is_credential(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "secret",
        "access_key",
        "token",
        "password",
        "sas",
        "service_account_key",
    ]
    .iter()
    .any(|c| k.contains(c))
}

/// Applies `options` to a builder through `set`, each key parsed as the cloud's config key:
/// an option the cloud does not know is an error, never ignored.
fn configure<B, K: std::str::FromStr>(
    mut b: B,
    options: &[(String, String)],
    cloud: &str,
    url: &str,
    set: impl Fn(B, K, &str) -> B,
) -> Result<B> {
    for (k, v) in options {
        let key: K = k
            .parse()
            .map_err(|_| bad(format!("unknown {cloud} option '{k}' in {url}")))?;
        b = set(b, key, v);
    }
    Ok(b)
}

/// Whether `s` names object storage that [`ObjectStorage::open`] understands.
pub fn is_object_storage_url(s: &str) -> bool {
    ["s3://", "gs://", "az://", "azure://", "file://"]
        .iter()
        .any(|p| s.starts_with(p))
}

impl ObjectStorage {
    /// Opens object storage at `url`:
    /// - `s3://BUCKET/PREFIX?endpoint=URL&region=R` (any `object_store` S3 option by its
    ///   name: `virtual_hosted_style_request`, `skip_signature`, ...; an `http://` endpoint
    ///   allows plain HTTP);
    /// - `gs://BUCKET/PREFIX`;
    /// - `az://CONTAINER/PREFIX?account=NAME` (or `azure://`);
    /// - `file:///DIR` (created if missing).
    ///
    /// An option the backend does not know, or a credential in the URL, is an error.
    /// `extra` are more options by the same names, credentials allowed (an embedder's
    /// secrets): they are used, never recorded.
    pub fn open(url: &str, extra: &[(String, String)]) -> Result<ObjectStorage> {
        let parsed =
            url::Url::parse(url).map_err(|e| bad(format!("bad object storage URL {url}: {e}")))?;
        let mut options: Vec<(String, String)> = Vec::new();
        for (k, v) in parsed.query_pairs() {
            if is_credential(&k) {
                return Err(bad(format!(
                    "{k} in an object storage URL: credentials belong in the environment \
                     (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, GOOGLE_SERVICE_ACCOUNT, \
                     AZURE_STORAGE_ACCOUNT_KEY, ...), not in the URL the store records"
                )));
            }
            options.push((k.into_owned(), v.into_owned()));
        }
        options.extend(extra.iter().cloned());
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad(
                "credentials belong in the environment, not in the object storage URL".into(),
            ));
        }
        let bucket = parsed.host_str().unwrap_or("").to_string();
        let prefix = Path::from(parsed.path().trim_matches('/'));
        let remote: Arc<dyn Remote> = match parsed.scheme() {
            "s3" => {
                use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
                let mut b = AmazonS3Builder::from_env()
                    .with_bucket_name(&bucket)
                    .with_retry(retry())
                    .with_client_options(client_options());
                if options
                    .iter()
                    .any(|(k, v)| k == "endpoint" && v.starts_with("http://"))
                {
                    b = b.with_allow_http(true);
                }
                let b = configure(b, &options, "S3", url, |b, k: AmazonS3ConfigKey, v| {
                    b.with_config(k, v)
                })?;
                Arc::new(b.build().map_err(remote_err)?)
            }
            "gs" => {
                use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
                let b = GoogleCloudStorageBuilder::from_env()
                    .with_bucket_name(&bucket)
                    .with_retry(retry())
                    .with_client_options(client_options());
                let b = configure(b, &options, "GCS", url, |b, k: GoogleConfigKey, v| {
                    b.with_config(k, v)
                })?;
                Arc::new(b.build().map_err(remote_err)?)
            }
            "az" | "azure" => {
                use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
                let b = MicrosoftAzureBuilder::from_env()
                    .with_container_name(&bucket)
                    .with_retry(retry())
                    .with_client_options(client_options());
                let b = configure(b, &options, "Azure", url, |b, k: AzureConfigKey, v| {
                    b.with_config(k, v)
                })?;
                Arc::new(b.build().map_err(remote_err)?)
            }
            "file" => {
                if !options.is_empty() || !bucket.is_empty() {
                    return Err(bad(format!(
                        "a local object directory is file:///ABSOLUTE/DIR, without options: {url}"
                    )));
                }
                let dir = parsed
                    .to_file_path()
                    .map_err(|_| bad(format!("not a local directory: {url}")))?;
                std::fs::create_dir_all(&dir)?;
                let fs = object_store::local::LocalFileSystem::new_with_prefix(&dir)
                    .map_err(remote_err)?;
                return Self::with_remote(Arc::new(fs), Path::default(), url);
            }
            other => {
                return Err(bad(format!(
                    "unknown object storage scheme '{other}:' (s3://, gs://, az://, file://)"
                )));
            }
        };
        Self::with_remote(remote, prefix, url)
    }

    fn with_remote(remote: Arc<dyn Remote>, prefix: Path, url: &str) -> Result<ObjectStorage> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("burrow-objects")
            .enable_all()
            .build()?;
        Ok(ObjectStorage {
            runtime: Some(runtime),
            remote,
            prefix,
            location: url.to_string(),
        })
    }

    /// Runs `f` on the backend's runtime and waits for it from this thread.
    fn run<T: Send + 'static>(
        &self,
        f: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let rt = match &self.runtime {
            Some(rt) => rt.handle(),
            None => unreachable!("the runtime is only taken by drop"),
        };
        match futures::executor::block_on(rt.spawn(f)) {
            Ok(r) => r,
            Err(e) => Err(Error::Server(format!("object storage task: {e}"))),
        }
    }

    fn key(&self, hash: &Hash, kind: ObjectKind) -> Path {
        let hex = hash.to_hex();
        let k = match kind {
            ObjectKind::Page => "p",
            ObjectKind::Node => "n",
        };
        self.prefix.child(k).child(&hex[..2]).child(hex.as_str())
    }

    /// The hash and kind a listed key names, if it is one of ours.
    fn parse_key(&self, key: &Path) -> Option<(Hash, ObjectKind)> {
        let mut parts: Vec<_> = key.prefix_match(&self.prefix)?.collect();
        if parts.len() != 3 {
            return None;
        }
        let hex = parts.pop()?;
        parts.pop()?;
        let kind = match parts.pop()?.as_ref() {
            "p" => ObjectKind::Page,
            "n" => ObjectKind::Node,
            _ => return None,
        };
        Some((Hash::from_hex(hex.as_ref())?, kind))
    }

    /// Every object of ours with its size and Last-Modified time (nanoseconds).
    fn list_all(&self) -> Result<Vec<(Hash, ObjectKind, u64, i64)>> {
        let remote = self.remote.clone();
        let prefix = self.prefix.clone();
        let metas = self.run(async move {
            remote
                .list(Some(&prefix))
                .try_collect::<Vec<_>>()
                .await
                .map_err(remote_err)
        })?;
        Ok(metas
            .into_iter()
            .filter_map(|m| {
                let (h, k) = self.parse_key(&m.location)?;
                let t = m.last_modified.timestamp_nanos_opt().unwrap_or(i64::MAX);
                Some((h, k, m.size, t))
            })
            .collect())
    }
}

impl Drop for ObjectStorage {
    fn drop(&mut self) {
        // Dropping a runtime waits for its tasks, which is not allowed inside an async
        // context (where a server may drop its store): let them go in the background.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Fetches and verifies one object.
async fn fetch(remote: Arc<dyn Remote>, key: Path, hash: Hash) -> Result<Option<Vec<u8>>> {
    let got = match remote.get(&key).await {
        Ok(g) => g,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(remote_err(e)),
    };
    let bytes = got.bytes().await.map_err(remote_err)?;
    if Hash::of(&bytes) != hash {
        return Err(Error::Corrupt(format!(
            "object {key} does not match its hash"
        )));
    }
    Ok(Some(bytes.to_vec()))
}

impl ObjectStore for ObjectStorage {
    fn put_many(&self, objects: &[NewObject<'_>]) -> Result<()> {
        if objects.is_empty() {
            return Ok(());
        }
        let jobs: Vec<(Path, PutPayload)> = objects
            .iter()
            .map(|o| (self.key(&o.hash, o.kind), PutPayload::from(o.data.to_vec())))
            .collect();
        let remote = self.remote.clone();
        self.run(async move {
            futures::stream::iter(jobs)
                .map(|(key, data)| {
                    let remote = remote.clone();
                    async move { remote.put(&key, data).await.map_err(remote_err) }
                })
                .buffer_unordered(CONCURRENCY)
                .try_for_each(|_| async { Ok(()) })
                .await
        })
    }

    fn get(&self, hash: &Hash, kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        let (remote, key, hash) = (self.remote.clone(), self.key(hash, kind), *hash);
        self.run(fetch(remote, key, hash))
    }

    fn get_many(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        let jobs: Vec<(Path, Hash)> = hashes.iter().map(|h| (self.key(h, kind), *h)).collect();
        let remote = self.remote.clone();
        self.run(async move {
            let found: Vec<Option<(Hash, Vec<u8>)>> = futures::stream::iter(jobs)
                .map(|(key, hash)| {
                    let remote = remote.clone();
                    async move { Ok::<_, Error>(fetch(remote, key, hash).await?.map(|d| (hash, d))) }
                })
                .buffer_unordered(CONCURRENCY)
                .try_collect()
                .await?;
            Ok(found.into_iter().flatten().collect())
        })
    }

    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>> {
        let keys: Vec<Path> = objects.iter().map(|(h, k)| self.key(h, *k)).collect();
        let remote = self.remote.clone();
        self.run(async move {
            futures::stream::iter(keys)
                .map(|key| {
                    let remote = remote.clone();
                    async move {
                        match remote.head(&key).await {
                            Ok(_) => Ok(true),
                            Err(object_store::Error::NotFound { .. }) => Ok(false),
                            Err(e) => Err(remote_err(e)),
                        }
                    }
                })
                // In order: the answer lines up with the question.
                .buffered(CONCURRENCY)
                .try_collect()
                .await
        })
    }

    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)> {
        let started = std::time::Instant::now();
        let doomed: Vec<(Path, u64)> = self
            .list_all()?
            .into_iter()
            .filter(|(h, _, _, t)| *t < written_before && !referenced(h))
            .map(|(h, k, size, _)| (self.key(&h, k), size))
            .collect();
        let (mut objects, mut bytes) = (0u64, 0u64);
        for chunk in doomed.chunks(1000) {
            // What is left after the sweep's time is up waits for the next run: the fence
            // in the catalog expires soon after.
            if started.elapsed() > crate::gc::SWEEP_LIMIT {
                tracing::warn!("gc sweep stopped at its time limit; run gc again");
                break;
            }
            let sizes: HashMap<Path, u64> = chunk.iter().cloned().collect();
            let remote = self.remote.clone();
            let keys: Vec<Path> = chunk.iter().map(|(k, _)| k.clone()).collect();
            let deleted = self.run(async move {
                let input = futures::stream::iter(keys.into_iter().map(Ok)).boxed();
                let mut out = Vec::new();
                let mut results = remote.delete_stream(input);
                while let Some(r) = results.next().await {
                    match r {
                        Ok(p) => out.push(p),
                        Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(remote_err(e)),
                    }
                }
                Ok(out)
            })?;
            for p in deleted {
                objects += 1;
                bytes += sizes.get(&p).copied().unwrap_or(0);
            }
        }
        Ok((objects, bytes))
    }

    fn totals(&self) -> Result<(u64, u64, u64)> {
        let (mut n, mut pages, mut nodes) = (0, 0, 0);
        for (_, kind, size, _) in self.list_all()? {
            n += 1;
            match kind {
                ObjectKind::Page => pages += size,
                ObjectKind::Node => nodes += size,
            }
        }
        Ok((n, pages, nodes))
    }

    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        Ok(self
            .list_all()?
            .into_iter()
            .map(|(h, k, _, _)| (h, k))
            .collect())
    }

    fn needs_sweep_fence(&self) -> bool {
        true
    }

    fn location(&self) -> Option<String> {
        Some(self.location.clone())
    }
}
