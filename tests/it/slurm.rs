//! docs/scheduler/slurm-array.sh and slurm-merge.sh on a real Slurm cluster: a private
//! one-node cluster (munged, slurmctld and slurmd from Debian's `slurm-wlm` and `munge`,
//! installed by scripts/install-test-tools.sh) takes the 8-task array and the merge job that
//! waits for it with `--dependency=afterok`; the merged run equals an unsharded one.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::repo;

/// A one-node Slurm cluster in a temporary folder, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    daemons: Vec<Child>,
}

impl Cluster {
    fn start() -> Cluster {
        for tool in ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo"] {
            let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().unwrap();
            assert!(found.status.success(), "{tool} is missing: run scripts/install-test-tools.sh");
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for sub in ["state", "spool", "log"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let key: Vec<u8> =
            (0..1024u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8 ^ std::process::id() as u8).collect();
        std::fs::write(d.join("munge.key"), key).unwrap();
        std::fs::set_permissions(d.join("munge.key"), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let free_port = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        let host = String::from_utf8(Command::new("hostname").output().unwrap().stdout).unwrap().trim().to_string();
        let user =
            String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_string();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let conf = format!(
            "ClusterName=ragsweeptest\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser={user}\nSlurmdUser={user}\n\
             AuthType=auth/munge\nAuthInfo=socket={d}/munge.sock\nCredType=cred/munge\n\
             SlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\nSchedulerType=sched/builtin\nSelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\nReturnToService=2\nMpiDefault=none\nSwitchType=switch/none\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            d = d.display()
        );
        std::fs::write(d.join("slurm.conf"), conf).unwrap();
        let spawn = |cmd: &mut Command| cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let mut cluster = Cluster { dir, daemons: Vec::new() };
        let d = cluster.dir.path().to_path_buf();
        cluster.daemons.push(spawn(
            Command::new("munged")
                .args(["--foreground", "--force"])
                .arg(format!("--socket={}", d.join("munge.sock").display()))
                .arg(format!("--key-file={}", d.join("munge.key").display()))
                .arg(format!("--pid-file={}", d.join("munged.pid").display()))
                .arg(format!("--log-file={}", d.join("munged.log").display()))
                .arg(format!("--seed-file={}", d.join("munged.seed").display())),
        ));
        cluster.wait("munged", || d.join("munge.sock").exists());
        cluster.daemons.push(spawn(Command::new("slurmctld").arg("-D").arg("-f").arg(d.join("slurm.conf"))));
        cluster.daemons.push(spawn(Command::new("slurmd").arg("-D").arg("-f").arg(d.join("slurm.conf"))));
        let conf = d.join("slurm.conf");
        cluster.wait("an idle node", || {
            Command::new("sinfo")
                .args(["-h", "-o", "%T"])
                .env("SLURM_CONF", &conf)
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("idle"))
        });
        cluster
    }

    fn wait(&self, what: &str, ready: impl Fn() -> bool) {
        let started = Instant::now();
        while !ready() {
            assert!(started.elapsed() < Duration::from_secs(60), "no {what} after 60 s: {}", self.logs());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn logs(&self) -> String {
        ["log/slurmctld.log", "log/slurmd.log", "munged.log"]
            .iter()
            .map(|f| format!("--- {f}\n{}", std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default()))
            .collect()
    }

    /// A Slurm client command of this cluster.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("SLURM_CONF", self.dir.path().join("slurm.conf"));
        cmd
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for daemon in self.daemons.iter_mut().rev() {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

#[test]
fn an_array_job_and_its_afterok_merge_give_the_unsharded_run() {
    let cluster = Cluster::start();
    let work = tempfile::tempdir().unwrap();
    let grid = common::demo_grid();
    std::fs::write(work.path().join("grid.toml"), &grid).unwrap();
    for script in ["slurm-array.sh", "slurm-merge.sh"] {
        std::fs::copy(repo().join("docs/scheduler").join(script), work.path().join(script)).unwrap();
    }
    let path = common::path_with_ragsweep();
    // Another size than the script's 8: --array on the command line, RAGSWEEP_SHARDS for the merge.
    let submit = |args: &[&str]| -> String {
        let out = cluster
            .command("sbatch")
            .args(["--parsable"])
            .args(args)
            .current_dir(work.path())
            .env("PATH", &path)
            .env("RAGSWEEP_SHARDS", "3")
            .output()
            .unwrap();
        assert!(out.status.success(), "sbatch {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().split(';').next().unwrap().to_string()
    };
    let array = submit(&["--array=1-3", "slurm-array.sh"]);
    submit(&[&format!("--dependency=afterok:{array}"), "slurm-merge.sh"]);
    let started = Instant::now();
    loop {
        let queue = cluster.command("squeue").args(["-h", "-o", "%i %T"]).output().unwrap();
        let queue = String::from_utf8_lossy(&queue.stdout).to_string();
        if queue.trim().is_empty() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "jobs still queued after 600 s:\n{queue}{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let logs = |dir: &Path| -> String {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .map(|p| format!("--- {}\n{}", p.display(), std::fs::read_to_string(&p).unwrap_or_default()))
            .collect()
    };
    let runs = common::runs_in(&work.path().join("results/grid"));
    let shards = runs.iter().filter(|p| p.to_string_lossy().contains("shard")).count();
    assert_eq!(shards, 3, "3 shard runs: {runs:?}\n{}", logs(work.path()));
    let merged = runs
        .iter()
        .find(|p| !p.to_string_lossy().contains("shard"))
        .unwrap_or_else(|| panic!("no merged run: {runs:?}\n{}", logs(work.path())));
    common::assert_merged_equals_unsharded(merged, &grid);
}
