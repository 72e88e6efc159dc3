//! Questions drafted by a team's chat model, through the binary, against a loopback
//! OpenAI-compatible chat endpoint this test starts: `models add --chat` probes it; `draft`
//! keeps only drafts whose quote is in their section, drops invented quotes, near-duplicates and
//! malformed items (counted), flags questions that repeat their answer's rare words, sends no
//! restricted text, retries 429/5xx/truncated answers and caches every answer; `review` keeps,
//! edits and drops one key each, appends kept drafts to the golden set and resumes. The API key
//! is written nowhere.

use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

const KEY: &str = "chat-Sekr3t-9f2";

/// What the mock saw: every prompt it answered, and requests in all.
#[derive(Default)]
struct Seen {
    prompts: Vec<String>,
    requests: usize,
}

/// A loopback chat endpoint. Its first three answers are faults (429 with Retry-After 0, a
/// 500, a 200 whose body is cut short); then, per section, a good draft quoting the
/// section's first sentence, an invented quote, a near-duplicate of the good question, a
/// question that repeats the quote's rare words, and an item without a quote. A section that
/// says UNREADABLE gets prose instead of JSON.
fn mock() -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let s = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(1000) {
            let Ok(mut stream) = stream else { continue };
            let s = s.clone();
            std::thread::spawn(move || {
                let request = crate::common::MockRequest::read(&stream);
                let (target, auth) = (request.target.as_str(), request.header("authorization"));
                let request = request.json();
                let prompt = request["messages"][0]["content"].as_str().unwrap_or("").to_string();
                let n = {
                    let mut seen = s.lock().unwrap();
                    seen.requests += 1;
                    seen.requests
                };
                let (status, extra, answer) = if target != "/v1/chat/completions" {
                    (404, "", "{\"error\": \"no such path\"}".to_string())
                } else if auth != format!("Bearer {KEY}") {
                    (401, "", format!("{{\"error\": \"bad key in {auth}\"}}"))
                } else if prompt.starts_with("Reply with the word OK") {
                    (200, "", completion("OK"))
                } else if n == 2 {
                    (429, "Retry-After: 0\r\n", "{\"error\": \"slow down\"}".to_string())
                } else if n == 3 {
                    (500, "", "{\"error\": \"overloaded\"}".to_string())
                } else if n == 4 {
                    let whole = completion("{}");
                    (200, "", whole[..whole.len() / 2].to_string())
                } else if prompt.starts_with("Given a query and a passage") {
                    s.lock().unwrap().prompts.push(prompt.clone());
                    (200, "", completion(&grade_for(&prompt)))
                } else {
                    s.lock().unwrap().prompts.push(prompt.clone());
                    (200, "", completion(&drafts_for(&prompt)))
                };
                crate::common::mock_answer(&mut stream, status, extra, &answer);
            });
        }
    });
    (url, seen)
}

fn completion(content: &str) -> String {
    serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
    .to_string()
}

/// The mock model's answer to a drafting prompt (the default one: the section's text follows
/// the `Section:` line and a blank line).
fn drafts_for(prompt: &str) -> String {
    let text = prompt.split_once("\nSection: ").unwrap().1.split_once("\n\n").unwrap().1;
    if text.contains("UNREADABLE") {
        return "I am sorry, I cannot write questions about this.".into();
    }
    let title = prompt.split_once("Page: ").unwrap().1.lines().next().unwrap().trim().to_string();
    let body: String = text.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join(" ");
    // Quoted as a reader sees it: without Markdown's emphasis and code ticks.
    let first = body.split_once(". ").map_or(body.as_str(), |(s, _)| s).trim().replace(['*', '`'], "");
    let rare: Vec<&str> = first.split_whitespace().filter(|w| w.len() >= 7).collect();
    let items = serde_json::json!({"questions": [
        {"question": format!("What should I know about {title}?"), "quote": format!("{first}.")},
        {"question": format!("Is there a rule on {title} for visitors?"), "quote": "Visitors must always sign the blue ledger at night."},
        {"question": format!("what should i know about {}", title.to_lowercase()), "quote": format!("{first}.")},
        {"question": format!("{}?", rare.join(" ")), "quote": format!("{first}.")},
        {"question": "A question without its quote?"},
    ]});
    format!("Here you are:\n```json\n{items}\n```")
}

/// The mock model's grade: UMBRELA's 3 when the passage holds a word of six letters or more of
/// the query, else 0.
fn grade_for(prompt: &str) -> String {
    let (query, passage) = prompt.split_once("Query: ").unwrap().1.split_once("\nPassage: ").unwrap();
    let passage = passage.to_lowercase();
    let shared =
        query.split(|c: char| !c.is_alphanumeric()).any(|w| w.len() >= 6 && passage.contains(&w.to_lowercase()));
    serde_json::json!({"score": if shared { 3 } else { 0 }, "reason": if shared { "names what is asked" } else { "another topic" }})
        .to_string()
}

/// A documentation-like corpus in three folders, one page restricted, one unreadable, and a
/// golden set with one question.
fn project(root: &Path) {
    let pages = [
        ("guide/install.md", "", "# Install\n\n## Requirements\n\nThe installer needs Python 3 and the libsodium library installed beforehand. It checks both before it writes anything to the disk and stops with a message naming the missing piece, so nothing is left half installed on the machine.\n"),
        ("guide/upgrade.md", "", "# Upgrade\n\n## Backups\n\nTake a snapshot with the quiesce flag before every upgrade of the cluster. The snapshot keeps the catalogue and the journal together, so a failed upgrade rolls back to a consistent state without replaying the journal by hand.\n"),
        ("reference/flags.md", "", "# Flags\n\n## Verbosity\n\nThe flag `--chatter` raises the **verbosity** of every subcommand by one level. Given twice it also prints the timings of each network call, which helps to find a slow mirror or a proxy that holds connections open for too long.\n"),
        ("reference/odd.md", "", "# Odd\n\n## Broken\n\nUNREADABLE section text that the model refuses to handle for reasons of its own, written long enough to be a section worth a question in the corpus of this test.\n"),
        ("internal/payroll.md", "---\nacl: [\"rh\"]\n---\n", "# Payroll\n\n## Close\n\nThe payroll closes on the twentieth and the confidential bonus table lives in the vault under folder seven. Nobody outside human resources may read the bonus table or the vault's folder list, whatever their role.\n"),
    ];
    for (name, front, body) in pages {
        let path = root.join("docs").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{front}{body}")).unwrap();
    }
    std::fs::write(
        root.join("golden.jsonl"),
        "{\"id\": \"g1\", \"question\": \"which python does the installer need\", \"relevant\": [\"guide/install\"]}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("exp.toml"),
        "name = \"drafts\"\nunit = \"section\"\nk = [3]\nreserved_fraction = 0.0\n[corpus]\npath = \"docs\"\n\
         [golden]\npath = \"golden.jsonl\"\n[[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\n",
    )
    .unwrap();
}

fn ragsweep(root: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("ragsweep").unwrap();
    cmd.current_dir(root).env("CHAT_KEY", KEY).env("RAGSWEEP_MODELS", root.join("models"));
    cmd.env("RAGSWEEP_CACHE", root.join("cache"));
    cmd
}

/// `models add` of the mock as chat model `team-chat`, its key in CHAT_KEY.
fn add_chat(root: &Path, url: &str) -> assert_cmd::assert::Assert {
    ragsweep(root)
        .args(["models", "add", "--name", "team-chat", "--chat", "--url", url, "--model", "mock-chat"])
        .args(["--api-key-env", "CHAT_KEY"])
        .assert()
        .success()
}

/// The JSON lines of `file` in `root`.
fn jsonl(root: &Path, file: &str) -> Vec<Value> {
    crate::common::jsonl(&root.join(file))
}

fn drafts(root: &Path) -> Vec<Value> {
    jsonl(root, "drafts.jsonl")
}

#[test]
fn drafts_are_checked_by_code_kept_apart_and_reviewed_one_key_each() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    project(root);
    let (url, seen) = mock();
    let added = add_chat(root, &url);
    let said = String::from_utf8_lossy(&added.get_output().stdout).into_owned();
    assert!(said.contains("added team-chat: chat model mock-chat") && said.contains("\"OK\""), "{said}");
    let listed = ragsweep(root).args(["models", "list"]).assert().success();
    assert!(String::from_utf8_lossy(&listed.get_output().stdout).contains("chat model mock-chat"));

    let drafted =
        ragsweep(root).args(["draft", "exp.toml", "--with", "team-chat", "--sections", "4"]).assert().success();
    let out = String::from_utf8_lossy(&drafted.get_output().stdout).into_owned();
    let err = String::from_utf8_lossy(&drafted.get_output().stderr).into_owned();
    // Four sections sent (the restricted page is not): three answer with drafts, one with prose.
    assert!(out.contains("4 sections sent to team-chat"), "{out}");
    assert!(out.contains("3 retried"), "429, 500 and a cut answer are retried: {out}\n{err}");
    assert!(err.contains("HTTP 429") && err.contains("HTTP 500") && err.contains("not a chat completion"), "{err}");
    assert!(out.contains("3 quotes not in their section"), "{out}");
    assert!(
        out.contains("3 near-duplicates") && out.contains("3 malformed") && out.contains("1 answers unreadable"),
        "{out}"
    );
    assert!(out.contains("sections of 1 restricted documents were not sent"), "{out}");
    let first = drafts(root);
    assert_eq!(first.len(), 6, "a good and an echoing draft per readable section: {first:?}");
    for d in &first {
        let doc = d["relevant"].as_str().unwrap().split('#').next().unwrap().to_string();
        let text = std::fs::read_to_string(root.join("docs").join(format!("{doc}.md"))).unwrap();
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ").replace(['*', '`'], "");
        assert!(flat(&text).contains(&flat(d["quote"].as_str().unwrap())), "{d}");
        assert_eq!(d["status"], "pending");
        assert_eq!(d["by"], "model:team-chat");
        assert!(!doc.starts_with("internal/"), "{d}");
    }
    // The Markdown-free quote of the flags page is found once markup is set aside: no evidence span.
    let flags = first.iter().find(|d| d["relevant"].as_str().unwrap().starts_with("reference/flags")).unwrap();
    assert!(flags.get("evidence_doc").is_none(), "{flags}");
    let install = first.iter().find(|d| d["relevant"].as_str().unwrap().starts_with("guide/install")).unwrap();
    assert_eq!(install["evidence_doc"], "guide/install");
    let flagged: Vec<&Value> = first.iter().filter(|d| d.get("flags").is_some()).collect();
    assert_eq!(flagged.len(), 3, "the echoing drafts: {first:?}");
    assert!(flagged.iter().all(|d| d["flags"][0] == "repeats_rare_answer_words"));
    let prompts = seen.lock().unwrap().prompts.clone();
    assert!(prompts.iter().all(|p| !p.contains("bonus table")), "restricted text never leaves");

    // Again: every answer comes from the cache, and the drafts stay as they are.
    let before = seen.lock().unwrap().requests;
    let again = ragsweep(root).args(["draft", "exp.toml", "--with", "team-chat", "--sections", "4"]).assert().success();
    let out = String::from_utf8_lossy(&again.get_output().stdout).into_owned();
    assert_eq!(seen.lock().unwrap().requests, before, "nothing is sent twice");
    assert!(out.contains("4 answers reused from the cache") && out.contains("0 new drafts"), "{out}");
    assert_eq!(drafts(root), first);

    // Review: keep, edit, drop, then stop; a second session resumes at the fourth draft.
    ragsweep(root)
        .args(["review", "exp.toml"])
        .write_stdin("k\ne How do I see each network call's time?\nd\nq\n")
        .assert()
        .success();
    let golden: Vec<Value> = jsonl(root, "golden.jsonl");
    assert_eq!(golden.len(), 3, "{golden:?}");
    assert_eq!(golden[1]["question"], first[0]["question"]);
    assert_eq!(golden[1]["relevant"][0], first[0]["relevant"]);
    assert_eq!(golden[1]["meta"]["drafted_by"], "model:team-chat");
    assert_eq!(golden[2]["question"], "How do I see each network call's time?");
    assert_eq!(golden[2]["meta"]["drafted_question"], first[1]["question"]);
    let statuses: Vec<String> = drafts(root).iter().map(|d| d["status"].as_str().unwrap().to_string()).collect();
    assert_eq!(&statuses[..4], ["kept", "edited", "dropped", "pending"]);
    let resumed = ragsweep(root).args(["review", "exp.toml"]).write_stdin("x\nk\n").assert().success();
    let shown = String::from_utf8_lossy(&resumed.get_output().stdout).into_owned();
    assert!(shown.contains(&format!("draft {}", first[3]["id"].as_str().unwrap())), "{shown}");
    assert!(
        shown.contains("? answer k, e, d, s or q")
            && shown.contains("kept 1, edited 0, dropped 0; 2 drafts still pending"),
        "{shown}"
    );
    // The kept cases are cases of the golden set as a run reads it.
    ragsweep(root).args(["validate", "exp.toml"]).assert().success();

    for file in crate::common::walk(root) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(KEY), "the key is in {}", file.display());
    }
}

#[test]
fn suggested_grades_stay_apart_are_taken_with_one_key_and_their_agreement_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    project(root);
    std::fs::write(
        root.join("golden.jsonl"),
        [
            r#"{"id": "g1", "question": "installer needs a snapshot of the journal", "relevant": ["guide/install"]}"#,
            r#"{"id": "g2", "question": "snapshot of the cluster and the timings of each call", "relevant": ["guide/upgrade"]}"#,
            r#"{"id": "g3", "question": "which section holds the question about the disk", "relevant": ["reference/odd"]}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let (url, seen) = mock();
    add_chat(root, &url);
    ragsweep(root).args(["run", "exp.toml", "-q", "--out", "out"]).assert().success();
    let judge = |stdin: &str| {
        ragsweep(root)
            .args(["judge", "out/drafts/latest", "--order", "returned", "--who", "ana", "--suggest", "team-chat"])
            .write_stdin(stdin.to_string())
            .assert()
            .success()
    };
    let first = judge("y\n0\ny\nq\n");
    let out = String::from_utf8_lossy(&first.get_output().stdout).into_owned();
    let err = String::from_utf8_lossy(&first.get_output().stderr).into_owned();
    assert!(err.contains("team-chat suggested grades for") && err.contains("kept apart in"), "{err}");
    assert!(out.contains("model:team-chat suggests") && out.contains("(y takes it)"), "{out}");
    assert!(out.contains("agreement with model:team-chat on 3 units: weighted κ"), "{out}");
    let suggestions: Vec<Value> = jsonl(root, "suggestions.jsonl");
    assert!(suggestions.len() >= 3 && suggestions.iter().all(|s| s["who"] == "model:team-chat"), "{suggestions:?}");
    let judged: Vec<Value> = jsonl(root, "judgments.jsonl");
    assert_eq!(judged.len(), 3, "{judged:?}");
    assert!(judged.iter().all(|j| j["who"] == "ana"), "a taken suggestion is the person's judgment: {judged:?}");
    let suggested = |j: &Value| {
        suggestions.iter().find(|s| s["case"] == j["case"] && s["id"] == j["id"]).unwrap()["grade"].as_u64().unwrap()
    };
    assert_eq!(judged[0]["grade"].as_u64().unwrap(), suggested(&judged[0]));
    assert_eq!(judged[0]["note"], "as model:team-chat suggested");
    assert_eq!(judged[1]["grade"], 0);
    // Again: nothing is asked twice; a run reads the people's judgments only.
    let before = seen.lock().unwrap().requests;
    judge("q\n");
    assert_eq!(seen.lock().unwrap().requests, before);
    ragsweep(root).args(["run", "exp.toml", "-q", "--out", "out"]).assert().success();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("out/drafts/latest/manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["golden"]["judgments"]["judged"], 3, "{}", manifest["golden"]);
}

/// Ten policy pages, eight questions each labelled with its page, two BM25 cells.
fn policy_project(root: &Path) {
    let topics =
        ["laptops", "parking", "travel", "badges", "printers", "vacation", "expenses", "lockers", "visitors", "phones"];
    let teams = ["finance", "security", "facilities", "people", "legal"];
    std::fs::create_dir_all(root.join("docs")).unwrap();
    for (i, topic) in topics.iter().enumerate() {
        let team = teams[i % teams.len()];
        let text = format!("# Policy on {topic}\nThe policy for {topic} requires approval from the {team} team before anything changes.\n");
        std::fs::write(root.join("docs").join(format!("{topic}.md")), text).unwrap();
    }
    let golden: Vec<String> = topics[..8]
        .iter()
        .map(|t| format!("{{\"id\": \"q-{t}\", \"question\": \"approval for {t}\", \"relevant\": [\"{t}\"]}}"))
        .collect();
    std::fs::write(root.join("golden.jsonl"), golden.join("\n")).unwrap();
    std::fs::write(
        root.join("exp.toml"),
        "name = \"drafts\"\nunit = \"doc\"\nk = [3]\nreserved_fraction = 0.0\n[corpus]\npath = \"docs\"\n\
         [golden]\npath = \"golden.jsonl\"\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nk1 = [0.3, 1.5]\n",
    )
    .unwrap();
}

/// The policy project with the mock chat server as `team-chat`, run into `out/drafts/latest`.
fn policy_run(root: &Path) {
    policy_project(root);
    let (url, _seen) = mock();
    add_chat(root, &url);
    ragsweep(root).args(["run", "exp.toml", "-q", "--out", "out"]).assert().success();
}

/// Ana judging that run in random case order with team-chat's suggestions, answering `answers`.
fn judge_sample(root: &Path, answers: String) -> assert_cmd::assert::Assert {
    ragsweep(root)
        .args(["judge", "out/drafts/latest", "--order", "sample", "--who", "ana", "--suggest", "team-chat"])
        .write_stdin(answers)
        .assert()
        .success()
}

/// The `ragsweep ppi` table's rows: cell → (people only, model only, PPI mean).
fn ppi_rows(out: &str) -> Vec<(String, f64, f64, Option<f64>)> {
    out.lines()
        .filter(|l| l.starts_with("| c0"))
        .map(|l| {
            let cols: Vec<&str> = l.split('|').map(str::trim).collect();
            let ppi = cols[4].split_whitespace().next().and_then(|m| m.parse().ok());
            (cols[1].to_string(), cols[2].parse().unwrap(), cols[3].parse().unwrap(), ppi)
        })
        .collect()
}

#[test]
fn ppi_corrects_the_models_grades_with_the_cases_people_judged_through() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    policy_run(root);
    let judge = |stdin: String| judge_sample(root, stdin);
    // People judge the first cases of the random order through (the person disagrees with the
    // model on every unit: grade 1 where it says 0 and 0 where it says 2).
    let first = judge("1\n0\n".repeat(3) + "q\n");
    let shown = String::from_utf8_lossy(&first.get_output().stdout).into_owned();
    let order: Vec<&str> = shown.lines().filter_map(|l| l.split(" case ").nth(1)?.split(" · ").next()).collect();
    assert!(order.len() >= 6, "{shown}");
    let ppi = ragsweep(root).args(["ppi", "out/drafts/latest"]).assert().success();
    let out = String::from_utf8_lossy(&ppi.get_output().stdout).into_owned();
    assert!(out.contains("on tuning: 8 cases") && out.contains("judged through by people"), "{out}");
    assert!(out.contains("--order sample") && out.contains("3 cases judged through: intervals from so few"), "{out}");
    let rows = ppi_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    assert!(rows.iter().all(|r| r.3.is_some()), "two or more cases judged through give an interval: {out}");
    // Everything judged by people: the model adds nothing, PPI is the people's mean.
    judge("1\n".repeat(40) + "q\n");
    let all = ragsweep(root).args(["ppi", "out/drafts/latest"]).assert().success();
    let out = String::from_utf8_lossy(&all.get_output().stdout).into_owned();
    assert!(out.contains("judged through by people, 0 not"), "{out}");
    let rows = ppi_rows(&out);
    assert!(rows.iter().any(|r| (r.1 - r.2).abs() > 1e-3), "people and the model disagree: {out}");
    for (cell, people, _, ppi) in rows {
        assert!((ppi.unwrap() - people).abs() < 5e-5, "{cell}: {out}");
    }
}

/// `[golden] suggestions` makes a run decide on the PPI means: the model's grades corrected by
/// the cases people judged through, wherever they were judged from (a run made after judging
/// sees the same sample as `ppi` on the run judged), in `matrix.json` and `summary.md` with κ;
/// a merge of shards decides the same. Without the model's suggestions the selection stays on
/// people's labels and says why; a bad name is an error at its line.
#[test]
fn an_experiment_leaning_on_suggestions_selects_on_ppi_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    policy_run(root);
    let matrix = |run: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(root.join(run).join("matrix.json")).unwrap()).unwrap()
    };
    let first = matrix("out/drafts/latest");
    assert!(first.get("suggested").is_none(), "no suggestions declared: {first}");
    let metric = first["decision_metric"].as_str().unwrap().to_string();
    judge_sample(root, "1\n0\n".repeat(3) + "q\n");
    let ppi = ragsweep(root).args(["ppi", "out/drafts/latest"]).assert().success();
    let expected = ppi_rows(&String::from_utf8_lossy(&ppi.get_output().stdout));
    let plain = std::fs::read_to_string(root.join("exp.toml")).unwrap();
    let with = |name: &str| {
        let exp = plain
            .replace("\n[corpus]", &format!("\nselect = \"{metric}\"\n[corpus]"))
            .replace("path = \"golden.jsonl\"\n", &format!("path = \"golden.jsonl\"\nsuggestions = \"{name}\"\n"));
        std::fs::write(root.join("exp.toml"), exp).unwrap();
    };
    with("team-chat");
    let run = ragsweep(root).args(["run", "exp.toml", "--out", "out"]).assert().success();
    let out = String::from_utf8_lossy(&run.get_output().stdout).into_owned();
    assert!(out.contains("model:team-chat: the selection is on the PPI means"), "{out}");
    let m = matrix("out/drafts/latest");
    let grades = &m["suggested"];
    assert_eq!(grades["model"], "model:team-chat");
    assert!(grades.get("not_used").is_none(), "{grades}");
    let tuning = &grades["splits"][0];
    assert_eq!(tuning["split"], "tuning");
    assert_eq!(tuning["judged_through"], 3, "the sample judged on the earlier run: {tuning}");
    let selection = &m["selection"];
    assert_eq!(selection["grades_by"], "model:team-chat", "{selection}");
    let chosen = selection["cell"].as_str().unwrap();
    let (_, _, _, mean) = expected.iter().find(|r| r.0 == chosen).unwrap();
    let tuning_score = selection["tuning"].as_f64().unwrap();
    assert!((tuning_score - mean.unwrap()).abs() < 5e-5, "{selection} against ppi's {expected:?}");
    for cell in tuning["cells"].as_array().unwrap() {
        let row = expected.iter().find(|r| r.0 == cell["cell"].as_str().unwrap()).unwrap();
        assert!((cell["ppi"]["mean"].as_f64().unwrap() - row.3.unwrap()).abs() < 5e-5, "{cell} vs {row:?}");
        assert!((cell["people_only"].as_f64().unwrap() - row.1).abs() < 5e-5, "{cell} vs {row:?}");
    }
    assert!(grades["agreement"]["units"].as_u64().unwrap() >= 6, "{grades}");
    let summary = std::fs::read_to_string(root.join("out/drafts/latest/summary.md")).unwrap();
    for said in
        ["#### Grades suggested by model:team-chat", "The selection is on the PPI means", "weighted κ", "| standing |"]
    {
        assert!(summary.contains(said), "{said}: {summary}");
    }
    // Two shards merged decide as the whole run did.
    for i in 1..=2 {
        let shard = format!("{i}/2");
        ragsweep(root).args(["run", "exp.toml", "-q", "--out", "shards", "--shard", &shard]).assert().success();
    }
    let shards: Vec<String> = (1..=2)
        .map(|i| {
            let found = std::fs::read_dir(root.join("shards/drafts")).unwrap().flatten();
            let name =
                found.map(|e| e.file_name().into_string().unwrap()).find(|n| n.ends_with(&format!("-shard{i}of2")));
            format!("shards/drafts/{}", name.unwrap())
        })
        .collect();
    ragsweep(root).args(["merge", "exp.toml"]).args(&shards).args(["--out", "merged"]).assert().success();
    let merged = matrix("merged/drafts/latest");
    assert_eq!(merged["suggested"]["splits"], grades["splits"]);
    assert_eq!(merged["selection"]["cell"], selection["cell"]);
    // A model that suggested nothing: people's labels decide, and the run says why.
    with("other-chat");
    ragsweep(root).args(["run", "exp.toml", "-q", "--out", "out"]).assert().success();
    let m = matrix("out/drafts/latest");
    let why = m["suggested"]["not_used"].as_str().unwrap();
    assert!(why.contains("no suggestions of model:other-chat") && why.contains("--suggest other-chat"), "{why}");
    assert!(m["selection"].get("grades_by").is_none(), "{}", m["selection"]);
    with("Team Chat");
    let bad = ragsweep(root).args(["run", "exp.toml", "-q", "--out", "out"]).assert().failure();
    let err = String::from_utf8_lossy(&bad.get_output().stderr).into_owned();
    assert!(err.contains("exp.toml:") && err.contains("golden.suggestions"), "{err}");
}

/// Decision order reads suggestions.jsonl beside the judgments: with a model that grades as
/// people do, the stop rule speaks sooner than without it (here after 1 grade instead of 11),
/// and what it says is the same.
#[test]
fn decision_order_leans_on_suggestions_only_as_far_as_people_confirm_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    policy_project(root);
    // BM25 against a model that ranks at random: cells whose order judging can decide.
    crate::common::random_model(&root.join("models"), "random-16", 16, "");
    let exp = std::fs::read_to_string(root.join("exp.toml")).unwrap().replace("k = [3]", "k = [5]")
        + "[[retrievers]]\nkind = \"dense\"\nmodel = \"random-16\"\n";
    std::fs::write(root.join("exp.toml"), exp).unwrap();
    ragsweep(root).args(["run", "exp.toml", "-q", "--out", "out"]).assert().success();
    ragsweep(root)
        .args(["judge", "out/drafts/latest", "--order", "returned", "--export", "pool.jsonl"])
        .assert()
        .success();
    // People's grades: a unit is relevant when its page shares the question's team.
    let pool: Vec<Value> = jsonl(root, "pool.jsonl");
    assert!(pool.len() >= 8, "{}", pool.len());
    let graded: Vec<Value> = pool
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut p = p.clone();
            p["grade"] = u32::from(i % 3 == 0).into();
            p
        })
        .collect();
    let lines = |items: &[Value]| items.iter().map(|v| v.to_string() + "\n").collect::<String>();
    std::fs::write(root.join("oracle.jsonl"), lines(&graded)).unwrap();
    let stop = |suggested: bool| -> (usize, String) {
        let _ = std::fs::remove_file(root.join("judgments.jsonl"));
        let _ = std::fs::remove_file(root.join("suggestions.jsonl"));
        if suggested {
            let s: Vec<Value> = graded
                .iter()
                .map(|g| serde_json::json!({"case": g["case"], "id": g["id"], "grade": g["grade"], "who": "model:m"}))
                .collect();
            std::fs::write(root.join("suggestions.jsonl"), lines(&s)).unwrap();
        }
        ragsweep(root)
            .args(["judge", "out/drafts/latest", "--replay", "oracle.jsonl", "--trace", "trace.jsonl", "--who", "p"])
            .assert()
            .success();
        let trace: Vec<Value> = jsonl(root, "trace.jsonl");
        let spoke = trace.iter().find(|l| !l["verdict"].is_null() && l["verdict"] != "open").expect("the rule speaks");
        (spoke["judged"].as_u64().unwrap() as usize, format!("{} {}", spoke["verdict"], spoke["pick"]))
    };
    let (without, said) = stop(false);
    let (with, said_with) = stop(true);
    assert!(with < without, "with a faithful model the rule speaks after {with} grades, without after {without}");
    assert_eq!(said_with, said);
}

/// A chat model's settings out of range, a prompt without the section's text and a drafts file
/// that is not drafts stop `draft` at their place, and nothing is sent or written.
#[test]
fn bad_chat_settings_prompts_and_drafts_files_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    project(root);
    let (url, seen) = mock();
    add_chat(root, &url);
    let toml_path = root.join("models/team-chat/model.toml");
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    std::fs::write(&toml_path, format!("{toml}temperature = 5.0\n")).unwrap();
    let draft = |extra: &[&str]| {
        let out = ragsweep(root).args(["draft", "exp.toml", "--with", "team-chat"]).args(extra).assert().failure();
        String::from_utf8_lossy(&out.get_output().stderr).into_owned()
    };
    let said = draft(&[]);
    assert!(said.contains("team-chat/model.toml:") && said.contains("`temperature` must be within 0..=2"), "{said}");
    std::fs::write(&toml_path, toml).unwrap();
    std::fs::write(root.join("prompt.txt"), "Write {n} questions.").unwrap();
    let said = draft(&["--prompt", "prompt.txt"]);
    assert!(said.contains("the prompt has no {text}"), "{said}");
    std::fs::write(root.join("drafts.jsonl"), "{\"id\": \"d1\"}\n").unwrap();
    let said = draft(&[]);
    assert!(said.contains("drafts.jsonl:1") && said.contains("not a draft"), "{said}");
    assert_eq!(seen.lock().unwrap().requests, 1, "only the probe of models add was sent");
    assert_eq!(std::fs::read_to_string(root.join("drafts.jsonl")).unwrap(), "{\"id\": \"d1\"}\n");
}
