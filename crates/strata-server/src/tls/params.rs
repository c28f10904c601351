//! The TLS parameters given as text, read as Redis reads them: `tls-protocols` ("TLSv1.2
//! TLSv1.3"), `tls-ciphersuites` (TLS 1.3, IANA names) and `tls-ciphers` (TLS 1.2, an OpenSSL
//! cipher list), mapped onto what rustls with the ring provider offers. Knows nothing of files
//! or sockets.

use rustls::crypto::ring::cipher_suite as suite;
use rustls::{SupportedCipherSuite, SupportedProtocolVersion};

/// The protocol versions `tls-protocols` allows (unset: TLS 1.2 and 1.3, Redis's default).
/// TLSv1 and TLSv1.1 are valid for Redis but rustls has neither: they are skipped with a
/// warning, and a list of nothing else is an error. The error is the log line.
pub fn protocols(
    text: Option<&str>,
) -> Result<(Vec<&'static SupportedProtocolVersion>, Vec<String>), String> {
    let mut warnings = Vec::new();
    let Some(text) = text else {
        return Ok((
            vec![&rustls::version::TLS12, &rustls::version::TLS13],
            warnings,
        ));
    };
    let (mut v12, mut v13, mut old) = (false, false, false);
    // Split on every single space, as Redis's sdssplitlen: doubled spaces give an empty word.
    for word in text.split(' ') {
        match word.to_ascii_lowercase().as_str() {
            "tlsv1" | "tlsv1.1" => old = true,
            "tlsv1.2" => v12 = true,
            "tlsv1.3" => v13 = true,
            _ => {
                return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into())
            }
        }
    }
    if old {
        warnings.push("TLSv1 and TLSv1.1 in tls-protocols are not supported by Strata (rustls offers TLSv1.2 and TLSv1.3); ignored.".to_string());
    }
    let mut versions = Vec::new();
    if v12 {
        versions.push(&rustls::version::TLS12);
    }
    if v13 {
        versions.push(&rustls::version::TLS13);
    }
    if versions.is_empty() {
        return Err("tls-protocols names no protocol Strata supports (TLSv1.2, TLSv1.3)".into());
    }
    Ok((versions, warnings))
}

/// TLS 1.3 suites by IANA name (OpenSSL's `SSL_CTX_set_ciphersuites` names); `None`: a valid
/// name rustls does not implement (the CCM suites).
const TLS13: &[(&str, Option<SupportedCipherSuite>)] = &[
    (
        "TLS_AES_256_GCM_SHA384",
        Some(suite::TLS13_AES_256_GCM_SHA384),
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        Some(suite::TLS13_CHACHA20_POLY1305_SHA256),
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        Some(suite::TLS13_AES_128_GCM_SHA256),
    ),
    ("TLS_AES_128_CCM_SHA256", None),
    ("TLS_AES_128_CCM_8_SHA256", None),
];

/// TLS 1.2 suites by OpenSSL name.
const TLS12: &[(&str, SupportedCipherSuite)] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// The cipher suites offered, in preference order: `tls-ciphersuites` picks the TLS 1.3 ones
/// (an unknown name is an error, as in OpenSSL; the CCM suites are skipped), `tls-ciphers`
/// the TLS 1.2 ones (the suites it names exactly; an OpenSSL cipher list made only of keywords
/// such as `HIGH:!aNULL` keeps rustls's defaults). Warnings say what was skipped.
pub fn cipher_suites(
    ciphers: Option<&str>,
    ciphersuites: Option<&str>,
) -> Result<(Vec<SupportedCipherSuite>, Vec<String>), String> {
    let mut warnings = Vec::new();
    let defaults = rustls::crypto::ring::ALL_CIPHER_SUITES;
    let is_tls13 = |s: &SupportedCipherSuite| matches!(s, SupportedCipherSuite::Tls13(_));
    let mut chosen13: Vec<SupportedCipherSuite> =
        defaults.iter().copied().filter(is_tls13).collect();
    if let Some(list) = ciphersuites {
        chosen13.clear();
        for name in list.split(':').filter(|n| !n.is_empty()) {
            match TLS13.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                Some((_, Some(s))) => chosen13.push(*s),
                Some((_, None)) => warnings.push(format!(
                    "TLS 1.3 cipher suite {name} is not supported by Strata (rustls); skipped."
                )),
                None => return Err(format!("Failed to configure ciphersuites: {list}")),
            }
        }
        if chosen13.is_empty() {
            return Err(format!("Failed to configure ciphersuites: {list}"));
        }
    }
    let mut chosen12: Vec<SupportedCipherSuite> =
        defaults.iter().copied().filter(|s| !is_tls13(s)).collect();
    if let Some(list) = ciphers {
        let named: Vec<SupportedCipherSuite> = list
            .split([':', ',', ' '])
            .filter_map(|name| TLS12.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)))
            .map(|(_, s)| *s)
            .collect();
        if named.is_empty() {
            warnings.push(format!("tls-ciphers '{list}' names no TLS 1.2 cipher suite rustls implements; using its defaults."));
        } else {
            chosen12 = named;
        }
    }
    chosen13.extend(chosen12);
    Ok((chosen13, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_default_to_tls12_and_tls13() -> Result<(), String> {
        assert_eq!(protocols(None)?.0.len(), 2);
        let (v, warnings) = protocols(Some("tlsv1.3"))?;
        assert_eq!(v.len(), 1);
        assert!(warnings.is_empty());
        Ok(())
    }

    #[test]
    fn protocols_reject_unknown_words_and_doubled_spaces_like_redis() {
        for bad in ["TLSv1.2 foo", "TLSv1.2  TLSv1.3", "SSLv3"] {
            let err = protocols(Some(bad)).err();
            assert!(
                err.is_some_and(|e| e.starts_with("Invalid tls-protocols specified.")),
                "{bad}"
            );
        }
    }

    #[test]
    fn old_protocols_are_skipped_and_alone_are_an_error() -> Result<(), String> {
        let (v, warnings) = protocols(Some("TLSv1.1 TLSv1.2"))?;
        assert_eq!(v.len(), 1);
        assert_eq!(warnings.len(), 1);
        assert!(protocols(Some("TLSv1 TLSv1.1")).is_err());
        Ok(())
    }

    #[test]
    fn ciphersuites_pick_tls13_suites_in_order() -> Result<(), String> {
        let (s, warnings) = cipher_suites(
            None,
            Some("TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_CCM_SHA256"),
        )?;
        assert_eq!(s[0], suite::TLS13_CHACHA20_POLY1305_SHA256);
        assert_eq!(
            s.iter()
                .filter(|c| matches!(c, SupportedCipherSuite::Tls13(_)))
                .count(),
            1
        );
        assert_eq!(warnings.len(), 1);
        assert!(cipher_suites(None, Some("TLS_NOPE")).is_err());
        Ok(())
    }

    #[test]
    fn ciphers_keep_defaults_for_keyword_lists() -> Result<(), String> {
        let all = rustls::crypto::ring::ALL_CIPHER_SUITES.len();
        assert_eq!(cipher_suites(Some("HIGH:!aNULL"), None)?.0.len(), all);
        let (s, _) = cipher_suites(Some("ECDHE-RSA-AES128-GCM-SHA256:HIGH"), None)?;
        assert_eq!(
            s.last(),
            Some(&suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
        );
        assert_eq!(s.len(), 4);
        Ok(())
    }
}
