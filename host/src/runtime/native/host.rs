//! The SDK's [`Host`](omni_plugin_sdk::Host) for native plugin logic: every call goes to the same
//! `impl …::Host for HostState` the contract's imports are linked to, on the call's own `HostState` and
//! `call-context`, so grants, scoping, budgets, output bounds and Omni resolution are the component path's.
//!
//! The logic runs on a blocking thread; each host call is driven to completion there with `Handle::block_on`,
//! which is what a component's synchronous import call amounts to as well.

use std::cell::RefCell;
use std::time::Duration;

use omni_plugin_sdk as sdk;
use omni_plugin_sdk::omni as sdk_omni;
use omni_plugin_sdk::secrets as sdk_secrets;
use serde_json::Value;
use tokio::runtime::Handle;
use wasmtime::component::Resource;

use super::convert;
use crate::capabilities::{
    CallContext, CallScope, Capability, ClockCap, ContextCap, FilesCap, HostFailure, KubeReadCap,
    KubeWriteCap, OmniCap, SecretsCap, WorkloadCap,
};
use crate::contract::bindings::omni::operator::{
    clock, context, files, kube_read, kube_write, omni, secrets, workload,
};
use crate::runtime::error::{self, ErrorKind, Failure, PluginError};
use crate::runtime::store::HostState;

pub(crate) struct NativeHost {
    state: RefCell<HostState>,
    /// The `call-context` in the state's table; the plugin only ever uses borrows of it.
    context: u32,
    runtime: Handle,
    /// The call's limit, for messages.
    timeout: Duration,
    /// What ended the call, as a trap ends a component's: the first output violation or denied import.
    aborted: RefCell<Option<PluginError>>,
}

impl NativeHost {
    pub(super) fn new(state: HostState, context: u32, runtime: Handle, timeout: Duration) -> Self {
        NativeHost {
            state: RefCell::new(state),
            context,
            runtime,
            timeout,
            aborted: RefCell::new(None),
        }
    }

    /// What the logic returned, unless something aborted the call; and the state back (its table holds the
    /// call's outputs).
    pub(super) fn finish<T>(self, returned: T) -> (Result<T, PluginError>, HostState) {
        let outcome = match self.aborted.into_inner() {
            Some(why) => Err(why),
            None => Ok(returned),
        };
        (outcome, self.state.into_inner())
    }

    /// Runs one host function on the call's state. An error is what would trap a component: it aborts the call,
    /// and every later host call of the plugin is refused, as a trapped instance makes none.
    fn forward<T>(
        &self,
        function: impl AsyncFnOnce(&mut CallScope, Resource<CallContext>) -> wasmtime::Result<T>,
    ) -> Option<T> {
        if self.aborted.borrow().is_some() {
            return None;
        }
        let mut state = self.state.borrow_mut();
        let context = Resource::new_borrow(self.context);
        match self.runtime.block_on(function(&mut state.scope, context)) {
            Ok(value) => Some(value),
            Err(trap) => {
                let failure = Failure {
                    plugin: &state.scope.core.plugin,
                    timeout: self.timeout,
                    stderr_tail: String::new(),
                };
                self.abort(error::classify(&trap, failure));
                None
            }
        }
    }

    /// A capability call: the host's answer, or an error telling the plugin the call is already lost. A trap
    /// aborts the call, as it ends a component's.
    fn capability<T>(
        &self,
        function: impl AsyncFnOnce(&mut CallScope, Resource<CallContext>) -> Result<T, HostFailure>,
    ) -> Result<T, sdk::HostError> {
        let lost = || {
            sdk::HostError::Other(match &*self.aborted.borrow() {
                Some(why) => format!("the host aborted this call: {why}"),
                None => "the host aborted this call".into(),
            })
        };
        if self.aborted.borrow().is_some() {
            return Err(lost());
        }
        let answer = {
            let mut state = self.state.borrow_mut();
            let context = Resource::new_borrow(self.context);
            match self.runtime.block_on(function(&mut state.scope, context)) {
                Ok(value) => Ok(value),
                Err(HostFailure::Host(e)) => Err(Some(convert::host_error(e.into()))),
                Err(HostFailure::Trap(trap)) => {
                    let failure = Failure {
                        plugin: &state.scope.core.plugin,
                        timeout: self.timeout,
                        stderr_tail: String::new(),
                    };
                    self.abort(error::classify(&trap, failure));
                    Err(None)
                }
            }
        };
        answer.map_err(|e| e.unwrap_or_else(lost))
    }

    /// The import check, at the call: a component importing an interface outside its grants is refused at load,
    /// so it never calls one. Native logic has no import list; its call is refused here, before the capability's
    /// own (finer) checks, with the reason.
    fn imported(&self, capability: Capability, function: &str) -> Result<(), String> {
        let state = self.state.borrow();
        if state.scope.core.grants.allows(capability) {
            return Ok(());
        }
        Err(format!(
            "plugin {:?} called {function}, but its grants do not include \"{capability}\" (a component importing it \
             would have been refused at load)",
            state.scope.core.plugin
        ))
    }

    /// [`Self::capability`] behind the import check; a refusal answers `denied`.
    pub(super) fn granted<T>(
        &self,
        capability: Capability,
        function: &str,
        call: impl AsyncFnOnce(&mut CallScope, Resource<CallContext>) -> Result<T, HostFailure>,
    ) -> Result<T, sdk::HostError> {
        self.imported(capability, function)
            .map_err(sdk::HostError::Denied)?;
        self.capability(call)
    }

    fn abort(&self, why: PluginError) {
        self.aborted.borrow_mut().get_or_insert(why);
    }
}

impl sdk::Context for NativeHost {
    fn object(&self) -> Value {
        // The host hands over what its watch decoded; it is valid JSON (the SDK's glue assumes the same).
        self.forward(async |state, ctx| {
            context::HostCallContext::object(&mut ContextCap::of(state), ctx).await
        })
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or(Value::Null)
    }

    fn remaining_ms(&self) -> u64 {
        self.forward(async |state, ctx| {
            context::HostCallContext::remaining_ms(&mut ContextCap::of(state), ctx).await
        })
        .unwrap_or(0)
    }

    fn set_status(&self, fields: Value) {
        self.forward(async move |state, ctx| {
            context::HostCallContext::set_status(
                &mut ContextCap::of(state),
                ctx,
                fields.to_string(),
            )
            .await
        });
    }

    fn set_condition(&self, condition: sdk::Condition) {
        let condition = convert::condition(condition);
        self.forward(async move |state, ctx| {
            context::HostCallContext::set_condition(&mut ContextCap::of(state), ctx, condition)
                .await
        });
    }

    fn requeue_after(&self, ms: u64) {
        self.forward(async move |state, ctx| {
            context::HostCallContext::requeue_after(&mut ContextCap::of(state), ctx, ms).await
        });
    }

    fn event(&self, kind: sdk::EventType, reason: &str, message: &str) {
        let (kind, reason, message) = (
            convert::event_type(kind),
            reason.to_owned(),
            message.to_owned(),
        );
        self.forward(async move |state, ctx| {
            context::HostCallContext::event(&mut ContextCap::of(state), ctx, kind, reason, message)
                .await
        });
    }

    fn log(&self, level: sdk::LogLevel, message: &str, fields: &[(&str, &str)]) {
        let (level, message) = (convert::log_level(level), message.to_owned());
        let fields = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.forward(async move |state, ctx| {
            context::HostCallContext::log(&mut ContextCap::of(state), ctx, level, message, fields)
                .await
        });
    }
}

impl sdk::Clock for NativeHost {
    fn now(&self) -> String {
        // `now` has no error to answer with, so a refusal aborts the call, with the reason.
        if let Err(refusal) = self.imported(Capability::Clock, "clock.now") {
            let plugin = self.state.borrow().scope.core.plugin.clone();
            self.abort(PluginError::new(
                &plugin,
                ErrorKind::DeniedCapability,
                refusal,
            ));
            return String::new();
        }
        self.forward(async |state, ctx| clock::Host::now(&mut ClockCap::of(state), ctx).await)
            .unwrap_or_default()
    }
}

impl sdk::KubeRead for NativeHost {
    fn kube_get(&self, target: &sdk::ObjectRef) -> Result<Option<Value>, sdk::HostError> {
        let target = convert::object_ref(target);
        let found = self.granted(
            Capability::KubeRead,
            "kube-read.get",
            async move |state, ctx| {
                kube_read::Host::get(&mut KubeReadCap::of(state), ctx, target).await
            },
        )?;
        found.as_deref().map(convert::parse).transpose()
    }

    fn kube_list(&self, query: &sdk::ListQuery) -> Result<Vec<Value>, sdk::HostError> {
        let query = convert::list_query(query);
        let items = self.granted(
            Capability::KubeRead,
            "kube-read.list",
            async move |state, ctx| {
                kube_read::Host::list(&mut KubeReadCap::of(state), ctx, query).await
            },
        )?;
        items.iter().map(|json| convert::parse(json)).collect()
    }
}

impl NativeHost {
    /// `kube-write.apply` or `kube-write.create` of `object`.
    fn write_object(
        &self,
        object: &Value,
        options: sdk::kube_write::WriteOptions,
        apply: bool,
    ) -> Result<Value, sdk::HostError> {
        let (object, options) = (object.to_string(), convert::write_options(options));
        let function = if apply {
            "kube-write.apply"
        } else {
            "kube-write.create"
        };
        let stored = self.granted(Capability::KubeWrite, function, async move |state, ctx| {
            let mut cap = KubeWriteCap::of(state);
            if apply {
                kube_write::Host::apply(&mut cap, ctx, object, options).await
            } else {
                kube_write::Host::create(&mut cap, ctx, object, options).await
            }
        })?;
        convert::parse(&stored)
    }
}

impl sdk::KubeWrite for NativeHost {
    fn kube_apply(
        &self,
        object: &Value,
        options: sdk::kube_write::WriteOptions,
    ) -> Result<Value, sdk::HostError> {
        self.write_object(object, options, true)
    }

    fn kube_create(
        &self,
        object: &Value,
        options: sdk::kube_write::WriteOptions,
    ) -> Result<Value, sdk::HostError> {
        self.write_object(object, options, false)
    }

    fn kube_patch(
        &self,
        target: &sdk::ObjectRef,
        patch: &sdk::kube_write::Patch,
        options: sdk::kube_write::WriteOptions,
    ) -> Result<Value, sdk::HostError> {
        let target = convert::object_ref(target);
        let (kind, body) = convert::patch(patch);
        let options = convert::write_options(options);
        let stored = self.granted(
            Capability::KubeWrite,
            "kube-write.patch",
            async move |state, ctx| {
                let mut cap = KubeWriteCap::of(state);
                kube_write::Host::patch(&mut cap, ctx, target, kind, body, options).await
            },
        )?;
        convert::parse(&stored)
    }

    fn kube_delete(
        &self,
        target: &sdk::ObjectRef,
        options: &sdk::kube_write::DeleteOptions,
    ) -> Result<bool, sdk::HostError> {
        let target = convert::object_ref(target);
        let options = convert::delete_options(options);
        self.granted(
            Capability::KubeWrite,
            "kube-write.delete",
            async move |state, ctx| {
                kube_write::Host::delete(&mut KubeWriteCap::of(state), ctx, target, options).await
            },
        )
    }
}

impl sdk::Files for NativeHost {
    fn read_file(&self, root: &str, path: &str) -> Result<Vec<u8>, sdk::HostError> {
        let (root, path) = (root.to_owned(), path.to_owned());
        self.granted(Capability::Files, "files.read", async move |state, ctx| {
            files::Host::read(&mut FilesCap::of(state), ctx, root, path).await
        })
    }
}

impl sdk::Omni for NativeHost {
    fn omni_ping(&self, connection: &str) -> Result<String, sdk::HostError> {
        let connection = connection.to_owned();
        let info = self.granted(Capability::Omni, "omni.ping", async move |state, ctx| {
            omni::Host::ping(&mut OmniCap::of(state), ctx, connection).await
        })?;
        Ok(info.endpoint)
    }

    fn omni_get(
        &self,
        connection: &str,
        key: &sdk_omni::ResourceKey,
    ) -> Result<Option<sdk_omni::OmniResource>, sdk::HostError> {
        let (connection, key) = (connection.to_owned(), convert::resource_key(key));
        let found = self.granted(Capability::Omni, "omni.get", async move |state, ctx| {
            omni::Host::get(&mut OmniCap::of(state), ctx, connection, key).await
        })?;
        Ok(found.map(convert::from_resource))
    }

    fn omni_list(
        &self,
        connection: &str,
        namespace: &str,
        type_: &str,
        labels: &[sdk_omni::LabelTerm],
    ) -> Result<Vec<sdk_omni::OmniResource>, sdk::HostError> {
        let (connection, namespace, type_) = (
            connection.to_owned(),
            namespace.to_owned(),
            type_.to_owned(),
        );
        let labels = labels.iter().map(convert::label_term).collect();
        let items = self.granted(Capability::Omni, "omni.list", async move |state, ctx| {
            omni::Host::list(
                &mut OmniCap::of(state),
                ctx,
                connection,
                namespace,
                type_,
                labels,
            )
            .await
        })?;
        Ok(items.into_iter().map(convert::from_resource).collect())
    }

    fn omni_create(
        &self,
        connection: &str,
        resource: &sdk_omni::OmniResource,
    ) -> Result<sdk_omni::OmniResource, sdk::HostError> {
        let (connection, resource) = (connection.to_owned(), convert::to_resource(resource));
        let created = self.granted(Capability::Omni, "omni.create", async move |state, ctx| {
            omni::Host::create(&mut OmniCap::of(state), ctx, connection, resource).await
        })?;
        Ok(convert::from_resource(created))
    }

    fn omni_update(
        &self,
        connection: &str,
        resource: &sdk_omni::OmniResource,
    ) -> Result<sdk_omni::OmniResource, sdk::HostError> {
        let (connection, resource) = (connection.to_owned(), convert::to_resource(resource));
        let updated = self.granted(Capability::Omni, "omni.update", async move |state, ctx| {
            omni::Host::update(&mut OmniCap::of(state), ctx, connection, resource).await
        })?;
        Ok(convert::from_resource(updated))
    }

    fn omni_teardown(
        &self,
        connection: &str,
        key: &sdk_omni::ResourceKey,
    ) -> Result<bool, sdk::HostError> {
        let (connection, key) = (connection.to_owned(), convert::resource_key(key));
        self.granted(
            Capability::Omni,
            "omni.teardown",
            async move |state, ctx| {
                omni::Host::teardown(&mut OmniCap::of(state), ctx, connection, key).await
            },
        )
    }

    fn omni_destroy(
        &self,
        connection: &str,
        key: &sdk_omni::ResourceKey,
    ) -> Result<(), sdk::HostError> {
        let (connection, key) = (connection.to_owned(), convert::resource_key(key));
        self.granted(Capability::Omni, "omni.destroy", async move |state, ctx| {
            omni::Host::destroy(&mut OmniCap::of(state), ctx, connection, key).await
        })
    }

    fn omni_cluster_status(
        &self,
        connection: &str,
        cluster: &str,
    ) -> Result<Option<sdk_omni::ClusterHealth>, sdk::HostError> {
        let (connection, cluster) = (connection.to_owned(), cluster.to_owned());
        let health = self.granted(
            Capability::Omni,
            "omni.cluster-status",
            async move |state, ctx| {
                omni::Host::cluster_status(&mut OmniCap::of(state), ctx, connection, cluster).await
            },
        )?;
        Ok(health.map(convert::cluster_health))
    }

    fn omni_export_kubeconfig(
        &self,
        connection: &str,
        request: &sdk_secrets::KubeconfigExport,
    ) -> Result<String, sdk::HostError> {
        let (connection, request) = (connection.to_owned(), convert::kubeconfig_export(request));
        let exported = self.granted(
            Capability::Omni,
            "omni.export-kubeconfig",
            async move |state, ctx| {
                omni::Host::export_kubeconfig(&mut OmniCap::of(state), ctx, connection, request)
                    .await
            },
        )?;
        Ok(exported.digest)
    }
}

impl sdk::Secrets for NativeHost {
    fn secret_info(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<sdk_secrets::SecretInfo>, sdk::HostError> {
        let (namespace, name) = (namespace.map(str::to_owned), name.to_owned());
        let info = self.granted(
            Capability::Secrets,
            "secrets.info",
            async move |state, ctx| {
                secrets::Host::info(&mut SecretsCap::of(state), ctx, namespace, name).await
            },
        )?;
        Ok(info.map(convert::secret_info))
    }

    fn secret_digest(
        &self,
        key: &sdk_secrets::SecretKeyRef,
    ) -> Result<Option<String>, sdk::HostError> {
        let key = convert::secret_key(key);
        self.granted(
            Capability::Secrets,
            "secrets.digest",
            async move |state, ctx| {
                secrets::Host::digest(&mut SecretsCap::of(state), ctx, key).await
            },
        )
    }

    fn secret_read(
        &self,
        key: &sdk_secrets::SecretKeyRef,
    ) -> Result<Option<Vec<u8>>, sdk::HostError> {
        let key = convert::secret_key(key);
        self.granted(
            Capability::Secrets,
            "secrets.read",
            async move |state, ctx| secrets::Host::read(&mut SecretsCap::of(state), ctx, key).await,
        )
    }

    fn secret_delete_owned(
        &self,
        namespace: Option<&str>,
        name: &str,
        owner: &sdk_secrets::OwnerLabel,
    ) -> Result<sdk_secrets::Removal, sdk::HostError> {
        let (namespace, name, owner) = (
            namespace.map(str::to_owned),
            name.to_owned(),
            convert::owner(owner),
        );
        let removal = self.granted(
            Capability::Secrets,
            "secrets.delete-owned",
            async move |state, ctx| {
                secrets::Host::delete_owned(&mut SecretsCap::of(state), ctx, namespace, name, owner)
                    .await
            },
        )?;
        Ok(convert::removal(removal))
    }
}

impl sdk::Workload for NativeHost {
    fn workload_probe(
        &self,
        kubeconfig: &sdk_secrets::SecretKeyRef,
    ) -> Result<String, sdk::HostError> {
        let kubeconfig = convert::secret_key(kubeconfig);
        self.granted(
            Capability::Workload,
            "workload.probe",
            async move |state, ctx| {
                workload::Host::probe(&mut WorkloadCap::of(state), ctx, kubeconfig).await
            },
        )
    }

    fn workload_copy_secret(
        &self,
        kubeconfig: &sdk_secrets::SecretKeyRef,
        request: &sdk_secrets::SecretCopy,
    ) -> Result<sdk_secrets::Copied, sdk::HostError> {
        let (kubeconfig, request) = (
            convert::secret_key(kubeconfig),
            convert::secret_copy(request),
        );
        let copied = self.granted(
            Capability::Workload,
            "workload.copy-secret",
            async move |state, ctx| {
                workload::Host::copy_secret(&mut WorkloadCap::of(state), ctx, kubeconfig, request)
                    .await
            },
        )?;
        Ok(convert::copied(copied))
    }

    fn workload_delete_secret(
        &self,
        kubeconfig: &sdk_secrets::SecretKeyRef,
        namespace: &str,
        name: &str,
        owner: &sdk_secrets::OwnerLabel,
    ) -> Result<sdk_secrets::Removal, sdk::HostError> {
        let (kubeconfig, namespace, name, owner) = (
            convert::secret_key(kubeconfig),
            namespace.to_owned(),
            name.to_owned(),
            convert::owner(owner),
        );
        let removal = self.granted(
            Capability::Workload,
            "workload.delete-secret",
            async move |state, ctx| {
                workload::Host::delete_secret(
                    &mut WorkloadCap::of(state),
                    ctx,
                    kubeconfig,
                    namespace,
                    name,
                    owner,
                )
                .await
            },
        )?;
        Ok(convert::removal(removal))
    }
}
