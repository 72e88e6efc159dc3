//! Where the user's own servers are and how to log in. PostgreSQL: a `postgresql://` URL read
//! from the experiment, the password from an environment variable (never from the URL, never
//! written), and the SCRAM-SHA-256 exchange a password-protected server asks for (RFC 5802 /
//! 7677). Milvus: an `http://host:port` address and a token from an environment variable.

use std::path::PathBuf;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// A server address: a unix socket folder or a TCP host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// The folder holding `.s.PGSQL.<port>`.
    Socket(PathBuf),
    Tcp(String),
}

pub use crate::secret::Secret;

/// What connecting to a server takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub address: Address,
    pub port: u16,
    pub user: String,
    pub database: String,
    pub password: Option<Secret>,
}

impl Endpoint {
    /// The server as a URL that holds no secret (it never holds the password), for manifests.
    pub fn shown(&self) -> String {
        match &self.address {
            Address::Tcp(host) => format!("postgresql://{}@{host}:{}/{}", self.user, self.port, self.database),
            Address::Socket(dir) => {
                format!("postgresql://{}@/{}?host={}&port={}", self.user, self.database, dir.display(), self.port)
            }
        }
    }

    /// Reads `postgresql://[user@]host[:port][/database]` (or `postgres://`; a socket folder as
    /// `?host=/path`, its port as `:port` before the path or `&port=N` as libpq writes it). A
    /// password in the URL is refused: it would be written with the experiment.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        // Errors show the URL with any secret in it replaced: they end up in CI logs.
        let shown = redact(url);
        let url_password = "the URL holds a password: give it in the variable that `password_env` names";
        let rest = url
            .strip_prefix("postgresql://")
            .or_else(|| url.strip_prefix("postgres://"))
            .ok_or_else(|| "the URL does not start with postgresql:// or postgres://".to_string())?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, database) = rest.split_once('/').unwrap_or((rest, ""));
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((user, hostport)) => (Some(user), hostport),
            None => (None, authority),
        };
        if user.is_some_and(|u| u.contains(':') || u.to_ascii_lowercase().contains("%3a")) {
            return Err(url_password.into());
        }
        let (host, mut port) = match hostport.rsplit_once(':') {
            Some((host, port)) => {
                // The port slot is never quoted: a password typed there would be printed.
                let port = port.parse::<u16>().map_err(|_| {
                    "the URL's port (after the last `:` of the host) is not a number from 0 to 65535".to_string()
                })?;
                (host, Some(port))
            }
            None => (hostport, None),
        };
        let mut socket = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("host", dir)) if dir.starts_with('/') => socket = Some(PathBuf::from(dir)),
                Some(("port", given)) => {
                    let given =
                        given.parse::<u16>().map_err(|_| "`port=` is not a number from 0 to 65535".to_string())?;
                    if port.is_some_and(|p| p != given) {
                        return Err("the URL gives two different ports (`:port` and `port=`): give it once".into());
                    }
                    port = Some(given);
                }
                Some((key, _)) if key.to_ascii_lowercase().contains("pass") => return Err(url_password.into()),
                // Parameters are never quoted: one may be a secret.
                _ => {
                    return Err(
                        "the URL has a parameter other than host=/socket/folder and port (not shown here)".into()
                    )
                }
            }
        }
        let port = port.unwrap_or(5432);
        let address = match (socket, host) {
            (Some(dir), "") => Address::Socket(dir),
            (Some(_), _) => return Err("give either a host or ?host=/socket/folder, not both".into()),
            (None, "") => return Err(format!("{shown:?} names no host")),
            (None, host) => Address::Tcp(host.to_string()),
        };
        Ok(Endpoint {
            address,
            port,
            user: user.filter(|u| !u.is_empty()).unwrap_or("postgres").to_string(),
            database: if database.is_empty() { "postgres".into() } else { database.to_string() },
            password: None,
        })
    }
}

/// `url` with what could be a secret replaced by `***`: the user-info part after the user name
/// (`u:pw@`, `u%3Apw@`) and every query value but `host`'s.
pub fn redact(url: &str) -> String {
    let (head, query) = url.split_once('?').map_or((url, None), |(h, q)| (h, Some(q)));
    let mut out = match head.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').map_or((rest, None), |(a, p)| (a, Some(p)));
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    let lower = userinfo.to_ascii_lowercase();
                    let cut = userinfo.find(':').or_else(|| lower.find("%3a"));
                    match cut {
                        Some(at) => format!("{}:***@{host}", &userinfo[..at]),
                        None => format!("{userinfo}@{host}"),
                    }
                }
                None => authority.to_string(),
            };
            format!("{scheme}://{authority}{}", path.map_or(String::new(), |p| format!("/{p}")))
        }
        None => head.to_string(),
    };
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some(("host", v)) => format!("host={v}"),
                Some((k, _)) => format!("{k}=***"),
                None => pair.to_string(),
            })
            .collect();
        out = format!("{out}?{}", pairs.join("&"));
    }
    out
}

fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().into()
}

/// PBKDF2-HMAC-SHA256 with one output block (32 bytes).
fn pbkdf2(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut u = hmac(password, &[salt, &1u32.to_be_bytes()].concat());
    let mut out = u;
    for _ in 1..iterations {
        u = hmac(password, &u);
        out.iter_mut().zip(u).for_each(|(o, x)| *o ^= x);
    }
    out
}

/// One SCRAM-SHA-256 exchange, client side.
pub struct Scram {
    password: String,
    client_first_bare: String,
    nonce: String,
    server_signature: Option<[u8; 32]>,
}

impl Scram {
    pub fn new(password: &str, nonce: &str) -> Scram {
        // PostgreSQL takes the user from the startup message; the SCRAM user name is empty.
        Scram {
            password: password.to_string(),
            client_first_bare: format!("n=,r={nonce}"),
            nonce: nonce.to_string(),
            server_signature: None,
        }
    }

    /// The client-first message (no channel binding).
    pub fn client_first(&self) -> String {
        format!("n,,{}", self.client_first_bare)
    }

    /// The client-final message answering the server-first one.
    pub fn client_final(&mut self, server_first: &str) -> Result<String, String> {
        let field = |name: &str| {
            server_first
                .split(',')
                .find_map(|f| f.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
                .ok_or_else(|| format!("the server's SCRAM message has no {name}"))
        };
        let nonce = field("r")?;
        if !nonce.starts_with(&self.nonce) {
            return Err("the server's SCRAM nonce does not extend ours".into());
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let salt = b64.decode(field("s")?).map_err(|_| "the server's SCRAM salt is not base64".to_string())?;
        let iterations: u32 = field("i")?.parse().map_err(|_| "the server's SCRAM iteration count".to_string())?;
        let salted = pbkdf2(self.password.as_bytes(), &salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        let stored_key: [u8; 32] = Sha256::digest(client_key).into();
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hmac(&stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(signature).map(|(k, s)| k ^ s).collect();
        self.server_signature = Some(hmac(&hmac(&salted, b"Server Key"), auth.as_bytes()));
        Ok(format!("{without_proof},p={}", b64.encode(proof)))
    }

    /// Checks the server-final message: the server knew the password too.
    pub fn verify(&self, server_final: &str) -> Result<(), String> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let expected = self.server_signature.ok_or("SCRAM out of order")?;
        let given = server_final.strip_prefix("v=").and_then(|v| b64.decode(v).ok());
        if given.as_deref() == Some(&expected[..]) {
            Ok(())
        } else {
            Err("the server's SCRAM signature does not match: not the server that holds this password".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_socket_or_a_host_and_never_hold_a_password() {
        let e = Endpoint::parse("postgresql://evals@db.internal:6543/rag").unwrap();
        assert_eq!(
            (e.address, e.port, e.user.as_str(), e.database.as_str()),
            (Address::Tcp("db.internal".into()), 6543, "evals", "rag")
        );
        let e = Endpoint::parse("postgres:///rag?host=/var/run/postgresql").unwrap();
        assert_eq!(
            (e.address, e.port, e.user.as_str()),
            (Address::Socket("/var/run/postgresql".into()), 5432, "postgres")
        );
        assert!(Endpoint::parse("postgresql://u:secret@h/db").unwrap_err().contains("password_env"));
        assert!(Endpoint::parse("mysql://h/db").is_err());
        assert!(Endpoint::parse("postgresql://h:port/db").is_err());
        assert!(Endpoint::parse("postgresql://h/db?sslmode=require")
            .unwrap_err()
            .contains("a parameter other than host"));
        // A socket's port in either of libpq's forms; the URL a manifest shows reads back.
        for url in ["postgresql://u@:6432/db?host=/sock", "postgresql://u@/db?host=/sock&port=6432"] {
            let e = Endpoint::parse(url).unwrap();
            assert_eq!((&e.address, e.port), (&Address::Socket("/sock".into()), 6432), "{url}");
            assert_eq!(Endpoint::parse(&e.shown()).unwrap(), e, "{}", e.shown());
        }
        assert!(Endpoint::parse("postgresql://u@:6432/db?host=/sock&port=5432").unwrap_err().contains("two different"));
        // No refusal repeats a secret (they end up in CI logs).
        for url in [
            "postgresql://u:s3cr3t@h/db",
            "postgresql://u%3As3cr3t@h/db",
            "postgresql://u@h/db?password=s3cr3t",
            "postgresql://u@h/db?sslpassword=s3cr3t&x=s3cr3t",
            "postgres+psycopg://u:s3cr3t@h/db",
            "postgresql://u:s3cr3t@h:port/db",
            "postgresql://u:s3cr3t@/db",
        ] {
            let err = Endpoint::parse(url).unwrap_err();
            assert!(!err.contains("s3cr3t"), "{url}: {err}");
            assert!(!redact(url).contains("s3cr3t"), "{url}: {}", redact(url));
        }
        assert_eq!(
            redact("postgres+psycopg://u:pw@h/db?host=/s&password=pw"),
            "postgres+psycopg://u:***@h/db?host=/s&password=***"
        );
    }

    #[test]
    fn scram_sha_256_matches_rfc_7677() {
        // RFC 7677 §3: user "user", password "pencil".
        let mut s = Scram::new("pencil", "rOprNGfwEbeRWgbNEkqO");
        s.client_first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO".into();
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        assert_eq!(
            s.client_final(server_first).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert!(s.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").is_ok());
        assert!(s.verify("v=AAAA").is_err());
    }
}

/// The user's own Milvus: where it is and the token to log in with (`user:password` or an API
/// key), read from the environment variable the experiment names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MilvusEndpoint {
    pub url: String,
    pub token: Option<Secret>,
}

impl MilvusEndpoint {
    /// Reads `http://host:port` (`https://` for TLS is not supported: say so).
    pub fn parse(url: &str) -> std::result::Result<String, String> {
        http_address(url)
    }
}

/// An HTTP agent for an engine's API: answers of any status are read (the engine says why in
/// the body), a request waits up to ten minutes (a bulk load, a collection's build).
pub fn http_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(600)))
        .http_status_as_error(false)
        .build()
        .into()
}

/// A server's `http://host:port`, as written in `[engines.NAME]` (`https://` for TLS is not
/// supported: say so; credentials in it are refused, they belong in the variable `token_env` names).
pub fn http_address(url: &str) -> std::result::Result<String, String> {
    // Checked first: no message below repeats a URL that holds a secret.
    if url.contains('@') {
        return Err("the URL holds credentials: give the token in the variable that `token_env` names".into());
    }
    if url.contains(['?', '#']) {
        return Err("the URL has a query or a fragment, which would be sent with every request (a `token=` there is a secret in every log): give http://host:port, and the token in the variable that `token_env` names".into());
    }
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        "the URL is not an http://host:port address (TLS is not supported; reach the proxy through a tunnel)"
            .to_string()
    })?;
    let hostport = rest.trim_end_matches('/');
    if hostport.is_empty() || hostport.contains('/') {
        // Not repeated: a path may hold a secret.
        return Err("the URL is not an http://host:port address (a path is not taken)".into());
    }
    Ok(format!("http://{hostport}"))
}
