//! The run's history, read as it happens: kube-sim's request log (who wrote what while whom held the Lease) and
//! omni-sim's RPC record (which Omni clusters were torn down or destroyed, and when). Both are followed
//! incrementally, so a ten-minute run never holds either whole.

use std::collections::BTreeMap;
use std::time::Duration;

use omni_sim::OmniSim;

/// The operator's Lease (`leader::LEASE_NAME`).
const LEASE: &str = "5dc6398d.texashpc.com";

/// Never two writers at once: every write a replica makes lands while the last successful Lease write was its
/// own.
#[derive(Default)]
pub struct Writers {
    last_seq: u64,
    holder: Option<String>,
    pub writes_checked: u64,
    pub lease_changes: u64,
    pub violations: Vec<String>,
    /// Records the log dropped before they were read (it keeps the newest 200,000).
    pub unread: u64,
}

impl Writers {
    pub fn follow(&mut self, sim: &kube_sim::KubeSim) {
        for r in sim.requests_since(self.last_seq) {
            if r.seq > self.last_seq + 1 {
                self.unread += r.seq - self.last_seq - 1;
            }
            self.last_seq = r.seq;
            if !r.user.starts_with("replica-") || !r.is_write() || !r.succeeded() {
                continue;
            }
            // A create names no object in its path.
            if r.resource == "leases" && (r.name == LEASE || r.verb == "create") {
                if self.holder.as_deref() != Some(r.user.as_str()) {
                    self.lease_changes += 1;
                }
                self.holder = Some(r.user.clone());
                continue;
            }
            self.writes_checked += 1;
            if self.holder.as_deref() != Some(r.user.as_str()) && self.violations.len() < 20 {
                self.violations.push(format!(
                    "{} wrote {} {}{} {}/{} (request #{}) while the Lease was {}'s",
                    r.user,
                    r.verb,
                    r.resource,
                    if r.subresource.is_empty() {
                        String::new()
                    } else {
                        format!("/{}", r.subresource)
                    },
                    r.namespace,
                    r.name,
                    r.seq,
                    self.holder.as_deref().unwrap_or("nobody")
                ));
            }
        }
    }

    /// The replica holding the Lease, as the request log last saw it.
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_deref()
    }
}

/// One successful teardown or destroy of an Omni cluster.
#[derive(Debug, Clone)]
pub struct Removal {
    pub at: Duration,
    pub method: &'static str,
}

/// Omni's cluster removals, by cluster ID.
#[derive(Default)]
pub struct OmniRemovals {
    pub by_cluster: BTreeMap<String, Vec<Removal>>,
    pub rpcs: u64,
}

impl OmniRemovals {
    pub fn follow(&mut self, omni: &OmniSim, at: Duration) {
        for r in omni.drain_records() {
            self.rpcs += 1;
            if r.code != tonic::Code::Ok {
                continue;
            }
            let method = match r.method.rsplit('/').next() {
                Some("Teardown") => "Teardown",
                Some("Destroy") => "Destroy",
                Some("TeardownAndDestroy") => "TeardownAndDestroy",
                _ => continue,
            };
            if quoted_after(&r.request, "type: \"").as_deref() != Some(omni_sim::types::CLUSTERS) {
                continue;
            }
            if let Some(id) = quoted_after(&r.request, "id: \"") {
                self.by_cluster
                    .entry(id)
                    .or_default()
                    .push(Removal { at, method });
            }
        }
    }
}

/// The text between `marker` and the next quote in a `Debug` rendering.
fn quoted_after(text: &str, marker: &str) -> Option<String> {
    let (_, rest) = text.split_once(marker)?;
    rest.split_once('"').map(|(v, _)| v.to_string())
}
