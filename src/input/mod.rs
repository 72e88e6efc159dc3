//! What a run reads: the corpus (BEIR, JSONL, Markdown folders with front matter) and the
//! golden set.

pub mod access_key;
pub mod corpus;
pub mod formats;
pub mod frontmatter;
pub mod golden;
pub mod health;
pub mod includes;
pub mod judgments;
pub mod prose;
pub mod publish;
pub mod text;
