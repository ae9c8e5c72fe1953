//! The SDK's `Helm` calls for native plugin logic: converted to the contract's host-side types and served by
//! the same `helm` capability a component's imports reach.

use omni_plugin_sdk as sdk;
use omni_plugin_sdk::helm as sdk_helm;

use super::convert::secret_key;
use super::host::NativeHost;
use crate::capabilities::{Capability, HelmCap};
use crate::contract::bindings::omni::operator::helm::{self as wit, Host as _};

omni_plugin_sdk::helm_conversions!(wit, secret_key);

impl sdk::Helm for NativeHost {
    fn helm_observe(
        &self,
        release: &sdk_helm::ReleaseRef,
        source: Option<&sdk_helm::ReleaseSource>,
    ) -> Result<sdk_helm::Observation, sdk::HostError> {
        let (release, source) = (to_release_ref(release), source.map(to_release_source));
        self.granted(Capability::Helm, "helm.observe", async move |state, ctx| {
            HelmCap::of(state).observe(ctx, release, source).await
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
            async move |state, ctx| HelmCap::of(state).detect_drift(ctx, release, ignore).await,
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
            HelmCap::of(state).start(ctx, release, step).await
        })
        .map(from_step_record)
    }

    fn helm_cancel(
        &self,
        release: &sdk_helm::ReleaseRef,
        id: &str,
    ) -> Result<bool, sdk::HostError> {
        let (release, id) = (to_release_ref(release), id.to_string());
        self.granted(Capability::Helm, "helm.cancel", async move |state, ctx| {
            HelmCap::of(state).cancel(ctx, release, id).await
        })
    }
}
