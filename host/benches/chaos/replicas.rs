//! The operator under test: two `omni-operator run --leader-elect` processes (the real binary, its Helm worker
//! its own child) against the management kube-sim, each as its own user so kube-sim's request log tells them
//! apart. A replica that exits (killed, or stopped after losing its Lease) is started again after a pause, as a
//! Deployment's pod would be; every incarnation's log is appended to the slot's file.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::process::{Child, Command};

use super::support::pid_status_kib;

/// How long a replica stays down before it is started again (a pod's restart back-off, shortened).
const RESTART_AFTER: Duration = Duration::from_secs(2);

/// The Lease's timing: client-go's rules, shortened so hand-overs happen many times in a run.
const LEASE_ARGS: [&str; 7] = [
    "--leader-elect",
    "--leader-elect-lease-duration",
    "4s",
    "--leader-elect-renew-deadline",
    "3s",
    "--leader-elect-retry-period",
    "500ms",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Kill,
    Term,
}

impl Signal {
    fn flag(self) -> &'static str {
        match self {
            Signal::Kill => "-KILL",
            Signal::Term => "-TERM",
        }
    }
}

struct Slot {
    user: String,
    kubeconfig: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    /// The running process's id (the child forgets its own once it has been reaped).
    pid: Option<u32>,
    down_since: Option<Instant>,
    incarnations: u32,
}

pub struct Replicas {
    slots: Vec<Slot>,
    cache: PathBuf,
    lib: PathBuf,
    /// Starts after the first (restarts).
    pub restarts: u64,
    /// Exits nobody asked for (a replica that lost its Lease exits with an error, by design).
    pub unexpected_exits: u64,
    /// Peak resident set of any one operator process, and of any Helm worker, in KiB.
    pub peak_rss_kib: u64,
    pub peak_worker_rss_kib: u64,
    /// Samples taken, for the report.
    pub samples: u64,
    expected_exit: Vec<u32>,
}

impl Replicas {
    /// Two replicas, `replica-a` and `replica-b`; `kubeconfigs` are theirs, in that order.
    pub fn new(dir: &Path, lib: &Path, kubeconfigs: [PathBuf; 2]) -> Result<Replicas> {
        let mut slots = Vec::new();
        for (user, kubeconfig) in ["replica-a", "replica-b"].into_iter().zip(kubeconfigs) {
            let log = dir.join(format!("{user}.log"));
            std::fs::write(&log, b"").with_context(|| format!("creating {}", log.display()))?;
            slots.push(Slot {
                user: user.to_string(),
                kubeconfig,
                log,
                child: None,
                pid: None,
                down_since: None,
                incarnations: 0,
            });
        }
        Ok(Replicas {
            slots,
            cache: dir.join("plugin-cache"),
            lib: lib.to_path_buf(),
            restarts: 0,
            unexpected_exits: 0,
            peak_rss_kib: 0,
            peak_worker_rss_kib: 0,
            samples: 0,
            expected_exit: Vec::new(),
        })
    }

    pub fn cache_dir(&self) -> &Path {
        &self.cache
    }

    pub fn users(&self) -> Vec<String> {
        self.slots.iter().map(|s| s.user.clone()).collect()
    }

    /// Starts the slot's process now.
    pub fn start(&mut self, index: usize) -> Result<()> {
        let (cache, lib) = (self.cache.clone(), self.lib.clone());
        let slot = &mut self.slots[index];
        slot.incarnations += 1;
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&slot.log)
            .with_context(|| format!("opening {}", slot.log.display()))?;
        writeln!(log, "=== {} incarnation {}", slot.user, slot.incarnations)?;
        let child = Command::new(env!("CARGO_BIN_EXE_omni-operator"))
            .env("RUST_LOG", "info")
            .env("HELM_C_LIB", &lib)
            .env_remove("POD_NAMESPACE")
            .arg("--cache-dir")
            .arg(&cache)
            .args(["run", "--kubeconfig"])
            .arg(&slot.kubeconfig)
            .args(["--namespace", super::fleet::NAMESPACE])
            .args(LEASE_ARGS)
            .args([
                "--enable-webhooks=false",
                "--health-probe-bind-address",
                "0",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting omni-operator as {}", slot.user))?;
        slot.pid = child.id();
        slot.child = Some(child);
        slot.down_since = None;
        Ok(())
    }

    /// Notices replicas that exited and starts them again once they were down long enough.
    pub fn supervise(&mut self) -> Result<()> {
        for i in 0..self.slots.len() {
            let slot = &mut self.slots[i];
            if let Some(child) = &mut slot.child
                && let Some(_status) = child.try_wait()?
            {
                let expected = self.expected_exit.iter().position(|p| Some(*p) == slot.pid);
                match expected {
                    Some(at) => {
                        self.expected_exit.swap_remove(at);
                    }
                    None => self.unexpected_exits += 1,
                }
                slot.child = None;
                slot.pid = None;
                slot.down_since = Some(Instant::now());
            }
            if slot.child.is_none()
                && slot
                    .down_since
                    .is_some_and(|since| since.elapsed() >= RESTART_AFTER)
            {
                self.restarts += 1;
                self.start(i)?;
            }
        }
        Ok(())
    }

    fn pid(&self, user: &str) -> Option<u32> {
        self.slots
            .iter()
            .find(|s| s.user == user)
            .and_then(|s| s.pid)
    }

    /// Sends `signal` to the replica running as `user`; false when it is not running.
    pub fn signal(&mut self, user: &str, signal: Signal) -> bool {
        let Some(pid) = self.pid(user) else {
            return false;
        };
        self.expected_exit.push(pid);
        send(pid, signal)
    }

    /// Kills the Helm worker of the replica running as `user`; false when it has none running.
    pub fn kill_helm_worker(&self, user: &str) -> bool {
        let Some(parent) = self.pid(user) else {
            return false;
        };
        match helm_workers(parent).first() {
            Some(&pid) => send(pid, Signal::Kill),
            None => false,
        }
    }

    /// Samples every operator process's and Helm worker's resident set.
    pub fn sample_rss(&mut self) {
        let pids: Vec<u32> = self.slots.iter().filter_map(|s| s.pid).collect();
        for pid in pids {
            self.peak_rss_kib = self.peak_rss_kib.max(pid_status_kib(pid, "VmRSS"));
            for worker in helm_workers(pid) {
                self.peak_worker_rss_kib = self
                    .peak_worker_rss_kib
                    .max(pid_status_kib(worker, "VmRSS"));
            }
        }
        self.samples += 1;
    }

    /// Everything every incarnation logged.
    pub fn logs(&self) -> String {
        self.slots
            .iter()
            .map(|s| std::fs::read_to_string(&s.log).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub async fn stop_all(&mut self) {
        for slot in &mut self.slots {
            if let Some(child) = &mut slot.child {
                if let Some(pid) = child.id() {
                    send(pid, Signal::Term);
                }
                if tokio::time::timeout(Duration::from_secs(15), child.wait())
                    .await
                    .is_err()
                {
                    let _ = child.kill().await;
                }
            }
            slot.child = None;
            slot.pid = None;
        }
    }
}

fn send(pid: u32, signal: Signal) -> bool {
    std::process::Command::new("kill")
        .args([signal.flag(), &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

/// The Helm worker processes `parent` started (`omni-operator helm-worker`).
fn helm_workers(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Field 4, after the parenthesised command name, is the parent's pid.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            ppid == Some(parent)
                && std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == b"helm-worker"))
        })
        .collect()
}
