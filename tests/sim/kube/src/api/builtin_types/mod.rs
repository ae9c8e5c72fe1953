//! The shape of the built-in kinds' types: for every message a served kind reaches, each field's protobuf tag,
//! JSON name, value type, when JSON shows it, and how it merges. One table serves the protobuf decoder
//! (`protobuf_generic`) and the OpenAPI documents (`openapi_schemas`), so what kubectl reads about a field and
//! what the server decodes for it cannot drift apart.
//!
//! `generated.rs` is written by `tools/gen_builtin_types.py` from the Go types of kubernetes/api (struct tags
//! and `+listType` markers); meta/v1, which lives in apimachinery, is listed here.

use std::collections::HashMap;
use std::sync::OnceLock;

// One row per field, as the generator writes it (rustfmt would spread each row over ten lines).
#[rustfmt::skip]
mod generated;

use generated::MESSAGES;

/// A field's value type.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    Str,
    I32,
    I64,
    Bool,
    /// `[]byte`: base64 in JSON.
    Bytes,
    /// A message, by its schema name (`core/v1.Container`, `meta.ObjectMeta`).
    Msg(&'static str),
    /// `metav1.Time`: RFC 3339 to the second, `null` when zero.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with six fractional digits.
    MicroTime,
    /// `resource.Quantity`: its string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension` and `metav1.FieldsV1`: embedded JSON.
    Raw,
}

/// When JSON shows a field (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Pointer,
    OmitEmpty,
    Always,
}

#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub tag: u32,
    pub json: &'static str,
    pub ty: Ty,
    pub repeated: bool,
    pub map: bool,
    pub presence: Presence,
    pub patch: Patch,
}

/// How a field merges: its strategic-merge-patch strategy and merge key (`patchStrategy`, `patchMergeKey`
/// tags), and its server-side-apply list or map type with the list's keys (`+listType`, `+listMapKey`).
#[derive(Debug, Clone, Copy)]
pub struct Patch {
    pub strategy: &'static str,
    pub merge_key: &'static str,
    pub list_type: &'static str,
    pub list_keys: &'static [&'static str],
}

impl Patch {
    pub const NONE: Patch = Patch {
        strategy: "",
        merge_key: "",
        list_type: "",
        list_keys: &[],
    };
}

const fn f(tag: u32, json: &'static str, ty: Ty, presence: Presence) -> Field {
    Field {
        tag,
        json,
        ty,
        repeated: false,
        map: false,
        presence,
        patch: Patch::NONE,
    }
}

const fn list(tag: u32, json: &'static str, ty: Ty, presence: Presence) -> Field {
    Field {
        repeated: true,
        ..f(tag, json, ty, presence)
    }
}

const fn map(tag: u32, json: &'static str, ty: Ty) -> Field {
    Field {
        map: true,
        ..f(tag, json, ty, Presence::OmitEmpty)
    }
}

use Presence::{Always, OmitEmpty, Pointer};

/// meta/v1 lives in apimachinery, not kubernetes/api, so its few messages are listed here (tags from
/// apimachinery's `pkg/apis/meta/v1/generated.proto`, presence from its types.go).
static META: &[(&str, &[Field])] = &[
    (
        "meta.ObjectMeta",
        &[
            f(1, "name", Ty::Str, OmitEmpty),
            f(2, "generateName", Ty::Str, OmitEmpty),
            f(3, "namespace", Ty::Str, OmitEmpty),
            f(4, "selfLink", Ty::Str, OmitEmpty),
            f(5, "uid", Ty::Str, OmitEmpty),
            f(6, "resourceVersion", Ty::Str, OmitEmpty),
            f(7, "generation", Ty::I64, OmitEmpty),
            f(8, "creationTimestamp", Ty::Time, OmitEmpty),
            f(9, "deletionTimestamp", Ty::Time, Pointer),
            f(10, "deletionGracePeriodSeconds", Ty::I64, Pointer),
            map(11, "labels", Ty::Str),
            map(12, "annotations", Ty::Str),
            list(
                13,
                "ownerReferences",
                Ty::Msg("meta.OwnerReference"),
                OmitEmpty,
            ),
            list(14, "finalizers", Ty::Str, OmitEmpty),
            list(
                17,
                "managedFields",
                Ty::Msg("meta.ManagedFieldsEntry"),
                OmitEmpty,
            ),
        ],
    ),
    (
        "meta.DeleteOptions",
        &[
            f(1, "gracePeriodSeconds", Ty::I64, Pointer),
            f(2, "preconditions", Ty::Msg("meta.Preconditions"), Pointer),
            f(3, "orphanDependents", Ty::Bool, Pointer),
            f(4, "propagationPolicy", Ty::Str, Pointer),
            list(5, "dryRun", Ty::Str, OmitEmpty),
            f(
                6,
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                Ty::Bool,
                Pointer,
            ),
        ],
    ),
    (
        "meta.Preconditions",
        &[
            f(1, "uid", Ty::Str, Pointer),
            f(2, "resourceVersion", Ty::Str, Pointer),
        ],
    ),
    (
        "meta.ListMeta",
        &[
            f(1, "selfLink", Ty::Str, OmitEmpty),
            f(2, "resourceVersion", Ty::Str, OmitEmpty),
            f(3, "continue", Ty::Str, OmitEmpty),
            f(4, "remainingItemCount", Ty::I64, Pointer),
        ],
    ),
    (
        "meta.Status",
        &[
            f(1, "metadata", Ty::Msg("meta.ListMeta"), OmitEmpty),
            f(2, "status", Ty::Str, OmitEmpty),
            f(3, "message", Ty::Str, OmitEmpty),
            f(4, "reason", Ty::Str, OmitEmpty),
            f(5, "details", Ty::Msg("meta.StatusDetails"), Pointer),
            f(6, "code", Ty::I32, OmitEmpty),
        ],
    ),
    (
        "meta.StatusDetails",
        &[
            f(1, "name", Ty::Str, OmitEmpty),
            f(2, "group", Ty::Str, OmitEmpty),
            f(3, "kind", Ty::Str, OmitEmpty),
            f(6, "uid", Ty::Str, OmitEmpty),
            list(4, "causes", Ty::Msg("meta.StatusCause"), OmitEmpty),
            f(5, "retryAfterSeconds", Ty::I32, OmitEmpty),
        ],
    ),
    (
        "meta.StatusCause",
        &[
            f(1, "reason", Ty::Str, OmitEmpty),
            f(2, "message", Ty::Str, OmitEmpty),
            f(3, "field", Ty::Str, OmitEmpty),
        ],
    ),
    (
        "meta.OwnerReference",
        &[
            f(5, "apiVersion", Ty::Str, Always),
            f(1, "kind", Ty::Str, Always),
            f(3, "name", Ty::Str, Always),
            f(4, "uid", Ty::Str, Always),
            f(6, "controller", Ty::Bool, Pointer),
            f(7, "blockOwnerDeletion", Ty::Bool, Pointer),
        ],
    ),
    (
        "meta.ManagedFieldsEntry",
        &[
            f(1, "manager", Ty::Str, OmitEmpty),
            f(2, "operation", Ty::Str, OmitEmpty),
            f(3, "apiVersion", Ty::Str, OmitEmpty),
            f(4, "time", Ty::Time, Pointer),
            f(6, "fieldsType", Ty::Str, OmitEmpty),
            f(7, "fieldsV1", Ty::Raw, Pointer),
            f(8, "subresource", Ty::Str, OmitEmpty),
        ],
    ),
    (
        "meta.LabelSelector",
        &[
            map(1, "matchLabels", Ty::Str),
            list(
                2,
                "matchExpressions",
                Ty::Msg("meta.LabelSelectorRequirement"),
                OmitEmpty,
            ),
        ],
    ),
    (
        "meta.LabelSelectorRequirement",
        &[
            f(1, "key", Ty::Str, Always),
            f(2, "operator", Ty::Str, Always),
            list(3, "values", Ty::Str, OmitEmpty),
        ],
    ),
    (
        "meta.Condition",
        &[
            f(1, "type", Ty::Str, Always),
            f(2, "status", Ty::Str, Always),
            f(3, "observedGeneration", Ty::I64, OmitEmpty),
            f(4, "lastTransitionTime", Ty::Time, Always),
            f(5, "reason", Ty::Str, Always),
            f(6, "message", Ty::Str, Always),
        ],
    ),
];

pub fn schema(name: &str) -> Option<&'static [Field]> {
    static INDEX: OnceLock<HashMap<&'static str, &'static [Field]>> = OnceLock::new();
    INDEX
        .get_or_init(|| META.iter().chain(MESSAGES.iter()).copied().collect())
        .get(name)
        .copied()
}

/// The schema name of a kind's root message: `apps/v1` → `apps/v1.Deployment`, `v1` → `core/v1.Pod`,
/// `networking.k8s.io/v1` → `networking/v1.Ingress`. None when the kind has no schema here, and for every group
/// outside Kubernetes' own (a custom resource `Deployment` of `apps.example.com` is not a built-in).
pub fn root(api_version: &str, kind: &str) -> Option<&'static str> {
    // meta/v1's DeleteOptions and Status travel under whatever group-version the client talks to.
    match kind {
        "DeleteOptions" => return Some("meta.DeleteOptions"),
        "Status" => return Some("meta.Status"),
        _ => {}
    }
    let (group, version) = match api_version.rsplit_once('/') {
        Some((g, v)) if matches!(g, "apps" | "batch" | "policy" | "autoscaling") => (g, v),
        Some((g, v)) => (g.strip_suffix(".k8s.io")?.split('.').next()?, v),
        None => ("core", api_version),
    };
    let name = format!("{group}/{version}.{kind}");
    static NAMES: OnceLock<HashMap<String, &'static str>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            MESSAGES
                .iter()
                .map(|(n, _)| ((*n).to_string(), *n))
                .collect()
        })
        .get(&name)
        .copied()
}
