//! The OmniControlPlane plugin: attaches to its OmniCluster and validates its spec (logic in omni-children).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

omni_children::child_plugin!(ControlPlane, omni_children::Child::ControlPlane);
