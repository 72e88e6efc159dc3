//! The run report in a real browser: the demo's `report.html` rendered by headless Chromium
//! (`scripts/install-test-tools.sh`), asserted on its DOM: one mark per cell in every plot, the
//! selected cell marked, a per-question grid of cells × cases, no console message (script
//! errors and Content-Security-Policy violations land there), no resource loaded. Screenshots
//! are left in the test's temporary folder (printed with --nocapture).

use crate::common;

use std::path::Path;
use std::process::Command;

use crate::common::{ragsweep, run_dir, run_experiment};
use serde_json::Value;

use crate::common::chromium;

/// Chromium flags for a quiet, offline, deterministic render.
const FLAGS: [&str; 11] = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--enable-logging=stderr",
    "--virtual-time-budget=5000",
];

/// The DOM after the page's script ran, and Chromium's log.
fn render(page: &Path, profile: &Path) -> (String, String) {
    let out = Command::new(chromium())
        .args(FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--v=0")
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A screenshot of each section of `page` (the page shows the anchor's section alone), kept in a
/// temporary folder named with `prefix` (printed with --nocapture); none may be empty.
fn screenshots(page: &Path, profile: &Path, prefix: &str, sections: &[&str]) {
    let shots = tempfile::Builder::new().prefix(prefix).tempdir().unwrap().keep();
    for section in sections {
        let file = shots.join(format!("{section}.png"));
        let status = Command::new(chromium())
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("--window-size=1280,1100")
            .arg(format!("--screenshot={}", file.display()))
            .arg(format!("file://{}#{section}", page.display()))
            .output()
            .unwrap();
        assert!(status.status.success());
        assert!(std::fs::metadata(&file).unwrap().len() > 10_000, "{section}: an empty screenshot");
    }
    println!("screenshots in {}", shots.display());
}

/// The texts of an SVG's tick labels on one axis (`x` or `y`).
fn ticks(svg: &str, axis: &str) -> Vec<String> {
    svg.split(&format!("class=\"tick {axis}\""))
        .skip(1)
        .map(|rest| rest[rest.find('>').unwrap() + 1..rest.find("</text>").unwrap()].to_string())
        .collect()
}

/// Tick labels are round numbers: evenly spaced by 1, 2 or 5 × a power of ten (a linear axis),
/// or 1, 2, 5 × powers of ten (a log axis).
fn assert_round_ticks(svg: &str, id: &str) {
    for axis in ["x", "y"] {
        let values: Vec<f64> = ticks(svg, axis)
            .iter()
            .map(|t| t.strip_suffix('k').map_or_else(|| t.parse::<f64>().unwrap(), |t| t.parse::<f64>().unwrap() * 1e3))
            .collect();
        assert!(values.len() >= 2, "#{id} {axis}: {values:?}");
        let round = |v: f64| {
            let p = 10f64.powf(v.abs().log10().floor());
            [1.0, 2.0, 5.0].iter().any(|m| (v.abs() / p - m).abs() < 1e-6)
        };
        let steps: Vec<f64> = values.windows(2).map(|w| w[1] - w[0]).collect();
        let even = steps.iter().all(|s| (s - steps[0]).abs() < 1e-9 * steps[0].abs().max(1.0));
        assert!(
            (even && round(steps[0])) || values.iter().all(|&v| round(v)),
            "#{id} {axis}: ticks are not round: {values:?}"
        );
    }
}

/// The markup of the element with `id` (up to its closing tag `</tag>`).
fn element<'a>(dom: &'a str, tag: &str, id: &str) -> &'a str {
    let start = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"));
    let end = start + dom[start..].find(&format!("</{tag}>")).unwrap();
    &dom[start..end]
}

#[test]
fn the_demo_report_renders_offline_with_one_mark_per_cell() {
    let quickstart = crate::common::quickstart_run();
    let run = run_dir(quickstart.out.path(), "quickstart");
    let page = run.join("report.html");
    let matrix: Value = serde_json::from_str(&std::fs::read_to_string(run.join("matrix.json")).unwrap()).unwrap();
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    let cells = manifest["cells"].as_array().unwrap().len();
    let reserved = manifest["golden"]["cases_per_split"]["reserved"].as_u64().unwrap() as usize;
    let selected = matrix["selection"]["cell"].as_str().unwrap().to_string();

    let profile = tempfile::tempdir().unwrap();
    let (dom, log) = render(&page, profile.path());
    assert!(dom.contains("data-rendered=\"true\""), "the script did not finish:\n{log}");
    assert!(dom.contains("data-resources=\"0\""), "the page loaded a resource");
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let thin = element(&dom, "section", "labels");
    assert!(thin.contains("Where labels are thin") && thin.contains("judge these"), "the panel of unjudged units");
    for id in ["quality-latency", "tuning-reserved"] {
        let svg = element(&dom, "svg", id);
        assert_eq!(svg.matches(" class=\"mark").count(), cells, "#{id}: one mark per cell");
        assert_eq!(svg.matches("class=\"mark selected\"").count(), 1, "#{id}");
        assert!(svg.contains(&format!("data-label=\"{selected}\"")), "#{id}: the selected cell is labelled");
        assert_round_ticks(svg, id);
    }
    assert!(element(&dom, "div", "quality-cost").contains("no prices are declared"), "an empty panel says why");
    let curves = element(&dom, "svg", "metric-at-k");
    assert_eq!(curves.matches("<polyline class=\"mark").count(), cells);
    assert!(curves.matches("<polyline class=\"mark other\"").count() >= cells - 8, "at most 8 highlighted lines");
    assert!(curves.contains(&format!("data-label=\"{selected}\"")));
    let ks: Vec<String> = manifest["experiment"]["k"].as_array().unwrap().iter().map(|k| k.to_string()).collect();
    assert_eq!(ticks(curves, "x"), ks, "the k axis has the grid's k values");
    assert!(element(&dom, "svg", "quality-latency").contains("class=\"frontier\""));
    let grid = element(&dom, "svg", "case-grid");
    assert!(grid.contains(&format!("data-cells=\"{cells}\"")), "{}", &grid[..200]);
    assert!(element(&dom, "div", "grid-counts").contains(&format!("{reserved} reserved questions")));
    assert!(dom.contains("id=\"slices\"") && dom.contains("id=\"matrix\""));
    let table = element(&dom, "table", "matrix-table");
    assert_eq!(table.matches(" data-cell=").count(), cells, "one matrix row per cell");
    assert!(element(&dom, "section", "header").contains(&format!("Selected on tuning by ndcg@10: {selected}")));

    screenshots(&page, profile.path(), "ragsweep-report-shots-", &["header", "plots", "grid", "slices", "matrix"]);
}

#[test]
fn report_rebuilds_the_page_of_a_run_written_before_it_existed() {
    let (out, cache) = (tempfile::tempdir().unwrap(), crate::common::shared_cache());
    run_experiment("experiments/demo-filters.toml", out.path(), cache.path());
    let run = run_dir(out.path(), "demo-filters");
    // What a run of the previous version wrote: no page, no summary, none of the new fields.
    std::fs::remove_file(run.join("report.html")).unwrap();
    std::fs::remove_file(run.join("summary.md")).unwrap();
    let mut matrix: Value = serde_json::from_str(&std::fs::read_to_string(run.join("matrix.json")).unwrap()).unwrap();
    matrix.as_object_mut().unwrap().remove("decision_metric");
    for row in matrix["rows"].as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove("p_vs_best");
        row.as_object_mut().unwrap().remove("vs_best");
        row.as_object_mut().unwrap().remove("diff_vs_best");
    }
    for key in ["prefer", "best", "equivalent", "undecided", "margin", "optimism_percentile"] {
        matrix["selection"].as_object_mut().unwrap().remove(key);
    }
    std::fs::write(run.join("matrix.json"), serde_json::to_vec(&matrix).unwrap()).unwrap();
    ragsweep().arg("report").arg(&run).assert().success();
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains("<script id=\"data\" type=\"application/json\">"));
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.starts_with("### demo-filters:"), "{summary}");

    let profile = tempfile::tempdir().unwrap();
    let (dom, log) = render(&run.join("report.html"), profile.path());
    assert!(dom.contains("data-rendered=\"true\""), "{log}");
    assert!(dom.contains("id=\"filters\""), "the filter modes side by side");
    assert!(!log.contains("CONSOLE"), "{log}");

    // With --vs the page carries the comparison with the other run.
    ragsweep().arg("report").arg(&run).arg("--vs").arg(&run).assert().success();
    let (dom, _) = render(&run.join("report.html"), profile.path());
    let diff = element(&dom, "table", "vs-table");
    let cells = std::fs::read_to_string(run.join("manifest.json")).unwrap().matches("\"cell\": ").count();
    assert_eq!(diff.matches(" data-cell=").count(), cells, "every cell matched by configuration");

    // A directory that is not a run says what it needs.
    let empty = tempfile::tempdir().unwrap();
    ragsweep().arg("report").arg(empty.path()).assert().failure().code(2);
}

#[test]
fn the_terminal_summary_fits_100_columns() {
    let stdout = crate::common::quickstart_stdout();
    assert!(stdout.contains("Selected on tuning by ndcg@10"), "{stdout}");
    assert!(stdout.contains("report.html"), "{stdout}");
    for line in stdout.lines() {
        assert!(line.chars().count() <= 100, "{} columns: {line}", line.chars().count());
    }
}

/// Text that tries to leave the page's data script (`<!--<script>`, `</script>`), inject markup
/// (`<img onerror>`) or split a JavaScript string (U+2028), in every place text reaches the
/// page and the summary: the page still renders, runs no other script and loads nothing, and
/// summary.md shows the text inert.
#[test]
fn hostile_text_in_the_data_cannot_break_the_page_or_the_summary() {
    const EVIL: &str = "<!--<script> </script><img src=x onerror=\"document.body.dataset.pwned=1\"> \u{2028}";
    let docs = [
        (
            "ferias.md".to_string(),
            format!(
                "---\ntitle: {}\n---\n# Férias {EVIL}\nTrinta dias de férias por ano.\n## Saldo {EVIL}\nO saldo de férias aparece no portal.\n",
                serde_json::to_string(&format!("Férias {EVIL}")).unwrap()
            ),
        ),
        ("ponto.md".to_string(), "# Ponto\nO ponto é registrado no aplicativo.\n".to_string()),
    ];
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let evil_json = serde_json::to_string(EVIL).unwrap();
    let golden = format!(
        r#"[{{"id": "q1 <!--<script>", "question": "dias de férias {q}", "relevant": ["ferias"], "tags": [{e}], "meta": {{"note": {e}}}}},
            {{"id": "q2</script>", "question": "registrar o ponto", "relevant": ["ponto"], "tags": [{e}]}},
            {{"id": "q3", "question": "dias de férias", "relevant": ["ferias"]}}]"#,
        q = EVIL.replace('"', "\\\""),
        e = evil_json
    );
    let f = common::Fixture::new(
        &docs,
        &golden,
        "name = \"evil<!--<script>\"\nunit = \"section\"\nk = [1, 3]\nreserved_fraction = 0.0\nlatency_cases = 2\nselect = \"ndcg@3\"\n\
         [[chunkers]]\nkind = \"markdown\"\ntitle = true\nheadings = true\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = [\"pt\", \"simple\"]\n",
    );
    let run = f.run();
    let page = run.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let data = &html[html.find("<script id=\"data\"").unwrap()..];
    let data = &data[..data.find("</script>").unwrap()];
    assert!(!data[1..].contains('<') && !data.contains('\u{2028}'), "the inlined data holds no `<` and no U+2028");
    assert!(html.contains("script-src 'sha256-"), "the CSP allows only the page's own script");
    assert!(!html.contains("'unsafe-inline'; img") && !html.contains("script-src 'unsafe-inline'"));

    let profile = tempfile::tempdir().unwrap();
    let (dom, log) = render(&page, profile.path());
    assert!(dom.contains("data-rendered=\"true\""), "the page's script ran to the end:\n{log}");
    assert!(dom.contains("data-resources=\"0\""), "nothing was loaded");
    assert!(!dom.contains("data-pwned"), "no injected handler ran");
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "no CSP violation or script error: {console:#?}");
    assert!(dom.contains("q1 &lt;!--&lt;script&gt;"), "the case id is shown as text");

    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(summary.starts_with("### evil&lt;!--&lt;script&gt;:"), "{summary}");
    assert!(!summary.contains("<script") && !summary.contains("<img") && !summary.contains("<!--"), "{summary}");
}

/// The page as a reader of a real grid sees it: 12 BM25 cells × the 300 SciFact test questions.
/// Round tick labels, the selected cell named on the plots, no empty panel (a panel without
/// information says why), a question grid that shows only the questions where cells disagree
/// (with the counts) at 6 px a column or more, one matrix row per cell. Screenshots of each
/// section are kept in the test's temporary folder (printed with --nocapture).
#[test]
fn a_300_question_scifact_grid_reads_without_hovering() {
    let scifact = common::repo().join("../shared/corpora/scifact").canonicalize().expect("../shared/corpora/scifact");
    let dir = tempfile::tempdir().unwrap();
    let experiment = dir.path().join("scifact-report.toml");
    std::fs::write(
        &experiment,
        format!(
            "name = \"scifact-report\"\nunit = \"doc\"\nk = [1, 3, 5, 10, 100]\nselect = \"ndcg@10\"\nlatency_cases = 20\n\
             [corpus]\npath = \"{p}\"\n[golden]\npath = \"{p}\"\ntuning = [\"test\"]\n\
             [[chunkers]]\nkind = \"none\"\ntitle = true\n\
             [[retrievers]]\nkind = \"bm25\"\nanalyzer = [\"en\", \"simple\"]\nk1 = [0.6, 0.9, 1.2]\nb = [0.4, 0.75]\n",
            p = scifact.display()
        ),
    )
    .unwrap();
    // The process's shared cache: parity's SciFact run builds the same `en` index.
    let out = dir.path().join("out");
    ragsweep().args(["run", "-q", "--out"]).arg(&out).arg(&experiment).assert().success();
    let run = run_dir(&out, "scifact-report");
    let page = run.join("report.html");
    let matrix: Value = serde_json::from_str(&std::fs::read_to_string(run.join("matrix.json")).unwrap()).unwrap();
    let selected = matrix["selection"]["cell"].as_str().unwrap().to_string();

    let profile = tempfile::tempdir().unwrap();
    let (dom, log) = render(&page, profile.path());
    assert!(dom.contains("data-rendered=\"true\""), "{log}");
    assert!(!log.contains("CONSOLE"), "{log}");
    for id in ["quality-latency", "metric-at-k"] {
        let svg = element(&dom, "svg", id);
        assert!(svg.contains(&format!("data-label=\"{selected}\"")), "#{id}: the selected cell is named on the plot");
        assert!(svg.contains(" class=\"mark"), "#{id} is not empty");
    }
    assert_round_ticks(element(&dom, "svg", "quality-latency"), "quality-latency");
    for (id, why) in [("quality-cost", "no prices are declared"), ("tuning-reserved", "no reserved cases")] {
        assert!(element(&dom, "div", id).contains(why), "#{id} says why it is not drawn");
    }
    let counts = element(&dom, "div", "grid-counts");
    assert!(counts.contains("300 tuning questions") && counts.contains("disagree"), "{counts}");
    let grid = element(&dom, "svg", "case-grid");
    let attr = |name: &str| -> usize {
        let at = grid.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        grid[at..at + grid[at..].find('"').unwrap()].parse().unwrap()
    };
    assert!(attr("data-column-px") >= 6, "{}", &grid[..300]);
    assert_eq!(attr("data-cases"), attr("data-disagree"), "only the questions where cells disagree are shown");
    assert!(attr("data-cases") < 300, "questions every cell hit or missed are not shown by default");
    assert_eq!(element(&dom, "table", "matrix-table").matches(" data-cell=").count(), 12);

    screenshots(&page, profile.path(), "ragsweep-scifact-shots-", &["plots", "grid", "matrix"]);
}

/// A run with many warnings still opens on its decision: at 1400 × 900 the selection and the
/// first plot end inside the window, the warnings are one line per group (closed, the decision's
/// first), each said once; summary.md groups them the same way.
#[test]
fn many_warnings_leave_the_decision_and_the_first_plot_on_the_first_screen() {
    let docs = [
        ("ferias.md", "# Férias\nTrinta dias de férias por ano.\n## Saldo\nO saldo de férias aparece no portal.\n"),
        ("ponto.md", "# Ponto\nO ponto é registrado no aplicativo.\n"),
        ("frota.md", "# Frota\nCaminhões elétricos rodam na frota urbana.\n"),
    ];
    let golden = r#"[{"id": "q1", "question": "dias de férias", "relevant": ["ferias#Férias"], "split": "tuning"},
        {"id": "q2", "question": "registrar o ponto", "relevant": ["ponto"], "split": "tuning"},
        {"id": "q3", "question": "caminhões da frota", "relevant": ["frota"], "split": "tuning"},
        {"id": "q4", "question": "saldo de férias", "relevant": ["ferias#Saldo"], "split": "reserved"},
        {"id": "q5", "question": "ponto no aplicativo", "relevant": ["ponto"], "split": "reserved"}]"#;
    let f = common::Fixture::new(
        &docs,
        golden,
        "name = \"noisy\"\nunit = \"section\"\nselect = \"ndcg@5\"\nk = [1, 5, 10]\nbudget = [4, 400]\nlatency_cases = 2\n\
         [[chunkers]]\nkind = \"none\"\n[[chunkers]]\nkind = \"markdown\"\n\
         [[retrievers]]\nkind = \"bm25\"\nb = [0.4, 0.75]\n",
    );
    let run = f.run();
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    let warnings = summary.lines().filter(|l| l.starts_with("- ")).count();
    assert!(
        summary.contains("\nWarnings: ") && summary.contains("<details open><summary>About the decision ("),
        "{summary}"
    );
    assert!(warnings >= 4, "a run with many warnings: {summary}");

    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args(FLAGS)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--window-size=1400,900")
        .arg("--dump-dom")
        .arg(format!("file://{}", run.join("report.html").display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8(out.stdout).unwrap();
    let attr = |name: &str| -> u32 {
        let at = dom.find(&format!("{name}=\"")).unwrap_or_else(|| panic!("no {name}"));
        let rest = &dom[at + name.len() + 2..];
        rest[..rest.find('"').unwrap()].parse().unwrap_or_else(|_| panic!("{name}: {}", &rest[..20]))
    };
    let (selection, plot) = (attr("data-selection-bottom"), attr("data-first-plot-bottom"));
    assert!(
        selection <= 900 && plot <= 900,
        "the selection ends at {selection} px, the first plot at {plot} px of 900"
    );
    let groups = dom.matches("class=\"warning-group\"").count();
    assert!((1..=4).contains(&groups), "{groups} groups");
    assert!(!dom.contains("<details class=\"warning-group\" open"), "groups start closed");
    let warnings = element(&dom, "div", "warnings");
    assert!(warnings.contains("about the decision"), "{warnings}");
    screenshots(&run.join("report.html"), profile.path(), "first-screen-", &["header"]);
}
