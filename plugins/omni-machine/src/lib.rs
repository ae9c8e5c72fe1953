//! The OmniMachine plugin: attaches to its OmniCluster and validates its spec (logic in omni-children).
omni_children::child_plugin!(Machine, omni_children::Child::Machine);
