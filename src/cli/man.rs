//! `ragsweep man`: the manual page, every command in one page.

use crate::Cli;

/// The run's writer, saying which stale staging directories it removed.
/// The man page: one page, every command in its own subsection (no per-command pages to miss).
pub fn page(w: &mut dyn std::io::Write) -> std::io::Result<()> {
    use clap::CommandFactory;
    use clap_mangen::roff::{bold, italic, roman, Roff};
    let mut cli = Cli::command();
    cli.build();
    let man = clap_mangen::Man::new(cli.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    man.render_options_section(w)?;
    let mut roff = Roff::default();
    roff.control("SH", ["COMMANDS"]);
    fn command(roff: &mut Roff, cmd: &clap::Command, path: &str) {
        let path = format!("{path} {}", cmd.get_name());
        if cmd.has_subcommands() {
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                command(roff, sub, &path);
            }
            return;
        }
        roff.control("SS", [path.as_str()]);
        if let Some(about) = cmd.get_long_about().or_else(|| cmd.get_about()) {
            roff.text([roman(about.to_string())]);
        }
        let usage = cmd.clone().render_usage().to_string();
        roff.control("PP", []).text([italic(usage.trim_start_matches("Usage: ").replace("ragsweep-", "ragsweep "))]);
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let name = match (arg.get_long(), arg.get_short()) {
                (Some(long), Some(short)) => format!("-{short}, --{long}"),
                (Some(long), None) => format!("--{long}"),
                _ => arg.get_value_names().and_then(|v| v.first()).map_or(arg.get_id().to_string(), |v| v.to_string()),
            };
            roff.control("TP", []).text([bold(name)]);
            if let Some(help) = arg.get_long_help().or_else(|| arg.get_help()) {
                roff.text([roman(help.to_string())]);
            }
        }
    }
    for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
        command(&mut roff, sub, "ragsweep");
    }
    roff.to_writer(w)?;
    man.render_version_section(w)
}
