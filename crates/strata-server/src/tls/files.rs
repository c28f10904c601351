//! Reading PEM files for TLS: a certificate chain, a private key, and the CA certificates of
//! `tls-ca-cert-file` / `tls-ca-cert-dir`. Errors are the lines Redis logs for the same failure
//! ("Failed to load certificate: <file>: <reason>"). Knows nothing of connections.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::RootCertStore;

/// Why a PEM file gave nothing usable.
fn pem_reason(e: rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => crate::listener::os_error_text(&io),
        rustls::pki_types::pem::Error::NoItemsFound => "no PEM item of the expected kind".into(),
        other => format!("{other:?}"),
    }
}

/// The certificate chain in `file` (the server's certificate first).
pub fn cert_chain(file: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let failed = |why: String| format!("Failed to load certificate: {file}: {why}");
    let chain = CertificateDer::pem_file_iter(file)
        .map_err(|e| failed(pem_reason(e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| failed(pem_reason(e)))?;
    if chain.is_empty() {
        return Err(failed("no certificate found".into()));
    }
    Ok(chain)
}

/// The private key in `file` (PKCS#8, PKCS#1 or SEC1). An encrypted key (`tls-key-file-pass`)
/// is refused with a message saying so.
pub fn private_key(file: &str, pass: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let failed = |why: String| format!("Failed to load private key: {file}: {why}");
    let text = std::fs::read(file).map_err(|e| failed(crate::listener::os_error_text(&e)))?;
    if text.windows(9).any(|w| w == b"ENCRYPTED") {
        let why = match pass {
            Some(_) => "encrypted private keys (tls-key-file-pass) are not supported by Strata; decrypt it with `openssl pkey`",
            None => "the key is encrypted (Strata does not support tls-key-file-pass)",
        };
        return Err(failed(why.into()));
    }
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| failed(pem_reason(e)))
}

/// The CA certificates of `tls-ca-cert-file` and every PEM file in `tls-ca-cert-dir`.
pub fn ca_roots(file: Option<&str>, dir: Option<&str>) -> Result<RootCertStore, String> {
    let failed =
        |why: String| format!("Failed to configure CA certificate(s) file/directory: {why}");
    let mut roots = RootCertStore::empty();
    let mut add_file = |path: &Path, strict: bool| -> Result<(), String> {
        let certs = match CertificateDer::pem_file_iter(path) {
            Ok(it) => it.collect::<Result<Vec<_>, _>>(),
            Err(e) => Err(e),
        };
        let certs = match certs {
            Ok(c) => c,
            Err(e) if strict => {
                return Err(failed(format!("{}: {}", path.display(), pem_reason(e))))
            }
            Err(_) => return Ok(()),
        };
        if certs.is_empty() && strict {
            return Err(failed(format!("{}: no certificate found", path.display())));
        }
        for c in certs {
            roots
                .add(c)
                .map_err(|e| failed(format!("{}: {e}", path.display())))?;
        }
        Ok(())
    };
    if let Some(f) = file {
        add_file(Path::new(f), true)?;
    }
    if let Some(d) = dir {
        let entries = std::fs::read_dir(d)
            .map_err(|e| failed(format!("{d}: {}", crate::listener::os_error_text(&e))))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_file() {
                // A hashed directory (c_rehash) also holds files that are not certificates.
                add_file(&path, false)?;
            }
        }
    }
    Ok(roots)
}
