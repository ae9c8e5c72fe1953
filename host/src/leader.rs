//! Leader election on a `coordination.k8s.io/v1` Lease, following client-go's `leaderelection` package, so with
//! several replicas there is never more than one writer:
//! - a candidate tries every retry period; it takes the Lease when nobody holds it, or when the record it last
//!   saw has not changed for the lease duration (time measured on its own clock from when it saw the change,
//!   never from the timestamps in the record, so clock skew between nodes does not matter);
//! - the leader renews every retry period; when it has not managed to for the renew deadline it has lost the
//!   lease and must stop writing at once (the operator exits, as controller-runtime's manager does). Since the
//!   renew deadline is shorter than the lease duration, it stops before any other replica may take over;
//! - every write is an update conditional on the resourceVersion read, so two candidates never both win;
//! - on a graceful shutdown the leader releases the Lease (holder emptied, duration 1 s), so a standby takes
//!   over within one retry period rather than a lease duration.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};

/// client-go's and controller-runtime's defaults, and the Go operator's Lease name.
pub const LEASE_NAME: &str = crate::contract::OPERATOR_LEASE;
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct LeaderConfig {
    pub namespace: String,
    pub name: String,
    /// This replica: client-go uses `<hostname>_<uuid>`.
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl LeaderConfig {
    /// The defaults, in `namespace`, for this process.
    pub fn new(namespace: &str) -> Self {
        LeaderConfig {
            namespace: namespace.to_string(),
            name: LEASE_NAME.to_string(),
            identity: identity(),
            lease_duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
        }
    }

    /// The renew deadline must be shorter than the lease duration (client-go refuses the configuration
    /// otherwise), and the retry period shorter than the renew deadline.
    pub fn check(&self) -> Result<()> {
        if self.renew_deadline >= self.lease_duration {
            anyhow::bail!(
                "the leader election renew deadline ({:?}) must be shorter than the lease duration ({:?})",
                self.renew_deadline,
                self.lease_duration
            );
        }
        if self.retry_period.is_zero() || self.retry_period >= self.renew_deadline {
            anyhow::bail!(
                "the leader election retry period ({:?}) must be above zero and shorter than the renew deadline ({:?})",
                self.retry_period,
                self.renew_deadline
            );
        }
        Ok(())
    }
}

/// `<hostname>_<random>`: unique per process even when two replicas share a host name.
fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "omni-operator".into());
    // The process id and the start time make the suffix unique enough without a random source of its own.
    let seed = format!(
        "{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    );
    let digest = <sha2::Sha256 as sha2::Digest>::digest(seed.as_bytes());
    let suffix: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{host}_{suffix}")
}

/// How holding the lease ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Renewals failed for the renew deadline: stop writing now.
    Lost,
    /// Shutdown: the lease was released (or an attempt was made).
    Released,
}

/// One replica's view of the Lease.
pub struct Elector {
    api: Api<Lease>,
    config: LeaderConfig,
    /// The Lease as last read or written (its resourceVersion is the precondition of the next update).
    observed: Option<Lease>,
    /// When the observed record last changed, on this process's clock.
    observed_at: Option<Instant>,
}

impl Elector {
    pub fn new(client: kube::Client, config: LeaderConfig) -> Self {
        Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
            observed_at: None,
        }
    }

    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    fn spec(&self) -> Option<&LeaseSpec> {
        self.observed.as_ref().and_then(|l| l.spec.as_ref())
    }

    fn holder(&self) -> Option<&str> {
        self.spec()
            .and_then(|s| s.holder_identity.as_deref())
            .filter(|h| !h.is_empty())
    }

    pub fn is_leader(&self) -> bool {
        self.holder() == Some(self.config.identity.as_str())
    }

    /// Whether the observed record is within its lease duration, by this process's clock.
    fn lease_valid(&self, now: Instant) -> bool {
        let seconds = self
            .spec()
            .and_then(|s| s.lease_duration_seconds)
            .unwrap_or(0)
            .max(0) as u64;
        self.observed_at
            .is_some_and(|at| at + Duration::from_secs(seconds) > now)
    }

    fn observe(&mut self, lease: Lease) {
        self.observed = Some(lease);
        self.observed_at = Some(Instant::now());
    }

    /// Waits until this replica holds the lease; false when `shutdown` came first.
    pub async fn acquire(&mut self, shutdown: impl std::future::Future<Output = ()>) -> bool {
        tokio::pin!(shutdown);
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(lease = %self.config.name, identity = %self.config.identity, "became the leader");
                    return true;
                }
                Ok(false) => {
                    tracing::debug!(lease = %self.config.name, holder = ?self.holder(), "the lease is held by another replica")
                }
                Err(e) => {
                    tracing::warn!(lease = %self.config.name, error = %format!("{e:#}"), "could not acquire the lease")
                }
            }
            // client-go's jitter: up to 1.2 retry periods more, so candidates do not try in lock step.
            let jitter = self
                .config
                .retry_period
                .mul_f64(1.2 * pseudo_random_fraction());
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry_period + jitter) => {}
                _ = &mut shutdown => return false,
            }
        }
    }

    /// Renews the lease every retry period until renewals fail for the renew deadline ([`Ended::Lost`]) or
    /// `shutdown` resolves (the lease is released: [`Ended::Released`]).
    pub async fn hold(&mut self, shutdown: impl std::future::Future<Output = ()>) -> Ended {
        tokio::pin!(shutdown);
        let mut last_renewed = Instant::now();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry_period) => {}
                _ = &mut shutdown => {
                    self.release().await;
                    return Ended::Released;
                }
            }
            // A renewal attempt may not outlast the deadline either: a hung request must not keep a replica
            // writing after the lease could have passed on.
            let left = self
                .config
                .renew_deadline
                .saturating_sub(last_renewed.elapsed());
            // A renewal counts from when it was sent, not answered: the other replicas see it from about then.
            let attempt = Instant::now();
            let renewed = tokio::time::timeout(left, self.try_acquire_or_renew()).await;
            match renewed {
                Ok(Ok(true)) => last_renewed = attempt,
                Ok(Ok(false)) => {
                    tracing::error!(lease = %self.config.name, holder = ?self.holder(), "the lease was taken by another replica");
                    return Ended::Lost;
                }
                Ok(Err(e)) => {
                    tracing::warn!(lease = %self.config.name, error = %format!("{e:#}"), "could not renew the lease")
                }
                Err(_) => {
                    tracing::warn!(lease = %self.config.name, "renewing the lease timed out")
                }
            }
            if last_renewed.elapsed() >= self.config.renew_deadline {
                tracing::error!(lease = %self.config.name, deadline = ?self.config.renew_deadline, "could not renew the lease within the renew deadline; leadership lost");
                return Ended::Lost;
            }
        }
    }

    /// client-go's `tryAcquireOrRenew`: true when this replica holds the lease afterwards.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool> {
        let now = jiff::Timestamp::now();
        let me = self.config.identity.clone();
        let duration = i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let mut record = LeaseSpec {
            holder_identity: Some(me.clone()),
            lease_duration_seconds: Some(duration),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        };
        // The leader's fast path: update the record it wrote last, assuming nobody changed it.
        if self.is_leader()
            && self.lease_valid(Instant::now())
            && let Some(mut lease) = self.observed.clone()
        {
            let old = lease.spec.clone().unwrap_or_default();
            record.acquire_time = old.acquire_time;
            record.lease_transitions = old.lease_transitions;
            lease.spec = Some(record.clone());
            match self
                .api
                .replace(&self.config.name, &PostParams::default(), &lease)
                .await
            {
                Ok(written) => {
                    self.observe(written);
                    return Ok(true);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "optimistic lease renewal failed; reading the lease")
                }
            }
        }
        let current = self
            .api
            .get_opt(&self.config.name)
            .await
            .context("reading the lease")?;
        let Some(mut lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(record),
            };
            let created = self
                .api
                .create(&PostParams::default(), &lease)
                .await
                .context("creating the lease")?;
            self.observe(created);
            return Ok(true);
        };
        // The record changed since it was last seen: the lease duration counts from now.
        let changed = self.observed.as_ref().map(|o| &o.spec) != Some(&lease.spec);
        if changed {
            self.observe(lease.clone());
        } else if let Some(o) = &mut self.observed {
            // Same record, newer resourceVersion (the precondition of the update below).
            o.metadata = lease.metadata.clone();
        }
        if self.holder().is_some() && self.lease_valid(Instant::now()) && !self.is_leader() {
            return Ok(false);
        }
        let old = lease.spec.clone().unwrap_or_default();
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.lease_transitions = old.lease_transitions;
        } else {
            record.lease_transitions = Some(old.lease_transitions.unwrap_or(0) + 1);
        }
        lease.spec = Some(record);
        let written = self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
            .context("updating the lease")?;
        self.observe(written);
        Ok(true)
    }

    /// Gives the lease up (client-go's release): holder emptied, duration 1 s, transitions kept.
    async fn release(&mut self) {
        if !self.is_leader() {
            return;
        }
        let Some(mut lease) = self.observed.clone() else {
            return;
        };
        let now = MicroTime(jiff::Timestamp::now());
        let transitions = lease.spec.as_ref().and_then(|s| s.lease_transitions);
        lease.spec = Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: transitions,
            ..LeaseSpec::default()
        });
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                tracing::info!(lease = %self.config.name, "released the lease");
                self.observe(written);
            }
            Err(e) => {
                tracing::warn!(lease = %self.config.name, error = %e, "could not release the lease; it expires on its own")
            }
        }
    }
}

/// A fraction in [0, 1) from the clock's nanoseconds: jitter needs spread, not unpredictability.
fn pseudo_random_fraction() -> f64 {
    let nanos = jiff::Timestamp::now().subsec_nanosecond();
    f64::from(nanos.rem_euclid(1_000_000)) / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadlines_must_nest_as_client_go_requires() {
        let mut c = LeaderConfig::new("ops");
        assert!(c.check().is_ok());
        assert_eq!(c.name, "5dc6398d.texashpc.com");
        c.renew_deadline = c.lease_duration;
        assert!(c.check().is_err());
        c.renew_deadline = Duration::from_secs(10);
        c.retry_period = Duration::from_secs(10);
        assert!(c.check().is_err());
        assert_ne!(identity(), "", "an identity");
        assert!(identity().contains('_'));
    }
}
