//! A private Milvus standalone server: the binary of the PyPI wheel `milvus` 2.3.5 (the same
//! server a Milvus cluster runs, in one process with an embedded etcd and local storage),
//! started with a configuration of our own: free local ports, its data folder in the stage
//! cache (so collections built by earlier runs are reused) or in a temporary folder, and
//! authentication on with a random root password kept beside the data, because the server
//! listens on every interface and the collections hold restricted documents.
//!
//! The server runs in its own process group; it is stopped when the [`MilvusServer`] is dropped
//! and on Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{fail, Client};
use crate::error::{Error, Result};

/// Process groups of the servers this process started, and their private folders, ended and
/// removed by the Ctrl-C handler.
static RUNNING: Mutex<Vec<(u32, Option<PathBuf>)>> = Mutex::new(Vec::new());

/// Ends every server of this process and removes its private folder (the Ctrl-C handler calls
/// it). Returns once each server has exited (a killed process still takes a moment to go), so
/// none outlives the run that started it.
pub(crate) fn stop_all() {
    for (group, private) in RUNNING.lock().map(|r| r.clone()).unwrap_or_default() {
        signal(group, "-KILL");
        reap(group);
        if let Some(dir) = private {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Waits (at most 10 s) until the server `pid`, a child of this process, has exited.
fn reap(pid: u32) {
    let t = Instant::now();
    let mut status = 0;
    // SAFETY: waitpid with a valid out pointer; the pid is our child's, or the call fails.
    while unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) } == 0
        && t.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(group: u32, sig: &str) {
    let _ = Command::new("kill").args([sig, "--", &format!("-{group}")]).stderr(Stdio::null()).status();
}

/// How long a first start may take (it unpacks nothing, but etcd and every coordinator start).
const START_TIMEOUT: Duration = Duration::from_secs(180);

pub struct MilvusServer {
    child: Child,
    /// The folder removed on stop (a private server's), if any.
    private: Option<PathBuf>,
    pub port: u16,
    pub password: String,
    /// The data folder.
    pub data: PathBuf,
    _lock: Option<std::fs::File>,
}

/// The binary of the Milvus installation `install` (`engines/milvus`), absolute.
pub fn binary(install: &Path) -> Result<PathBuf> {
    let bin = install.join("bin").join("milvus");
    if !bin.is_file() || !install.join("config.yaml.template").is_file() {
        return Err(fail(format!(
            "no Milvus in {}: run scripts/install-engines.sh (or pass --engines)",
            install.display()
        )));
    }
    std::path::absolute(&bin).map_err(|e| Error::io(&bin, e))
}

/// A port free on this machine now.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|e| fail(format!("no free port: {e}")))?;
    Ok(listener.local_addr().map_err(|e| fail(format!("no free port: {e}")))?.port())
}

/// The configuration template of the wheel with every `{{ key(type): default }}` replaced:
/// by `values[key]` when given, else by the template's default; a key with neither is an error.
fn render(template: &str, values: &[(&str, String)]) -> Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let end = rest[start..].find("}}").ok_or_else(|| fail("an unclosed {{ in Milvus's configuration template"))?;
        let inner = &rest[start + 2..start + end];
        let (key, default) = match inner.split_once(':') {
            Some((k, d)) => (k, Some(d.trim())),
            None => (inner, None),
        };
        let key = key.split('(').next().unwrap_or("").trim();
        let value = match values.iter().find(|(k, _)| *k == key) {
            Some((_, v)) => v.as_str(),
            None => default.ok_or_else(|| fail(format!("Milvus's configuration template needs {key:?}")))?,
        };
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn random_password() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32)
        .map(|_| char::from(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[rng.random_range(0..62)]))
        .collect()
}

/// A secret (a data folder's password, a token) in a file readable by its owner only.
pub fn write_secret(path: &Path, secret: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    f.write_all(secret.as_bytes()).map_err(|e| Error::io(path, e))
}

impl MilvusServer {
    /// Starts a server whose data lives in `cache/milvus` (created the first time); with one
    /// that another run holds, a private server and a note that says why.
    pub fn start_cached(install: &Path, cache: &Path) -> Result<(MilvusServer, Option<String>)> {
        let folder = cache.join("milvus");
        let Some(lock) = crate::engine::lock_folder(&folder)? else {
            let note = format!(
                "the engine cache {} is in use by another run: collections built in a private server",
                folder.display()
            );
            return Ok((MilvusServer::start_private(install)?, Some(note)));
        };
        let data = folder.join("data-2.3.5");
        // We hold the lock: a server still running on the folder was left by a run that died.
        let orphan = stop_orphan(&data);
        let relock = || {
            crate::engine::lock_folder(&folder)?
                .ok_or_else(|| fail(format!("{} is locked", folder.join("lock").display())))
        };
        let orphan_note = orphan.then(|| "a server left by a run that died was stopped".to_string());
        let first = match MilvusServer::start_in(install, &data, None, Some(lock)) {
            Ok(server) => return Ok((server, orphan_note)),
            Err(first) => first,
        };
        // The ports are chosen free, but another process may bind one before the server does:
        // a start that fails is tried once more, with new ports, before the data is given up.
        if let Ok(server) = MilvusServer::start_in(install, &data, None, Some(relock()?)) {
            return Ok((server, Some(format!("the engine cache started at the second attempt (first: {first})"))));
        }
        // A data folder that does not start (or whose password is lost) is rebuilt.
        let _ = std::fs::remove_dir_all(&data);
        let server = MilvusServer::start_in(install, &data, None, Some(relock()?))?;
        Ok((server, Some(format!("the engine cache did not start ({first}): emptied and rebuilt"))))
    }

    /// A server of its own in a temporary folder, removed when it stops. A start that fails
    /// (a port taken before the server binds it; the embedded etcd aborting while it starts) is
    /// tried once more in a new folder, as a cached server's is.
    pub fn start_private(install: &Path) -> Result<MilvusServer> {
        let start = || {
            let dir = crate::engine::private_folder(&std::env::temp_dir(), "milvus");
            MilvusServer::start_in(install, &dir.clone(), Some(dir), None)
        };
        start().or_else(|first| {
            start().map_err(|second| match second {
                Error::Engine { engine, what, source } => {
                    Error::Engine { engine, what: format!("{what} (the first attempt: {first})"), source }
                }
                other => other,
            })
        })
    }

    fn start_in(install: &Path, data: &Path, private: Option<PathBuf>, lock: Option<std::fs::File>) -> Result<Self> {
        use std::os::unix::process::CommandExt;
        let bin = binary(install)?;
        let install = bin.parent().and_then(Path::parent).expect("bin/milvus has a grandparent").to_path_buf();
        // The server runs in its data folder: every path it is given must be absolute.
        let data = &std::path::absolute(data).map_err(|e| Error::io(data, e))?;
        for sub in ["configs", "logs", "data", "run"] {
            let d = data.join(sub);
            std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
        }
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o700)).map_err(|e| Error::io(data, e))?;
        }
        let secret_path = data.join("root-password");
        let fresh = !data.join("data").join("etcd.data").exists();
        let password = match std::fs::read_to_string(&secret_path) {
            Ok(p) if !fresh => p.trim().to_string(),
            _ if fresh => random_password(),
            _ => return Err(fail(format!("{} lost its root password file", data.display()))),
        };
        let port = free_port()?;
        let mut values: Vec<(&str, String)> = vec![("proxy_port", port.to_string())];
        for key in [
            "etcd_port",
            "proxy_internal_port",
            "root_coord_port",
            "query_coord_port",
            "query_node_port",
            "index_coord_port",
            "index_node_port",
            "data_coord_port",
            "data_node_port",
        ] {
            values.push((key, free_port()?.to_string()));
        }
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        let storage = data.join("data");
        values.extend([
            ("etcd_log_path", path(data.join("logs").join("etcd.log"))),
            ("system_log_path", path(data.join("logs"))),
            ("etcd_data_dir", path(storage.join("etcd.data"))),
            ("local_storage_dir", path(storage.clone())),
            ("rocksmq_data_dir", path(storage.join("rocksmq"))),
            ("authorization_enabled", "true".into()),
        ]);
        let template_path = install.join("config.yaml.template");
        let template = std::fs::read_to_string(&template_path).map_err(|e| Error::io(&template_path, e))?;
        // The embedded etcd takes its ports from a file of its own (else 2379 and 2380, which a
        // second server on the machine would find taken).
        let etcd_port = &values.iter().find(|(k, _)| *k == "etcd_port").expect("set above").1;
        let peer = free_port()?;
        let etcd_config = data.join("configs").join("etcd.yaml");
        let etcd = format!(
            "name: default\nlisten-client-urls: http://127.0.0.1:{etcd_port}\nadvertise-client-urls: http://127.0.0.1:{etcd_port}\n\
             listen-peer-urls: http://127.0.0.1:{peer}\ninitial-advertise-peer-urls: http://127.0.0.1:{peer}\n\
             initial-cluster: default=http://127.0.0.1:{peer}\ninitial-cluster-state: new\n"
        );
        std::fs::write(&etcd_config, etcd).map_err(|e| Error::io(&etcd_config, e))?;
        let embed = "\n  use:\n    embed: true";
        let rendered = render(&template, &values)?;
        if !rendered.contains(embed) {
            return Err(fail("Milvus's configuration template has no embedded etcd section"));
        }
        let mut rendered =
            rendered.replacen(embed, &format!("\n  config:\n    path: {}{embed}", etcd_config.display()), 1);
        // A stop ends within seconds, and a restart waits at most 10 s for the sessions of a
        // server that was killed (30 s and 30 min by default). Its components ask each other
        // again at least every second while they start (up to 10 s apart by default): a restart
        // on a cached folder, which waits out the sessions its last stop left, took 30 s, 22 s now.
        for (from, to) in [
            ("gracefulStopTimeout: 1800", "gracefulStopTimeout: 20"),
            ("    ttl: 30 ", "    ttl: 10 "),
            ("\nqueryNode:\n", "\nqueryNode:\n  gracefulStopTimeout: 1\n"),
            ("    maxBackoff: 10 ", "    maxBackoff: 1 "),
        ] {
            if !rendered.contains(from) {
                return Err(fail(format!("Milvus's configuration template has no {from:?}")));
            }
            rendered = rendered.replacen(from, to, 1);
        }
        let config = data.join("configs").join("milvus.yaml");
        std::fs::write(&config, rendered).map_err(|e| Error::io(&config, e))?;
        let glog = install.join("glog.conf");
        std::fs::copy(&glog, data.join("configs").join("glog.conf")).map_err(|e| Error::io(&glog, e))?;
        let log_path = data.join("logs").join("milvus-stdout.log");
        let log = std::fs::File::create(&log_path).map_err(|e| Error::io(&log_path, e))?;
        let stderr = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
        let libs = bin.parent().expect("bin folder");
        let library_path = match std::env::var_os("LD_LIBRARY_PATH") {
            Some(old) => format!("{}:{}", libs.display(), old.to_string_lossy()),
            None => libs.display().to_string(),
        };
        crate::engine::install_interrupt_handler();
        let child = Command::new(&bin)
            .args(["run", "standalone"])
            .current_dir(data)
            .env("DEPLOY_MODE", "STANDALONE")
            .env("METRICS_PORT", free_port()?.to_string())
            .env("MILVUS_RUN_DIR", data.join("run"))
            .env("LD_LIBRARY_PATH", library_path)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .map_err(|e| fail(format!("cannot start {}: {e}", bin.display())))?;
        RUNNING.lock().expect("lock").push((child.id(), private.clone()));
        let _ = std::fs::write(data.join("server.pid"), child.id().to_string());
        let mut server =
            MilvusServer { child, private, port, password: password.clone(), data: data.clone(), _lock: lock };
        server.wait_ready(&log_path, fresh)?;
        if fresh {
            write_secret(&secret_path, &password)?;
        }
        Ok(server)
    }

    /// Waits until the server answers a health check; on a fresh data folder, replaces the
    /// default root password first.
    fn wait_ready(&mut self, log: &Path, fresh: bool) -> Result<()> {
        let started = Instant::now();
        let url = format!("http://127.0.0.1:{}", self.port);
        let default_login = Client::connect(&url, Some("root:Milvus"))?;
        let login = Client::connect(&url, Some(&format!("root:{}", self.password)))?;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                // A Go crash ends in its goroutines' stacks: its reason is the line that opens it.
                let said = match text.lines().find(|l| l.starts_with("panic:") || l.starts_with("fatal error:")) {
                    Some(reason) => reason.to_string(),
                    None => text.lines().rev().take(5).collect::<Vec<_>>().join(" | "),
                };
                return Err(fail(format!("Milvus exited ({status}) while starting: {said}")));
            }
            if fresh && default_login.set_password("root", "Milvus", &self.password).is_ok() {
                break;
            }
            if !fresh && login.healthy().is_ok() {
                break;
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(fail(format!(
                    "Milvus did not answer within {} s (log: {})",
                    START_TIMEOUT.as_secs(),
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        while login.healthy().is_err() {
            if started.elapsed() > START_TIMEOUT {
                return Err(fail(format!("Milvus did not become healthy (log: {})", log.display())));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Ok(())
    }
}

/// Stops a server that a run killed without cleanup left on `data`. True when one was running.
fn stop_orphan(data: &Path) -> bool {
    let Some(pid) = std::fs::read_to_string(data.join("server.pid")).ok().and_then(|p| p.trim().parse::<u32>().ok())
    else {
        return false;
    };
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if !String::from_utf8_lossy(&cmdline).contains("milvus") {
        return false;
    }
    // Stopped as a run stops its own server: asked first, so that what it was writing (the
    // collections' metadata) is on disk when the next server opens the folder; killed after 20 s.
    signal(pid, "-TERM");
    let t = Instant::now();
    while crate::engine::alive(pid) && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if crate::engine::alive(pid) {
        signal(pid, "-KILL");
        let t = Instant::now();
        while crate::engine::alive(pid) && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    true
}

impl Drop for MilvusServer {
    fn drop(&mut self) {
        let group = self.child.id();
        // A private server's data is thrown away: no graceful stop.
        signal(group, if self.private.is_some() { "-KILL" } else { "-TERM" });
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal(group, "-KILL");
        let _ = self.child.wait();
        if let Ok(mut running) = RUNNING.lock() {
            running.retain(|(g, _)| *g != group);
        }
        if let Some(dir) = &self.private {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_takes_our_values_and_its_defaults_and_refuses_an_unknown_key() {
        let t = "a: {{ etcd_port(int): 2379 }}\nb: {{ etcd_log_level: info }}\nc: {{ local_storage_dir }} # x\n";
        let out = render(t, &[("etcd_port", "5".into()), ("local_storage_dir", "/d".into())]).unwrap();
        assert_eq!(out, "a: 5\nb: info\nc: /d # x\n");
        assert!(render(t, &[]).unwrap_err().to_string().contains("local_storage_dir"));
    }
}
