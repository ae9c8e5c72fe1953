//! The OmniWorkers plugin: attaches to its OmniCluster and validates its spec (logic in omni-children).
omni_children::child_plugin!(Workers, omni_children::Child::Workers);
