//! Omni's client-side template validation (`Template.Validate` of Omni v1.9.3 `client/pkg/template`): every
//! finding, nested and worded as Omni's client prints it, so the message an OmniCluster shows in
//! `Validated=False` is the one `omnictl cluster template validate` would print.
//!
//! Confirmed from Omni's source (repository siderolabs/omni; the code index holds several historical versions of
//! each file and none is tagged v1.9.3, so where they differ the newest one with the v1.9.3 features is followed):
//! * `client/pkg/template/internal/models/list.go` `List.Validate`: every model in document order, then the
//!   whole-template checks, in the order below;
//! * `models/cluster.go` (the version with manifests and healthchecks): `ClusterValidator`, then descriptors, patches,
//!   manifests, healthchecks, under `error validating cluster %q: `;
//! * `client/pkg/omni/resources/omni/cluster.go` `ClusterValidator`: name, Kubernetes and Talos versions (blang/semver
//!   v4 `ParseTolerant`), disk encryption;
//! * `models/controlplane.go`, `workers.go`, `machineset.go`, `machine.go`, `patch.go`, `models.go` (`Descriptors`);
//! * `models/kubernetes_manifest.go`: manifests join their errors with `errors.Join` (newline-separated), not
//!   go-multierror;
//! * `client/pkg/omni/resources/omni/configpatch.go` `ValidateConfigPatch`: the forbidden fields, and that the
//!   forbidden role is `talosrole.Admin`, whose value is `os:admin` (siderolabs/talos `pkg/machinery/role`);
//! * `client/pkg/template/template_test.go` `TestValidate`: the exact nesting and flattening, reproduced below;
//! * blang/semver `v4/semver.go` and google/uuid `uuid.go` (v1.3+ `Parse`): their error texts.
//!
//! Inferred, not seen in any stored version: the machine-class `kernelArgs` check sits in `MachineSet.Validate`
//! after the machines-and-class check (only its text is known).
//!
//! go-multierror's `Append` flattens a multierror it is given, but not one wrapped by `fmt.Errorf("…: %w")`. So a
//! model's own checks and its sub-lists' findings (descriptors, machine IDs, patches) sit side by side in one list,
//! while each model, patch and version header opens a new level. `Findings::absorb` and `Findings::nest` are those
//! two moves.
//!
//! Left out, and why:
//! * the counts of Cluster and ControlPlane documents: [`Template`] holds exactly one of each;
//! * a manifest's unset mode and an inline value that cannot be marshalled: [`ManifestMode`](crate::model::ManifestMode)
//!   has no unset value and JSON values always marshal;
//! * labels and annotations on manifests (`kubernetes manifest %q descriptors validation failed: …`): the model
//!   gives manifests none;
//! * healthchecks: the model has none;
//! * Talos' config loader (`configloader.NewFromBytes`, strict decoding of every patch document): it cannot be copied
//!   exactly in Rust, and the Omni server runs it again on every ConfigPatch, so a patch it rejects still fails,
//!   at sync time, with the server's `InvalidArgument`. Only the forbidden-field rules run here.
//!
//! Where Go leaves the order to map iteration (duplicate worker names, machines in several workers, the
//! controlplane/workers intersection, labels and annotations), findings follow first appearance in the template, and
//! labels and annotations their sorted keys, so the message is stable between reconciles.

use std::collections::BTreeSet;
use std::fmt;

use crate::model::{
    Cluster, FileSource, Machine, MachineSet, Manifest, Patch, StringMap, Template,
};

/// Omni's verdict on a template: every finding, nested and worded as Omni's client does.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationError {
    findings: Vec<Finding>,
}

impl ValidationError {
    /// The top-level findings, in Omni's order.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&MultiError(&self.findings), f)
    }
}

impl std::error::Error for ValidationError {}

/// One `* …` entry of a go-multierror list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A message on its own (it may span lines, as a manifest's `errors.Join` does).
    Message(String),
    /// Findings under a header, as Omni's `fmt.Errorf("<header>: %w", multierror)`.
    Nested {
        header: String,
        findings: Vec<Finding>,
    },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Message(message) => f.write_str(message),
            Finding::Nested { header, findings } => write!(f, "{header}: {}", MultiError(findings)),
        }
    }
}

/// hashicorp/go-multierror's default `ListFormatFunc`. Nested lists are not indented further, exactly as Go
/// prints them.
struct MultiError<'a>(&'a [Finding]);

impl fmt::Display for MultiError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [only] => write!(f, "1 error occurred:\n\t* {only}\n\n"),
            all => {
                write!(f, "{} errors occurred:", all.len())?;
                for finding in all {
                    write!(f, "\n\t* {finding}")?;
                }
                f.write_str("\n\n")
            }
        }
    }
}

/// Applies Omni's client-side validation to `template`; `files` resolves `file:` patches and manifests.
pub fn validate(template: &Template, files: &dyn FileSource) -> Result<(), ValidationError> {
    let mut all = Findings::default();
    // The template's documents in the encoder's order, which is the order Omni reads them in.
    all.nest(
        format!(
            "error validating cluster {}",
            go::quote(&template.cluster.name)
        ),
        cluster(&template.cluster, files),
    );
    all.nest(
        "controlplane is invalid",
        control_plane(&template.control_plane, files),
    );
    for workers in &template.workers {
        all.nest("workers is invalid", workers_set(workers, files));
    }
    for machine in &template.machines {
        all.nest(
            format!("machine {} is invalid", go::quote(&machine.name)),
            machine_document(machine, files),
        );
    }
    all.absorb(whole_template(template));

    if all.0.is_empty() {
        Ok(())
    } else {
        Err(ValidationError { findings: all.0 })
    }
}

/// The findings of one level, built the way Omni appends to its multierror.
#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn add(&mut self, message: impl Into<String>) {
        self.0.push(Finding::Message(message.into()));
    }

    /// `fmt.Errorf("<header>: %w", inner)`: a new level, only when there is something under it.
    fn nest(&mut self, header: impl Into<String>, inner: Findings) {
        if !inner.0.is_empty() {
            self.0.push(Finding::Nested {
                header: header.into(),
                findings: inner.0,
            });
        }
    }

    /// `multierror.Append(err, inner)` with a multierror: its entries join this level.
    fn absorb(&mut self, inner: Findings) {
        self.0.extend(inner.0);
    }
}

/// Go's templates treat an empty string as unset, and so must a `Some("")` here.
fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

const RESERVED_PREFIX: &str = "omni.sidero.dev/";

/// `Descriptors.Validate`: labels first, then annotations.
fn descriptors(labels: &StringMap, annotations: &StringMap) -> Findings {
    let mut found = Findings::default();
    let prefix = go::quote(RESERVED_PREFIX);
    for (kind, keys) in [("label", labels), ("annotation", annotations)] {
        for key in keys.keys().filter(|k| k.starts_with(RESERVED_PREFIX)) {
            found.add(format!(
                "{kind} {} is invalid: prefix {prefix} is reserved for internal use",
                go::quote(key)
            ));
        }
    }
    found
}

/// `Cluster.Validate`: `ClusterValidator` (ID, versions, disk encryption), descriptors, patches, manifests.
fn cluster(cluster: &Cluster, files: &dyn FileSource) -> Findings {
    let mut found = Findings::default();

    if cluster.name.is_empty() {
        found.add("name is required");
    }
    // Go stops at the first offending character, so there is one message however many there are.
    if cluster
        .name
        .chars()
        .any(|c| !is_go_letter_or_digit(c) && c != '-' && c != '_')
    {
        found.add("name should only contain letters, digits, dashes and underscores");
    }

    let mut kubernetes = Findings::default();
    if cluster.kubernetes_version.is_empty() {
        kubernetes.add("version is required");
    } else if let Err(e) = semver::parse_tolerant(&cluster.kubernetes_version) {
        kubernetes.add(format!("version should be in semver format: {e}"));
    }
    found.nest("error validating Kubernetes version", kubernetes);

    let mut talos = Findings::default();
    if cluster.talos_version.is_empty() {
        talos.add("version is required");
    } else {
        if let Err(e) = semver::parse_tolerant(&cluster.talos_version) {
            talos.add(format!("version should be in semver format: {e}"));
        }
        // Templates only (`RequireVPrefixOnTalosVersionCheck`); the raw string, before any trimming.
        if !cluster.talos_version.starts_with('v') {
            talos.add("version should start with 'v'");
        }
    }
    found.nest("error validating Talos version", talos);

    if cluster.features.as_ref().is_some_and(|f| f.disk_encryption) {
        // Go returns the parser's error unwrapped here, so an unparseable version is reported twice, once bare.
        match semver::parse_tolerant(&cluster.talos_version) {
            Err(e) => found.add(e),
            Ok(version) if version.is_before_1_5_0() => {
                found.add("disk encryption is supported only for Talos version >= 1.5.0")
            }
            Ok(_) => {}
        }
    }

    found.absorb(descriptors(&cluster.labels, &cluster.annotations));
    patches(&mut found, &cluster.patches, files);
    // `errors.Join` is not a multierror, so all manifest errors make one entry, one per line.
    if let Some(joined) = manifests(&cluster.manifests, files) {
        found.add(joined);
    }
    found
}

/// Go's `unicode.IsLetter(c) || unicode.IsDigit(c)` (categories L and Nd), approximated with Rust's Alphabetic and
/// Numeric properties: they also admit letter-like numerals, other numbers (`²`, `½`) and combining vowel signs,
/// which Go rejects. The two agree on ASCII, which is what Kubernetes-style cluster names use.
fn is_go_letter_or_digit(c: char) -> bool {
    c.is_alphabetic() || c.is_numeric()
}

/// `ControlPlane.Validate`.
fn control_plane(set: &MachineSet, files: &dyn FileSource) -> Findings {
    let mut found = Findings::default();
    if non_empty(&set.name).is_some() {
        found.add("custom name is not allowed in the controlplane");
    }
    if let Some(bootstrap) = &set.bootstrap {
        if bootstrap.cluster_uuid.is_empty() {
            found.add("clusterUUID is required in bootstrapSpec");
        }
        if bootstrap.snapshot.is_empty() {
            found.add("snapshot is required in bootstrapSpec");
        }
    }
    if set.update_strategy.is_some() {
        found.add("updateStrategy is not allowed in the controlplane");
    }
    if set.delete_strategy.is_some() {
        found.add("deleteStrategy is not allowed in the controlplane");
    }
    machine_set(&mut found, set, files);
    found
}

/// The ID suffix of the control-plane MachineSet, which a Workers set would collide with.
const CONTROL_PLANES: &str = "control-planes";

/// `Workers.Validate`.
fn workers_set(set: &MachineSet, files: &dyn FileSource) -> Findings {
    let mut found = Findings::default();
    if set.name.as_deref() == Some(CONTROL_PLANES) {
        found.add(format!(
            "name {} cannot be used in workers",
            go::quote(CONTROL_PLANES)
        ));
    }
    if set.bootstrap.is_some() {
        found.add("bootstrapSpec is not allowed in workers");
    }
    machine_set(&mut found, set, files);
    found
}

/// What ControlPlane and Workers share: `MachineSet.Validate`, `MachineIDList.Validate`, `PatchList.Validate`.
fn machine_set(found: &mut Findings, set: &MachineSet, files: &dyn FileSource) {
    found.absorb(descriptors(&set.labels, &set.annotations));
    if !set.machines.is_empty() && set.machine_class.is_some() {
        found.add("machine set can not have both machines and machine class defined");
    }
    // Go tests "defined" (`kernelArgs: []` counts); the model cannot tell `[]` from unset, and the renderer never
    // writes an empty list, so non-empty is the same test here.
    if set.machine_class.is_some() && !set.kernel_args.is_empty() {
        found.add("kernelArgs cannot be defined for machine set since it uses machine class");
    }
    for id in &set.machines {
        machine_id(found, id);
    }
    patches(found, &set.patches, files);
}

/// `MachineID.Validate`.
fn machine_id(found: &mut Findings, id: &str) {
    if let Err(e) = uuid::parse(id) {
        found.add(format!("invalid machine ID {}: {e}", go::quote(id)));
    }
}

/// `Machine.Validate`.
fn machine_document(machine: &Machine, files: &dyn FileSource) -> Findings {
    let mut found = Findings::default();
    if machine.name.is_empty() {
        found.add("name is required for machine");
    }
    found.absorb(descriptors(&machine.labels, &machine.annotations));
    machine_id(&mut found, &machine.name);
    patches(&mut found, &machine.patches, files);
    found
}

/// `PatchList.Validate`: each patch under its own header.
fn patches(found: &mut Findings, list: &[Patch], files: &dyn FileSource) {
    for patch in list {
        found.nest(
            format!("patch {} is invalid", go::quote(patch.display_name())),
            single_patch(patch, files),
        );
    }
}

/// `Patch.Validate`.
fn single_patch(patch: &Patch, files: &dyn FileSource) -> Findings {
    let mut found = descriptors(&patch.labels, &patch.annotations);
    let file = non_empty(&patch.file);
    // `inline: null` decodes to no inline content in Go.
    let inline = patch.inline.as_ref().filter(|v| !v.is_null());

    match (file, inline) {
        (Some(_), Some(_)) => found.add("path and inline are mutually exclusive"),
        (None, None) => found.add("path or inline is required"),
        _ => {}
    }

    if let Some(path) = file {
        match files.read(path) {
            Err(reason) => found.add(format!("failed to access {}: {reason}", go::quote(path))),
            Ok(bytes) => {
                let document = std::str::from_utf8(&bytes)
                    .ok()
                    .and_then(config_patch::first_yaml_document);
                // Named by the file here, not by the patch's name: Omni's wording.
                found.nest(
                    format!("failed to validate patch {}", go::quote(path)),
                    config_patch::forbidden(document.as_ref()),
                );
            }
        }
    } else if let Some(inline) = inline {
        if non_empty(&patch.name).is_none() && non_empty(&patch.id_override).is_none() {
            found.add("either name or idOverride is required for inline patches");
        }
        found.nest(
            format!(
                "failed to validate inline patch {}",
                go::quote(patch.display_name())
            ),
            config_patch::forbidden(config_patch::first_inline_document(inline).as_deref()),
        );
    }
    found
}

/// `KubernetesManifestsList.Validate`: each manifest's errors, then (for a valid one) the duplicate-name check,
/// all joined by newlines as `errors.Join` prints them. `None` when there is nothing to say.
fn manifests(list: &[Manifest], files: &dyn FileSource) -> Option<String> {
    let mut seen = BTreeSet::new();
    let mut errors: Vec<String> = Vec::new();

    for manifest in list {
        let file = non_empty(&manifest.file);
        let name = if manifest.name.is_empty() {
            file.unwrap_or("")
        } else {
            manifest.name.as_str()
        };
        let inline = !manifest.inline.is_empty();
        let mut own: Vec<String> = Vec::new();

        if name.is_empty() {
            own.push("kubernetes manifest name is empty".to_owned());
        }
        match (file, inline) {
            (Some(_), true) => own.push("path and inline are mutually exclusive".to_owned()),
            (None, false) => own.push("path or inline is required".to_owned()),
            _ => {}
        }
        // `kubernetes manifest %q descriptors validation failed: …` cannot arise: the model gives manifests no
        // labels or annotations.
        if let Some(path) = file
            && let Err(reason) = files.read(path)
        {
            own.push(format!("failed to access {}: {reason}", go::quote(path)));
        }

        // An invalid manifest is not recorded, so a later one with its name is not called a duplicate.
        if !own.is_empty() {
            errors.extend(own);
        } else if !seen.insert(name) {
            errors.push(format!("duplicate manifest name {}", go::quote(name)));
        }
    }

    (!errors.is_empty()).then(|| errors.join("\n"))
}

/// `List.Validate` after the models: the checks that need the whole template.
fn whole_template(template: &Template) -> Findings {
    let mut found = Findings::default();
    // Go keys these on the raw `name`, so an unnamed Workers set counts as "" here, not as its default `workers`.
    fn raw_name(set: &MachineSet) -> &str {
        set.name.as_deref().unwrap_or("")
    }

    let mut name_counts: Vec<(&str, usize)> = Vec::new();
    let mut machine_sets: Vec<(&str, Vec<&str>)> = Vec::new();
    for set in &template.workers {
        let name = raw_name(set);
        match name_counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => name_counts.push((name, 1)),
        }
        // One entry per listing, as in Go: a machine listed twice in one set is "used in multiple workers" too.
        for id in &set.machines {
            match machine_sets.iter_mut().find(|(m, _)| *m == id.as_str()) {
                Some((_, sets)) => sets.push(name),
                None => machine_sets.push((id.as_str(), vec![name])),
            }
        }
    }

    for (name, count) in &name_counts {
        if *count > 1 {
            found.add(format!("duplicate workers with name {}", go::quote(name)));
        }
    }
    for (id, sets) in &machine_sets {
        if sets.len() > 1 {
            found.add(format!(
                "machine {} is used in multiple workers: {}",
                go::quote(id),
                go::quote_list(sets)
            ));
        }
    }

    let control_plane = &template.control_plane.machines;
    let in_control_plane = |id: &str| control_plane.iter().any(|m| m == id);
    let both: Vec<&str> = machine_sets
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| in_control_plane(id))
        .collect();
    if !both.is_empty() {
        // Go's `%v` of a string slice: unquoted, space-separated, in brackets.
        found.add(format!(
            "machines [{}] are used in both controlplane and workers",
            both.join(" ")
        ));
    }

    for machine in &template.machines {
        let in_workers = machine_sets.iter().any(|(id, _)| *id == machine.name);
        if !in_control_plane(&machine.name) && !in_workers {
            found.add(format!(
                "machine {} is not used in controlplane or workers",
                go::quote(&machine.name)
            ));
        }
    }

    let locked: BTreeSet<&str> = template
        .machines
        .iter()
        .filter(|m| m.locked)
        .map(|m| m.name.as_str())
        .collect();
    for id in control_plane {
        if locked.contains(id.as_str()) {
            found.add(format!(
                "machine {} is locked and used in controlplane",
                go::quote(id)
            ));
        }
    }
    found
}

/// The forbidden-field half of `omni.ValidateConfigPatch`, which looks only at the patch's first YAML
/// document, decoded as a mapping.
mod config_patch {
    use std::borrow::Cow;

    use serde_json::Value;

    use super::{Findings, go};

    /// Fields Omni owns; a patch may not even mention them (a `null` value counts).
    const FORBIDDEN_FIELDS: [&str; 13] = [
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

    const ALLOWED_ROLES: &str = "machine.features.kubernetesTalosAPIAccess.allowedRoles";
    /// Talos' `role.Admin`: Kubernetes workloads must not get full Talos API access.
    const ADMIN_ROLE: &str = "os:admin";

    pub(super) fn forbidden(document: Option<&Value>) -> Findings {
        let mut found = Findings::default();
        let Some(document) = document else {
            return found;
        };
        for field in FORBIDDEN_FIELDS {
            if lookup(document, field).is_some() {
                found.add(format!(
                    "overriding {} is not allowed in the config patch",
                    go::quote(field)
                ));
            }
        }
        if let Some(Value::Array(roles)) = lookup(document, ALLOWED_ROLES) {
            for _ in roles.iter().filter(|r| r.as_str() == Some(ADMIN_ROLE)) {
                found.add(format!(
                    "element {} is not allowed in field {}",
                    go::quote(ADMIN_ROLE),
                    go::quote(ALLOWED_ROLES)
                ));
            }
        }
        found
    }

    /// Omni's `getField`: every step must be a mapping holding the key.
    fn lookup<'a>(document: &'a Value, path: &str) -> Option<&'a Value> {
        path.split('.')
            .try_fold(document, |node, key| node.as_object()?.get(key))
    }

    /// The first document of an inline patch: a mapping is one, a list holds one per item, a string is YAML text.
    pub(super) fn first_inline_document(inline: &Value) -> Option<Cow<'_, Value>> {
        match inline {
            Value::Object(_) => Some(Cow::Borrowed(inline)),
            Value::Array(items) => items.first().map(Cow::Borrowed),
            Value::String(text) => first_yaml_document(text).map(Cow::Owned),
            _ => None,
        }
    }

    /// The first document of YAML text, or `None` when it does not parse. Talos' loader would reject such a patch
    /// with its own message, which cannot be reproduced here; the server rejects it at sync time instead.
    pub(super) fn first_yaml_document(text: &str) -> Option<Value> {
        let document = yaml_serde::Deserializer::from_str(text).next()?;
        // `singleton_map::deserialize` is a plain pass-through for anything but enums; it is used because it lets a
        // single document of the stream be deserialized without naming serde's `Deserialize` trait, and serde is
        // not a dependency of this crate.
        let mut value: yaml_serde::Value =
            yaml_serde::with::singleton_map::deserialize(document).ok()?;
        // go-yaml resolves `<<` merge keys while decoding, so a field merged in from an anchor is present.
        value.apply_merge().ok()?;
        yaml_serde::from_value(value).ok()
    }
}

/// Go's formatting of strings in messages.
mod go {
    /// `strconv.Quote` (what `%q` prints): Go escapes, with `\u`/`\U` for runes that are not printable.
    pub(super) fn quote(s: &str) -> String {
        quote_bytes(s.as_bytes())
    }

    /// `strconv.Quote` of bytes that may not be UTF-8 (Go strings are bytes): invalid bytes become `\xNN`.
    pub(super) fn quote_bytes(bytes: &[u8]) -> String {
        let mut out = String::from('"');
        for chunk in bytes.utf8_chunks() {
            for c in chunk.valid().chars() {
                push_escaped(&mut out, c);
            }
            for byte in chunk.invalid() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        }
        out.push('"');
        out
    }

    /// `%q` of a string slice: each element quoted, space-separated, in brackets.
    pub(super) fn quote_list(items: &[&str]) -> String {
        let quoted: Vec<String> = items.iter().map(|s| quote(s)).collect();
        format!("[{}]", quoted.join(" "))
    }

    fn push_escaped(out: &mut String, c: char) {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_printable(c) => out.push(c),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }

    /// Go's `strconv.IsPrint` (letters, marks, numbers, punctuation, symbols and the ASCII space), from Rust's
    /// properties plus the format and private-use ranges; unassigned code points, which Go escapes, pass here.
    fn is_printable(c: char) -> bool {
        if c.is_control() {
            return false;
        }
        if c.is_whitespace() {
            return c == ' ';
        }
        !matches!(
            c as u32,
            0xAD | 0x600..=0x605
                | 0x61C
                | 0x6DD
                | 0x70F
                | 0x180E
                | 0x200B..=0x200F
                | 0x202A..=0x202E
                | 0x2060..=0x2064
                | 0x2066..=0x206F
                | 0xFEFF
                | 0xFFF9..=0xFFFB
                | 0xE000..=0xF8FF
                | 0xE0001
                | 0xE0020..=0xE007F
                | 0xF0000..=0x10FFFF
        )
    }
}

/// blang/semver v4 `ParseTolerant`, ported with its error texts, because Omni puts them in its messages.
mod semver {
    use super::go;

    /// Only what the disk-encryption check compares.
    pub(super) struct Version {
        major: u64,
        minor: u64,
        patch: u64,
        pre_release: bool,
    }

    impl Version {
        /// `version.Compare(1.5.0) < 0`: a pre-release of 1.5.0 comes before it.
        pub(super) fn is_before_1_5_0(&self) -> bool {
            let core = (self.major, self.minor, self.patch);
            core < (1, 5, 0) || (core == (1, 5, 0) && self.pre_release)
        }
    }

    /// Trims spaces and one leading `v`, strips leading zeros, fills `1.2` up to `1.2.0`, then parses strictly.
    pub(super) fn parse_tolerant(s: &str) -> Result<Version, String> {
        // Go's TrimSpace and Rust's trim both use Unicode's White_Space property.
        let s = s.trim();
        let s = s.strip_prefix('v').unwrap_or(s);

        let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_owned).collect();
        for part in &mut parts {
            if part.len() > 1 {
                let trimmed = part.trim_start_matches('0');
                *part = if trimmed.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                    trimmed.to_owned()
                } else {
                    format!("0{trimmed}")
                };
            }
        }
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
                return Err("Short version cannot contain PreRelease/Build meta data".to_owned());
            }
            parts.resize(3, "0".to_owned());
        }
        parse(&parts.join("."))
    }

    /// `semver.Parse`.
    fn parse(s: &str) -> Result<Version, String> {
        if s.is_empty() {
            return Err("Version string empty".to_owned());
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        let [major, minor, rest] = parts[..] else {
            return Err("No Major.Minor.Patch elements found".to_owned());
        };
        let major = number(major, "major number", "Major number")?;
        let minor = number(minor, "minor number", "Minor number")?;

        let (rest, build) = match rest.split_once('+') {
            Some((before, build)) => (before, Some(build)),
            None => (rest, None),
        };
        let (patch, pre_release) = match rest.split_once('-') {
            Some((before, pre)) => (before, Some(pre)),
            None => (rest, None),
        };
        let patch = number(patch, "patch number", "Patch number")?;

        if let Some(pre_release) = pre_release {
            for identifier in pre_release.split('.') {
                pre_release_identifier(identifier)?;
            }
        }
        if let Some(build) = build {
            for identifier in build.split('.') {
                if identifier.is_empty() {
                    return Err("Build meta data is empty".to_owned());
                }
                if !identifier.chars().all(is_alphanumeric) {
                    return Err(format!(
                        "Invalid character(s) found in build meta data {}",
                        go::quote(identifier)
                    ));
                }
            }
        }
        Ok(Version {
            major,
            minor,
            patch,
            pre_release: pre_release.is_some(),
        })
    }

    fn number(s: &str, what: &str, what_capitalised: &str) -> Result<u64, String> {
        if !s.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!(
                "Invalid character(s) found in {what} {}",
                go::quote(s)
            ));
        }
        if has_leading_zeroes(s) {
            return Err(format!(
                "{what_capitalised} must not contain leading zeroes {}",
                go::quote(s)
            ));
        }
        parse_uint(s)
    }

    /// `NewPRVersion`.
    fn pre_release_identifier(s: &str) -> Result<(), String> {
        if s.is_empty() {
            return Err("Prerelease is empty".to_owned());
        }
        if s.chars().all(|c| c.is_ascii_digit()) {
            if has_leading_zeroes(s) {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {}",
                    go::quote(s)
                ));
            }
            parse_uint(s).map(|_| ())
        } else if s.chars().all(is_alphanumeric) {
            Ok(())
        } else {
            Err(format!(
                "Invalid character(s) found in prerelease {}",
                go::quote(s)
            ))
        }
    }

    /// `strconv.ParseUint(s, 10, 64)` on a string already known to hold only ASCII digits, so the only failures
    /// are an empty string and overflow.
    fn parse_uint(s: &str) -> Result<u64, String> {
        s.parse::<u64>().map_err(|_| {
            let reason = if s.is_empty() {
                "invalid syntax"
            } else {
                "value out of range"
            };
            format!("strconv.ParseUint: parsing {}: {reason}", go::quote(s))
        })
    }

    fn has_leading_zeroes(s: &str) -> bool {
        s.len() > 1 && s.starts_with('0')
    }

    /// semver's `alphanum`: ASCII letters, digits and `-`.
    fn is_alphanumeric(c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '-'
    }
}

/// google/uuid `Parse` (v1.3 and later), ported with its error texts: the forms it accepts are wider than RFC 4122's.
mod uuid {
    use super::go;

    const FORMAT: &str = "invalid UUID format";
    /// Where each byte's two hex digits start in `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    const HEX_PAIRS: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

    pub(super) fn parse(s: &str) -> Result<(), String> {
        let bytes = s.as_bytes();
        // Lengths are in bytes, as in Go.
        let canonical = match bytes.len() {
            36 => bytes,
            45 => {
                let (prefix, rest) = bytes.split_at(9);
                if !prefix.eq_ignore_ascii_case(b"urn:uuid:") {
                    return Err(format!("invalid urn prefix: {}", go::quote_bytes(prefix)));
                }
                rest
            }
            // `{…}`: Go skips the first byte and never looks at either brace.
            38 => &bytes[1..],
            32 => {
                return if bytes.iter().all(u8::is_ascii_hexdigit) {
                    Ok(())
                } else {
                    Err(FORMAT.to_owned())
                };
            }
            n => return Err(format!("invalid UUID length: {n}")),
        };
        // `canonical` holds at least 36 bytes in every branch above, so the indexing below stays in bounds.
        let dashes = [8, 13, 18, 23].iter().all(|&i| canonical[i] == b'-');
        let hex = HEX_PAIRS
            .iter()
            .all(|&i| canonical[i].is_ascii_hexdigit() && canonical[i + 1].is_ascii_hexdigit());
        if dashes && hex {
            Ok(())
        } else {
            Err(FORMAT.to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::model::{
        Bootstrap, Features, MachineClass, ManifestMode, SetKind, Size, Strategy, StrategyType,
    };

    const CP_1: &str = "430d882a-51a8-48b3-ae00-90c5b0b5b0b0";
    const CP_2: &str = "4aed1106-6f44-4be9-9796-d4b5b0b5b0b0";
    const W_1: &str = "947f7a99-0f46-4a9e-ab02-205f4e1b7009";
    const W_2: &str = "b1ed45d8-4e79-4a07-a29a-b1b075843d41";

    type Files = BTreeMap<String, Result<Vec<u8>, String>>;

    fn files(entries: &[(&str, &str)]) -> Files {
        entries
            .iter()
            .map(|(path, text)| (path.to_string(), Ok(text.as_bytes().to_vec())))
            .collect()
    }

    fn labels(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A valid template: cluster `c`, one control-plane machine, no workers.
    fn template() -> Template {
        Template {
            cluster: Cluster {
                name: "c".into(),
                kubernetes_version: "v1.35.0".into(),
                talos_version: "v1.13.2".into(),
                ..Default::default()
            },
            control_plane: control_plane(&[CP_1]),
            ..Default::default()
        }
    }

    fn control_plane(machines: &[&str]) -> MachineSet {
        MachineSet {
            kind: SetKind::ControlPlane,
            machines: machines.iter().map(|m| m.to_string()).collect(),
            ..Default::default()
        }
    }

    fn workers(name: Option<&str>, machines: &[&str]) -> MachineSet {
        MachineSet {
            kind: SetKind::Workers,
            name: name.map(str::to_owned),
            machines: machines.iter().map(|m| m.to_string()).collect(),
            ..Default::default()
        }
    }

    fn machine(name: &str) -> Machine {
        Machine {
            name: name.into(),
            ..Default::default()
        }
    }

    fn inline_patch(name: &str, inline: Value) -> Patch {
        Patch {
            name: Some(name.into()),
            inline: Some(inline),
            ..Default::default()
        }
    }

    fn file_patch(path: &str) -> Patch {
        Patch {
            file: Some(path.into()),
            ..Default::default()
        }
    }

    fn class() -> Option<MachineClass> {
        Some(MachineClass {
            name: "small".into(),
            size: Size::Count(2),
        })
    }

    /// The full text Omni would print, with the files given.
    fn message_with(template: &Template, files: &Files) -> String {
        validate(template, files)
            .expect_err("the template should be invalid")
            .to_string()
    }

    fn message(template: &Template) -> String {
        message_with(template, &Files::new())
    }

    #[test]
    fn a_valid_template_passes() {
        let mut t = template();
        t.cluster.labels = labels(&[("team", "hpc")]);
        t.cluster.features = Some(Features {
            disk_encryption: true,
            ..Default::default()
        });
        t.cluster.patches = vec![
            file_patch("patches/registry.yaml"),
            inline_patch(
                "kubespan",
                json!({"machine": {"network": {"kubespan": {"enabled": true}}}}),
            ),
            inline_patch(
                "two-documents",
                json!([{"machine": {"sysctls": {"a": "1"}}}, {"kind": "x"}]),
            ),
            inline_patch(
                "verbatim",
                json!(
                    "machine:\n  features:\n    kubernetesTalosAPIAccess:\n      allowedRoles: [os:reader]\n"
                ),
            ),
        ];
        t.cluster.manifests = vec![
            Manifest {
                name: "nginx".into(),
                inline: vec![json!({"kind": "Deployment"})],
                ..Default::default()
            },
            Manifest {
                file: Some("manifests/cni.yaml".into()),
                mode: ManifestMode::OneTime,
                ..Default::default()
            },
        ];
        t.control_plane = control_plane(&[CP_1, CP_2]);
        t.control_plane.bootstrap = Some(Bootstrap {
            cluster_uuid: "u".into(),
            snapshot: "s".into(),
        });
        t.workers = vec![
            workers(None, &[W_1]),
            MachineSet {
                machine_class: class(),
                ..workers(Some("gpu"), &[])
            },
        ];
        t.machines = vec![
            machine(CP_1),
            Machine {
                locked: true,
                ..machine(W_1)
            },
        ];
        let files = files(&[
            ("patches/registry.yaml", "machine:\n  registries: {}\n"),
            ("manifests/cni.yaml", "kind: DaemonSet\n"),
        ]);

        assert_eq!(validate(&t, &files), Ok(()));
    }

    // Whole-template checks.

    #[test]
    fn two_workers_sets_may_not_share_a_name() {
        let mut t = template();
        t.workers = vec![workers(Some("a"), &[W_1]), workers(Some("a"), &[W_2])];

        assert_eq!(
            message(&t),
            "1 error occurred:\n\t* duplicate workers with name \"a\"\n\n"
        );
    }

    #[test]
    fn a_machine_may_be_in_only_one_workers_set() {
        let mut t = template();
        t.workers = vec![workers(Some("a"), &[W_1]), workers(Some("b"), &[W_1])];

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* machine \"947f7a99-0f46-4a9e-ab02-205f4e1b7009\" is used in multiple workers: [\"a\" \"b\"]\n\n",
            )
        );
    }

    #[test]
    fn a_machine_may_not_be_in_both_controlplane_and_workers() {
        let mut t = template();
        t.control_plane = control_plane(&[CP_1, W_1, W_2]);
        t.workers = vec![workers(Some("a"), &[W_1, W_2])];

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* machines [947f7a99-0f46-4a9e-ab02-205f4e1b7009 b1ed45d8-4e79-4a07-a29a-b1b075843d41] ",
                "are used in both controlplane and workers\n\n",
            )
        );
    }

    #[test]
    fn every_machine_document_must_be_used_by_a_set() {
        let mut t = template();
        t.machines = vec![machine(CP_1), machine(W_2)];

        assert_eq!(
            message(&t),
            "1 error occurred:\n\t* machine \"b1ed45d8-4e79-4a07-a29a-b1b075843d41\" is not used in controlplane or workers\n\n"
        );
    }

    #[test]
    fn a_control_plane_machine_may_not_be_locked() {
        let mut t = template();
        t.machines = vec![Machine {
            locked: true,
            ..machine(CP_1)
        }];

        assert_eq!(
            message(&t),
            "1 error occurred:\n\t* machine \"430d882a-51a8-48b3-ae00-90c5b0b5b0b0\" is locked and used in controlplane\n\n"
        );
    }

    // Cluster document.

    #[test]
    fn the_cluster_needs_a_name() {
        let mut t = template();
        t.cluster.name = String::new();

        assert_eq!(
            message(&t),
            "1 error occurred:\n\t* error validating cluster \"\": 1 error occurred:\n\t* name is required\n\n\n\n"
        );
    }

    #[test]
    fn the_cluster_name_holds_only_letters_digits_dashes_and_underscores() {
        let mut t = template();
        t.cluster.name = "my first/cluster".into();

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"my first/cluster\": 1 error occurred:\n",
                "\t* name should only contain letters, digits, dashes and underscores\n\n\n\n",
            )
        );

        t.cluster.name = "Über_cluster-7".into();
        assert_eq!(
            validate(&t, &Files::new()),
            Ok(()),
            "Unicode letters are letters"
        );
    }

    #[test]
    fn the_kubernetes_version_is_required() {
        let mut t = template();
        t.cluster.kubernetes_version = String::new();

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 1 error occurred:\n",
                "\t* error validating Kubernetes version: 1 error occurred:\n",
                "\t* version is required\n\n\n\n\n\n",
            )
        );
    }

    #[test]
    fn the_kubernetes_version_is_tolerant_semver() {
        let mut t = template();
        t.cluster.kubernetes_version = "vN.30".into();

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 1 error occurred:\n",
                "\t* error validating Kubernetes version: 1 error occurred:\n",
                "\t* version should be in semver format: Invalid character(s) found in major number \"N\"\n\n\n\n\n\n",
            )
        );

        // Tolerated: no `v`, a missing patch number, leading zeros, surrounding spaces.
        for tolerated in ["1.30.1", "v1.30", " v1.030.0 "] {
            t.cluster.kubernetes_version = tolerated.into();
            assert_eq!(validate(&t, &Files::new()), Ok(()), "{tolerated:?}");
        }
    }

    #[test]
    fn the_talos_version_is_required() {
        let mut t = template();
        t.cluster.talos_version = String::new();

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 1 error occurred:\n",
                "\t* error validating Talos version: 1 error occurred:\n",
                "\t* version is required\n\n\n\n\n\n",
            )
        );
    }

    #[test]
    fn the_talos_version_is_semver_starting_with_v() {
        let mut t = template();
        t.cluster.talos_version = "1.10.0gamma.0".into();

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 1 error occurred:\n",
                "\t* error validating Talos version: 2 errors occurred:\n",
                "\t* version should be in semver format: Invalid character(s) found in patch number \"0gamma.0\"\n",
                "\t* version should start with 'v'\n\n\n\n\n\n",
            )
        );
    }

    #[test]
    fn disk_encryption_needs_talos_1_5_0_or_later() {
        let mut t = template();
        t.cluster.features = Some(Features {
            disk_encryption: true,
            ..Default::default()
        });
        let expected = concat!(
            "1 error occurred:\n",
            "\t* error validating cluster \"c\": 1 error occurred:\n",
            "\t* disk encryption is supported only for Talos version >= 1.5.0\n\n\n\n",
        );

        for too_old in ["v1.4.8", "v1.5.0-alpha.1"] {
            t.cluster.talos_version = too_old.into();
            assert_eq!(message(&t), expected, "{too_old}");
        }
        for recent in ["v1.5.0", "v1.13.2"] {
            t.cluster.talos_version = recent.into();
            assert_eq!(validate(&t, &Files::new()), Ok(()), "{recent}");
        }
    }

    #[test]
    fn disk_encryption_with_an_unparseable_talos_version_repeats_the_parser_error() {
        let mut t = template();
        t.cluster.features = Some(Features {
            disk_encryption: true,
            ..Default::default()
        });
        t.cluster.talos_version = String::new();

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 2 errors occurred:\n",
                "\t* error validating Talos version: 1 error occurred:\n",
                "\t* version is required\n\n\n",
                "\t* strconv.ParseUint: parsing \"\": invalid syntax\n\n\n\n",
            )
        );
    }

    #[test]
    fn the_omni_prefix_is_reserved_on_cluster_labels_and_annotations() {
        let mut t = template();
        t.cluster.labels = labels(&[("omni.sidero.dev/cluster", "x"), ("team", "hpc")]);
        t.cluster.annotations = labels(&[("omni.sidero.dev/note", "y")]);

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 2 errors occurred:\n",
                "\t* label \"omni.sidero.dev/cluster\" is invalid: prefix \"omni.sidero.dev/\" is reserved for internal use\n",
                "\t* annotation \"omni.sidero.dev/note\" is invalid: prefix \"omni.sidero.dev/\" is reserved for internal use\n\n\n\n",
            )
        );
    }

    #[test]
    fn the_omni_prefix_is_reserved_on_sets_machines_and_patches() {
        let reserved = labels(&[("omni.sidero.dev/x", "")]);
        let mut t = template();
        t.control_plane.labels = reserved.clone();
        t.machines = vec![Machine {
            annotations: reserved.clone(),
            ..machine(CP_1)
        }];
        t.machines[0].patches = vec![Patch {
            labels: reserved.clone(),
            ..inline_patch("p", json!({"machine": {}}))
        }];

        assert_eq!(
            message(&t),
            concat!(
                "2 errors occurred:\n",
                "\t* controlplane is invalid: 1 error occurred:\n",
                "\t* label \"omni.sidero.dev/x\" is invalid: prefix \"omni.sidero.dev/\" is reserved for internal use\n\n\n",
                "\t* machine \"430d882a-51a8-48b3-ae00-90c5b0b5b0b0\" is invalid: 2 errors occurred:\n",
                "\t* annotation \"omni.sidero.dev/x\" is invalid: prefix \"omni.sidero.dev/\" is reserved for internal use\n",
                "\t* patch \"p\" is invalid: 1 error occurred:\n",
                "\t* label \"omni.sidero.dev/x\" is invalid: prefix \"omni.sidero.dev/\" is reserved for internal use\n\n\n\n\n\n",
            )
        );
    }

    // ControlPlane document.

    #[test]
    fn the_control_plane_takes_no_custom_name() {
        let mut t = template();
        t.control_plane.name = Some("dodo".into());

        assert_eq!(
            message(&t),
            "1 error occurred:\n\t* controlplane is invalid: 1 error occurred:\n\t* custom name is not allowed in the controlplane\n\n\n\n"
        );
    }

    #[test]
    fn a_bootstrap_spec_needs_a_cluster_uuid_and_a_snapshot() {
        let mut t = template();
        t.control_plane.bootstrap = Some(Bootstrap::default());

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* controlplane is invalid: 2 errors occurred:\n",
                "\t* clusterUUID is required in bootstrapSpec\n",
                "\t* snapshot is required in bootstrapSpec\n\n\n\n",
            )
        );
    }

    #[test]
    fn the_control_plane_takes_no_update_or_delete_strategy() {
        let mut t = template();
        let rolling = Strategy {
            type_: Some(StrategyType::Rolling),
            rolling: Some(Some(1)),
        };
        t.control_plane.update_strategy = Some(rolling.clone());
        t.control_plane.delete_strategy = Some(Strategy::default());
        t.control_plane.upgrade_strategy = Some(rolling);

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* controlplane is invalid: 2 errors occurred:\n",
                "\t* updateStrategy is not allowed in the controlplane\n",
                "\t* deleteStrategy is not allowed in the controlplane\n\n\n\n",
            )
        );
    }

    // Workers documents.

    #[test]
    fn workers_may_not_be_named_control_planes() {
        let mut t = template();
        t.workers = vec![workers(Some("control-planes"), &[W_1])];

        assert_eq!(
            message(&t),
            "1 error occurred:\n\t* workers is invalid: 1 error occurred:\n\t* name \"control-planes\" cannot be used in workers\n\n\n\n"
        );
    }

    #[test]
    fn workers_take_no_bootstrap_spec() {
        let mut t = template();
        t.workers = vec![MachineSet {
            bootstrap: Some(Bootstrap::default()),
            ..workers(None, &[W_1])
        }];

        assert_eq!(
            message(&t),
            "1 error occurred:\n\t* workers is invalid: 1 error occurred:\n\t* bootstrapSpec is not allowed in workers\n\n\n\n"
        );
    }

    // Checks every machine set gets.

    #[test]
    fn a_machine_set_uses_machines_or_a_machine_class_not_both() {
        let mut t = template();
        t.workers = vec![MachineSet {
            machine_class: class(),
            ..workers(Some("a"), &[W_1])
        }];

        assert_eq!(
            message(&t),
            "1 error occurred:\n\t* workers is invalid: 1 error occurred:\n\t* machine set can not have both machines and machine class defined\n\n\n\n"
        );
    }

    #[test]
    fn a_machine_class_set_takes_no_kernel_args() {
        let mut t = template();
        t.control_plane = MachineSet {
            machine_class: class(),
            kernel_args: vec!["console=ttyS0".into()],
            ..control_plane(&[])
        };

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* controlplane is invalid: 1 error occurred:\n",
                "\t* kernelArgs cannot be defined for machine set since it uses machine class\n\n\n\n",
            )
        );
    }

    #[test]
    fn machine_ids_in_a_set_must_parse_as_uuids() {
        let mut t = template();
        t.control_plane = control_plane(&[
            "node-1",
            "430d882a_51a8-48b3-ae00-90c5b0b5b0b0",
            "urn:uid:x430d882a-51a8-48b3-ae00-90c5b0b5b0b0",
            "430d882a51a848b3ae0090c5b0b5b0bz",
        ]);

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* controlplane is invalid: 4 errors occurred:\n",
                "\t* invalid machine ID \"node-1\": invalid UUID length: 6\n",
                "\t* invalid machine ID \"430d882a_51a8-48b3-ae00-90c5b0b5b0b0\": invalid UUID format\n",
                "\t* invalid machine ID \"urn:uid:x430d882a-51a8-48b3-ae00-90c5b0b5b0b0\": invalid urn prefix: \"urn:uid:x\"\n",
                "\t* invalid machine ID \"430d882a51a848b3ae0090c5b0b5b0bz\": invalid UUID format\n\n\n\n",
            )
        );
    }

    #[test]
    fn machine_ids_may_use_every_form_go_uuid_accepts() {
        let mut t = template();
        t.control_plane = control_plane(&[
            "430D882A-51A8-48B3-AE00-90C5B0B5B0B0",
            "URN:uuid:430d882a-51a8-48b3-ae00-90c5b0b5b0b0",
            "{430d882a-51a8-48b3-ae00-90c5b0b5b0b0}",
            "430d882a51a848b3ae0090c5b0b5b0b0",
        ]);

        assert_eq!(validate(&t, &Files::new()), Ok(()));
    }

    // Machine documents.

    #[test]
    fn a_machine_needs_a_uuid_name() {
        let mut t = template();
        t.machines = vec![machine("")];

        assert_eq!(
            message(&t),
            concat!(
                "2 errors occurred:\n",
                "\t* machine \"\" is invalid: 2 errors occurred:\n",
                "\t* name is required for machine\n",
                "\t* invalid machine ID \"\": invalid UUID length: 0\n\n\n",
                "\t* machine \"\" is not used in controlplane or workers\n\n",
            )
        );
    }

    // Patches.

    #[test]
    fn a_patch_has_a_path_or_inline_content_not_both() {
        let mut t = template();
        t.cluster.patches = vec![Patch {
            file: Some("patches/a.yaml".into()),
            inline: Some(json!({"machine": {}})),
            ..Default::default()
        }];
        let files = files(&[("patches/a.yaml", "machine: {}\n")]);

        assert_eq!(
            message_with(&t, &files),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 1 error occurred:\n",
                "\t* patch \"patches/a.yaml\" is invalid: 1 error occurred:\n",
                "\t* path and inline are mutually exclusive\n\n\n\n\n\n",
            )
        );
    }

    #[test]
    fn a_patch_needs_a_path_or_inline_content() {
        let mut t = template();
        t.cluster.patches = vec![
            Patch::default(),
            Patch {
                inline: Some(Value::Null),
                ..Default::default()
            },
        ];

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 2 errors occurred:\n",
                "\t* patch \"\" is invalid: 1 error occurred:\n",
                "\t* path or inline is required\n\n\n",
                "\t* patch \"\" is invalid: 1 error occurred:\n",
                "\t* path or inline is required\n\n\n\n\n\n",
            )
        );
    }

    #[test]
    fn an_inline_patch_needs_a_name_or_an_id_override() {
        let mut t = template();
        t.control_plane.patches = vec![
            Patch {
                inline: Some(json!({"machine": {}})),
                ..Default::default()
            },
            Patch {
                id_override: Some("my-id".into()),
                inline: Some(json!({"machine": {}})),
                ..Default::default()
            },
        ];

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* controlplane is invalid: 1 error occurred:\n",
                "\t* patch \"\" is invalid: 1 error occurred:\n",
                "\t* either name or idOverride is required for inline patches\n\n\n\n\n\n",
            )
        );
    }

    #[test]
    fn a_patch_file_must_be_readable() {
        let mut t = template();
        t.cluster.patches = vec![Patch {
            name: Some("named".into()),
            ..file_patch("does-not-exist.yaml")
        }];

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 1 error occurred:\n",
                "\t* patch \"named\" is invalid: 1 error occurred:\n",
                "\t* failed to access \"does-not-exist.yaml\": open does-not-exist.yaml: no such file or directory\n\n\n\n\n\n",
            )
        );
    }

    #[test]
    fn a_patch_file_may_not_set_fields_omni_owns() {
        let mut t = template();
        t.control_plane.patches = vec![file_patch("patches/prohibited.yaml")];
        let files = files(&[(
            "patches/prohibited.yaml",
            "machine:\n  token: haha\n  install:\n    extensions: null\ncluster:\n  controlPlane:\n    endpoint: https://x\n",
        )]);

        assert_eq!(
            message_with(&t, &files),
            concat!(
                "1 error occurred:\n",
                "\t* controlplane is invalid: 1 error occurred:\n",
                "\t* patch \"patches/prohibited.yaml\" is invalid: 1 error occurred:\n",
                "\t* failed to validate patch \"patches/prohibited.yaml\": 3 errors occurred:\n",
                "\t* overriding \"cluster.controlPlane.endpoint\" is not allowed in the config patch\n",
                "\t* overriding \"machine.token\" is not allowed in the config patch\n",
                "\t* overriding \"machine.install.extensions\" is not allowed in the config patch\n\n\n\n\n\n\n\n",
            )
        );
    }

    #[test]
    fn an_inline_patch_may_not_set_fields_omni_owns_or_grant_the_admin_role() {
        let mut t = template();
        t.machines = vec![machine(CP_1)];
        t.machines[0].patches = vec![inline_patch(
            "api-access",
            json!({"machine": {
                "ca": {"crt": "x"},
                "features": {"kubernetesTalosAPIAccess": {"allowedRoles": ["os:reader", "os:admin"]}},
            }}),
        )];

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* machine \"430d882a-51a8-48b3-ae00-90c5b0b5b0b0\" is invalid: 1 error occurred:\n",
                "\t* patch \"api-access\" is invalid: 1 error occurred:\n",
                "\t* failed to validate inline patch \"api-access\": 2 errors occurred:\n",
                "\t* overriding \"machine.ca\" is not allowed in the config patch\n",
                "\t* element \"os:admin\" is not allowed in field ",
                "\"machine.features.kubernetesTalosAPIAccess.allowedRoles\"\n\n\n\n\n\n\n\n",
            )
        );
    }

    #[test]
    fn only_the_first_document_of_a_patch_is_checked_for_forbidden_fields() {
        let mut t = template();
        t.cluster.patches = vec![
            inline_patch(
                "list",
                json!([{"cluster": {"id": "x"}}, {"cluster": {"secret": "y"}}]),
            ),
            inline_patch(
                "text",
                json!("machine:\n  type: worker\n---\nmachine:\n  ca: {}\n"),
            ),
            inline_patch("merged", json!("base: &b {token: t}\nmachine:\n  <<: *b\n")),
        ];

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 3 errors occurred:\n",
                "\t* patch \"list\" is invalid: 1 error occurred:\n",
                "\t* failed to validate inline patch \"list\": 1 error occurred:\n",
                "\t* overriding \"cluster.id\" is not allowed in the config patch\n\n\n\n\n",
                "\t* patch \"text\" is invalid: 1 error occurred:\n",
                "\t* failed to validate inline patch \"text\": 1 error occurred:\n",
                "\t* overriding \"machine.type\" is not allowed in the config patch\n\n\n\n\n",
                "\t* patch \"merged\" is invalid: 1 error occurred:\n",
                "\t* failed to validate inline patch \"merged\": 1 error occurred:\n",
                "\t* overriding \"machine.token\" is not allowed in the config patch\n\n\n\n\n\n\n\n",
            )
        );
    }

    // Kubernetes manifests.

    fn manifest(name: &str) -> Manifest {
        Manifest {
            name: name.into(),
            inline: vec![json!({"kind": "ConfigMap"})],
            ..Default::default()
        }
    }

    #[test]
    fn a_manifest_needs_a_name_and_a_path_or_inline_content_not_both() {
        let mut t = template();
        t.cluster.manifests = vec![
            Manifest::default(),
            Manifest {
                file: Some("m.yaml".into()),
                ..manifest("both")
            },
        ];
        let files = files(&[("m.yaml", "kind: ConfigMap\n")]);

        assert_eq!(
            message_with(&t, &files),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 1 error occurred:\n",
                "\t* kubernetes manifest name is empty\n",
                "path or inline is required\n",
                "path and inline are mutually exclusive\n\n\n\n",
            )
        );
    }

    #[test]
    fn a_manifest_file_must_be_readable() {
        let mut t = template();
        t.cluster.manifests = vec![Manifest {
            file: Some("missing.yaml".into()),
            ..Default::default()
        }];

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 1 error occurred:\n",
                "\t* failed to access \"missing.yaml\": open missing.yaml: no such file or directory\n\n\n\n",
            )
        );
    }

    #[test]
    fn manifest_names_are_unique() {
        let mut t = template();
        t.cluster.manifests = vec![
            manifest("cm"),
            manifest("cm"),
            Manifest {
                inline: vec![],
                ..manifest("cm")
            },
        ];

        assert_eq!(
            message(&t),
            concat!(
                "1 error occurred:\n",
                "\t* error validating cluster \"c\": 1 error occurred:\n",
                "\t* duplicate manifest name \"cm\"\n",
                "path or inline is required\n\n\n\n",
            )
        );
    }

    // Whole messages.

    #[test]
    fn findings_from_several_documents_follow_omnis_order() {
        let mut t = template();
        t.cluster.kubernetes_version = "v1.x".into();
        t.cluster.patches = vec![Patch {
            inline: Some(json!({"machine": {}})),
            ..Default::default()
        }];
        t.control_plane = MachineSet {
            name: Some("cp".into()),
            ..control_plane(&[CP_1, W_1])
        };
        t.workers = vec![workers(Some("a"), &[W_1, "bad"])];
        t.machines = vec![
            Machine {
                locked: true,
                ..machine(CP_1)
            },
            machine(CP_2),
        ];

        assert_eq!(
            message(&t),
            concat!(
                "6 errors occurred:\n",
                "\t* error validating cluster \"c\": 2 errors occurred:\n",
                "\t* error validating Kubernetes version: 1 error occurred:\n",
                "\t* version should be in semver format: Invalid character(s) found in minor number \"x\"\n\n\n",
                "\t* patch \"\" is invalid: 1 error occurred:\n",
                "\t* either name or idOverride is required for inline patches\n\n\n\n\n",
                "\t* controlplane is invalid: 1 error occurred:\n",
                "\t* custom name is not allowed in the controlplane\n\n\n",
                "\t* workers is invalid: 1 error occurred:\n",
                "\t* invalid machine ID \"bad\": invalid UUID length: 3\n\n\n",
                "\t* machines [947f7a99-0f46-4a9e-ab02-205f4e1b7009] are used in both controlplane and workers\n",
                "\t* machine \"4aed1106-6f44-4be9-9796-d4b5b0b5b0b0\" is not used in controlplane or workers\n",
                "\t* machine \"430d882a-51a8-48b3-ae00-90c5b0b5b0b0\" is locked and used in controlplane\n\n",
            )
        );
    }

    /// Omni's `TestValidate` case `clusterInvalid3` (testdata/cluster-invalid3.yaml), whose expected text this
    /// reproduces byte for byte.
    #[test]
    fn omnis_own_invalid_template_3() {
        let t = Template {
            control_plane: MachineSet {
                name: Some("dodo".into()),
                ..control_plane(&["4b9797ae-55d7-4717-a19e-b322a2d83d39"])
            },
            workers: vec![
                workers(None, &[W_1]),
                workers(Some("additional-1"), &[W_2]),
                workers(
                    Some("additional-1"),
                    &["919b1d5b-daf8-4b82-bc0d-48929f05a405"],
                ),
                workers(Some("additional-2"), &[W_2]),
            ],
            machines: [
                "4b9797ae-55d7-4717-a19e-b322a2d83d39",
                "919b1d5b-daf8-4b82-bc0d-48929f05a405",
                W_1,
                W_2,
            ]
            .into_iter()
            .map(machine)
            .collect(),
            cluster: Cluster {
                name: "my-first-cluster".into(),
                kubernetes_version: "v1.18.2".into(),
                talos_version: "v1.3.1".into(),
                ..Default::default()
            },
        };

        assert_eq!(
            message(&t),
            concat!(
                "3 errors occurred:\n",
                "\t* controlplane is invalid: 1 error occurred:\n",
                "\t* custom name is not allowed in the controlplane\n\n\n",
                "\t* duplicate workers with name \"additional-1\"\n",
                "\t* machine \"b1ed45d8-4e79-4a07-a29a-b1b075843d41\" is used in multiple workers: ",
                "[\"additional-1\" \"additional-2\"]\n\n",
            )
        );
    }

    /// Omni's `TestValidate` case `clusterInvalid2` (testdata/cluster-invalid2.yaml) without its second
    /// ControlPlane, which [`Template`] cannot hold: the expected text is Omni's minus that document's machines and
    /// the `template should contain 1 controlplane, got 2` entry.
    #[test]
    fn omnis_own_invalid_template_2_with_one_control_plane() {
        let t = Template {
            cluster: Cluster {
                patches: vec![Patch::default()],
                ..Default::default()
            },
            control_plane: MachineSet {
                patches: vec![file_patch("patches/prohibited.yaml")],
                ..control_plane(&["430d882a-51a8-48b3-ab00-d4b5b0b5b0b0"])
            },
            ..Default::default()
        };
        let files = files(&[("patches/prohibited.yaml", "machine:\n  token: haha\n")]);

        assert_eq!(
            message_with(&t, &files),
            concat!(
                "2 errors occurred:\n",
                "\t* error validating cluster \"\": 4 errors occurred:\n",
                "\t* name is required\n",
                "\t* error validating Kubernetes version: 1 error occurred:\n",
                "\t* version is required\n\n\n",
                "\t* error validating Talos version: 1 error occurred:\n",
                "\t* version is required\n\n\n",
                "\t* patch \"\" is invalid: 1 error occurred:\n",
                "\t* path or inline is required\n\n\n\n\n",
                "\t* controlplane is invalid: 1 error occurred:\n",
                "\t* patch \"patches/prohibited.yaml\" is invalid: 1 error occurred:\n",
                "\t* failed to validate patch \"patches/prohibited.yaml\": 1 error occurred:\n",
                "\t* overriding \"machine.token\" is not allowed in the config patch\n\n\n\n\n\n\n\n",
            )
        );
    }

    // The ported Go helpers.

    #[test]
    fn semver_errors_are_blang_semvers() {
        let error = |s: &str| semver::parse_tolerant(s).err();
        assert_eq!(
            error("v1.2-rc1"),
            Some("Short version cannot contain PreRelease/Build meta data".into())
        );
        assert_eq!(error("1.2.3-"), Some("Prerelease is empty".into()));
        assert_eq!(
            error("1.2.3-rc_1"),
            Some("Invalid character(s) found in prerelease \"rc_1\"".into())
        );
        assert_eq!(
            error("1.2.3-01"),
            Some("Numeric PreRelease version must not contain leading zeroes \"01\"".into())
        );
        assert_eq!(error("1.2.3+"), Some("Build meta data is empty".into()));
        assert_eq!(
            error("1.2.3+a/b"),
            Some("Invalid character(s) found in build meta data \"a/b\"".into())
        );
        assert_eq!(
            error("18446744073709551616.0.0"),
            Some("strconv.ParseUint: parsing \"18446744073709551616\": value out of range".into())
        );
        assert_eq!(
            error("1..3"),
            Some("strconv.ParseUint: parsing \"\": invalid syntax".into())
        );
        assert_eq!(error("v1.2.3-rc.1+build.5"), None);
        assert_eq!(error("007"), None, "leading zeros go, and 7 becomes 7.0.0");
    }

    #[test]
    fn quoting_is_gos() {
        assert_eq!(go::quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go::quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(go::quote("\u{1}\u{7f}"), r#""\x01\x7f""#);
        assert_eq!(go::quote("Über ☃"), "\"Über ☃\"");
        assert_eq!(go::quote("\u{a0}\u{200b}"), r#""\u00a0\u200b""#);
        assert_eq!(go::quote_bytes(b"urn:\xffuuid"), r#""urn:\xffuuid""#);
        assert_eq!(go::quote_list(&["a", "b"]), r#"["a" "b"]"#);
    }
}
