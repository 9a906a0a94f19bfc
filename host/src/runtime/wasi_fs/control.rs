//! `/dev/burrow`: the control device through which a program that can only speak WASI preview 1
//! (CPython for WASI) asks the host for what WASI does not offer it: to run a program of the
//! sandbox (`subprocess`) or make an HTTP request through the call's egress. The guest opens
//! the device, writes one request, calls `fsync` on it (which is when the host does the work,
//! in a plain filesystem call, so no async runtime is entered), and reads the reply to its
//! end on the same descriptor. Each open descriptor is its own channel.
//!
//! This module only carries bytes: what a request means is the [`Handler`]'s, which the run
//! installs (`runtime/control.rs`). Everything here is bounded, since the guest writes it.

use std::sync::{Arc, Mutex, MutexGuard};

use wasmtime_wasi_io::bytes::Bytes;
use wasmtime_wasi_io::streams::{StreamError, StreamResult};

/// The largest request a guest may write (a subprocess's stdin or an HTTP body included).
pub const MAX_REQUEST: usize = 256 << 20;

/// What serves the device's requests: called with one whole request, returns the reply the
/// guest reads next. An `Err` is a trap of the guest's run (a program it started failed in a
/// way that ends the call): a malformed request is a reply saying so, never a trap.
pub trait Handler: Send + Sync {
    fn handle(&self, request: &[u8]) -> Result<Vec<u8>, wasmtime::Error>;
}

/// One open descriptor of the device: the request being written, the reply being read.
#[derive(Default)]
pub struct Channel {
    request: Vec<u8>,
    /// Set once a request was longer than [`MAX_REQUEST`]: its `fsync` replies with an error.
    overflow: bool,
    reply: Bytes,
    pos: usize,
}

pub type Shared = Arc<Mutex<Channel>>;

fn lock(c: &Shared) -> MutexGuard<'_, Channel> {
    c.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serves the request written so far on `chan` (the guest's `fsync`): its reply replaces any
/// earlier one, and the next write starts a new request.
pub fn serve(chan: &Shared, handler: Option<&Arc<dyn Handler>>) -> Result<(), wasmtime::Error> {
    let (request, overflow) = {
        let mut c = lock(chan);
        (
            std::mem::take(&mut c.request),
            std::mem::take(&mut c.overflow),
        )
    };
    let reply = match handler {
        _ if overflow => error_reply(&format!(
            "the request is larger than {} MiB",
            MAX_REQUEST >> 20
        )),
        None => error_reply("this program was not started by burrow's shell"),
        Some(h) => h.handle(&request)?,
    };
    let mut c = lock(chan);
    c.reply = Bytes::from(reply);
    c.pos = 0;
    Ok(())
}

/// A reply that only says why a request could not be served (the format of
/// `runtime/control.rs`: a JSON line, then nothing).
pub fn error_reply(why: &str) -> Vec<u8> {
    let mut v = serde_json::json!({ "error": why, "kind": "request" })
        .to_string()
        .into_bytes();
    v.push(b'\n');
    v
}

/// Appends the guest's bytes to the request (a request past [`MAX_REQUEST`] is dropped and
/// answered with an error).
pub fn write(chan: &Shared, bytes: &[u8]) {
    let mut c = lock(chan);
    if c.request.len().saturating_add(bytes.len()) > MAX_REQUEST {
        c.overflow = true;
        c.request.clear();
    } else if !c.overflow {
        c.request.extend_from_slice(bytes);
    }
}

/// The next at most `size` bytes of the reply, and whether they end it.
pub fn read(chan: &Shared, size: usize) -> (Bytes, bool) {
    let mut c = lock(chan);
    let start = c.pos.min(c.reply.len());
    let end = start
        .saturating_add(size.min(crate::limits::MAX_READ as usize))
        .min(c.reply.len());
    c.pos = end;
    (c.reply.slice(start..end), end == c.reply.len())
}

/// The guest's writes to the device: the request.
pub struct Requests(pub Shared);
/// The guest's reads of the device: the reply.
pub struct Replies(pub Shared);

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for Requests {
    async fn ready(&mut self) {}
}

impl wasmtime_wasi_io::streams::OutputStream for Requests {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        write(&self.0, &bytes);
        Ok(())
    }
    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }
    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(1 << 20)
    }
}

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for Replies {
    async fn ready(&mut self) {}
}

impl wasmtime_wasi_io::streams::InputStream for Replies {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        match read(&self.0, size) {
            (b, true) if b.is_empty() => Err(StreamError::Closed),
            (b, _) => Ok(b),
        }
    }
}
