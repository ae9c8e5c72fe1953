//! The OmniControlPlane plugin: attaches to its OmniCluster and validates its spec (logic in omni-children).
omni_children::child_plugin!(ControlPlane, omni_children::Child::ControlPlane);
