//! Secrets the run holds (passwords, tokens, API keys read from the environment) and the one
//! redactor every message passes through. A server may echo what it was sent (a 401 body that
//! quotes the `Authorization` header, an error that repeats the URL): whatever it says, no
//! secret the process has read reaches a terminal, a log or a file ragsweep writes.

use std::sync::Mutex;

/// Every secret read so far in this process.
static KNOWN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// What a secret is replaced by.
pub const HIDDEN: &str = "***";

/// A password or token read from the environment: no `Debug` or `Display` shows it; it is read
/// only where it is sent, and every message is scrubbed of it ([`scrub`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(secret: String) -> Secret {
        if !secret.is_empty() {
            let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
            if !known.contains(&secret) {
                known.push(secret.clone());
                // The longest first, so a secret holding another is hidden whole.
                known.sort_by_key(|s| std::cmp::Reverse(s.len()));
            }
        }
        Secret(secret)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// `text` with every secret this process has read, and the value of every `token=`, `key=`,
/// `api_key=`, `password=`, `secret=` or `access_token=` pair (a URL's query, a form), shown as
/// [`HIDDEN`].
pub fn scrub(text: &str) -> String {
    let mut out = text.to_string();
    for secret in KNOWN.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), HIDDEN);
        }
    }
    scrub_pairs(&out)
}

const SECRET_NAMES: [&str; 7] = ["token", "key", "api_key", "apikey", "password", "secret", "access_token"];

fn scrub_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('=') {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        out.push('=');
        let after = &after[1..];
        let name_start =
            before.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).map_or(0, |i| i + 1);
        let name = before[name_start..].to_ascii_lowercase();
        if SECRET_NAMES.contains(&name.as_str()) {
            let end = after.find(['&', '#', ' ', '\n', '"', '\'', ')', '>']).unwrap_or(after.len());
            if end > 0 {
                out.push_str(HIDDEN);
            }
            rest = &after[end..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_secrets_and_secret_pairs_are_hidden_wherever_they_appear() {
        let _ = Secret::new("s3cr3t-key-123".into());
        let said = scrub("401: header was 'Authorization: Bearer s3cr3t-key-123' at http://h/v1?token=abc&x=1#key=zz");
        assert_eq!(said, "401: header was 'Authorization: Bearer ***' at http://h/v1?token=***&x=1#key=***");
        assert_eq!(scrub("monkey=3 keyboard=ok"), "monkey=3 keyboard=ok");
        assert_eq!(scrub("password="), "password=");
    }
}
