//! What the multi-process benchmarks share: a child process of the bench binary in a role (a simulator, the
//! host) that the driver talks to line by line, the role's runtime, and this process's memory and CPU figures.
#![allow(dead_code)] // Each bench uses what it needs.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use omni_operator::defaults;
use omni_operator::helm::protocol::Op;
use omni_operator::helm::{HelmEngine, WorkerEngine, WorkerOptions};
use omni_operator::runtime::{PluginSpec, Runtime, RuntimeConfig};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long a child process may take to say it is ready.
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// The value after `flag`, if given.
pub fn value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

pub fn number<T: std::str::FromStr>(args: &[String], flag: &str, default: T) -> Result<T> {
    match value(args, flag) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| anyhow::anyhow!("{flag} {v:?}: not a number")),
    }
}

/// One child process of this binary, in a role. It says `ready …` on stdout when it serves, answers one line per
/// line it is sent, and exits when its stdin closes (so it also goes when the driver does).
pub struct Role {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    log: PathBuf,
}

impl Role {
    /// Starts this binary as `--role role` with `args`; `label` tells runs apart in messages and log names, and
    /// its stderr goes to `<logs>/<role>-<label>.log`.
    pub async fn start(role: &str, label: &str, logs: &Path, args: &[String]) -> Result<Role> {
        let name = format!("{role} ({label})");
        let log = logs.join(format!("{role}-{label}.log"));
        let stderr =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let exe = std::env::current_exe().context("finding this bench's executable")?;
        let mut child = tokio::process::Command::new(exe)
            .args(["--role", role])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().context("the child's stdout")?).lines();
        Ok(Role {
            name,
            child,
            stdin,
            stdout,
            log,
        })
    }

    /// The words after `ready`.
    pub async fn ready(&mut self) -> Result<Vec<String>> {
        self.expect("ready", START_TIMEOUT).await
    }

    pub async fn ask(&mut self, question: &str) -> Result<Vec<String>> {
        let stdin = self.stdin.as_mut().context("stdin is closed")?;
        stdin
            .write_all(format!("{question}\n").as_bytes())
            .await
            .with_context(|| format!("asking {}", self.name))?;
        stdin.flush().await?;
        self.expect(question, Duration::from_secs(10)).await
    }

    pub async fn expect(&mut self, word: &str, within: Duration) -> Result<Vec<String>> {
        let line = tokio::time::timeout(within, self.stdout.next_line())
            .await
            .with_context(|| format!("{} did not answer {word:?} within {within:?}", self.name))?
            .with_context(|| format!("reading from {}", self.name))?
            .with_context(|| format!("{} exited; see {}", self.name, self.log.display()))?;
        let mut words = line.split_whitespace().map(String::from);
        if words.next().as_deref() != Some(word) {
            bail!("{} said {line:?}, expected {word:?}", self.name);
        }
        Ok(words.collect())
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The process's CPU time so far, in milliseconds (0 once it is gone).
    pub fn cpu_ms(&self) -> u64 {
        self.pid()
            .map_or(0, |pid| stat_cpu_ms(&format!("/proc/{pid}/stat")))
    }

    pub async fn stop(&mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// Runs a role on a multi-threaded runtime (as `omni-operator` runs) until its stdin closes.
pub fn serve(role: impl Future<Output = Result<()>>) -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("tokio")?;
    runtime.block_on(role)
}

/// Says `ready` with `words`, then answers the driver's lines with `answer` until stdin closes.
pub async fn ready_then_answer(
    words: &[String],
    mut answer: impl FnMut(&str) -> String,
) -> Result<()> {
    let mut out = tokio::io::stdout();
    out.write_all(format!("ready {}\n", words.join(" ")).as_bytes())
        .await?;
    out.flush().await?;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        out.write_all(format!("{}\n", answer(line.trim())).as_bytes())
            .await?;
        out.flush().await?;
    }
    Ok(())
}

/// User plus system CPU time of this process so far, from `/proc/self/stat` (fields 14 and 15, after the command
/// name, in USER_HZ ticks, which Linux fixes at 100 per second for this interface).
pub fn cpu_ms() -> u64 {
    stat_cpu_ms("/proc/self/stat")
}

fn stat_cpu_ms(path: &str) -> u64 {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after_name
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    ticks * 10
}

/// A `kB` field of `/proc/self/status` (0 where there is none).
pub fn proc_status_kib(field: &str) -> u64 {
    status_kib("/proc/self/status", field)
}

/// A `kB` field of another process's `/proc/<pid>/status` (0 where there is none, or the process is gone).
pub fn pid_status_kib(pid: u32, field: &str) -> u64 {
    status_kib(&format!("/proc/{pid}/status"), field)
}

fn status_kib(path: &str, field: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)?
                    .strip_prefix(':')?
                    .trim()
                    .strip_suffix("kB")?
                    .trim()
                    .parse()
                    .ok()
            })
        })
        .unwrap_or(0)
}

/// `perf record` attached to one process (sampled call stacks, unwound with DWARF), for `--profile`: started when
/// the measured work starts, stopped (SIGINT, as perf expects) when it ends. Summarise the file with
/// `tools/profile-phases FILE`.
pub struct Profiler {
    child: Child,
    out: PathBuf,
}

impl Profiler {
    pub async fn start(pid: u32, out: &Path) -> Result<Profiler> {
        let child = tokio::process::Command::new("perf")
            .args([
                "record",
                "--quiet",
                "-F",
                "499",
                "--call-graph",
                "dwarf,16384",
                "-p",
            ])
            .arg(pid.to_string())
            .arg("-o")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting perf record (install Debian's linux-perf)")?;
        // perf needs a moment to attach; samples before that are lost, not misattributed.
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(Profiler {
            child,
            out: out.to_path_buf(),
        })
    }

    /// Stops recording and waits for perf to write its file; the file's path.
    pub async fn stop(mut self) -> Result<PathBuf> {
        if let Some(pid) = self.child.id() {
            let _ = tokio::process::Command::new("kill")
                .args(["-INT", &pid.to_string()])
                .status()
                .await;
        }
        tokio::time::timeout(Duration::from_secs(120), self.child.wait())
            .await
            .context("perf record did not finish writing")??;
        Ok(self.out)
    }
}

/// Compiles the built-in plugins into the on-disk cache at `cache`, so a host that loads them from there starts
/// from precompiled code, as a restarted operator does, and its memory is a running operator's, not Cranelift's.
pub async fn warm_plugin_cache(cache: &Path) -> Result<()> {
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.to_path_buf()),
        ..RuntimeConfig::default()
    })?;
    for p in defaults::PLUGINS {
        runtime
            .load(PluginSpec::new(p.name, p.wasm.to_vec()).grants(p.grants()?))
            .await
            .with_context(|| format!("compiling built-in plugin {:?}", p.name))?;
    }
    Ok(())
}

/// `examples/charts/hello`, packaged and indexed by Helm into `dir` (served at `url`), in a worker of its own (the
/// operator binary, as `dev` serves charts), before anything is measured.
pub async fn publish_example_chart(lib: &Path, dir: &Path, url: &str) -> Result<()> {
    let engine = WorkerEngine::new(WorkerOptions {
        program: env!("CARGO_BIN_EXE_omni-operator").into(),
        lib: lib.to_path_buf(),
        concurrency: 1,
        memory_limit: Some(omni_operator::helm::DEFAULT_WORKER_MEMORY),
        scratch_base: std::env::temp_dir(),
    });
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/charts/hello");
    let publish = Op::Publish {
        charts: vec![source.display().to_string()],
        dir: dir.display().to_string(),
        base_url: url.to_string(),
    };
    engine
        .run(publish, None, Duration::from_secs(60))
        .await
        .context("packaging the example chart with Helm")?;
    Ok(())
}
