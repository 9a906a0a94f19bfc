//! TLS to the database, with libpq's connection options: the store URL's `sslmode`
//! (`disable`, `prefer`, `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file
//! of trusted roots, or `system` for the machine's trust store) mean what they mean to
//! `psql`, so a hosted database's connection string (Neon, Supabase, RDS, Cloud SQL) works
//! as its provider prints it.
//!
//! tokio-postgres itself knows `disable`, `prefer` and `require`, and no root certificates:
//! this module takes the two options out of the URL, hands the rest to tokio-postgres, and
//! builds the rustls configuration that gives each mode libpq's checks. The handshake,
//! `sslnegotiation` and SCRAM channel binding (`channel_binding=require`, which needs the
//! server's certificate) are tokio-postgres's and tokio-postgres-rustls's.
//!
//! As in libpq, `prefer` (the default) and `require` encrypt without checking the server's
//! certificate (they keep a passive listener out, not an impostor) unless there is a root
//! file to check it with (`sslrootcert`, or `~/.postgresql/root.crt` if it exists: then
//! the chain is checked, as `verify-ca` does); `verify-ca` checks that a trusted root
//! signed it, and `verify-full` also that it names the host. A verifying mode without
//! `sslrootcert` reads `~/.postgresql/root.crt`, and fails if there is none. Client
//! certificates (`sslcert`, `sslkey`) and `sslmode=allow` are refused, not ignored.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::Config;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Error, Result};

/// What the store URL says about TLS, and what tokio-postgres is told.
pub(super) struct Target {
    /// The URL's other options, with `sslmode` as tokio-postgres knows it.
    pub config: Config,
    /// Makes the TLS session for a host (used when `config` asks for TLS).
    pub tls: MakeRustlsConnect,
}

/// libpq's `sslmode` values that burrow supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// Where trusted roots come from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Roots {
    File(PathBuf),
    System,
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::Config(format!("the store URL: {what}"))
}

/// Parses `url` (`postgres://...` or `postgresql://...`) into tokio-postgres's configuration
/// and the TLS connector its `sslmode` and `sslrootcert` call for.
pub(super) fn target(url: &str) -> Result<Target> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut mode = None;
    let mut roots = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(k)?;
        let value = decode(v)?;
        match key.as_str() {
            "sslmode" => {
                mode = Some(match value.as_str() {
                    "disable" => Mode::Disable,
                    "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    "allow" => {
                        return Err(bad(
                            "sslmode=allow is not supported: use prefer (TLS when the server \
                             offers it) or disable",
                        ));
                    }
                    other => return Err(bad(format!("invalid sslmode value: \"{other}\""))),
                })
            }
            "sslrootcert" => {
                roots = Some(match value.as_str() {
                    "system" => Roots::System,
                    path => Roots::File(PathBuf::from(path)),
                })
            }
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" => {
                return Err(bad(format!(
                    "{key} is not supported: burrow does not present a client certificate or \
                     check revocation lists"
                )));
            }
            _ => rest.push(pair),
        }
    }
    // libpq 16: `sslrootcert=system` makes the default `verify-full`, and refuses a weaker
    // mode, since the system's roots vouch for names, not for one database.
    let mode = match (mode, &roots) {
        (None, Some(Roots::System)) => Mode::VerifyFull,
        (Some(m), Some(Roots::System)) if m != Mode::VerifyFull => {
            return Err(bad(format!(
                "weak sslmode \"{}\" may not be used with sslrootcert=system (use \
                 \"verify-full\")",
                name(m)
            )));
        }
        (m, _) => m.unwrap_or(Mode::Prefer),
    };
    let rest = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    let mut config: Config = rest
        .parse()
        .map_err(|e: tokio_postgres::Error| bad(super::with_causes(&e)))?;
    // As libpq: no TLS over a Unix socket, whatever `sslmode` says (the pool's connections
    // decide per host; this covers the event listener's, which tokio-postgres makes).
    let hosts = config.get_hosts();
    let unix_only = !hosts.is_empty() && hosts.iter().all(|h| matches!(h, Host::Unix(_)));
    config.ssl_mode(match mode {
        _ if unix_only => SslMode::Disable,
        Mode::Disable => SslMode::Disable,
        Mode::Prefer => SslMode::Prefer,
        Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
    });
    let tls = MakeRustlsConnect::new(client_config(mode, roots)?);
    Ok(Target { config, tls })
}

fn name(m: Mode) -> &'static str {
    match m {
        Mode::Disable => "disable",
        Mode::Prefer => "prefer",
        Mode::Require => "require",
        Mode::VerifyCa => "verify-ca",
        Mode::VerifyFull => "verify-full",
    }
}

/// Percent-decodes one part of the query.
pub(super) fn decode(s: &str) -> Result<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    // Not echoed: the value may be a password.
                    .ok_or_else(|| bad("invalid percent-encoding in the query"))?;
                out.push(hex);
                i += 3;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| bad("a query value is not UTF-8"))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// What is checked of the server's certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// Nothing (the handshake's signatures still are).
    Nothing,
    /// That it chains to a trusted root.
    Chain,
    /// That, and that it names the host.
    Name,
}

/// libpq's rule: `verify-ca` and `verify-full` check the chain (and the name), and need
/// roots; the other modes check the chain too when there is a root file to check it with
/// (`sslrootcert`, or `~/.postgresql/root.crt` if it exists), and nothing otherwise.
fn check(mode: Mode, roots: &Option<Roots>) -> Check {
    match mode {
        Mode::VerifyFull => Check::Name,
        Mode::VerifyCa => Check::Chain,
        Mode::Disable | Mode::Prefer | Mode::Require => match roots {
            Some(_) => Check::Chain,
            None if default_root_file().is_some_and(|p| p.exists()) => Check::Chain,
            None => Check::Nothing,
        },
    }
}

/// libpq's default root file, `~/.postgresql/root.crt`.
fn default_root_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".postgresql/root.crt"))
}

/// The rustls configuration for `mode`.
fn client_config(mode: Mode, roots: Option<Roots>) -> Result<rustls::ClientConfig> {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("TLS: {e}")))?;
    let algorithms = provider.signature_verification_algorithms;
    let webpki = |roots| {
        let store = Arc::new(root_store(roots)?);
        WebPkiServerVerifier::builder_with_provider(store, provider.clone())
            .build()
            .map_err(|e| Error::Config(format!("TLS: {e}")))
    };
    let verifier: Arc<dyn ServerCertVerifier> = match check(mode, &roots) {
        Check::Name => webpki(roots)?,
        Check::Chain => Arc::new(Lenient {
            chain: Some(webpki(roots)?),
            algorithms,
        }),
        Check::Nothing => Arc::new(Lenient {
            chain: None,
            algorithms,
        }),
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// The trusted roots of a verifying mode.
fn root_store(roots: Option<Roots>) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    let path = match roots {
        Some(Roots::System) => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(bad(
                    "sslrootcert=system: no trusted root certificates were found on this \
                     machine",
                ));
            }
            return Ok(store);
        }
        Some(Roots::File(p)) => p,
        // libpq's default.
        None => default_root_file()
            .ok_or_else(|| bad("a verifying sslmode needs sslrootcert (no $HOME to look in)"))?,
    };
    if !path.exists() {
        return Err(bad(format!(
            "root certificate file \"{}\" does not exist; either provide the file, use the \
             system's trusted roots with sslrootcert=system, or change sslmode to disable \
             server certificate verification",
            path.display()
        )));
    }
    let certs = CertificateDer::pem_file_iter(&path)
        .and_then(|it| it.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| bad(format!("sslrootcert \"{}\": {e}", path.display())))?;
    for cert in certs {
        store
            .add(cert)
            .map_err(|e| bad(format!("sslrootcert \"{}\": {e}", path.display())))?;
    }
    if store.is_empty() {
        return Err(bad(format!(
            "sslrootcert \"{}\" holds no certificate",
            path.display()
        )));
    }
    Ok(store)
}

/// Every check short of `verify-full`'s: the handshake's signatures are checked against the
/// certificate's key (so the session is encrypted to whoever holds it); the certificate's
/// chain when there are roots to check it with (`chain`: `verify-ca`, or a root file with
/// `prefer` or `require`); the name it is for, never. Without `chain`, any certificate is
/// accepted, as libpq does.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        // webpki checks the chain before the name: a name error means the chain is good.
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(url: &str) -> Result<SslMode> {
        target(url).map(|t| t.config.get_ssl_mode())
    }

    #[test]
    fn sslmode_maps_to_what_tokio_postgres_knows() {
        let u = "postgres://u@127.0.0.1:5432/db";
        assert_eq!(mode_of(u).ok(), Some(SslMode::Prefer));
        assert_eq!(
            mode_of(&format!("{u}?sslmode=disable")).ok(),
            Some(SslMode::Disable)
        );
        assert_eq!(
            mode_of(&format!("{u}?sslmode=require&application_name=x")).ok(),
            Some(SslMode::Require)
        );
        let t = target(&format!("{u}?application_name=burrow%20a&sslmode=require")).ok();
        assert_eq!(
            t.as_ref().and_then(|t| t.config.get_application_name()),
            Some("burrow a")
        );
    }

    #[test]
    fn a_unix_socket_never_uses_tls() {
        let u = "postgres://u@%2Frun%2Fpostgresql/db?sslmode=require";
        assert_eq!(mode_of(u).ok(), Some(SslMode::Disable));
    }

    #[test]
    fn verifying_modes_need_their_roots() {
        let u = "postgres://u@127.0.0.1:5432/db";
        let missing = target(&format!(
            "{u}?sslmode=verify-full&sslrootcert=/nonexistent/root.pem"
        ));
        let msg = missing.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("/nonexistent/root.pem"), "{msg}");
        assert!(msg.contains("does not exist"), "{msg}");
    }

    #[test]
    fn unsupported_options_are_refused_not_ignored() {
        let u = "postgres://u@127.0.0.1:5432/db";
        for (q, says) in [
            ("sslmode=allow", "sslmode=allow is not supported"),
            ("sslmode=verify", "invalid sslmode value"),
            ("sslcert=/c.pem", "sslcert is not supported"),
            ("sslkey=/k.pem", "sslkey is not supported"),
            (
                "sslmode=require&sslrootcert=system",
                "weak sslmode \"require\" may not be used with sslrootcert=system",
            ),
            ("nosuchoption=1", "nosuchoption"),
        ] {
            let msg = target(&format!("{u}?{q}"))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(msg.contains(says), "{q}: {msg}");
        }
    }
}
