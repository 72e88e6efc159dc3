//! Typed errors for the library. Every error about user input says where it is:
//! file, and line (and column) when the input has lines.

use std::fmt;
use std::path::{Path, PathBuf};

/// A place in an input file. `line` and `column` are 1-based; 0 means "unknown".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Location {
    pub fn file(path: &Path) -> Self {
        Location { path: path.to_path_buf(), line: 0, column: 0 }
    }

    pub fn line(path: &Path, line: usize) -> Self {
        Location { path: path.to_path_buf(), line, column: 0 }
    }

    /// The location of byte `offset` in `text`.
    pub fn at_offset(path: &Path, text: &str, offset: usize) -> Self {
        let offset = offset.min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text[line_start..offset].chars().count() + 1;
        Location { path: path.to_path_buf(), line, column }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
            if self.column > 0 {
                write!(f, ":{}", self.column)?;
            }
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OS error is part of the message, not a `source`, so `{:#}` does not repeat it.
    #[error("{}: {}", path.display(), cause)]
    Io { path: PathBuf, cause: std::io::Error },

    /// Bad input data: a corpus, golden set or experiment file that cannot be used.
    #[error("{at}: {message}")]
    Input { at: Location, message: String },

    #[error("index: {0}")]
    Index(#[from] tantivy::TantivyError),

    /// A serving engine that could not start, load or answer; `what` says what was tried, and
    /// `source` is the I/O error underneath when there is one.
    #[error("{engine}: {what}")]
    Engine {
        engine: &'static str,
        what: String,
        #[source]
        source: Option<std::io::Error>,
    },

    /// An embedding model (or its runtime) that is not in the models folder.
    #[error("{what} is not installed ({} is missing): {hint}", missing.display())]
    NotInstalled { what: String, missing: PathBuf, hint: &'static str },

    /// A finished run whose experiment, corpus or files no longer match what it ran.
    #[error("{}: {why}", run.display())]
    StaleRun { run: PathBuf, why: String },

    /// A cell id that the experiment or run does not have.
    #[error("no cell {cell:?} in {} (cells: {})", source_of.display(), known.join(", "))]
    UnknownCell { cell: String, source_of: PathBuf, known: Vec<String> },

    /// Case ids that the golden set does not have.
    #[error("no case {} in the golden set {}", .cases.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>().join(", "), golden.display())]
    UnknownCase { cases: Vec<String>, golden: PathBuf },

    /// Answers scored against a run whose contexts were never written.
    #[error("{} is missing: write it with `ragsweep contexts`", path.display())]
    MissingContexts { path: PathBuf },

    /// `run --shard from-env` in a process no scheduler started as one task of an array.
    #[error("--shard from-env: {why}")]
    ShardFromEnv { why: String },

    /// A run directory that exists already: a run never writes into another.
    #[error("{}: a run with this id already exists", dir.display())]
    RunExists { dir: PathBuf },

    /// A model name that the installer does not know.
    #[error("unknown model {name:?}: the models are {}", known.join(", "))]
    UnknownModel { name: String, known: Vec<String> },

    /// A model `models add` or a run will not use: its files, its settings or its probe.
    #[error("{0}")]
    ModelRefused(String),

    /// Runs or cells that cannot be compared as asked: a cell not chosen, a metric, column or
    /// value they do not have, no case in common, a run whose files disagree.
    #[error("{0}")]
    Comparison(String),

    /// A model that failed to load or to compute what a run asked of it (embeddings, scores).
    #[error("{0}")]
    ModelFailed(String),

    /// Counting tokens: a tokenizer that cannot be loaded or cannot read a text.
    #[error("{0}")]
    Tokenizer(String),

    /// Installing models or ONNX Runtime from package registries.
    #[error("{0}")]
    Install(String),

    /// An answer gate (`answers --require`) that cannot be read or checked.
    #[error("{0}")]
    AnswerGate(String),

    /// Shards that cannot be run or merged as asked: a shard out of range, one missing.
    #[error("{0}")]
    Shards(String),

    /// A team's chat model, its prompts and what it drafted: settings, answers, files.
    #[error("{0}")]
    Chat(String),

    /// A file ragsweep wrote (a cache entry, an index, vectors) that is not what it wrote:
    /// refused, never read as numbers.
    #[error("{0}")]
    Damaged(String),

    /// An output that cannot go where it was asked: it exists, or it is an input.
    #[error("{} {why}", path.display())]
    Output { path: PathBuf, why: String },

    /// A document, section, case or chunk that the corpus, run or index does not hold.
    #[error("{0}")]
    NotFound(String),

    /// An engine asked for what it does not do (a served index, a filter benchmark).
    #[error("{0}")]
    EngineCannot(String),

    /// Judging: the judgments file, its trace and the terminal it is read at.
    #[error("{0}")]
    Judging(String),

    /// The timed pass, which could not time what was scored.
    #[error("{0}")]
    Latency(String),

    /// `synth`'s parameters.
    #[error("synthetic corpus: {0}")]
    Synth(String),

    /// A cell a test told to fail (`runner::FAIL_CELL_VAR`), to show the run goes on without it.
    #[error("cell {cell}: failed on purpose ({var})")]
    FailedOnPurpose { cell: String, var: &'static str },

    /// The last line of a list of errors cut at its cap.
    #[error("… and {0} more")]
    AndMore(usize),

    /// Several input errors, each located, found in one pass (a corpus folder).
    #[error("{}", many_message(.0))]
    Many(Vec<Error>),
}

fn many_message(errors: &[Error]) -> String {
    let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    format!("{} problems:\n  {}", lines.len(), lines.join("\n  "))
}

impl Error {
    pub fn io(path: &Path, cause: std::io::Error) -> Self {
        Error::Io { path: path.to_path_buf(), cause }
    }

    pub fn input(at: Location, message: impl Into<String>) -> Self {
        Error::Input { at, message: message.into() }
    }

    /// One error, or all of them (at most `cap` listed, and how many more).
    pub fn many(mut errors: Vec<Error>, cap: usize) -> Self {
        if errors.len() == 1 {
            return errors.remove(0);
        }
        let more = errors.len().saturating_sub(cap);
        errors.truncate(cap);
        if more > 0 {
            errors.push(Error::AndMore(more));
        }
        Error::Many(errors)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_counts_lines_and_chars() {
        let text = "ab\nção = 1\n";
        let at = Location::at_offset(Path::new("x.toml"), text, text.find('=').unwrap());
        assert_eq!((at.line, at.column), (2, 5));
        assert_eq!(at.to_string(), "x.toml:2:5");
    }
}
