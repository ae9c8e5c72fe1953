//! The SDK's `Helm` calls for native plugin logic: converted to the contract's host-side types and served by
//! the same `helm` capability a component's imports reach.

use omni_plugin_sdk as sdk;
use omni_plugin_sdk::helm as sdk_helm;
use omni_plugin_sdk::secrets as sdk_secrets;

use super::convert::secret_key;
use super::host::NativeHost;
use crate::capabilities::{Capability, HelmCap};
use crate::contract::bindings::omni::operator::helm::{self as wit, Host as _};

omni_plugin_sdk::helm_conversions!(wit, secret_key);

impl sdk::Helm for NativeHost {
    fn helm_ensure(
        &self,
        spec: &sdk_helm::ReleaseSpec,
    ) -> Result<sdk_helm::ReleaseReport, sdk::HostError> {
        let spec = to_release_spec(spec);
        self.granted(Capability::Helm, "helm.ensure", async move |state, ctx| {
            HelmCap(state).ensure(ctx, spec).await
        })
        .map(from_report)
    }

    fn helm_uninstall(
        &self,
        spec: &sdk_helm::UninstallSpec,
    ) -> Result<sdk_helm::ReleaseReport, sdk::HostError> {
        let spec = to_uninstall_spec(spec);
        self.granted(
            Capability::Helm,
            "helm.uninstall",
            async move |state, ctx| HelmCap(state).uninstall(ctx, spec).await,
        )
        .map(from_report)
    }

    fn helm_status(
        &self,
        kubeconfig: &sdk_secrets::SecretKeyRef,
        name: &str,
        namespace: &str,
    ) -> Result<sdk_helm::ReleaseReport, sdk::HostError> {
        let (kubeconfig, name, namespace) = (
            secret_key(kubeconfig),
            name.to_owned(),
            namespace.to_owned(),
        );
        self.granted(Capability::Helm, "helm.status", async move |state, ctx| {
            HelmCap(state)
                .status(ctx, kubeconfig, name, namespace)
                .await
        })
        .map(from_report)
    }

    fn helm_observe(
        &self,
        release: &sdk_helm::ReleaseRef,
        source: Option<&sdk_helm::ReleaseSource>,
    ) -> Result<sdk_helm::Observation, sdk::HostError> {
        let (release, source) = (to_release_ref(release), source.map(to_release_source));
        self.granted(Capability::Helm, "helm.observe", async move |state, ctx| {
            HelmCap(state).observe(ctx, release, source).await
        })
        .map(from_observation)
    }

    fn helm_detect_drift(
        &self,
        release: &sdk_helm::ReleaseRef,
        ignore: &[sdk_helm::DriftIgnore],
    ) -> Result<Vec<sdk_helm::Drifted>, sdk::HostError> {
        let release = to_release_ref(release);
        let ignore: Vec<wit::DriftIgnore> = ignore.iter().map(to_drift_ignore).collect();
        self.granted(
            Capability::Helm,
            "helm.detect-drift",
            async move |state, ctx| HelmCap(state).detect_drift(ctx, release, ignore).await,
        )
        .map(|d| d.into_iter().map(from_drifted).collect())
    }

    fn helm_start(
        &self,
        release: &sdk_helm::ReleaseRef,
        step: &sdk_helm::Step,
    ) -> Result<sdk_helm::StepRecord, sdk::HostError> {
        let (release, step) = (to_release_ref(release), to_step(step));
        self.granted(Capability::Helm, "helm.start", async move |state, ctx| {
            HelmCap(state).start(ctx, release, step).await
        })
        .map(from_step_record)
    }
}
