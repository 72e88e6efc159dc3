//! ragsweep: measure retrieval for RAG systems.
//!
//! Data flows one way, and the folders follow it: `experiment` (the TOML grid) → `plan`
//! (the distinct stages and, per cell, its sources) → `build` (chunk, embed, count tokens in
//! `stages`, then each index by its kind in `catalog`, from the content-keyed cache) →
//! `retrieve` (indexes, fusion, access rules, one retriever per cell) → `evaluate` (labels,
//! metrics, statistics) → `results` (the typed schema) → `output` (run directory and
//! exporters) → `compare` (diff, check, misses, merge). `runner` orchestrates. Only `catalog`
//! matches on a retriever's kind. The types several layers name (units, metrics, filters,
//! chunker and retriever parameters, judged lists) live in `vocab`, which imports nothing of the
//! crate; `tests/it/layout.rs` fails on any import cycle between modules or between folders, and on
//! a kind named outside the catalog. See `docs/ARCHITECTURE.md` for the map.

pub mod analyze;
pub mod atomic;
pub mod bench;
pub mod build;
pub(crate) mod catalog;
pub mod chat;
pub mod chunkers;
pub mod compare;
pub mod drafts;
pub mod engine;
pub mod error;
pub mod evaluate;
pub mod experiment;
pub(crate) mod grid;
pub mod init;
pub mod input;
pub mod install;
pub(crate) mod installed;
pub mod judge;
pub mod npy;
pub mod output;
pub mod own_models;
pub(crate) mod plan;
pub mod report;
pub mod results;
pub mod retrieve;
pub mod runner;
pub mod secret;
pub mod stages;
pub mod synth;
pub(crate) mod vocab;
pub mod words;

pub use error::{Error, Location, Result};
