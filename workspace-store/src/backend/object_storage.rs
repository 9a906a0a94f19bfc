//! Objects in object storage — S3 and S3-compatible services (R2, MinIO, ...), Google Cloud
//! Storage, Azure Blob Storage, or a local directory — through the `object_store` crate.
//!
//! Layout: `PREFIX/p/HH/HASH` for pages and `PREFIX/n/HH/HASH` for nodes (`HASH` the BLAKE3
//! hash in hex, `HH` its first two digits, which spreads a local directory's entries), and
//! `PREFIX/k/HH/HASH` for packs.
//!
//! - **Packs.** A put of many objects (an import, a `git clone`, a large spill) concatenates
//!   them into packs of up to [`PACK_BYTES`], named by the hash of their bytes, and records
//!   where each object is in the catalog's [`PackIndex`]: ten thousand small files are
//!   about eighty PUTs instead of twenty thousand, which is what object storage charges and
//!   throttles by. Reads look an object up in the index first and fetch its byte range
//!   (ranges of one pack are coalesced into one request); a put of a few objects (a typical
//!   tool call) stays loose, one object per key, with no index round trip. Packing needs a
//!   catalog that keeps the index (PostgreSQL); over an SQLite catalog every object is loose.
//!   GC forgets the index entries of unreferenced objects, deletes packs nothing points into
//!   and rewrites packs less than half live ([`PackIndex`], `delete_unreferenced`).
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

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore as Remote, PutPayload, RetryConfig};

use super::{
    NewObject, ObjectKind, ObjectStore, PACKED_PAGE, PackIndex, PackedObject, PutJob, PutTicket,
    for_each_packed,
};
use crate::error::{Error, Result};
use crate::node::Hash;

/// Requests in flight at once for one batch.
pub const CONCURRENCY: usize = 32;

/// A put of at least this many objects is packed (with an index to record it in); a
/// smaller one puts each object under its own key.
pub const PACK_MIN_OBJECTS: usize = 16;

/// A pack's size at most.
pub const PACK_BYTES: usize = 8 << 20;

/// Objects in object storage.
pub struct ObjectStorage {
    /// Always present until drop.
    runtime: Option<tokio::runtime::Runtime>,
    remote: Client,
    prefix: Path,
    location: String,
    /// Where packed objects are; `None`: every object is loose.
    index: Option<Arc<dyn PackIndex>>,
    behind: Arc<Behind>,
    /// The lease of a sweep this process's GC runs ([`ObjectStore::set_sweep_lease`]).
    lease: std::sync::Mutex<Option<std::time::Instant>>,
}

/// The object storage client, built on a thread of its own. Building one loads the
/// system's TLS roots (every file under /etc/ssl/certs: about 5 ms), which a fresh process
/// does while it connects to its catalog instead of before; the first request waits for it.
struct Client {
    built: std::sync::OnceLock<std::result::Result<Arc<dyn Remote>, String>>,
    building: Mutex<Option<Building>>,
}

/// What a failed build says, kept to be said again to every caller ([`Client::get`] makes
/// it an [`Error::Server`] once more).
fn message(e: Error) -> String {
    match e {
        Error::Server(m) => m,
        e => e.to_string(),
    }
}

/// The thread building a [`Client`].
type Building = std::thread::JoinHandle<Result<Arc<dyn Remote>>>;

impl Client {
    fn ready(remote: Arc<dyn Remote>) -> Client {
        Client {
            built: std::sync::OnceLock::from(Ok(remote)),
            building: Mutex::new(None),
        }
    }

    fn building(build: impl FnOnce() -> Result<Arc<dyn Remote>> + Send + 'static) -> Client {
        let build = Arc::new(Mutex::new(Some(build)));
        let take = |b: &Mutex<Option<_>>| b.lock().unwrap_or_else(|e| e.into_inner()).take();
        let theirs = build.clone();
        let spawned = std::thread::Builder::new()
            .name("burrow-objects-client".into())
            .spawn(move || match take(&theirs) {
                Some(b) => b(),
                None => Err(Error::Server("object storage: client built twice".into())),
            });
        match spawned {
            Ok(h) => Client {
                built: std::sync::OnceLock::new(),
                building: Mutex::new(Some(h)),
            },
            // No thread to spare: built here.
            Err(_) => Client {
                built: std::sync::OnceLock::from(match take(&build) {
                    Some(b) => b().map_err(message),
                    None => Err("object storage: client built twice".into()),
                }),
                building: Mutex::new(None),
            },
        }
    }

    fn get(&self) -> Result<Arc<dyn Remote>> {
        let built = self.built.get_or_init(|| {
            let handle = self
                .building
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            match handle.map(|h| h.join()) {
                Some(Ok(built)) => built.map_err(message),
                Some(Err(_)) => Err("object storage: building the client panicked".into()),
                None => Err("object storage: the client was not built".into()),
            }
        });
        built.clone().map_err(Error::Server)
    }
}

/// Packed puts at most under way at once behind their callers' backs (each up to a spill,
/// 8 MiB of pages).
const BEHIND_MAX: usize = 2;

/// Packed puts still uploading ([`ObjectStore::put_many_behind`]), and their objects, so
/// that reads find them meanwhile.
#[derive(Default)]
struct Behind {
    objects: Mutex<HashMap<Hash, Held>>,
    /// Jobs under way; `room` is signalled when one ends.
    running: Mutex<usize>,
    room: Condvar,
    next: AtomicU64,
}

impl Behind {
    fn get(&self, hash: &Hash) -> Option<Vec<u8>> {
        let objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        objects.get(hash).map(|(_, b, r)| b[r.clone()].to_vec())
    }

    fn forget(&self, job: u64) {
        let mut objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        objects.retain(|_, (j, _, _)| *j != job);
    }
}

/// An object of a put behind: its job, its pack's bytes and where it is in them.
type Held = (u64, bytes::Bytes, std::ops::Range<usize>);

/// One put behind: its outcome once ended.
struct Job {
    id: u64,
    behind: Arc<Behind>,
    outcome: Mutex<Option<Result<()>>>,
    ended: Condvar,
}

impl PutJob for Job {
    fn wait(&self) -> Result<()> {
        let mut outcome = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(r) = outcome.take() {
                // Taken once: a second wait has nothing more to say.
                *outcome = Some(Ok(()));
                return r;
            }
            outcome = self.ended.wait(outcome).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // A failed put's objects stay readable until nobody can ask for them.
        self.behind.forget(self.id);
    }
}

/// Objects read: each hash with its bytes.
type Fetched = Vec<(Hash, Vec<u8>)>;

/// What a key in object storage is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    /// One object under its own key.
    Object(Hash, ObjectKind),
    /// A pack, by name.
    Pack(String),
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
        let remote = match parsed.scheme() {
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
                Client::building(move || Ok(Arc::new(b.build().map_err(remote_err)?)))
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
                Client::building(move || Ok(Arc::new(b.build().map_err(remote_err)?)))
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
                Client::building(move || Ok(Arc::new(b.build().map_err(remote_err)?)))
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
                return Self::with_remote(Client::ready(Arc::new(fs)), Path::default(), url);
            }
            other => {
                return Err(bad(format!(
                    "unknown object storage scheme '{other}:' (s3://, gs://, az://, file://)"
                )));
            }
        };
        Self::with_remote(remote, prefix, url)
    }

    fn with_remote(remote: Client, prefix: Path, url: &str) -> Result<ObjectStorage> {
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
            index: None,
            behind: Arc::default(),
            lease: std::sync::Mutex::new(None),
        })
    }

    /// Waits until the client is built, so that a URL that cannot work fails now (before a
    /// store records it) rather than at the first request.
    pub fn checked(self) -> Result<ObjectStorage> {
        self.remote.get()?;
        Ok(self)
    }

    /// Packs puts of many objects, recording where each is in `index` (see the module
    /// doc). Every process that opens the store must be given the same index.
    pub fn with_index(mut self, index: Arc<dyn PackIndex>) -> ObjectStorage {
        self.index = Some(index);
        self
    }

    /// Runs `f` on the backend's runtime and waits for it from this thread.
    fn run<T: Send + 'static>(
        &self,
        f: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        run_on(&self.handle(), f)
    }

    fn key(&self, hash: &Hash, kind: ObjectKind) -> Path {
        let hex = hash.to_hex();
        let k = match kind {
            ObjectKind::Page => "p",
            ObjectKind::Node => "n",
        };
        self.prefix.child(k).child(&hex[..2]).child(hex.as_str())
    }

    fn pack_key(&self, name: &str) -> Path {
        self.prefix.child("k").child(&name[..2]).child(name)
    }

    /// What a listed key is, if it is one of ours.
    fn parse_key(&self, key: &Path) -> Option<Key> {
        let mut parts: Vec<_> = key.prefix_match(&self.prefix)?.collect();
        if parts.len() != 3 {
            return None;
        }
        let hex = parts.pop()?;
        parts.pop()?;
        let hash = Hash::from_hex(hex.as_ref())?;
        Some(match parts.pop()?.as_ref() {
            "p" => Key::Object(hash, ObjectKind::Page),
            "n" => Key::Object(hash, ObjectKind::Node),
            "k" => Key::Pack(hex.as_ref().to_string()),
            _ => return None,
        })
    }

    /// Every key of ours with its size and Last-Modified time (nanoseconds).
    fn list_all(&self) -> Result<Vec<(Key, u64, i64)>> {
        let remote = self.remote.get()?;
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
                let key = self.parse_key(&m.location)?;
                let t = m.last_modified.timestamp_nanos_opt().unwrap_or(i64::MAX);
                Some((key, m.size, t))
            })
            .collect())
    }

    /// Puts each object under its own key.
    fn put_loose(&self, objects: &[NewObject<'_>]) -> Result<()> {
        let jobs: Vec<(Path, PutPayload)> = objects
            .iter()
            .map(|o| (self.key(&o.hash, o.kind), PutPayload::from(o.data.to_vec())))
            .collect();
        self.upload(jobs)
    }

    /// Puts every `(key, bytes)`, [`CONCURRENCY`] at a time.
    fn upload(&self, jobs: Vec<(Path, PutPayload)>) -> Result<()> {
        self.run(put_all(self.remote.get()?, jobs))
    }

    /// Cuts `objects` into packs: each pack's key and bytes, and every object's entry.
    fn pack(&self, objects: &[NewObject<'_>]) -> (Vec<(Path, bytes::Bytes)>, Vec<PackedObject>) {
        let mut seen = HashSet::new();
        let mut packs: Vec<(Vec<u8>, Vec<PackedObject>)> = Vec::new();
        let mut bytes: Vec<u8> = Vec::new();
        let mut entries: Vec<PackedObject> = Vec::new();
        for o in objects {
            if !seen.insert(o.hash) {
                continue;
            }
            if !bytes.is_empty() && bytes.len() + o.data.len() > PACK_BYTES {
                packs.push((std::mem::take(&mut bytes), std::mem::take(&mut entries)));
            }
            entries.push(PackedObject {
                hash: o.hash,
                kind: o.kind,
                pack: String::new(),
                offset: bytes.len() as u64,
                len: o.data.len() as u32,
                created: 0,
            });
            bytes.extend_from_slice(o.data);
        }
        if !entries.is_empty() {
            packs.push((bytes, entries));
        }
        let mut records = Vec::with_capacity(seen.len());
        let mut jobs = Vec::with_capacity(packs.len());
        for (bytes, entries) in packs {
            let name = Hash::of(&bytes).to_hex();
            records.extend(entries.into_iter().map(|mut e| {
                e.pack = name.clone();
                e
            }));
            jobs.push((self.pack_key(&name), bytes::Bytes::from(bytes)));
        }
        (jobs, records)
    }

    /// Puts `objects` in packs and records them in `index`; returns the packs' names.
    fn put_packed(&self, index: &dyn PackIndex, objects: &[NewObject<'_>]) -> Result<Vec<String>> {
        let (jobs, records) = self.pack(objects);
        let names = records
            .iter()
            .map(|e| e.pack.clone())
            .collect::<HashSet<_>>();
        upload_and_record(self.handle(), self.remote.get()?, jobs, index, &records)?;
        Ok(names.into_iter().collect())
    }

    fn handle(&self) -> tokio::runtime::Handle {
        match &self.runtime {
            Some(rt) => rt.handle().clone(),
            None => unreachable!("the runtime is only taken by drop"),
        }
    }

    /// Fetches and verifies the objects `located` names, a request per pack (its ranges
    /// coalesced); returns them, and whether a pack was missing (GC rewrote or deleted it
    /// since the lookup: the caller looks again).
    fn fetch_packed(&self, located: Vec<PackedObject>) -> Result<(Fetched, bool)> {
        let mut by_pack: HashMap<String, Vec<PackedObject>> = HashMap::new();
        for e in located {
            by_pack.entry(e.pack.clone()).or_default().push(e);
        }
        let jobs: Vec<(Path, Vec<PackedObject>)> = by_pack
            .into_iter()
            .map(|(name, entries)| (self.pack_key(&name), entries))
            .collect();
        let remote = self.remote.get()?;
        let fetched: Vec<Option<Fetched>> = self.run(async move {
            futures::stream::iter(jobs)
                .map(|(key, entries)| {
                    let remote = remote.clone();
                    async move {
                        // An empty object needs no request (and an empty range is an error).
                        let (empty, entries): (Vec<_>, Vec<_>) =
                            entries.into_iter().partition(|e| e.len == 0);
                        let ranges: Vec<std::ops::Range<u64>> = entries
                            .iter()
                            .map(|e| e.offset..e.offset + e.len as u64)
                            .collect();
                        let got = if ranges.is_empty() {
                            Vec::new()
                        } else {
                            match remote.get_ranges(&key, &ranges).await {
                                Ok(g) => g,
                                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                                Err(e) => return Err(remote_err(e)),
                            }
                        };
                        let mut out = Vec::with_capacity(entries.len() + empty.len());
                        let none = bytes::Bytes::new();
                        let all = entries
                            .iter()
                            .zip(got)
                            .chain(empty.iter().map(|e| (e, none.clone())));
                        for (e, bytes) in all {
                            if Hash::of(&bytes) != e.hash {
                                return Err(Error::Corrupt(format!(
                                    "object {} in pack {key} does not match its hash",
                                    e.hash.to_hex()
                                )));
                            }
                            out.push((e.hash, bytes.to_vec()));
                        }
                        Ok(Some(out))
                    }
                })
                .buffer_unordered(CONCURRENCY)
                .try_collect()
                .await
        })?;
        let gone = fetched.iter().any(|f| f.is_none());
        Ok((fetched.into_iter().flatten().flatten().collect(), gone))
    }

    /// Fetches loose objects (absent ones are left out).
    fn get_loose(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        if hashes.is_empty() {
            return Ok(Vec::new());
        }
        let jobs: Vec<(Path, Hash)> = hashes.iter().map(|h| (self.key(h, kind), *h)).collect();
        let remote = self.remote.get()?;
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

    /// Whether each key exists, in order.
    fn exist(&self, keys: Vec<Path>) -> Result<Vec<bool>> {
        let remote = self.remote.get()?;
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

    /// Whether a sweep that began at `started` must stop deleting: at
    /// [`crate::gc::SWEEP_LIMIT`], or [`crate::gc::LEASE_MARGIN`] before its announcement in
    /// the catalog may expire (GC could not renew it: the catalog is unreachable).
    fn sweep_time_up(&self, started: std::time::Instant) -> bool {
        let lease = *self.lease.lock().unwrap_or_else(|p| p.into_inner());
        started.elapsed() > crate::gc::SWEEP_LIMIT
            || lease
                .is_some_and(|until| std::time::Instant::now() + crate::gc::LEASE_MARGIN >= until)
    }

    /// Deletes `keys` (with their sizes) until [`ObjectStorage::sweep_time_up`];
    /// returns the sizes of those deleted.
    fn delete_keys(&self, keys: Vec<(Path, u64)>, started: std::time::Instant) -> Result<Vec<u64>> {
        let mut out = Vec::new();
        for chunk in keys.chunks(1000) {
            // What is left after the sweep's time is up waits for the next run: the fence
            // in the catalog expires soon after.
            if self.sweep_time_up(started) {
                tracing::warn!("gc sweep stopped at its time limit; run gc again");
                break;
            }
            let sizes: HashMap<Path, u64> = chunk.iter().cloned().collect();
            let remote = self.remote.get()?;
            let paths: Vec<Path> = chunk.iter().map(|(k, _)| k.clone()).collect();
            let deleted = self.run(async move {
                let input = futures::stream::iter(paths.into_iter().map(Ok)).boxed();
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
            out.extend(deleted.iter().map(|p| sizes.get(p).copied().unwrap_or(0)));
        }
        Ok(out)
    }

    /// GC of packed objects: forgets the entries of unreferenced ones, deletes packs nothing
    /// points into, and rewrites packs less than half live into new ones. Returns the
    /// objects and bytes forgotten.
    fn sweep_packs(
        &self,
        index: &dyn PackIndex,
        listing: &[(Key, u64, i64)],
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
        started: std::time::Instant,
    ) -> Result<(u64, u64)> {
        // The index a page at a time (it may hold millions of entries): first forget the
        // entries of unreferenced objects, then sum what each pack still holds, then, for
        // the packs less than half live, gather their entries.
        let mut swept = (0u64, 0u64);
        for_each_packed(index, PACKED_PAGE, |page| {
            let doomed: Vec<Hash> = page
                .iter()
                .filter(|e| e.created < written_before && !referenced(&e.hash))
                .map(|e| e.hash)
                .collect();
            if !doomed.is_empty() {
                let forgotten = index.forget_packed(&doomed, written_before)?;
                swept.0 += forgotten.len() as u64;
                swept.1 += forgotten.iter().map(|l| *l as u64).sum::<u64>();
            }
            Ok(())
        })?;
        let mut held: HashMap<String, u64> = HashMap::new();
        for_each_packed(index, PACKED_PAGE, |page| {
            for e in page {
                *held.entry(e.pack.clone()).or_default() += e.len as u64;
            }
            Ok(())
        })?;
        let (mut empty, mut sparse) = (Vec::new(), Vec::new());
        for (key, size, t) in listing {
            let Key::Pack(name) = key else { continue };
            // A pack written since the cutoff may be a put whose entries are not recorded
            // yet.
            if *t >= written_before {
                continue;
            }
            match held.get(name) {
                None => empty.push((self.pack_key(name), *size)),
                Some(bytes) if bytes * 2 < *size => sparse.push(name.clone()),
                Some(_) => {}
            }
        }
        drop(held);
        let mut live: HashMap<String, Vec<PackedObject>> =
            sparse.iter().map(|n| (n.clone(), Vec::new())).collect();
        if !live.is_empty() {
            for_each_packed(index, PACKED_PAGE, |page| {
                for e in page {
                    if let Some(entries) = live.get_mut(&e.pack) {
                        entries.push(e.clone());
                    }
                }
                Ok(())
            })?;
        }
        let sparse: Vec<(String, Vec<PackedObject>)> = sparse
            .into_iter()
            .map(|n| {
                let entries = live.remove(&n).unwrap_or_default();
                (n, entries)
            })
            .collect();
        self.delete_keys(empty, started)?;
        // Rewrite sparse packs a few at a time: their live objects into new packs (which
        // moves the entries), then the old packs go. A reader that looked an object up in
        // an old pack finds it gone and looks again.
        let mut group: Vec<(String, Vec<PackedObject>)> = Vec::new();
        let mut group_bytes = 0u64;
        let mut sparse = sparse.into_iter().peekable();
        while let Some((name, entries)) = sparse.next() {
            group_bytes += entries.iter().map(|e| e.len as u64).sum::<u64>();
            group.push((name, entries));
            if group_bytes < 4 * PACK_BYTES as u64 && sparse.peek().is_some() {
                continue;
            }
            if self.sweep_time_up(started) {
                break;
            }
            let located: Vec<PackedObject> =
                group.iter().flat_map(|(_, e)| e.iter().cloned()).collect();
            let kinds: HashMap<Hash, ObjectKind> =
                located.iter().map(|e| (e.hash, e.kind)).collect();
            let (objects, gone) = self.fetch_packed(located)?;
            if !gone {
                let news: Vec<NewObject<'_>> = objects
                    .iter()
                    .map(|(h, d)| NewObject {
                        hash: *h,
                        kind: kinds.get(h).copied().unwrap_or(ObjectKind::Page),
                        data: d,
                    })
                    .collect();
                let written = self.put_packed(index, &news)?;
                let old: Vec<(Path, u64)> = group
                    .iter()
                    .filter(|(n, _)| !written.contains(n))
                    .map(|(n, _)| (self.pack_key(n), 0))
                    .collect();
                self.delete_keys(old, started)?;
            }
            group.clear();
            group_bytes = 0;
        }
        Ok(swept)
    }
}

/// Runs `f` on `rt` and waits for it from this thread.
fn run_on<T: Send + 'static>(
    rt: &tokio::runtime::Handle,
    f: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    match futures::executor::block_on(rt.spawn(f)) {
        Ok(r) => r,
        Err(e) => Err(Error::Server(format!("object storage task: {e}"))),
    }
}

/// Puts every `(key, bytes)`, [`CONCURRENCY`] at a time.
async fn put_all(remote: Arc<dyn Remote>, jobs: Vec<(Path, PutPayload)>) -> Result<()> {
    futures::stream::iter(jobs)
        .map(|(key, data)| {
            let remote = remote.clone();
            async move { remote.put(&key, data).await.map_err(remote_err) }
        })
        .buffer_unordered(CONCURRENCY)
        .try_for_each(|_| async { Ok(()) })
        .await
}

/// Uploads packs ([`CONCURRENCY`] at a time), then records their entries in `index`: an
/// entry never names a pack that is not there.
fn upload_and_record(
    rt: tokio::runtime::Handle,
    remote: Arc<dyn Remote>,
    packs: Vec<(Path, bytes::Bytes)>,
    index: &dyn PackIndex,
    records: &[PackedObject],
) -> Result<()> {
    let t = std::time::Instant::now();
    let n = packs.len();
    let packs = packs
        .into_iter()
        .map(|(key, data)| (key, PutPayload::from(data)))
        .collect();
    run_on(&rt, put_all(remote, packs))?;
    let uploaded = t.elapsed();
    index.record_packed(records)?;
    tracing::debug!(
        packs = n,
        objects = records.len(),
        ?uploaded,
        recorded = ?(t.elapsed() - uploaded),
        "packed"
    );
    Ok(())
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
        match &self.index {
            Some(index) if objects.len() >= PACK_MIN_OBJECTS => {
                self.put_packed(index.as_ref(), objects).map(|_| ())
            }
            _ => self.put_loose(objects),
        }
    }

    fn put_many_behind(&self, objects: &[NewObject<'_>]) -> Result<PutTicket> {
        // Loose puts are small: they are done before returning.
        let index = match &self.index {
            Some(index) if objects.len() >= PACK_MIN_OBJECTS => index.clone(),
            _ => return self.put_many(objects).map(|()| PutTicket::done()),
        };
        let (packs, records) = self.pack(objects);
        let behind = self.behind.clone();
        {
            let mut running = behind.running.lock().unwrap_or_else(|e| e.into_inner());
            while *running >= BEHIND_MAX {
                running = behind.room.wait(running).unwrap_or_else(|e| e.into_inner());
            }
            *running += 1;
        }
        let job = Arc::new(Job {
            id: behind.next.fetch_add(1, Ordering::Relaxed),
            behind: behind.clone(),
            outcome: Mutex::new(None),
            ended: Condvar::new(),
        });
        {
            let by_name: HashMap<&str, &bytes::Bytes> = packs
                .iter()
                .map(|(key, b)| (key.filename().unwrap_or_default(), b))
                .collect();
            let mut held = behind.objects.lock().unwrap_or_else(|e| e.into_inner());
            for e in &records {
                if let Some(b) = by_name.get(e.pack.as_str()) {
                    let at = e.offset as usize..e.offset as usize + e.len as usize;
                    held.insert(e.hash, (job.id, (*b).clone(), at));
                }
            }
        }
        let (rt, remote, mine) = (self.handle(), self.remote.get()?, job.clone());
        let spawned = std::thread::Builder::new()
            .name("burrow-put-behind".into())
            .spawn(move || {
                // Whatever happens, the ticket gets an outcome and the room is given back.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    upload_and_record(rt, remote, packs, index.as_ref(), &records)
                }))
                .unwrap_or_else(|_| {
                    Err(Error::Server("object storage: an upload panicked".into()))
                });
                if r.is_ok() {
                    // Recorded: reads find the objects through the index from here on.
                    mine.behind.forget(mine.id);
                }
                *mine.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                mine.ended.notify_all();
                let mut running = mine
                    .behind
                    .running
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                *running -= 1;
                mine.behind.room.notify_all();
            });
        if let Err(e) = spawned {
            let mut running = behind.running.lock().unwrap_or_else(|e| e.into_inner());
            *running -= 1;
            behind.room.notify_all();
            return Err(e.into());
        }
        Ok(PutTicket::new(job))
    }

    fn get(&self, hash: &Hash, kind: ObjectKind) -> Result<Option<Vec<u8>>> {
        if let Some(d) = self.behind.get(hash) {
            return Ok(Some(d));
        }
        if self.index.is_some() {
            return Ok(self.get_many(&[*hash], kind)?.pop().map(|(_, d)| d));
        }
        let (remote, key, hash) = (self.remote.get()?, self.key(hash, kind), *hash);
        self.run(fetch(remote, key, hash))
    }

    fn get_many(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        let Some(index) = &self.index else {
            return self.get_loose(hashes, kind);
        };
        let mut out = Vec::with_capacity(hashes.len());
        let mut rest: Vec<Hash> = Vec::with_capacity(hashes.len());
        for h in hashes {
            match self.behind.get(h) {
                Some(d) => out.push((*h, d)),
                None => rest.push(*h),
            }
        }
        // A second look when a pack went missing between the lookup and the fetch.
        for _ in 0..2 {
            let located = index.locate(&rest)?;
            if located.is_empty() {
                break;
            }
            let (found, gone) = self.fetch_packed(located)?;
            let got: HashSet<Hash> = found.iter().map(|(h, _)| *h).collect();
            out.extend(found);
            rest.retain(|h| !got.contains(h));
            if !gone {
                break;
            }
        }
        out.extend(self.get_loose(&rest, kind)?);
        Ok(out)
    }

    fn exists_many(&self, objects: &[(Hash, ObjectKind)]) -> Result<Vec<bool>> {
        let mut packed: HashMap<Hash, String> = HashMap::new();
        if let Some(index) = &self.index {
            let hashes: Vec<Hash> = objects.iter().map(|(h, _)| *h).collect();
            packed = index
                .locate(&hashes)?
                .into_iter()
                .map(|e| (e.hash, e.pack))
                .collect();
        }
        // A packed object exists if its pack does.
        let packs: Vec<String> = packed
            .values()
            .cloned()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let there = self.exist(packs.iter().map(|n| self.pack_key(n)).collect())?;
        let packs: HashMap<String, bool> = packs.into_iter().zip(there).collect();
        let loose: Vec<(Hash, ObjectKind)> = objects
            .iter()
            .filter(|(h, _)| !packed.contains_key(h))
            .copied()
            .collect();
        let mut loose_there = self
            .exist(loose.iter().map(|(h, k)| self.key(h, *k)).collect())?
            .into_iter();
        Ok(objects
            .iter()
            .map(|(h, _)| match packed.get(h) {
                Some(pack) => packs.get(pack).copied().unwrap_or(false),
                None => loose_there.next().unwrap_or(false),
            })
            .collect())
    }

    fn delete_unreferenced(
        &self,
        written_before: i64,
        referenced: &dyn Fn(&Hash) -> bool,
    ) -> Result<(u64, u64)> {
        let started = std::time::Instant::now();
        let listing = self.list_all()?;
        let doomed: Vec<(Path, u64)> = listing
            .iter()
            .filter_map(|(key, size, t)| match key {
                Key::Object(h, k) if *t < written_before && !referenced(h) => {
                    Some((self.key(h, *k), *size))
                }
                _ => None,
            })
            .collect();
        let deleted = self.delete_keys(doomed, started)?;
        let (mut objects, mut bytes) = (deleted.len() as u64, deleted.iter().sum::<u64>());
        if let Some(index) = &self.index {
            let (o, b) = self.sweep_packs(
                index.as_ref(),
                &listing,
                written_before,
                referenced,
                started,
            )?;
            objects += o;
            bytes += b;
        }
        Ok((objects, bytes))
    }

    fn totals(&self) -> Result<(u64, u64, u64)> {
        let (mut n, mut pages, mut nodes) = (0, 0, 0);
        let mut add = |kind: ObjectKind, size: u64| {
            n += 1;
            match kind {
                ObjectKind::Page => pages += size,
                ObjectKind::Node => nodes += size,
            }
        };
        let mut loose = HashSet::new();
        for (key, size, _) in self.list_all()? {
            if let Key::Object(h, kind) = key {
                loose.insert(h);
                add(kind, size);
            }
        }
        if let Some(index) = &self.index {
            for_each_packed(index.as_ref(), PACKED_PAGE, |page| {
                for e in page {
                    if !loose.contains(&e.hash) {
                        add(e.kind, e.len as u64);
                    }
                }
                Ok(())
            })?;
        }
        Ok((n, pages, nodes))
    }

    fn list(&self) -> Result<Vec<(Hash, ObjectKind)>> {
        let mut out: Vec<(Hash, ObjectKind)> = self
            .list_all()?
            .into_iter()
            .filter_map(|(key, _, _)| match key {
                Key::Object(h, k) => Some((h, k)),
                Key::Pack(_) => None,
            })
            .collect();
        if let Some(index) = &self.index {
            let loose: HashSet<Hash> = out.iter().map(|(h, _)| *h).collect();
            out.extend(
                index
                    .packed()?
                    .into_iter()
                    .filter(|e| !loose.contains(&e.hash))
                    .map(|e| (e.hash, e.kind)),
            );
        }
        Ok(out)
    }

    fn set_sweep_lease(&self, until: Option<std::time::Instant>) {
        *self.lease.lock().unwrap_or_else(|p| p.into_inner()) = until;
    }

    fn needs_sweep_fence(&self) -> bool {
        true
    }

    fn location(&self) -> Option<String> {
        Some(self.location.clone())
    }
}
