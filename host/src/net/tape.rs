//! The egress layer's side of deterministic calls ([`crate::determinism`]): a deterministic
//! call's responses are read whole and put on its tape (status, headers, body, or the
//! failure's `wasi:http` error name and reason), and a replayed call's requests are answered
//! from the tape in order, without reaching the network.

use bytes::Bytes;
use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, WasiBody};

use crate::determinism::{Determinism, MAX_RECORDED_BODY, Reply};

/// Why a replayed request got no response: the error the guest sees (None: a refusal of
/// burrow's own, given with `why`) and the reason.
pub(super) struct Failure {
    pub error: Option<Error>,
    pub why: String,
}

/// The recorded reply to the next request of a replayed call, which must be `key`: the
/// response and its body's size.
pub(super) fn answer(
    det: &Determinism,
    key: &str,
) -> Result<(http::Response<WasiBody>, u64), Failure> {
    let refused = |why: String| Failure { error: None, why };
    let reply = det.next_reply(key).map_err(refused)?;
    if let Some((code, why)) = &reply.error {
        return Err(Failure {
            error: error_named(code),
            why: why.clone(),
        });
    }
    let body = if reply.too_large {
        None
    } else {
        use base64::Engine as _;
        reply
            .body
            .as_deref()
            .map(|b| base64::engine::general_purpose::STANDARD.decode(b))
            .transpose()
            .ok()
            .map(Option::unwrap_or_default)
    };
    let Some(body) = body else {
        return Err(refused(format!(
            "replay: the reply was not recorded (larger than {MAX_RECORDED_BODY} bytes, or \
             damaged)"
        )));
    };
    let mut response = http::Response::builder().status(reply.status.unwrap_or(200));
    for (k, v) in &reply.headers {
        response = response.header(k, v);
    }
    let n = body.len() as u64;
    response
        .body(full_body(Bytes::from(body)))
        .map(|r| (r, n))
        .map_err(|e| refused(format!("replay: the recorded reply is not a response: {e}")))
}

/// A body of `bytes`, whole.
fn full_body(bytes: Bytes) -> WasiBody {
    http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// Reads a deterministic call's response whole (through the limits and the secrets'
/// scrubbing its body already has), puts it on the call's tape and hands it on whole.
pub(super) async fn record_reply(
    det: &Determinism,
    key: String,
    response: http::Response<WasiBody>,
) -> Result<http::Response<WasiBody>, Error> {
    use base64::Engine as _;
    let (parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            det.push_reply(Reply {
                request: key,
                error: Some((error_name(&e), error_reason(&e))),
                ..Default::default()
            });
            return Err(e);
        }
    };
    let headers = parts
        .headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect();
    let too_large = bytes.len() > MAX_RECORDED_BODY;
    det.push_reply(Reply {
        request: key,
        status: Some(parts.status.as_u16()),
        headers,
        body: (!too_large).then(|| base64::engine::general_purpose::STANDARD.encode(&bytes)),
        error: None,
        too_large,
    });
    Ok(http::Response::from_parts(parts, full_body(bytes)))
}

/// The name of a `wasi:http` error's variant, as a deterministic call's tape keeps it.
pub(super) fn error_name(e: &Error) -> String {
    let debug = format!("{e:?}");
    debug
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Why a request failed, as a tape keeps it: for burrow's own refusals the reason
/// [`denied`] was given.
fn error_reason(e: &Error) -> String {
    match e {
        Error::InternalError(Some(m)) => m.strip_prefix("burrow: ").unwrap_or(m).to_string(),
        other => format!("{other:?}"),
    }
}

/// The error a tape's failure named: the same variant where it carries no data the tape
/// lacks, a failure inside the HTTP library as a protocol error, and None for burrow's own
/// refusals (the egress layer gives those with their reason).
fn error_named(name: &str) -> Option<Error> {
    Some(match name {
        "DnsTimeout" => Error::DnsTimeout,
        "DnsError" => Error::DnsError {
            rcode: None,
            info_code: None,
        },
        "DestinationNotFound" => Error::DestinationNotFound,
        "DestinationUnavailable" => Error::DestinationUnavailable,
        "ConnectionRefused" => Error::ConnectionRefused,
        "ConnectionTerminated" => Error::ConnectionTerminated,
        "ConnectionTimeout" => Error::ConnectionTimeout,
        "ConnectionReadTimeout" => Error::ConnectionReadTimeout,
        "ConnectionWriteTimeout" => Error::ConnectionWriteTimeout,
        "ConnectionLimitReached" => Error::ConnectionLimitReached,
        "TlsProtocolError" => Error::TlsProtocolError,
        "TlsCertificateError" => Error::TlsCertificateError,
        "HttpRequestDenied" => Error::HttpRequestDenied,
        "HttpRequestUriInvalid" => Error::HttpRequestUriInvalid,
        "HttpResponseIncomplete" => Error::HttpResponseIncomplete,
        "HttpResponseTimeout" => Error::HttpResponseTimeout,
        "ConfigurationError" => Error::ConfigurationError,
        "InternalError" => return None,
        _ => Error::HttpProtocolError,
    })
}
