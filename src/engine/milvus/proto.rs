//! The part of Milvus's gRPC API (milvus-proto 2.3, package `milvus.proto.milvus`) that loading
//! a collection and timing searches needs, as prost messages written by hand: only the fields
//! used, with the field numbers of the published `.proto` files, so no protoc runs at build time.

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub error_code: i32,
    #[prost(string, tag = "2")]
    pub reason: String,
    #[prost(int32, tag = "3")]
    pub code: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct KeyValuePair {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

pub fn kv(key: &str, value: impl Into<String>) -> KeyValuePair {
    KeyValuePair { key: key.into(), value: value.into() }
}

/// A field of a collection schema: its name, `data_type` and type parameters.
pub fn field(name: &str, data_type: i32, type_params: Vec<KeyValuePair>) -> FieldSchema {
    FieldSchema { name: name.into(), data_type, type_params, ..Default::default() }
}

/// `schema.DataType`.
pub mod data_type {
    pub const INT64: i32 = 5;
    pub const FLOAT: i32 = 10;
    pub const VARCHAR: i32 = 21;
    pub const ARRAY: i32 = 22;
    pub const FLOAT_VECTOR: i32 = 101;
}

#[derive(Clone, PartialEq, Message)]
pub struct FieldSchema {
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(bool, tag = "3")]
    pub is_primary_key: bool,
    #[prost(int32, tag = "5")]
    pub data_type: i32,
    #[prost(message, repeated, tag = "6")]
    pub type_params: Vec<KeyValuePair>,
    #[prost(bool, tag = "8")]
    pub auto_id: bool,
    #[prost(int32, tag = "10")]
    pub element_type: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct CollectionSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, repeated, tag = "4")]
    pub fields: Vec<FieldSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CreateCollectionRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    /// A serialised [`CollectionSchema`].
    #[prost(bytes = "vec", tag = "4")]
    pub schema: Vec<u8>,
    #[prost(int32, tag = "5")]
    pub shards_num: i32,
    /// `common.ConsistencyLevel` the collection's searches default to (0 strong, 2 bounded).
    #[prost(int32, tag = "6")]
    pub consistency_level: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct CollectionName {
    #[prost(string, tag = "3")]
    pub collection_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct DescribeCollectionResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<CollectionSchema>,
    /// Milliseconds since the Unix epoch.
    #[prost(uint64, tag = "7")]
    pub created_utc_timestamp: u64,
    #[prost(string, tag = "12")]
    pub collection_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct CreateAliasRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub alias: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct ScalarField {
    #[prost(oneof = "scalar_field::Data", tags = "2, 3, 6, 8")]
    pub data: Option<scalar_field::Data>,
}

pub mod scalar_field {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Data {
        #[prost(message, tag = "2")]
        Int(super::IntArray),
        #[prost(message, tag = "3")]
        Long(super::LongArray),
        #[prost(message, tag = "6")]
        Strings(super::StringArray),
        #[prost(message, tag = "8")]
        Array(super::ArrayArray),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct IntArray {
    #[prost(int32, repeated, tag = "1")]
    pub data: Vec<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct LongArray {
    #[prost(int64, repeated, tag = "1")]
    pub data: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub data: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FloatArray {
    #[prost(float, repeated, tag = "1")]
    pub data: Vec<f32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ArrayArray {
    #[prost(message, repeated, tag = "1")]
    pub data: Vec<ScalarField>,
    #[prost(int32, tag = "2")]
    pub element_type: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct VectorField {
    #[prost(int64, tag = "1")]
    pub dim: i64,
    #[prost(message, optional, tag = "2")]
    pub float_vector: Option<FloatArray>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FieldData {
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub field_name: String,
    #[prost(message, optional, tag = "3")]
    pub scalars: Option<ScalarField>,
    #[prost(message, optional, tag = "4")]
    pub vectors: Option<VectorField>,
}

#[derive(Clone, PartialEq, Message)]
pub struct InsertRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(message, repeated, tag = "5")]
    pub fields_data: Vec<FieldData>,
    #[prost(uint32, tag = "7")]
    pub num_rows: u32,
}

#[derive(Clone, PartialEq, Message)]
pub struct MutationResult {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(int64, tag = "6")]
    pub insert_cnt: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct FlushRequest {
    #[prost(string, repeated, tag = "3")]
    pub collection_names: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FlushResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(map = "string, message", tag = "3")]
    pub coll_seg_ids: std::collections::HashMap<String, LongArray>,
    #[prost(map = "string, uint64", tag = "6")]
    pub coll_flush_ts: std::collections::HashMap<String, u64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetFlushStateRequest {
    #[prost(int64, repeated, tag = "1")]
    pub segment_ids: Vec<i64>,
    #[prost(uint64, tag = "2")]
    pub flush_ts: u64,
    #[prost(string, tag = "4")]
    pub collection_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct BoolResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    /// `GetFlushStateResponse.flushed` and `BoolResponse.value` share the tag.
    #[prost(bool, tag = "2")]
    pub value: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct CreateIndexRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub field_name: String,
    #[prost(message, repeated, tag = "5")]
    pub extra_params: Vec<KeyValuePair>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DescribeIndexRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub field_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct IndexDescription {
    /// `index_type`, `metric_type` and `params` (a JSON object of the build parameters).
    #[prost(message, repeated, tag = "3")]
    pub params: Vec<KeyValuePair>,
    #[prost(string, tag = "4")]
    pub field_name: String,
    #[prost(int64, tag = "5")]
    pub indexed_rows: i64,
    #[prost(int64, tag = "6")]
    pub total_rows: i64,
    /// `common.IndexState`: 3 finished, 4 failed.
    #[prost(int32, tag = "7")]
    pub state: i32,
    #[prost(string, tag = "8")]
    pub index_state_fail_reason: String,
    #[prost(int64, tag = "9")]
    pub pending_index_rows: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct DescribeIndexResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub index_descriptions: Vec<IndexDescription>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetLoadStateRequest {
    #[prost(string, tag = "2")]
    pub collection_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetLoadStateResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    /// `common.LoadState`: 3 loaded.
    #[prost(int32, tag = "2")]
    pub state: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct PlaceholderValue {
    #[prost(string, tag = "1")]
    pub tag: String,
    /// `common.PlaceholderType`: 101 float vector.
    #[prost(int32, tag = "2")]
    pub r#type: i32,
    /// Each vector as little-endian f32 bytes.
    #[prost(bytes = "vec", repeated, tag = "3")]
    pub values: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PlaceholderGroup {
    #[prost(message, repeated, tag = "1")]
    pub placeholders: Vec<PlaceholderValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SearchRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    /// The filter expression.
    #[prost(string, tag = "5")]
    pub dsl: String,
    /// A serialised [`PlaceholderGroup`].
    #[prost(bytes = "vec", tag = "6")]
    pub placeholder_group: Vec<u8>,
    /// `common.DslType`: 1 boolean expression.
    #[prost(int32, tag = "7")]
    pub dsl_type: i32,
    /// The fields each hit carries back (a served collection's document id and text).
    #[prost(string, repeated, tag = "8")]
    pub output_fields: Vec<String>,
    #[prost(message, repeated, tag = "9")]
    pub search_params: Vec<KeyValuePair>,
    #[prost(int64, tag = "12")]
    pub nq: i64,
    /// `common.ConsistencyLevel`.
    #[prost(int32, tag = "14")]
    pub consistency_level: i32,
    #[prost(bool, tag = "15")]
    pub use_default_consistency: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct Ids {
    #[prost(message, optional, tag = "1")]
    pub int_id: Option<LongArray>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SearchResultData {
    #[prost(message, repeated, tag = "3")]
    pub fields_data: Vec<FieldData>,
    #[prost(float, repeated, tag = "4")]
    pub scores: Vec<f32>,
    #[prost(message, optional, tag = "5")]
    pub ids: Option<Ids>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SearchResults {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, optional, tag = "2")]
    pub results: Option<SearchResultData>,
}

/// A query of the rows an expression selects (`limit` and `offset` in `query_params`).
#[derive(Clone, PartialEq, Message)]
pub struct QueryRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub expr: String,
    #[prost(string, repeated, tag = "5")]
    pub output_fields: Vec<String>,
    #[prost(message, repeated, tag = "9")]
    pub query_params: Vec<KeyValuePair>,
    /// `common.ConsistencyLevel`.
    #[prost(int32, tag = "11")]
    pub consistency_level: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct QueryResults {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub fields_data: Vec<FieldData>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ShowCollectionsRequest {}

#[derive(Clone, PartialEq, Message)]
pub struct ShowCollectionsResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(string, repeated, tag = "2")]
    pub collection_names: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetQuerySegmentInfoRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct QuerySegmentInfo {
    #[prost(int64, tag = "5")]
    pub num_rows: i64,
    /// Empty when the segment was loaded without an index (searched by brute force).
    #[prost(string, tag = "6")]
    pub index_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetQuerySegmentInfoResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub infos: Vec<QuerySegmentInfo>,
}

#[derive(Clone, PartialEq, Message)]
pub struct UpdateCredentialRequest {
    #[prost(string, tag = "2")]
    pub username: String,
    /// Base64 of the password, as every client sends it.
    #[prost(string, tag = "3")]
    pub old_password: String,
    #[prost(string, tag = "4")]
    pub new_password: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct Empty {}

#[derive(Clone, PartialEq, Message)]
pub struct CheckHealthResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(bool, tag = "2")]
    pub is_healthy: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetVersionResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(string, tag = "2")]
    pub version: String,
}

/// Responses that carry a [`Status`].
pub trait HasStatus {
    fn status(&self) -> Option<&Status>;
}

impl HasStatus for Status {
    fn status(&self) -> Option<&Status> {
        Some(self)
    }
}

macro_rules! has_status {
    ($($t:ty),*) => {$(
        impl HasStatus for $t {
            fn status(&self) -> Option<&Status> {
                self.status.as_ref()
            }
        }
    )*};
}

has_status!(
    DescribeCollectionResponse,
    MutationResult,
    FlushResponse,
    BoolResponse,
    DescribeIndexResponse,
    GetLoadStateResponse,
    SearchResults,
    CheckHealthResponse,
    GetVersionResponse,
    GetQuerySegmentInfoResponse,
    QueryResults,
    ShowCollectionsResponse
);
