//! Refusals: a capability call outside the plugin's grants answers `host-error::denied` with a message naming
//! the plugin, the capability and the target, is logged, and is recorded for the controller to report on the
//! object (an Event and a condition), as the contract promises.

use super::CallCore;
use crate::capabilities::{Capability, Denial, HostError, MAX_DENIALS, truncated};

/// How much of a plugin-supplied target a denial quotes: a name a plugin made up can be as long as its memory.
const MAX_TARGET: usize = 512;
/// How much of the reason: the host's words, but they quote what the plugin asked for (the grant it would need
/// names the kind it gave), so they are bounded too. Found by `fuzz_plugin_output_reconcile`: a 16 KiB kind
/// made a 33 KiB denial, logged and put on the object.
const MAX_DENIAL_REASON: usize = 1024;

impl CallCore {
    /// Refuses a call: returns the plugin's answer and reports the refusal. Only the first few refusals of a
    /// call are logged and recorded, so a plugin looping on denied calls cannot flood the logs.
    pub(crate) fn denied(
        &mut self,
        capability: Capability,
        target: &str,
        reason: &str,
    ) -> HostError {
        let denial = Denial {
            capability: capability.name(),
            target: truncated(target, MAX_TARGET),
            reason: truncated(reason, MAX_DENIAL_REASON),
        };
        let message = denial.message(&self.plugin);
        if self.denials.len() < MAX_DENIALS {
            tracing::warn!(plugin = %self.plugin, capability = capability.name(), "{message}");
            self.denials.push(denial);
        } else {
            self.denials_dropped += 1;
        }
        HostError::Denied(message)
    }
}
