//! The CI recipes in docs/ci work as written: every `ragsweep` command in them is a real
//! subcommand with those flags, and every repository file they name exists.

use crate::common::{ragsweep, repo};
use yaml_rust2::{Yaml, YamlLoader};

/// Every shell line of the recipe's `run:` and `script:` entries.
fn shell_lines(doc: &Yaml, out: &mut Vec<String>) {
    match doc {
        Yaml::Hash(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    (Some("run"), Yaml::String(s)) => out.extend(s.lines().map(String::from)),
                    (Some("script"), Yaml::Array(items)) => {
                        out.extend(items.iter().filter_map(Yaml::as_str).flat_map(|s| s.lines().map(String::from)))
                    }
                    _ => shell_lines(v, out),
                }
            }
        }
        Yaml::Array(items) => items.iter().for_each(|i| shell_lines(i, out)),
        _ => {}
    }
}

#[test]
fn every_ragsweep_command_in_the_ci_recipes_exists_with_its_flags() {
    for recipe in ["docs/ci/github-actions.yml", "docs/ci/gitlab-ci.yml"] {
        let text = std::fs::read_to_string(repo().join(recipe)).unwrap();
        let docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{recipe}: {e}"));
        let mut lines = Vec::new();
        docs.iter().for_each(|d| shell_lines(d, &mut lines));
        let commands: Vec<Vec<&str>> = lines
            .iter()
            .filter_map(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                let at = words.iter().position(|w| w.ends_with("ragsweep"))?;
                Some(words[at + 1..].to_vec())
            })
            .collect();
        assert!(commands.len() >= 2, "{recipe}: {lines:#?}");
        for words in commands {
            let sub = words[0];
            let help = ragsweep().args([sub, "--help"]).assert().success().get_output().stdout.clone();
            let help = String::from_utf8(help).unwrap();
            for flag in words.iter().filter(|w| w.starts_with("--")) {
                let flag = flag.split('=').next().unwrap();
                assert!(help.contains(flag), "{recipe}: `ragsweep {sub}` has no {flag}");
            }
            for path in words.iter().filter(|w| w.ends_with(".toml")) {
                assert!(repo().join(path).is_file(), "{recipe}: {path} does not exist");
            }
        }
        for script in lines.iter().filter_map(|l| l.split_whitespace().find(|w| w.starts_with("scripts/"))) {
            assert!(repo().join(script).is_file(), "{recipe}: {script} does not exist");
        }
    }
}
