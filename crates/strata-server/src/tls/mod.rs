//! TLS, as Redis 7.0's `tls-*` directives describe it, on rustls with the ring provider: the
//! contexts built from the configuration (Redis's `tlsConfigure`: the server's certificate and
//! key, the CAs clients and leaders are verified against, protocols, cipher suites, session
//! cache), kept current across `CONFIG SET` (a failed rebuild keeps the old contexts), the
//! server side of an accepted connection (the handshake, bounded in time, on the async
//! runtime) and the client side of a replica's link to its leader (blocking, for the
//! replication thread). Reading files is `files.rs`'s, the text parameters `params.rs`'s.

mod files;
mod params;
mod verify;

use std::io;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::ServerName;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{ClientConfig, ClientConnection, ServerConfig, StreamOwned};

use crate::config::{Settings, TlsAuthClients};
use crate::log::warning;

/// A client has this long to complete its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS contexts built from one configuration.
pub struct Contexts {
    /// For `tls-auth-clients no`.
    no_auth: Arc<ServerConfig>,
    /// For `yes` and `optional`; `None` without a CA to verify client certificates with.
    required: Option<Arc<ServerConfig>>,
    optional: Option<Arc<ServerConfig>>,
    /// For the link to a leader (`tls-replication`); `None` without a CA.
    client: Option<Arc<ClientConfig>>,
}

impl Contexts {
    /// The server side for `tls-auth-clients` `mode`; `None` when the mode needs a CA and none
    /// is configured.
    pub fn server(&self, mode: TlsAuthClients) -> Option<Arc<ServerConfig>> {
        match mode {
            TlsAuthClients::No => Some(self.no_auth.clone()),
            TlsAuthClients::Yes => self.required.clone(),
            TlsAuthClients::Optional => self.optional.clone(),
        }
    }
}

/// The contexts in force (none until TLS is configured).
#[derive(Default)]
pub struct Tls {
    current: RwLock<Option<Arc<Contexts>>>,
}

impl Tls {
    /// The contexts in force.
    pub fn current(&self) -> Option<Arc<Contexts>> {
        self.current.read().clone()
    }

    /// Replaces the contexts: connections accepted from now on use these.
    pub fn install(&self, contexts: Contexts) {
        *self.current.write() = Some(Arc::new(contexts));
    }
}

/// Whether the configuration asks for TLS at all (Redis configures it for `tls-port` or
/// `tls-replication`).
pub fn wanted(cfg: &Settings) -> bool {
    cfg.tls_port != 0 || cfg.tls_replication
}

/// Whether setting `name` (a CONFIG SET parameter) rebuilds the TLS contexts: every `tls-*`
/// parameter but `tls-port` (which re-listens, configuring TLS first if it was off: see
/// `Server::config_set`) and `tls-auth-clients` (read per
/// connection, with no rebuild in Redis either).
pub fn is_tls_parameter(name: &str) -> bool {
    name.get(..4)
        .is_some_and(|p| p.eq_ignore_ascii_case("tls-"))
        && !name.eq_ignore_ascii_case("tls-port")
        && !name.eq_ignore_ascii_case("tls-auth-clients")
}

/// Builds the contexts for `cfg` (Redis's `tlsConfigure`). The error is what Redis logs.
pub fn configure(cfg: &Settings) -> Result<Contexts, String> {
    let cert_file = cfg
        .tls_cert_file
        .as_deref()
        .ok_or("No tls-cert-file configured!")?;
    let key_file = cfg
        .tls_key_file
        .as_deref()
        .ok_or("No tls-key-file configured!")?;
    let has_ca = cfg.tls_ca_cert_file.is_some() || cfg.tls_ca_cert_dir.is_some();
    if (cfg.tls_auth_clients != TlsAuthClients::No || cfg.tls_replication) && !has_ca {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let (versions, mut warnings) = params::protocols(cfg.tls_protocols.as_deref())?;
    let (suites, more) =
        params::cipher_suites(cfg.tls_ciphers.as_deref(), cfg.tls_ciphersuites.as_deref())?;
    warnings.extend(more);
    if let Some(dh) = &cfg.tls_dh_params_file {
        // rustls uses no finite-field Diffie-Hellman: the file is only checked to be readable.
        std::fs::File::open(dh).map_err(|e| {
            format!(
                "Failed to load {dh}: {}",
                crate::listener::os_error_text(&e)
            )
        })?;
    }
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..rustls::crypto::ring::default_provider()
    });
    let certified = certified_key(
        &provider,
        cert_file,
        key_file,
        cfg.tls_key_file_pass.as_deref(),
    )?;
    let roots = match has_ca {
        true => Some(Arc::new(files::ca_roots(
            cfg.tls_ca_cert_file.as_deref(),
            cfg.tls_ca_cert_dir.as_deref(),
        )?)),
        false => None,
    };
    let session_cache = usize::try_from(cfg.tls_session_cache_size)
        .unwrap_or(usize::MAX)
        // OpenSSL's 0 means unlimited; rustls's cache preallocates, so it is bounded here.
        .clamp(1, 1 << 20);
    let server = |verifier: Arc<dyn ClientCertVerifier>| -> Result<Arc<ServerConfig>, String> {
        let mut c = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure TLS: {e}"))?
            .with_client_cert_verifier(verifier)
            .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified.clone())));
        c.ignore_client_order = cfg.tls_prefer_server_ciphers;
        c.session_storage = match cfg.tls_session_caching {
            true => ServerSessionMemoryCache::new(session_cache),
            false => Arc::new(NoServerSessionStorage {}),
        };
        Ok(Arc::new(c))
    };
    let no_auth = server(WebPkiClientVerifier::no_client_auth())?;
    let (mut required, mut optional, mut client) = (None, None, None);
    if let Some(roots) = &roots {
        let verifier = |optional: bool| {
            let b = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone());
            let b = if optional {
                b.allow_unauthenticated()
            } else {
                b
            };
            b.build()
                .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))
        };
        required = Some(server(verifier(false)?)?);
        optional = Some(server(verifier(true)?)?);
        // The replica presents tls-client-cert-file when both it and its key are set, else the
        // server's own certificate, as Redis does.
        let client_key = match (&cfg.tls_client_cert_file, &cfg.tls_client_key_file) {
            (Some(c), Some(k)) => {
                certified_key(&provider, c, k, cfg.tls_client_key_file_pass.as_deref())?
            }
            _ => certified.clone(),
        };
        let leader =
            verify::LeaderVerifier::new(roots.clone(), provider.signature_verification_algorithms);
        let c = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure TLS: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(leader))
            .with_client_cert_resolver(Arc::new(SingleCertAndKey::from(client_key)));
        client = Some(Arc::new(c));
    }
    for w in warnings {
        warning!("{w}");
    }
    Ok(Contexts {
        no_auth,
        required,
        optional,
        client,
    })
}

/// The certificate chain of `cert_file` with the key of `key_file`, checked to belong together.
/// An X.509 v1 certificate (which OpenSSL takes) can't be checked by rustls: it is used as is.
fn certified_key(
    provider: &CryptoProvider,
    cert_file: &str,
    key_file: &str,
    pass: Option<&str>,
) -> Result<Arc<CertifiedKey>, String> {
    let chain = files::cert_chain(cert_file)?;
    let key = files::private_key(key_file, pass)?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Err(e @ rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(format!("Failed to load private key: {key_file}: {e}"))
        }
        _ => Ok(Arc::new(certified)),
    }
}

/// A replica's TLS link to its leader: a blocking stream over `tcp`, handshake done.
pub fn connect_leader(
    contexts: &Contexts,
    host: &str,
    mut tcp: TcpStream,
) -> io::Result<StreamOwned<ClientConnection, TcpStream>> {
    let config = contexts.client.clone().ok_or_else(|| {
        io::Error::other("TLS replication needs tls-ca-cert-file or tls-ca-cert-dir")
    })?;
    // The name is sent as SNI only; the leader's certificate is not checked against it.
    let name = ServerName::try_from(host.to_string())
        .or_else(|_| ServerName::try_from("localhost".to_string()))
        .map_err(|e| io::Error::other(format!("TLS: {e}")))?;
    let mut conn =
        ClientConnection::new(config, name).map_err(|e| io::Error::other(format!("TLS: {e}")))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)
            .map_err(|e| io::Error::new(e.kind(), format!("TLS handshake with the master: {e}")))?;
    }
    Ok(StreamOwned::new(conn, tcp))
}
