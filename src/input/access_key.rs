//! Which field of a document holds its access list, and which fields could be one (SPEC §1).
//!
//! Exactly one key holds the access list (`acl` unless `[permissions] acl_key` says otherwise),
//! with the same rules in every reader (front matter, JSONL, BEIR `metadata`): a list of group
//! names; `[]` is visible to no group; absent is public; `null`, a non-list or an empty string
//! is an error. A key that is not the access key but could be one is an error too, unless the
//! experiment lists it in `[corpus] not_access`: a misspelt or foreign access list read as
//! plain metadata would make a restricted document public.

/// The prefix of group names the tool itself uses (the engine's public marker): refused in
/// documents and cases (SPEC §5), so no document can spell a name the engine gives everyone.
pub const RESERVED_GROUP_PREFIX: &str = "ragsweep:";

/// Keys that can never hold an access list: `[permissions] acl_key` naming one is an error.
pub const NOT_AN_ACCESS_KEY: [&str; 5] = ["title", "id", "text", "meta", "metadata"];

/// Refuses a group name that is not plain data: empty, with control characters (NUL included),
/// or in the tool's own namespace (SPEC §5). Returns the name trimmed.
pub fn check_group(name: &str) -> Result<String, String> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return Err("a group name is empty".into());
    }
    if let Some(c) = trimmed.chars().find(|c| c.is_control()) {
        return Err(format!("the group name {trimmed:?} holds the control character U+{:04X}", c as u32));
    }
    let folded: String = unicode_normalization::UnicodeNormalization::nfkc(trimmed).collect::<String>().to_lowercase();
    if folded.starts_with(RESERVED_GROUP_PREFIX) {
        return Err(format!(
            "the group name {trimmed:?} is in ragsweep's own namespace (`{RESERVED_GROUP_PREFIX}…`, used by the engine): choose another name"
        ));
    }
    Ok(trimmed.to_string())
}

/// Key names (lower case) that are access lists in other tools; `*` ends a prefix, and a name
/// between two `*` is matched anywhere in the key.
pub const SUSPICIOUS: [&str; 37] = [
    "acl",
    "acls",
    "group",
    "groups",
    "role",
    "roles",
    "permission",
    "permissions",
    "allow*",
    "access*",
    "reader",
    "readers",
    "owner",
    "owners",
    "audience",
    "principal",
    "principals",
    "visibility",
    "private",
    "restricted",
    "confidential",
    "security",
    "*group*",
    "*permission*",
    "audiences",
    "viewer*",
    "member*",
    "team",
    "teams",
    "tenant",
    "tenants",
    "visible*",
    "shared*",
    "authori*",
    "entitle*",
    "clearance",
    "scopes",
];

/// The access-list rules of one experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessKey {
    /// The one key that holds a document's access list.
    pub key: String,
    /// Keys that look like access lists but are plain metadata here.
    pub not_access: Vec<String>,
}

impl Default for AccessKey {
    fn default() -> Self {
        AccessKey { key: "acl".into(), not_access: Vec::new() }
    }
}

/// What a field of a document is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// The access list.
    Access,
    /// Plain metadata.
    Meta,
    /// Could be an access list: an error, with why.
    Suspicious(String),
}

impl AccessKey {
    /// Whether `key` is the access key in another form (case, full-width letters).
    pub fn is_key_form(&self, key: &str) -> bool {
        folded(key) == self.key.to_lowercase()
    }

    pub fn classify(&self, key: &str) -> Field {
        if key == self.key {
            return Field::Access;
        }
        if self.not_access.iter().any(|k| k == key) {
            return Field::Meta;
        }
        // Full-width and other compatibility forms (`ａｃｌ`) compare as what they look like.
        let lower = folded(key);
        let access = self.key.to_lowercase();
        let why = if lower == access {
            Some(format!("it is the access key `{}` in another form", self.key))
        } else if crate::analyze::edit_distance(&lower, &access) <= near(&access) {
            Some(format!("it is within {} of the access key `{}`", plural(near(&access)), self.key))
        } else if lower.starts_with(&access) || lower.ends_with(&access) {
            Some(format!("it extends the access key `{}`", self.key))
        } else if SUSPICIOUS.iter().any(|s| match (s.strip_prefix('*'), s.strip_suffix('*')) {
            (Some(inner), Some(_)) => lower.contains(inner.trim_end_matches('*')),
            (None, Some(prefix)) => lower.starts_with(prefix),
            _ => lower == *s,
        }) {
            Some("other tools keep access lists under that name".into())
        } else {
            None
        };
        match why {
            Some(why) => Field::Suspicious(format!(
                "`{key}` could be an access list ({why}): name the access key with `[permissions] acl_key = \"{key}\"`, \
                 or keep it as metadata with `[corpus] not_access = [\"{key}\"]`"
            )),
            None => Field::Meta,
        }
    }

    /// The first key nested anywhere in `value` (maps inside maps or lists) that is or could
    /// be an access list, as a dotted path under `top`: an access list is one top-level key.
    pub fn nested_in_json(&self, top: &str, value: &serde_json::Value) -> Option<String> {
        use serde_json::Value;
        match value {
            Value::Object(map) => map.iter().find_map(|(k, v)| {
                let path = format!("{top}.{k}");
                match self.classify(k) {
                    Field::Meta => self.nested_in_json(&path, v),
                    _ => Some(path),
                }
            }),
            Value::Array(items) => {
                items.iter().enumerate().find_map(|(i, v)| self.nested_in_json(&format!("{top}[{i}]"), v))
            }
            _ => None,
        }
    }

    /// The error for an access declaration nested at `path` inside another field (SPEC §5:
    /// exactly one top-level declaration; anything else that could declare one is an error).
    pub fn nested_error(&self, path: &str) -> String {
        format!(
            "`{path}` could declare an access list inside another field; the access list is the one top-level `{}` key (or name the field in `[corpus] not_access` if it is plain metadata)",
            self.key
        )
    }

    /// The groups of an access list given as JSON.
    pub fn groups_from_json(&self, value: &serde_json::Value) -> Result<Vec<String>, String> {
        use serde_json::Value;
        match value {
            Value::Array(items) => items
                .iter()
                .map(|g| match g {
                    Value::String(s) => check_group(s).map_err(|e| format!("`{}`: {e}", self.key)),
                    other => Err(format!("`{}` must list group names; found {other}", self.key)),
                })
                .collect(),
            Value::Null => Err(format!("`{}` is null: write a list of groups, or [] for no one", self.key)),
            other => Err(format!("`{}` must be a list of groups, e.g. [\"rh\"]; found {other}", self.key)),
        }
    }
}

/// Checks that no object anywhere in the JSON text `json` names a key twice. JSON parsers keep
/// one of the two values (serde_json the last, others the first), so a record with two access
/// lists would be read as whichever is more permissive to some reader: refused instead, with
/// the parser's line and column.
pub fn no_duplicate_keys(json: &str) -> serde_json::Result<()> {
    serde_json::from_str::<NoDuplicateKeys>(json).map(|_| ())
}

/// Front matter or a record read through [`no_duplicate_keys`]: visiting is the check.
pub struct NoDuplicateKeys;

impl<'de> serde::Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeysVisitor)
    }
}

struct NoDuplicateKeysVisitor;

impl<'de> serde::de::Visitor<'de> for NoDuplicateKeysVisitor {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<NoDuplicateKeys, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<NoDuplicateKeys, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!("the key `{key}` is given twice in one object")));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(NoDuplicateKeys)
    }
}

/// `key` as it looks: compatibility forms (`ａｃｌ`) folded, lower case.
fn folded(key: &str) -> String {
    unicode_normalization::UnicodeNormalization::nfkc(key).collect::<String>().to_lowercase()
}

/// Edits within which a key resembles the access key: 2 (SPEC §1), but 1 for keys of four
/// characters or fewer, where two edits leave one letter in common (`url` is not `acl`).
fn near(access: &str) -> usize {
    if access.chars().count() <= 4 {
        1
    } else {
        2
    }
}

fn plural(edits: usize) -> String {
    if edits == 1 {
        "one edit".into()
    } else {
        format!("{edits} edits")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_meta_and_suspicious_keys() {
        let rules = AccessKey::default();
        assert_eq!(rules.classify("acl"), Field::Access);
        for key in [
            "ACL",
            "acls",
            "Groups",
            "roles",
            "allowed_users",
            "access_level",
            "owner",
            "visibility",
            "security",
            "acm",
            "acl_groups",
            "doc_acl",
            "user_groups",
            "security_groups",
            "read_groups",
            "authorized_groups",
            "audiences",
            "viewers",
            "members",
            "teams",
            "tenant",
            "tenants",
            "visible_to",
            "shared_with",
            "ａｃｌ",
            "ＡＣＬ",
        ] {
            assert!(matches!(rules.classify(key), Field::Suspicious(_)), "{key}");
        }
        for key in
            ["title", "date", "tags", "layout", "weight", "sidebar_position", "hide-toc", "description", "url", "ai"]
        {
            assert_eq!(rules.classify(key), Field::Meta, "{key}");
        }
        let custom = AccessKey { key: "groups".into(), not_access: vec!["roles".into()] };
        assert_eq!(custom.classify("groups"), Field::Access);
        assert!(matches!(custom.classify("acl"), Field::Suspicious(_)));
        assert_eq!(custom.classify("roles"), Field::Meta);
        let long = AccessKey { key: "audiencia".into(), not_access: vec![] };
        assert!(matches!(long.classify("audienca"), Field::Suspicious(_)), "two edits of a long key");
    }

    #[test]
    fn groups_must_be_a_list_of_names() {
        let rules = AccessKey::default();
        assert_eq!(rules.groups_from_json(&serde_json::json!(["rh", "dpo"])).unwrap(), ["rh", "dpo"]);
        assert_eq!(rules.groups_from_json(&serde_json::json!([])).unwrap(), Vec::<String>::new());
        for bad in [
            serde_json::json!(null),
            serde_json::json!("rh"),
            serde_json::json!(""),
            serde_json::json!([1]),
            serde_json::json!(["ragsweep:public"]),
            serde_json::json!(["RAGSWEEP:public"]),
            serde_json::json!(["r\u{0}h"]),
            serde_json::json!(["r\nh"]),
        ] {
            assert!(rules.groups_from_json(&bad).is_err(), "{bad}");
        }
        assert_eq!(
            rules.nested_in_json("params", &serde_json::json!({"x": [{"acl": ["rh"]}]})).as_deref(),
            Some("params.x[0].acl")
        );
        assert_eq!(rules.nested_in_json("params", &serde_json::json!({"x": [{"y": 1}]})), None);
    }
}
