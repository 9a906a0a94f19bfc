//! The streams of a run's files and devices: reads and writes of a store file at an
//! offset (or appending), and the synthetic devices' (`/dev/null`, `/dev/zero`,
//! `/dev/urandom`).

use std::sync::{Arc, Mutex};

use burrow_store::{Errno, Error as StoreError, Ino};
use wasmtime_wasi_io::bytes::Bytes;
use wasmtime_wasi_io::streams::{StreamError, StreamResult};

use super::synth::Dev;
use super::{SharedTxn, StoreFailed, lock};

/// A file stream's error for a store error (see [`StoreFailed`]).
pub(super) fn stream_error(e: StoreError) -> StreamError {
    if e.is_store_failure() {
        StreamError::Trap(wasmtime::Error::new(StoreFailed(e)))
    } else {
        StreamError::LastOperationFailed(e.into())
    }
}

/// Reads from a device: nothing (`null`), zeros, or random bytes (from `det`, a
/// deterministic call's generator, when there is one).
pub(super) fn dev_read(
    d: Dev,
    len: usize,
    det: Option<&crate::determinism::SharedRng>,
) -> (Vec<u8>, bool) {
    match d {
        Dev::Null | Dev::Stdin | Dev::Stdout | Dev::Stderr | Dev::Burrow => (Vec::new(), true),
        Dev::Zero => (vec![0; len], false),
        Dev::Random if det.is_some() => {
            use rand::Rng as _;
            let mut out = vec![0; len];
            if let Some(rng) = det {
                rng.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .fill_bytes(&mut out);
            }
            (out, false)
        }
        Dev::Random => {
            // The operating system's CSPRNG, as Linux's /dev/urandom: guests make keys with it.
            let mut out = vec![0; len];
            if getrandom::fill(&mut out).is_err() {
                return (Vec::new(), true); // never silently predictable: an empty read instead
            }
            (out, false)
        }
    }
}

/// A read stream over a synthetic file or device.
pub(super) enum SynthInput {
    File(Arc<[u8]>, u64),
    Dev(Dev, Option<crate::determinism::SharedRng>),
}

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for SynthInput {
    async fn ready(&mut self) {}
}

impl wasmtime_wasi_io::streams::InputStream for SynthInput {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        let size = size.min(crate::limits::MAX_READ as usize);
        match self {
            SynthInput::File(data, pos) => {
                let start = (*pos as usize).min(data.len());
                if start == data.len() {
                    return Err(StreamError::Closed);
                }
                let end = start.saturating_add(size).min(data.len());
                *pos = end as u64;
                Ok(Bytes::copy_from_slice(&data[start..end]))
            }
            SynthInput::Dev(d, det) => match dev_read(*d, size, det.as_ref()) {
                (_, true) => Err(StreamError::Closed),
                (b, false) => Ok(Bytes::from(b)),
            },
        }
    }
}

/// A write stream that keeps nothing (`/dev/null`, `/dev/zero`, `/dev/random`).
pub(super) struct DevNull;

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for DevNull {
    async fn ready(&mut self) {}
}

impl wasmtime_wasi_io::streams::OutputStream for DevNull {
    fn write(&mut self, _bytes: Bytes) -> StreamResult<()> {
        Ok(())
    }
    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }
    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(1 << 20)
    }
}

/// `read-via-stream`: reads the file from the transaction as the guest pulls.
pub(super) struct FileInput {
    pub(super) txn: SharedTxn,
    pub(super) ino: Ino,
    pub(super) pos: u64,
}

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for FileInput {
    async fn ready(&mut self) {}
}

impl wasmtime_wasi_io::streams::InputStream for FileInput {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        let mut buf = vec![0u8; size.min(crate::limits::MAX_READ as usize)];
        let n = lock(&self.txn)
            .read(self.ino, self.pos, &mut buf)
            .map_err(stream_error)?;
        if n == 0 && size > 0 {
            return Err(StreamError::Closed);
        }
        buf.truncate(n);
        self.pos += n as u64;
        Ok(Bytes::from(buf))
    }
}

/// `write-via-stream` / `append-via-stream` (`pos` None) into the transaction.
pub(super) struct FileOutput {
    pub(super) txn: SharedTxn,
    pub(super) quota_hit: Arc<Mutex<Option<String>>>,
    pub(super) ino: Ino,
    pub(super) pos: Option<u64>,
}

#[wasmtime_wasi_io::async_trait]
impl wasmtime_wasi_io::poll::Pollable for FileOutput {
    async fn ready(&mut self) {}
}

impl wasmtime_wasi_io::streams::OutputStream for FileOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        let mut txn = lock(&self.txn);
        let pos = match self.pos {
            Some(p) => p,
            None => txn.stat(self.ino).map_err(stream_error)?.size,
        };
        match txn.write(self.ino, pos, &bytes) {
            Ok(n) => {
                if let Some(p) = &mut self.pos {
                    *p += n as u64;
                }
                Ok(())
            }
            Err(e) => {
                if e.errno() == Errno::Quota {
                    *self.quota_hit.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                }
                Err(stream_error(e))
            }
        }
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(1 << 20)
    }
}
