//! What a run reads: the corpus (BEIR, JSONL, Markdown folders with front matter) and the
//! golden set.

pub mod access_key;
pub mod corpus;
pub(crate) mod formats;
pub mod frontmatter;
pub mod golden;
pub mod health;
pub(crate) mod includes;
pub mod judgments;
pub(crate) mod prose;
pub(crate) mod publish;
pub mod text;
