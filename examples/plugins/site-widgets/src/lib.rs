//! site-widgets: an example third-party plugin for omni-operator. It serves a kind of its own,
//! `sites.example.com/v1alpha1 SiteWidget`, and applies a site rule: a widget that does not say how many
//! replicas it wants gets the site's default, from the `site-defaults` ConfigMap in its namespace.
//!
//! It was started with `omni-operator plugin new site-widgets --group sites.example.com --kind SiteWidget`;
//! `crd.yaml` beside it installs the kind, and the README shows the whole way from build to binding.

use omni_plugin_sdk::{
    Condition, Gvk, Host, Info, ObjectRef, Plugin, ReconcileError, Value, Verdict, json,
};

pub struct SiteWidgets;

/// The most replicas a SiteWidget may ask for, by site rule.
const MAX_REPLICAS: i64 = 10;

impl Plugin for SiteWidgets {
    fn describe() -> Info {
        Info {
            name: "site-widgets".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kinds: vec![Gvk::new("sites.example.com", "v1alpha1", "SiteWidget")],
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        let object = host.object();
        let (replicas, source) = match object["spec"]["replicas"].as_i64() {
            Some(r) => (r, "spec"),
            None => {
                let defaults =
                    host.kube_get(&ObjectRef::local("v1", "ConfigMap", "site-defaults"))?;
                let from_site = defaults
                    .as_ref()
                    .and_then(|cm| cm["data"]["replicas"].as_str())
                    .and_then(|r| r.parse().ok());
                match from_site {
                    Some(r) => (r, "ConfigMap site-defaults"),
                    None => (1, "the built-in default"),
                }
            }
        };
        host.set_status(json!({ "replicas": replicas }));
        host.set_condition(Condition::new(
            "Ready",
            true,
            "Reconciled",
            format!("{replicas} replicas, from {source}"),
        ));
        Ok(())
    }

    fn validate(object: &Value, _old: Option<&Value>) -> Verdict {
        let mut verdict = Verdict::default();
        let replicas = &object["spec"]["replicas"];
        if replicas
            .as_i64()
            .is_some_and(|r| !(0..=MAX_REPLICAS).contains(&r))
        {
            verdict.invalid(
                "spec.replicas",
                replicas.clone(),
                &format!("must be between 0 and {MAX_REPLICAS}"),
            );
        }
        verdict
    }
}

// It reads ConfigMaps and nothing else; an operator never grants it more.
omni_plugin_sdk::export_plugin!(SiteWidgets, capabilities = "kube-read:core/ConfigMap");

#[cfg(test)]
mod tests {
    use super::*;
    use omni_plugin_sdk::mock::MockHost;

    fn widget(spec: Value) -> Value {
        json!({"metadata": {"name": "w", "namespace": "site-a"}, "spec": spec})
    }

    #[test]
    fn a_widget_without_replicas_gets_the_sites_default() {
        let host = MockHost::new(widget(json!({}))).with_object(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "site-defaults", "namespace": "site-a"},
            "data": {"replicas": "3"}
        }));
        SiteWidgets::reconcile(&host).expect("reconcile");
        assert_eq!(host.outputs().status["replicas"], 3);
    }

    #[test]
    fn a_widget_that_says_how_many_keeps_its_own() {
        let host = MockHost::new(widget(json!({"replicas": 5})));
        SiteWidgets::reconcile(&host).expect("reconcile");
        assert_eq!(host.outputs().status["replicas"], 5);
    }

    #[test]
    fn too_many_replicas_are_refused_with_the_field_named() {
        let verdict = SiteWidgets::validate(&widget(json!({"replicas": 11})), None);
        assert_eq!(
            verdict.messages(),
            ["spec.replicas: Invalid value: 11: must be between 0 and 10"]
        );
    }
}
