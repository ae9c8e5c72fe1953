//! Reconciles the host asks for itself: when a background action a capability started (a Helm install) ends,
//! the object that asked is reconciled at once instead of at its next requeue. Each kind's controller registers
//! for its kind; a capability wakes one object of it.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// An object to reconcile: its namespace (None: cluster-scoped) and name.
pub type WakeTarget = (Option<String>, String);

/// Channels by (API group, kind).
#[derive(Default)]
pub struct Wakeups {
    senders: Mutex<HashMap<(String, String), UnboundedSender<WakeTarget>>>,
}

impl std::fmt::Debug for Wakeups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wakeups").finish_non_exhaustive()
    }
}

impl Wakeups {
    /// The wake-ups of one kind; a second registration replaces the first (a restarted controller).
    pub fn register(&self, group: &str, kind: &str) -> UnboundedReceiver<WakeTarget> {
        let (tx, rx) = unbounded_channel();
        self.lock().insert((group.into(), kind.into()), tx);
        rx
    }

    /// Asks for a reconcile of one object; nothing happens when no controller of its kind runs.
    pub fn wake(&self, group: &str, kind: &str, target: WakeTarget) {
        let key = (group.to_string(), kind.to_string());
        let mut senders = self.lock();
        if let Some(tx) = senders.get(&key)
            && tx.send(target).is_err()
        {
            senders.remove(&key);
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(String, String), UnboundedSender<WakeTarget>>> {
        self.senders.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_reaches_the_controller_of_its_kind_only() {
        let w = Wakeups::default();
        let mut helm = w.register("omni.texashpc.com", "OmniHelmRelease");
        let mut other = w.register("omni.texashpc.com", "OmniCluster");
        w.wake(
            "omni.texashpc.com",
            "OmniHelmRelease",
            (Some("t".into()), "r".into()),
        );
        assert_eq!(helm.try_recv().unwrap(), (Some("t".into()), "r".into()));
        assert!(other.try_recv().is_err());
        // A kind nobody registered for: nothing to do, no error.
        w.wake("x", "Y", (None, "z".into()));
    }
}
