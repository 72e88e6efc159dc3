//! How a kind whose parameters are its own type (a dense index, a fusion method) is recorded in
//! a manifest and read back through its registry: `{tag: its name, its parameters…}`.

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serializer};
use serde_json::{Map, Value};

/// Writes `{tag: name, fields…}`.
pub(crate) fn write_tagged<S: Serializer>(
    serializer: S,
    tag: &str,
    name: &str,
    fields: Value,
) -> std::result::Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry(tag, name)?;
    if let Value::Object(fields) = fields {
        for (key, value) in &fields {
            map.serialize_entry(key, value)?;
        }
    }
    map.end()
}

/// The kind a record names under `tag` (`what` in messages), read by `read` from the rest;
/// `read` answers `None` for a name no kind has.
pub(crate) fn read_tagged<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    tag: &str,
    what: &str,
    read: impl Fn(&str, Value) -> Option<serde_json::Result<T>>,
) -> std::result::Result<T, D::Error> {
    let mut fields = Map::deserialize(deserializer)?;
    let Some(Value::String(name)) = fields.remove(tag) else {
        return Err(D::Error::custom(format!("a {what} without its `{tag}`")));
    };
    read(&name, Value::Object(fields))
        .ok_or_else(|| D::Error::custom(format!("unknown {what} {tag} {name:?}")))?
        .map_err(D::Error::custom)
}
