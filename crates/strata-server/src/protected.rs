//! Protected mode, as Redis 7.0's `clientAcceptHandler` decides it: while `protected-mode` is
//! on and the default user has no password (`nopass`), only clients on the loopback interface
//! (peer address exactly 127.0.0.1 or ::1) are served; others get Redis's `-DENIED`
//! explanation and are closed. Redis 7.0 looks at neither `bind` nor `requirepass` itself:
//! only the default user's `nopass` flag. Knows nothing of sockets.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Redis's `islocalClient` for TCP: the peer's address is 127.0.0.1 or ::1 (not the rest of
/// 127.0.0.0/8, nor an IPv4-mapped IPv6 address).
pub fn is_local(peer: IpAddr) -> bool {
    peer == IpAddr::V4(Ipv4Addr::LOCALHOST) || peer == IpAddr::V6(Ipv6Addr::LOCALHOST)
}

/// Whether a client from `peer` is refused.
pub fn refuses(protected_mode: bool, default_user_nopass: bool, peer: IpAddr) -> bool {
    protected_mode && default_user_nopass && !is_local(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    }

    #[test]
    fn remote_clients_are_refused_only_without_a_default_password() {
        assert!(refuses(true, true, ip("192.0.2.7")));
        assert!(!refuses(true, false, ip("192.0.2.7")));
        assert!(!refuses(false, true, ip("192.0.2.7")));
    }

    #[test]
    fn only_exact_loopback_addresses_count_as_local() {
        assert!(!refuses(true, true, ip("127.0.0.1")));
        assert!(!refuses(true, true, ip("::1")));
        // As Redis compares the peer's text with "127.0.0.1" and "::1".
        assert!(refuses(true, true, ip("127.0.0.2")));
        assert!(refuses(true, true, ip("::ffff:127.0.0.1")));
    }
}
