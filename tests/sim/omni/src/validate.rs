//! Omni's "validated state": metadata limits and per-type validations. Failures become
//! `InvalidArgument` `failed to validate: <hashicorp multierror text>`.

use omni_wire::cosi::{Metadata, Resource};
use omni_wire::phase;
use omni_wire::specs;
use prost::Message as _;

use crate::store::{Store, md};
use crate::types::*;

/// A Talos version the server knows, with the Kubernetes versions it supports. A Kubernetes entry of the
/// form `1.31` admits every `1.31.x`; `1.31.2` admits exactly that version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TalosVersion {
    pub version: String,
    pub kubernetes: Vec<String>,
}

impl TalosVersion {
    pub fn new(version: &str, kubernetes: &[&str]) -> Self {
        TalosVersion {
            version: version.into(),
            kubernetes: kubernetes.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Talos 1.9.0-1.9.6, 1.10.0-1.10.7 and 1.11.0-1.11.5, each with four Kubernetes minors ending at the newest
    /// one that Talos release supports (1.32, 1.33, 1.34).
    pub fn defaults() -> Vec<TalosVersion> {
        let mut v = Vec::new();
        for p in 0..=6 {
            v.push(TalosVersion::new(
                &format!("1.9.{p}"),
                &["1.29", "1.30", "1.31", "1.32"],
            ));
        }
        for p in 0..=7 {
            v.push(TalosVersion::new(
                &format!("1.10.{p}"),
                &["1.30", "1.31", "1.32", "1.33"],
            ));
        }
        for p in 0..=5 {
            v.push(TalosVersion::new(
                &format!("1.11.{p}"),
                &["1.31", "1.32", "1.33", "1.34"],
            ));
        }
        // Newer lines, so current manifests (the project's examples use Talos 1.13 with Kubernetes 1.35) sync.
        for p in 0..=4 {
            v.push(TalosVersion::new(
                &format!("1.12.{p}"),
                &["1.32", "1.33", "1.34", "1.35"],
            ));
        }
        for p in 0..=3 {
            v.push(TalosVersion::new(
                &format!("1.13.{p}"),
                &["1.33", "1.34", "1.35", "1.36"],
            ));
        }
        v
    }

    fn admits(&self, k8s: &str) -> bool {
        let k = k8s.trim_start_matches('v');
        self.kubernetes.iter().any(|c| {
            c == k
                || k.strip_prefix(c.as_str())
                    .is_some_and(|rest| rest.starts_with('.') && c.matches('.').count() == 1)
        })
    }
}

/// Everything validation needs from the server.
pub struct Ctx<'a> {
    pub store: &'a Store,
    pub talos_versions: &'a [TalosVersion],
    pub dictionary: Option<&'a omni_wire::compression::Dictionary>,
}

/// hashicorp/go-multierror's text.
pub fn multierror(errs: &[String]) -> String {
    let head = if errs.len() == 1 {
        "1 error occurred:".to_string()
    } else {
        format!("{} errors occurred:", errs.len())
    };
    format!("{head}\n\t* {}\n\n", errs.join("\n\t* "))
}

pub fn to_status(errs: Vec<String>) -> Result<(), tonic::Status> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(tonic::Status::invalid_argument(format!(
            "failed to validate: {}",
            multierror(&errs)
        )))
    }
}

/// Tolerant semver: optional leading `v`, `major.minor[.patch]`, optional `-pre`/`+build`.
pub fn parse_version(s: &str) -> Result<(u64, u64, u64), String> {
    let core = s
        .trim_start_matches('v')
        .split(['-', '+'])
        .next()
        .unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(format!("Invalid Semantic Version {s:?}"));
    }
    let n = |p: &str| {
        p.parse::<u64>()
            .map_err(|_| format!("Invalid character(s) found in version {s:?}"))
    };
    Ok((
        n(parts[0])?,
        n(parts[1])?,
        if parts.len() == 3 { n(parts[2])? } else { 0 },
    ))
}

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// Metadata limits: ID, label and annotation sizes and counts, no control characters. On update only new or
/// changed labels/annotations are checked.
pub fn metadata_limits(new: &Metadata, old: Option<&Metadata>, errs: &mut Vec<String>) {
    if new.id.is_empty() {
        errs.push("resource ID must not be empty".into());
    } else if new.id.len() > 1024 {
        errs.push(format!(
            "resource ID is too long: {} bytes (max 1024)",
            new.id.len()
        ));
    } else if has_control(&new.id) {
        errs.push("resource ID must not contain control characters".into());
    }
    for (what, map, old_map) in [
        ("label", &new.labels, old.map(|o| &o.labels)),
        ("annotation", &new.annotations, old.map(|o| &o.annotations)),
    ] {
        if map.len() > 256 {
            errs.push(format!("too many {what}s: {} (max 256)", map.len()));
        }
        let mut keys: Vec<_> = map.keys().collect();
        keys.sort();
        for k in keys {
            let v = &map[k];
            if old_map.is_some_and(|o| o.get(k) == Some(v)) {
                continue;
            }
            if k.is_empty() {
                errs.push(format!("{what} key must not be empty"));
            } else if k.len() > 1024 {
                errs.push(format!(
                    "{what} key {k:?} is too long: {} bytes (max 1024)",
                    k.len()
                ));
            } else if has_control(k) {
                errs.push(format!(
                    "{what} key {k:?} must not contain control characters"
                ));
            }
            if v.len() > 16 * 1024 {
                errs.push(format!(
                    "{what} value for key {k:?} is too long: {} bytes (max 16384)",
                    v.len()
                ));
            } else if has_control(v) {
                errs.push(format!(
                    "{what} value for key {k:?} must not contain control characters"
                ));
            }
        }
    }
}

fn spec_bytes(r: &Resource) -> &[u8] {
    r.spec
        .as_ref()
        .map(|s| s.proto_spec.as_slice())
        .unwrap_or(&[])
}

fn label<'a>(r: &'a Resource, k: &str) -> Option<&'a str> {
    md(r).labels.get(k).map(String::as_str)
}

fn tearing_down(r: &Resource) -> bool {
    md(r).phase == phase::TEARING_DOWN
}

fn locked(cluster: &Resource) -> bool {
    md(cluster)
        .annotations
        .contains_key(ANNOTATION_CLUSTER_LOCKED)
}

/// Validations of a Create (`old` = None) or an Update (`old` = stored) that is not a teardown.
pub fn validate_write(
    ctx: &Ctx<'_>,
    new: &Resource,
    old: Option<&Resource>,
    errs: &mut Vec<String>,
) {
    let ty = md(new).r#type.as_str();
    match ty {
        CLUSTERS => cluster(ctx, new, old, errs),
        MACHINE_SETS => machine_set(ctx, new, old, errs),
        MACHINE_SET_NODES => machine_set_node(ctx, new, old, errs),
        CONFIG_PATCHES => config_patch(ctx, new, old, errs),
        KUBERNETES_MANIFEST_GROUPS => manifest_group(ctx, new, errs),
        KUBERNETES_HEALTH_CHECKS => health_check(new, errs),
        KERNEL_ARGS => kernel_args(new, errs),
        EXTENSIONS_CONFIGURATIONS => extensions(ctx, new, errs),
        _ => {}
    }
}

/// Validations of Destroy, Teardown and an Update to `tearingDown`.
pub fn validate_destroy(ctx: &Ctx<'_>, stored: &Resource, errs: &mut Vec<String>) {
    let m = md(stored);
    match m.r#type.as_str() {
        CLUSTERS if locked(stored) => errs.push(format!(
            "deletion is not allowed: the cluster {:?} is locked",
            m.id
        )),
        MACHINE_SETS => {
            if let Some(c) =
                label(stored, LABEL_CLUSTER).and_then(|c| ctx.store.get(&m.namespace, CLUSTERS, c))
                && locked(&c)
                && !tearing_down(&c)
            {
                errs.push(format!("removing machine set {:?} from the cluster {:?} is not allowed: the cluster is locked", m.id, md(&c).id));
            }
        }
        MACHINE_SET_NODES => {
            let ms = label(stored, LABEL_MACHINE_SET)
                .and_then(|s| ctx.store.get(&m.namespace, MACHINE_SETS, s));
            let cluster =
                label(stored, LABEL_CLUSTER).and_then(|c| ctx.store.get(&m.namespace, CLUSTERS, c));
            let parents_alive = ms.as_ref().is_some_and(|s| !tearing_down(s))
                && cluster.as_ref().is_some_and(|c| !tearing_down(c));
            if parents_alive {
                let ms_id = ms.as_ref().map(|s| md(s).id.clone()).unwrap_or_default();
                if m.annotations.contains_key(ANNOTATION_LOCKED) {
                    errs.push(format!("removing machine set node from the machine set {ms_id:?} is not allowed: the machine set node is locked"));
                }
                if cluster.as_ref().is_some_and(locked) {
                    errs.push(format!("removing machine set node from the machine set {ms_id:?} is not allowed: the cluster is locked"));
                }
            }
        }
        _ => {}
    }
}

fn version_checks(ctx: &Ctx<'_>, spec: &specs::ClusterSpec, errs: &mut Vec<String>) {
    let talos = &spec.talos_version;
    let k8s = &spec.kubernetes_version;
    let talos_ok = if talos.is_empty() {
        errs.push(format!(
            "invalid talos version {talos:?}: version is required"
        ));
        None
    } else {
        match parse_version(talos) {
            Err(e) => {
                errs.push(format!(
                    "invalid talos version {talos:?}: version should be in semver format: {e}"
                ));
                None
            }
            Ok(v) => match ctx
                .talos_versions
                .iter()
                .find(|t| t.version.trim_start_matches('v') == talos.trim_start_matches('v'))
            {
                None => {
                    errs.push(format!("invalid talos version {talos:?}: TalosVersions.omni.sidero.dev(default/{talos}@undefined) doesn't exist"));
                    Some((v, None))
                }
                Some(t) => Some((v, Some(t))),
            },
        }
    };
    if k8s.is_empty() {
        errs.push(format!(
            "invalid kubernetes version {k8s:?}: version is required"
        ));
    } else if let Err(e) = parse_version(k8s) {
        errs.push(format!(
            "invalid kubernetes version {k8s:?}: version should be in semver format: {e}"
        ));
    } else if let Some((_, Some(t))) = &talos_ok
        && !t.admits(k8s)
    {
        errs.push(format!(
            "invalid kubernetes version {k8s:?}: is not compatible with talos version {talos:?}"
        ));
    }
    let encryption = spec.features.as_ref().is_some_and(|f| f.disk_encryption);
    if encryption && talos_ok.as_ref().is_some_and(|(v, _)| (v.0, v.1) < (1, 5)) {
        errs.push("disk encryption is supported only for Talos version >= 1.5.0".into());
    }
    if spec
        .features
        .as_ref()
        .is_some_and(|f| f.use_embedded_discovery_service)
    {
        errs.push("embedded discovery service is not enabled".into());
    }
}

fn cluster(ctx: &Ctx<'_>, new: &Resource, old: Option<&Resource>, errs: &mut Vec<String>) {
    let id = &md(new).id;
    if !id
        .chars()
        .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    {
        errs.push("name should only contain letters, digits, dashes and underscores".into());
    }
    let spec = match specs::ClusterSpec::decode(spec_bytes(new)) {
        Ok(s) => s,
        Err(e) => return errs.push(format!("failed to decode cluster spec: {e}")),
    };
    let Some(old) = old else {
        return version_checks(ctx, &spec, errs);
    };
    let old_spec = specs::ClusterSpec::decode(spec_bytes(old)).unwrap_or_default();
    if locked(old) && spec != old_spec {
        errs.push(format!(
            "updating cluster configuration is not allowed: the cluster {id:?} is locked"
        ));
    }
    if spec.talos_version != old_spec.talos_version
        || spec.kubernetes_version != old_spec.kubernetes_version
        || spec.features != old_spec.features
    {
        version_checks(ctx, &spec, errs);
    }
    let enc = |s: &specs::ClusterSpec| s.features.as_ref().is_some_and(|f| f.disk_encryption);
    if enc(&spec) != enc(&old_spec) {
        errs.push("updating disk encryption settings is not allowed".into());
    }
    if let (Ok(a), Ok(b)) = (
        parse_version(&old_spec.talos_version),
        parse_version(&spec.talos_version),
    ) && (b.0, b.1) < (a.0, a.1)
    {
        errs.push(format!(
            "downgrading from version {} to {} is not supported",
            old_spec.talos_version, spec.talos_version
        ));
    }
}

fn require_label<'a>(r: &'a Resource, k: &str, errs: &mut Vec<String>) -> Option<&'a str> {
    match label(r, k) {
        None => {
            errs.push(format!("label {k:?} does not exist"));
            None
        }
        Some("") => {
            errs.push(format!("label {k:?} has empty value"));
            None
        }
        Some(v) => Some(v),
    }
}

fn immutable_label(new: &Resource, old: Option<&Resource>, k: &str, errs: &mut Vec<String>) {
    if let Some(old) = old {
        let (a, b) = (label(old, k).unwrap_or(""), label(new, k).unwrap_or(""));
        if a != b {
            errs.push(format!(
                "changing value of label {k:?} from {a:?} to {b:?} is not allowed"
            ));
        }
    }
}

fn machine_set(ctx: &Ctx<'_>, new: &Resource, old: Option<&Resource>, errs: &mut Vec<String>) {
    let m = md(new);
    let cluster_name = require_label(new, LABEL_CLUSTER, errs);
    immutable_label(new, old, LABEL_CLUSTER, errs);
    let spec = specs::MachineSetSpec::decode(spec_bytes(new)).unwrap_or_default();
    if let Some(c) = cluster_name {
        match ctx.store.get(&m.namespace, CLUSTERS, c) {
            None => errs.push(format!("the cluster {c:?} does not exist")),
            Some(cl) => {
                if old.is_none() && tearing_down(&cl) {
                    errs.push(format!("the cluster {c:?} is tearing down"));
                }
                if locked(&cl) {
                    match old {
                        None => errs.push(format!("adding machine set {:?} to the cluster {c:?} is not allowed: the cluster is locked", m.id)),
                        Some(o) if spec_bytes(o) != spec_bytes(new) => {
                            errs.push(format!("updating machine set {:?} of the cluster {c:?} is not allowed: the cluster is locked", m.id))
                        }
                        _ => {}
                    }
                }
            }
        }
        let cp = m.labels.contains_key(LABEL_ROLE_CONTROLPLANE);
        let worker = m.labels.contains_key(LABEL_ROLE_WORKER);
        let cp_id = format!("{c}-control-planes");
        if !cp && !worker {
            errs.push(format!("machine set must have either {LABEL_ROLE_CONTROLPLANE:?} or {LABEL_ROLE_WORKER:?} label"));
        }
        if !m.id.starts_with(&format!("{c}-")) {
            errs.push(format!(
                "machine set of cluster {c:?} ID must have {:?} as prefix",
                format!("{c}-")
            ));
        }
        if cp && m.id != cp_id {
            errs.push(format!("control plane machine set must have ID {cp_id:?}"));
        }
        if worker && !cp && m.id == cp_id {
            errs.push(format!("worker machine set must not have ID {cp_id:?}"));
        }
        if spec.bootstrap_spec.is_some() && !cp {
            errs.push("bootstrap spec is only allowed for the control plane machine set".into());
        }
    }
    if let Some(old) = old {
        let old_spec = specs::MachineSetSpec::decode(spec_bytes(old)).unwrap_or_default();
        if old_spec.bootstrap_spec != spec.bootstrap_spec {
            errs.push("bootstrap spec is immutable after creation".into());
        }
    }
    if let Some(a) = &spec.machine_allocation {
        if a.name.is_empty() {
            errs.push("machine allocation source name is not set".into());
        }
        if a.allocation_type != specs::machine_set_spec::machine_allocation::Type::Static as i32
            && a.machine_count != 0
        {
            errs.push("machine count can be set only if static allocation type is used".into());
        }
    }
}

fn machine_set_node(ctx: &Ctx<'_>, new: &Resource, old: Option<&Resource>, errs: &mut Vec<String>) {
    let m = md(new);
    let cluster_name = require_label(new, LABEL_CLUSTER, errs);
    let ms_name = require_label(new, LABEL_MACHINE_SET, errs);
    immutable_label(new, old, LABEL_CLUSTER, errs);
    immutable_label(new, old, LABEL_MACHINE_SET, errs);
    if m.annotations.contains_key(ANNOTATION_LOCKED)
        && m.labels.contains_key(LABEL_ROLE_CONTROLPLANE)
    {
        errs.push("locking controlplanes is not allowed".into());
    }
    if old.is_some() {
        return;
    }
    if let Some(s) = ms_name {
        match ctx.store.get(&m.namespace, MACHINE_SETS, s) {
            None => errs.push(format!("adding machine set node to the machine set {s:?} is not allowed: the machine set does not exist")),
            Some(ms) if tearing_down(&ms) => errs.push(format!("adding machine set node to the machine set {s:?} is not allowed: the machine set is tearing down")),
            Some(ms) => {
                let spec = specs::MachineSetSpec::decode(spec_bytes(&ms)).unwrap_or_default();
                if spec.machine_allocation.is_some() {
                    errs.push(format!("adding machine set node to the machine set {s:?} is not allowed: the machine set is using automated machine allocation"));
                }
            }
        }
    }
    if let Some(c) = cluster_name {
        match ctx.store.get(&m.namespace, CLUSTERS, c) {
            None => errs.push(format!("the cluster {c:?} does not exist")),
            Some(cl) if tearing_down(&cl) => {
                errs.push(format!("the cluster {c:?} is tearing down"))
            }
            Some(cl) if locked(&cl) => errs.push(format!(
                "adding machine set node to the cluster {c:?} is not allowed: the cluster is locked"
            )),
            Some(_) => {}
        }
    }
}

/// The plain content of a ConfigPatch or KubernetesManifestGroup (decompressed when needed).
pub fn content(ctx: &Ctx<'_>, r: &Resource) -> Result<String, String> {
    let (data, compressed) = match md(r).r#type.as_str() {
        CONFIG_PATCHES => {
            let s = specs::ConfigPatchSpec::decode(spec_bytes(r))
                .map_err(|e| format!("failed to decode spec: {e}"))?;
            (s.data, s.compressed_data)
        }
        _ => {
            let s = specs::KubernetesManifestGroupSpec::decode(spec_bytes(r))
                .map_err(|e| format!("failed to decode spec: {e}"))?;
            (s.data, s.compressed_data)
        }
    };
    if compressed.is_empty() {
        return Ok(data);
    }
    let dict = ctx
        .dictionary
        .ok_or("compressed data cannot be read: omni-sim was started without a zstd dictionary")?;
    let plain = dict.decompress(&compressed).map_err(|e| e.to_string())?;
    String::from_utf8(plain).map_err(|_| "decompressed data is not UTF-8".to_string())
}

const FORBIDDEN: [&str; 13] = [
    "cluster.clusterName",
    "cluster.id",
    "cluster.controlPlane.endpoint",
    "cluster.token",
    "cluster.secret",
    "cluster.aescbcEncryptionSecret",
    "cluster.secretboxEncryptionSecret",
    "cluster.acceptedCAs",
    "machine.token",
    "machine.ca",
    "machine.type",
    "machine.install.extensions",
    "machine.acceptedCAs",
];

fn lookup<'a>(v: &'a yaml_serde::Value, path: &str) -> Option<&'a yaml_serde::Value> {
    path.split('.')
        .try_fold(v, |cur, k| cur.as_mapping()?.get(k))
}

/// The forbidden-field rules of a config patch (every YAML document is checked).
pub fn patch_content(text: &str, errs: &mut Vec<String>) {
    use serde::Deserialize as _;
    for doc in yaml_serde::Deserializer::from_str(text) {
        let value = match yaml_serde::Value::deserialize(doc) {
            Ok(v) => v,
            Err(e) => return errs.push(format!("failed to load config patch: {e}")),
        };
        for path in FORBIDDEN {
            if lookup(&value, path).is_some() {
                errs.push(format!(
                    "overriding {path:?} is not allowed in the config patch"
                ));
            }
        }
        let roles_path = "machine.features.kubernetesTalosAPIAccess.allowedRoles";
        if let Some(roles) = lookup(&value, roles_path).and_then(|v| v.as_sequence())
            && roles.iter().any(|r| r.as_str() == Some("os:admin"))
        {
            errs.push(format!(
                "element {:?} is not allowed in field {roles_path:?}",
                "os:admin"
            ));
        }
    }
}

fn config_patch(ctx: &Ctx<'_>, new: &Resource, old: Option<&Resource>, errs: &mut Vec<String>) {
    let m = md(new);
    if old.is_none() {
        if let Some(c) =
            label(new, LABEL_CLUSTER).and_then(|c| ctx.store.get(&m.namespace, CLUSTERS, c))
            && tearing_down(&c)
        {
            errs.push(format!("cluster {:?} is tearing down", md(&c).id));
        }
        if let Some(s) =
            label(new, LABEL_MACHINE_SET).and_then(|s| ctx.store.get(&m.namespace, MACHINE_SETS, s))
            && tearing_down(&s)
        {
            errs.push(format!("machine set {:?} is tearing down", md(&s).id));
        }
    }
    let text = match content(ctx, new) {
        Ok(t) => t,
        Err(e) => return errs.push(e),
    };
    // On update only a content change is validated.
    if let Some(old) = old
        && content(ctx, old).ok().as_deref() == Some(text.as_str())
    {
        return;
    }
    patch_content(&text, errs);
}

fn manifest_group(ctx: &Ctx<'_>, new: &Resource, errs: &mut Vec<String>) {
    let spec = specs::KubernetesManifestGroupSpec::decode(spec_bytes(new)).unwrap_or_default();
    if spec.mode == 0 {
        errs.push("the manifest should have mode field set".into());
    }
    require_label(new, LABEL_CLUSTER, errs);
    if md(new).labels.contains_key(LABEL_SYSTEM_MANIFEST) {
        errs.push(format!(
            "label {LABEL_SYSTEM_MANIFEST:?} is reserved for system manifests"
        ));
    }
    match content(ctx, new) {
        Err(e) => errs.push(e),
        Ok(text) => {
            use serde::Deserialize as _;
            for doc in yaml_serde::Deserializer::from_str(&text) {
                if let Err(e) = yaml_serde::Value::deserialize(doc) {
                    errs.push(format!("failed to parse manifests: {e}"));
                    break;
                }
            }
        }
    }
}

fn health_check(new: &Resource, errs: &mut Vec<String>) {
    let spec = specs::KubernetesHealthCheckSpec::decode(spec_bytes(new)).unwrap_or_default();
    if spec.job.is_empty() {
        errs.push("healthcheck job manifest must be set".into());
    }
    let name = format!("omni-healthcheck-{}", md(new).id);
    let dns_ok = name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    if !dns_ok {
        errs.push(format!(
            "invalid healthcheck name {name:?}: must be a DNS-1123 subdomain"
        ));
    }
    if let Some(i) = &spec.interval
        && i.seconds < 5
        && (i.seconds > 0 || i.nanos > 0)
    {
        errs.push("healthcheck interval must be at least 5s".into());
    }
}

fn kernel_args(new: &Resource, errs: &mut Vec<String>) {
    let spec = specs::KernelArgsSpec::decode(spec_bytes(new)).unwrap_or_default();
    if spec.args.len() > 64 {
        errs.push(format!(
            "args has too many entries: {} (max 64)",
            spec.args.len()
        ));
    }
    for (i, a) in spec.args.iter().enumerate() {
        if a.len() > 256 {
            errs.push(format!(
                "args[{i}] is too long: {} bytes (max 256)",
                a.len()
            ));
        } else if has_control(a) {
            errs.push(format!("args[{i}] must not contain control characters"));
        }
    }
}

fn extensions(ctx: &Ctx<'_>, new: &Resource, errs: &mut Vec<String>) {
    let spec = specs::ExtensionsConfigurationSpec::decode(spec_bytes(new)).unwrap_or_default();
    if spec.extensions.is_empty() {
        return;
    }
    if let Some(c) = require_label(new, LABEL_CLUSTER, errs)
        && ctx.store.get(&md(new).namespace, CLUSTERS, c).is_none()
    {
        errs.push(format!("the cluster {c:?} does not exist"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multierror_text_matches_hashicorp() {
        assert_eq!(multierror(&["a".into()]), "1 error occurred:\n\t* a\n\n");
        assert_eq!(
            multierror(&["a".into(), "b".into()]),
            "2 errors occurred:\n\t* a\n\t* b\n\n"
        );
    }

    #[test]
    fn kubernetes_compatibility_by_minor_or_exact() {
        let t = TalosVersion::new("1.10.3", &["1.33", "1.32.1"]);
        assert!(t.admits("1.33.4") && t.admits("v1.33.0") && t.admits("1.32.1"));
        assert!(!t.admits("1.32.2") && !t.admits("1.330.0") && !t.admits("1.34.0"));
    }

    #[test]
    fn forbidden_patch_fields() {
        let mut errs = vec![];
        patch_content(
            "cluster:\n  clusterName: x\nmachine:\n  features:\n    kubernetesTalosAPIAccess:\n      allowedRoles: [os:reader, os:admin]\n",
            &mut errs,
        );
        assert_eq!(
            errs,
            vec![
                "overriding \"cluster.clusterName\" is not allowed in the config patch".to_string(),
                "element \"os:admin\" is not allowed in field \"machine.features.kubernetesTalosAPIAccess.allowedRoles\"".to_string()
            ]
        );
        let mut ok = vec![];
        patch_content("machine:\n  network:\n    hostname: a\n", &mut ok);
        assert!(ok.is_empty(), "{ok:?}");
    }
}
