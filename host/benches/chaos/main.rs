//! The chaos run: the whole system under a mix of faults, then invariants checked from the recorded history and
//! the final state. Not a timed test: a bench that prints what it injected and what it checked, and whose last
//! line starts `chaos: PASS` or `chaos: FAIL`.
//!
//! `cargo bench -p omni-operator --bench chaos -- --minutes N --seed S` (`--quick`: a small fleet for 2 minutes).
//! Knobs: `--clusters N` (1,000), `--workloads N` (10 workload clusters), `--releases-per-workload N` (10),
//! `--exports N` (50), `--syncs N` (50), `--converge SECONDS` (the bound to converge in once the faults stop,
//! 300), `--rss-limit-mib N` (the operator's bound, 512), `--process-fault-every SECONDS` (40). Needs libhelm_c
//! (`HELM_C_LIB`, or `tools/fetch-helm-c`).
//!
//! The driver (this process) runs the management kube-sim, omni-sim, the workload kube-sims (their workload
//! controllers make the chart's Deployments ready) and a chart repository; the operator is two
//! `omni-operator run --leader-elect` processes of the real binary, each with its Helm worker. Then:
//! 1. the fleet is applied (clusters with a control plane, workers and two machines each; Helm releases over the
//!    workload clusters; kubeconfig exports; secret syncs) and must converge before anything else happens;
//! 2. for `--minutes`, a seeded mix: spec edits, deletions and re-creations every 250 ms, with failures by rate in
//!    every simulator (kube-sim 503/500/429 with Retry-After, 409 on updates, 410 on lists and watches; omni-sim
//!    Unavailable, DeadlineExceeded, slow calls, dropped connections; the workload clusters 503), watch streams
//!    closed, history compacted, slow spells, Omni outages and restarts (state kept), the chart repository
//!    answering 500 or stalling downloads for a spell, and every `--process-fault-every` seconds one of:
//!    the leader SIGKILLed, the leader SIGTERMed (a failover), the standby SIGKILLed, the leader's Helm worker
//!    SIGKILLed (replicas that exit are started again after 2 s);
//! 3. the faults stop, deleted objects are created again, and the fleet must converge within `--converge`;
//! 4. invariants, from the final state and the history followed throughout: every object at its latest spec
//!    (every Omni resource equal to what the objects' template renders and translates into, with the plugin's
//!    own omni-template code, and none it does not render; the Helm release deployed with the wanted values at the
//!    wanted chart digest, the synced Secret, the
//!    exported kubeconfig), nothing in Omni or a workload cluster that no object wants, no Omni cluster torn down
//!    or destroyed unless its object was deleted with a destroying policy, never a write by a replica not holding
//!    the Lease (kube-sim's request log), no object stuck being deleted, no credential in a status, an Event or a
//!    log, and the operator's resident set within its bound (sampled every second).
//!
//! A failing invariant names the object and what the run did to it. The seed fixes every choice the driver makes
//! and every fault the simulators draw; the operator's own timing still varies from run to run.

#[path = "../../tests/shared/helm_lib.rs"]
mod helm_lib;
#[path = "../support/mod.rs"]
mod support;

mod faults;
mod fleet;
mod history;
mod invariants;
mod omni_state;
mod replicas;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use omni_operator::helm::repository::ChartRepository;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use fleet::{Fleet, NAMESPACE, Shape, Unit};
use invariants::Violation;
use replicas::{Replicas, Signal};
use support::number;

/// How long the fleet may take to converge before the faults start.
const SET_UP_BOUND: Duration = Duration::from_secs(600);

struct Options {
    minutes: f64,
    seed: u64,
    shape: Shape,
    converge: Duration,
    rss_limit_mib: u64,
    process_every: Duration,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options> {
        let quick = args.iter().any(|a| a == "--quick");
        let pick = |full: usize, small: usize| if quick { small } else { full };
        Ok(Options {
            minutes: number(args, "--minutes", if quick { 2.0 } else { 10.0 })?,
            seed: number(args, "--seed", 1)?,
            shape: Shape {
                clusters: number(args, "--clusters", pick(1000, 100))?,
                workloads: number(args, "--workloads", pick(10, 2))?,
                releases_per_workload: number(args, "--releases-per-workload", pick(10, 5))?,
                exports: number(args, "--exports", pick(50, 5))?,
                syncs: number(args, "--syncs", pick(50, 5))?,
            },
            converge: Duration::from_secs(number(args, "--converge", 300)?),
            rss_limit_mib: number(args, "--rss-limit-mib", 512)?,
            process_every: Duration::from_secs(number(
                args,
                "--process-fault-every",
                if quick { 20 } else { 40 },
            )?),
        })
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; nothing else here takes a value-less flag but `--quick`.
    let outcome = Options::parse(&args).and_then(|opts| {
        if opts.shape.workloads == 0 || opts.shape.releases_per_workload == 0 {
            bail!("--workloads and --releases-per-workload must be at least 1");
        }
        if opts.shape.clusters < opts.shape.stable() + 1 {
            bail!(
                "--clusters must be more than the {} clusters the releases, exports and syncs use",
                opts.shape.stable()
            );
        }
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("tokio")?
            .block_on(run(opts))
    });
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            println!("chaos: FAIL (the run could not be carried out: {e:#})");
            ExitCode::FAILURE
        }
    }
}

fn work_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("chaos")
}

/// The simulators and the chart repository, all in this process.
struct World {
    kube: kube_sim::KubeSim,
    omni: omni_sim::OmniSim,
    workloads: Vec<kube_sim::KubeSim>,
    repository: ChartRepository,
    _charts: tempfile::TempDir,
    /// Credentials the leak scan looks for.
    secrets: Vec<String>,
}

async fn run(opts: Options) -> Result<bool> {
    let dir = work_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let shape = opts.shape;
    println!(
        "chaos: seed {}, {} min of faults; {} OmniClusters (each with a control plane, workers and 2 machines), {} \
         OmniHelmReleases over {} workload clusters, {} OmniKubeconfigExports, {} OmniSecretSyncs; two replicas \
         with leader election",
        opts.seed,
        opts.minutes,
        shape.clusters,
        shape.workloads * shape.releases_per_workload,
        shape.workloads,
        shape.exports,
        shape.syncs
    );
    let lib = helm_lib::helm_c_lib();
    let (world, fleet) = start_world(shape, &lib).await?;
    let replicas = start_replicas(&world, &dir, &lib)?;
    println!("  logs: {}", dir.display());
    support::warm_plugin_cache(replicas.cache_dir()).await?;
    let mut run = Run {
        opts,
        world,
        fleet,
        replicas,
        writers: history::Writers::default(),
        removals: history::OmniRemovals::default(),
        churn: Churn::default(),
    };
    if !run.set_up().await? {
        return Ok(false);
    }
    let plan = run.chaos().await?;
    let injected = Injected::read(&run.world, plan);
    let (converged_in, remaining) = run.converge().await?;
    Ok(run.verdict(injected, converged_in, remaining).await)
}

/// A run under way: the world, the fleet, the operator's processes, and the history followed so far.
struct Run {
    opts: Options,
    world: World,
    fleet: Fleet,
    replicas: Replicas,
    writers: history::Writers,
    removals: history::OmniRemovals,
    churn: Churn,
}

/// What the simulators and the run injected, read when the faults stop.
struct Injected {
    kube: std::collections::BTreeMap<u16, u64>,
    watches_cut: u64,
    connections_dropped: u64,
    workloads: u64,
    omni: std::collections::BTreeMap<String, u64>,
    plan: faults::Plan,
}

impl Injected {
    fn read(world: &World, plan: faults::Plan) -> Injected {
        Injected {
            kube: world.kube.faults().injected(),
            watches_cut: world.kube.faults().watches_cut(),
            connections_dropped: world.kube.faults().connections_dropped(),
            workloads: world
                .workloads
                .iter()
                .flat_map(|w| w.faults().injected().into_values())
                .sum(),
            omni: world.omni.faults().injected(),
            plan,
        }
    }

    fn print(&self) {
        println!("faults injected:");
        for (status, n) in &self.kube {
            println!("  {n:>7}  kube-sim (management): HTTP {status}");
        }
        println!(
            "  {:>7}  kube-sim (management): watches cut short",
            self.watches_cut
        );
        println!(
            "  {:>7}  kube-sim (management): connections dropped without an answer",
            self.connections_dropped
        );
        println!("  {:>7}  workload kube-sims: HTTP 503", self.workloads);
        for (kind, n) in &self.omni {
            println!("  {n:>7}  omni-sim: {kind}");
        }
        for (what, n) in &self.plan.injected.events {
            println!("  {n:>7}  {what}");
        }
    }
}

impl Run {
    /// What the fleet wants and does not have yet (empty: converged).
    fn unconverged(&self) -> Vec<Violation> {
        invariants::converged(
            &self.fleet,
            &self.world.kube,
            &self.world.workloads,
            &self.world.omni,
        )
    }

    /// Keeps the replicas up and reads the history so far.
    fn follow(&mut self) -> Result<()> {
        self.replicas.supervise()?;
        self.replicas.sample_rss();
        self.writers.follow(&self.world.kube);
        self.removals.follow(&self.world.omni, self.fleet.elapsed());
        Ok(())
    }

    /// The fleet, applied at once; everything must converge before the chaos starts. False: it did not.
    async fn set_up(&mut self) -> Result<bool> {
        let kubeconfigs = workload_kubeconfigs(&self.world);
        for object in self
            .fleet
            .base_objects(&self.world.secrets[0], &kubeconfigs)?
        {
            self.world.kube.apply(&object).await?;
        }
        let units: Vec<Unit> = self.fleet.wanted.keys().copied().collect();
        for unit in units {
            for object in self.fleet.objects(unit) {
                self.world.kube.apply(&object).await?;
            }
        }
        self.replicas.start(0)?;
        self.replicas.start(1)?;
        let started = Instant::now();
        loop {
            self.follow()?;
            let pending = self.unconverged();
            if pending.is_empty() {
                break;
            }
            if started.elapsed() >= SET_UP_BOUND {
                report_violations(
                    "the fleet did not converge before the faults started",
                    &self.fleet,
                    &pending,
                );
                println!(
                    "chaos: FAIL (set-up: {} objects never converged)",
                    pending.len()
                );
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        println!(
            "  the fleet converged in {:.1} s; faults start",
            started.elapsed().as_secs_f64()
        );
        Ok(true)
    }

    /// The period of changes and faults; the plan of what was injected.
    async fn chaos(&mut self) -> Result<faults::Plan> {
        let mut rng = StdRng::seed_from_u64(self.opts.seed);
        let mut plan = faults::Plan::start(
            StdRng::seed_from_u64(rng.r#gen()),
            &self.world.kube,
            &self.world.workloads,
            &self.world.omni,
        );
        let every = self.opts.process_every;
        let period = Duration::from_secs_f64(self.opts.minutes * 60.0);
        let start = Instant::now();
        let mut next_change = Instant::now();
        let mut next_process_fault = Instant::now() + every.mul_f64(rng.gen_range(0.5..1.5));
        let mut next_follow = Instant::now();
        let mut next_progress = Instant::now() + Duration::from_secs(30);
        while start.elapsed() < period {
            let now = Instant::now();
            if now >= next_change {
                churn_once(&mut self.fleet, &self.world, &mut rng, &mut self.churn).await?;
                recreate_due(&mut self.fleet, &self.world, &mut self.churn).await?;
                next_change = now + Duration::from_millis(250);
            }
            plan.tick(
                &self.world.kube,
                &self.world.omni,
                &self.world.repository.faults,
            );
            if plan.restart_due() {
                self.fleet.event("omni-sim restarted (state kept)".into());
                self.world
                    .omni
                    .restart(true, faults::RESTART_DOWN_FOR)
                    .await?;
            }
            if now >= next_process_fault {
                self.process_fault(&mut rng, &mut plan).await?;
                next_process_fault = now + every.mul_f64(rng.gen_range(0.5..1.5));
            }
            if now >= next_follow {
                self.follow()?;
                next_follow = now + Duration::from_secs(1);
            } else {
                self.replicas.supervise()?;
            }
            if now >= next_progress {
                println!(
                    "  {:.0} s: {} edits, {} deletions, {} re-creations; {} replica restarts; operator peak RSS {:.1} MiB",
                    start.elapsed().as_secs_f64(),
                    self.churn.edits,
                    self.churn.deletions,
                    self.churn.recreations,
                    self.replicas.restarts,
                    self.replicas.peak_rss_kib as f64 / 1024.0
                );
                next_progress = now + Duration::from_secs(60);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        plan.stop(
            &self.world.kube,
            &self.world.workloads,
            &self.world.omni,
            &self.world.repository.faults,
        );
        Ok(plan)
    }

    /// The faults have stopped: deleted objects are created again, and the fleet must converge within the bound.
    /// How long it took (None: not within the bound), and what had not converged.
    async fn converge(&mut self) -> Result<(Option<Duration>, Vec<Violation>)> {
        for (due, _) in &mut self.fleet.recreate {
            *due = Instant::now();
        }
        let stopped = Instant::now();
        let mut remaining = Vec::new();
        let mut next_progress = Instant::now() + Duration::from_secs(15);
        while stopped.elapsed() < self.opts.converge {
            recreate_due(&mut self.fleet, &self.world, &mut self.churn).await?;
            self.follow()?;
            remaining = self.unconverged();
            if remaining.is_empty() {
                break;
            }
            if Instant::now() >= next_progress {
                let first = &remaining[0];
                println!(
                    "  {:.0} s after the faults: {} things not converged yet, e.g. {}: {}",
                    stopped.elapsed().as_secs_f64(),
                    remaining.len(),
                    first.unit.map_or_else(String::new, |u| self.fleet.name(u)),
                    first.what
                );
                next_progress = Instant::now() + Duration::from_secs(15);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let took = stopped.elapsed();
        // A check that started inside the bound may end past it: that is not within the bound either.
        if remaining.is_empty() && took > self.opts.converge {
            remaining.push(Violation {
                unit: None,
                what: format!(
                    "everything converged only {:.1} s after the faults stopped",
                    took.as_secs_f64()
                ),
            });
        }
        let converged_in = remaining.is_empty().then_some(took);
        self.follow()?;
        Ok((converged_in, remaining))
    }

    /// Checks every invariant, prints the report and the verdict line; whether all held.
    async fn verdict(
        mut self,
        injected: Injected,
        converged_in: Option<Duration>,
        remaining: Vec<Violation>,
    ) -> bool {
        let opts = &self.opts;
        let (removals_checked, wrong_removals) = invariants::removals(&self.fleet, &self.removals);
        let needles = self.credentials();
        let haystacks = invariants::haystacks(&self.world.kube, self.replicas.logs());
        let (leak_pairs, leaks) = invariants::leaks(&needles, &haystacks);
        let peak_mib = self.replicas.peak_rss_kib as f64 / 1024.0;
        self.replicas.stop_all().await;

        injected.print();
        println!(
            "churn: {} spec edits, {} deletions, {} re-creations; {} replica restarts, {} exits after a lost Lease or \
             an error; Lease changed hands {} times",
            self.churn.edits,
            self.churn.deletions,
            self.churn.recreations,
            self.replicas.restarts,
            self.replicas.unexpected_exits,
            self.writers.lease_changes
        );
        let writers = &self.writers;
        let checks: Vec<(&str, String, Vec<Violation>)> = vec![
            (
                "converged to the latest spec",
                match converged_in {
                    Some(t) => format!(
                        "{} objects within {:.1} s of the faults stopping (bound {} s)",
                        self.fleet.wanted.len(),
                        t.as_secs_f64(),
                        opts.converge.as_secs()
                    ),
                    None => format!("not within {} s", opts.converge.as_secs()),
                },
                remaining,
            ),
            (
                "no Omni cluster removed unless deleted with a destroying policy",
                format!(
                    "{removals_checked} teardowns and destroys of {} clusters, {} Omni RPCs",
                    self.removals.by_cluster.len(),
                    self.removals.rpcs
                ),
                wrong_removals,
            ),
            (
                "never two writers at once",
                format!(
                    "{} writes by the replicas, {} unread",
                    writers.writes_checked, writers.unread
                ),
                writers
                    .violations
                    .iter()
                    .map(|w| Violation {
                        unit: None,
                        what: w.clone(),
                    })
                    .chain((writers.unread > 0).then(|| Violation {
                        unit: None,
                        what: format!(
                            "{} requests left kube-sim's log before they were checked",
                            writers.unread
                        ),
                    }))
                    .collect(),
            ),
            (
                "no credential in a status, an Event or a log",
                format!(
                    "{} credentials in {} places ({leak_pairs} comparisons)",
                    needles.len(),
                    haystacks.len()
                ),
                leaks,
            ),
            (
                "operator memory bounded",
                format!(
                    "peak RSS {peak_mib:.1} MiB of one operator process (bound {} MiB), Helm worker {:.1} MiB, {} samples",
                    opts.rss_limit_mib,
                    self.replicas.peak_worker_rss_kib as f64 / 1024.0,
                    self.replicas.samples
                ),
                if peak_mib > opts.rss_limit_mib as f64 {
                    vec![Violation {
                        unit: None,
                        what: format!("an operator process reached {peak_mib:.1} MiB"),
                    }]
                } else {
                    Vec::new()
                },
            ),
        ];
        println!("invariants:");
        let mut broken = 0;
        for (name, figures, violations) in &checks {
            println!(
                "  {:<5} {name}: {figures}",
                if violations.is_empty() { "ok" } else { "FAIL" }
            );
            if !violations.is_empty() {
                broken += 1;
                report_violations(name, &self.fleet, violations);
            }
        }
        let summary = format!(
            "seed {}, {} min; converged {} after the faults stopped; operator peak RSS {peak_mib:.1} MiB",
            opts.seed,
            opts.minutes,
            converged_in.map_or("never".into(), |t| format!("in {:.1} s", t.as_secs_f64()))
        );
        if broken == 0 {
            println!("chaos: PASS ({summary})");
        } else {
            println!("chaos: FAIL ({broken} invariants broken; {summary})");
        }
        broken == 0
    }

    /// Every credential of the run, in the forms it could leak in: the service-account key, the workload
    /// clusters' kubeconfigs, every value a synced Secret held, the exported kubeconfigs as they stand.
    fn credentials(&self) -> Vec<String> {
        let mut needles = Vec::new();
        for secret in self
            .world
            .secrets
            .iter()
            .chain(self.fleet.sync_values().iter())
        {
            needles.extend(invariants::needle_forms(secret));
        }
        for e in 0..self.opts.shape.exports {
            if let Some(kubeconfig) = self
                .world
                .kube
                .get("v1", "Secret", NAMESPACE, &fleet::export_secret(e))
                .and_then(|s| s["data"]["kubeconfig"].as_str().map(str::to_string))
                && let Ok(bytes) =
                    base64::Engine::decode(&base64::engine::general_purpose::STANDARD, kubeconfig)
            {
                needles.extend(invariants::needle_forms(&String::from_utf8_lossy(&bytes)));
            }
        }
        needles
    }

    /// One fault of the operator's processes: the leader killed (40 %), failed over by SIGTERM (20 %), the standby
    /// killed (10 %), or the leader's Helm worker killed in the middle of an action (30 %).
    async fn process_fault(&mut self, rng: &mut StdRng, plan: &mut faults::Plan) -> Result<()> {
        let Run {
            replicas,
            writers,
            fleet,
            world,
            churn,
            ..
        } = self;
        let Some(leader) = writers.holder().map(str::to_string) else {
            return Ok(());
        };
        let standby = replicas.users().into_iter().find(|u| *u != leader);
        let roll = rng.gen_range(0..100);
        if roll < 40 {
            if replicas.signal(&leader, Signal::Kill) {
                plan.count("operator: leader SIGKILLed");
                fleet.event(format!("the leader ({leader}) SIGKILLed"));
            }
        } else if roll < 60 {
            if replicas.signal(&leader, Signal::Term) {
                plan.count("operator: leader SIGTERMed (failover)");
                fleet.event(format!("the leader ({leader}) SIGTERMed"));
            }
        } else if roll < 70 {
            if let Some(standby) = standby
                && replicas.signal(&standby, Signal::Kill)
            {
                plan.count("operator: standby SIGKILLed");
                fleet.event(format!("the standby ({standby}) SIGKILLed"));
            }
        } else {
            // A release is edited, and the worker dies as soon as Helm has marked the release pending in its workload
            // cluster: the kill lands inside the action, which a kill at a random moment seldom does.
            let releases: Vec<Unit> = fleet
                .wanted
                .iter()
                .filter(|(u, w)| matches!(u, Unit::Release(_)) && !w.deleted)
                .map(|(u, _)| *u)
                .collect();
            if releases.is_empty() {
                return Ok(());
            }
            let unit = releases[rng.gen_range(0..releases.len())];
            edit(fleet, world, unit, churn).await?;
            let (w, name) = (fleet.workload_of(unit).unwrap_or(0), fleet.name(unit));
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(10) {
                let pending = invariants::latest_revision(&world.workloads[w], &name)
                    .is_some_and(|r| r.status.starts_with("pending-"));
                if pending {
                    if replicas.kill_helm_worker(&leader) {
                        plan.count("operator: the leader's Helm worker SIGKILLed mid-action");
                        fleet.note(unit, "its Helm action's worker SIGKILLed".into());
                        fleet.event(format!(
                            "the leader's ({leader}) Helm worker SIGKILLed during {name}'s upgrade"
                        ));
                    }
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        Ok(())
    }
}

/// Prints up to ten violations, each with the history of the object it concerns, then what happened to the
/// operator's processes and Omni over the run.
fn report_violations(what: &str, fleet: &Fleet, violations: &[Violation]) {
    println!("    {} violations of {what:?}:", violations.len());
    for v in violations.iter().take(10) {
        match v.unit {
            Some(unit) => println!(
                "    - {}: {}\n      history: {}",
                fleet.name(unit),
                v.what,
                fleet.story(unit)
            ),
            None => println!("    - {}", v.what),
        }
    }
    if !fleet.events.is_empty() {
        println!(
            "      the run's process and Omni events: {}",
            fleet.events.join("; ")
        );
    }
}

async fn start_world(shape: Shape, lib: &Path) -> Result<(World, Fleet)> {
    let kube = omni_operator::stack::management_cluster(kube_sim::KubeSim::builder()).await?;
    let omni = omni_sim::OmniSim::builder()
        .listen(([127, 0, 0, 1], 0).into())
        .start()
        .await
        .context("starting omni-sim")?;
    let key = omni.mint_key("omni-operator", omni_sim::Role::Operator);
    let mut workloads = Vec::new();
    let mut secrets = vec![key];
    for _ in 0..shape.workloads {
        let w = kube_sim::KubeSim::builder()
            .workloads(kube_sim::workloads::WorkloadOptions::default())
            .start()
            .await?;
        secrets.push(w.kubeconfig(&w.admin()));
        workloads.push(w);
    }
    let charts = tempfile::tempdir()?;
    let repository = ChartRepository::bind(charts.path()).await?;
    support::publish_example_chart(lib, charts.path(), &repository.url).await?;
    let fleet = Fleet::new(shape, &omni.endpoint(), &repository.url);
    Ok((
        World {
            kube,
            omni,
            workloads,
            repository,
            _charts: charts,
            secrets,
        },
        fleet,
    ))
}

fn workload_kubeconfigs(world: &World) -> Vec<String> {
    world
        .workloads
        .iter()
        .map(|w| w.kubeconfig(&w.admin()))
        .collect()
}

fn start_replicas(world: &World, dir: &Path, lib: &Path) -> Result<Replicas> {
    let mut kubeconfigs = Vec::new();
    for user in ["replica-a", "replica-b"] {
        let credentials = world.kube.add_token_user(user, &["system:masters"]);
        let path = dir.join(format!("{user}.kubeconfig"));
        world.kube.write_kubeconfig(&path, &credentials)?;
        kubeconfigs.push(path);
    }
    let [a, b] =
        <[PathBuf; 2]>::try_from(kubeconfigs).map_err(|_| anyhow::anyhow!("two kubeconfigs"))?;
    Replicas::new(dir, lib, [a, b])
}

#[derive(Default)]
struct Churn {
    edits: u64,
    deletions: u64,
    recreations: u64,
}

/// One change, as a GitOps commit would make it: an edit (60 %), a deletion to be undone 5–30 s later (25 %),
/// or nothing (15 %).
async fn churn_once(
    fleet: &mut Fleet,
    world: &World,
    rng: &mut StdRng,
    churn: &mut Churn,
) -> Result<()> {
    let units: Vec<Unit> = fleet.wanted.keys().copied().collect();
    let unit = units[rng.gen_range(0..units.len())];
    if fleet.wanted.get(&unit).is_none_or(|w| w.deleted) {
        return Ok(());
    }
    let roll = rng.gen_range(0..100);
    if roll < 60 {
        // An export has nothing to edit that the run checks; its edits are deletions.
        if matches!(unit, Unit::Export(_)) {
            return Ok(());
        }
        edit(fleet, world, unit, churn).await?;
    } else if roll < 85 {
        // Clusters the releases, exports and syncs point at stay.
        if let Unit::Cluster(i) = unit
            && fleet.is_stable_cluster(i)
        {
            return Ok(());
        }
        for (api_version, kind, name) in fleet.deleted_objects(unit) {
            world
                .kube
                .delete(api_version, kind, NAMESPACE, &name)
                .await?;
        }
        if let Unit::Cluster(i) = unit
            && !Fleet::orphaned(i)
        {
            let at = fleet.elapsed();
            fleet
                .destroying_deletions
                .entry(fleet.name(unit))
                .or_default()
                .push(at);
        }
        if let Some(w) = fleet.wanted.get_mut(&unit) {
            w.deleted = true;
        }
        let back_in = Duration::from_secs(rng.gen_range(5..30));
        fleet.recreate.push((Instant::now() + back_in, unit));
        churn.deletions += 1;
        let policy = match unit {
            Unit::Cluster(i) if Fleet::orphaned(i) => " (orphan)",
            Unit::Cluster(_) => " (destroy in Omni)",
            _ => "",
        };
        fleet.note(
            unit,
            format!("deleted{policy}, back in {} s", back_in.as_secs()),
        );
    }
    Ok(())
}

/// The unit's next edit, applied.
async fn edit(fleet: &mut Fleet, world: &World, unit: Unit, churn: &mut Churn) -> Result<()> {
    let edits = {
        let wanted = fleet.wanted.get_mut(&unit).context("a wanted unit")?;
        wanted.edits += 1;
        wanted.edits
    };
    for object in fleet.objects(unit) {
        world.kube.apply(&object).await?;
    }
    churn.edits += 1;
    fleet.note(unit, format!("edited (edit {edits})"));
    Ok(())
}

/// Creates again what was deleted and is due, once its old objects are gone (applying over an object that is
/// still being deleted would only patch it).
async fn recreate_due(fleet: &mut Fleet, world: &World, churn: &mut Churn) -> Result<()> {
    let now = Instant::now();
    let due: Vec<Unit> = fleet
        .recreate
        .iter()
        .filter(|(at, _)| *at <= now)
        .map(|(_, u)| *u)
        .collect();
    for unit in due {
        let gone = fleet
            .deleted_objects(unit)
            .iter()
            .all(|(api_version, kind, name)| {
                world.kube.get(api_version, kind, NAMESPACE, name).is_none()
            });
        if !gone {
            continue;
        }
        for object in fleet.objects(unit) {
            world.kube.apply(&object).await?;
        }
        fleet.recreate.retain(|(_, u)| *u != unit);
        if let Some(w) = fleet.wanted.get_mut(&unit) {
            w.deleted = false;
        }
        churn.recreations += 1;
        fleet.note(unit, "created again".into());
    }
    Ok(())
}
