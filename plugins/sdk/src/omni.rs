//! Omni resources as plugins see them through the `omni` capability (COSI `Resource`). Specs stay
//! protobuf-encoded: a plugin decodes the spec messages it knows.

/// Addresses one Omni resource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    pub namespace: String,
    pub type_: String,
    pub id: String,
}

impl ResourceKey {
    /// A resource in Omni's `default` namespace, where every template resource lives.
    pub fn new(type_: &str, id: &str) -> Self {
        ResourceKey {
            namespace: "default".into(),
            type_: type_.into(),
            id: id.into(),
        }
    }
}

impl std::fmt::Display for ResourceKey {
    /// `Clusters.omni.sidero.dev(c1)`, as omnictl prints resources.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.type_, self.id)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    #[default]
    Running,
    TearingDown,
}

/// One Omni resource. `version` is what the last read returned; an update must carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OmniResource {
    pub key: ResourceKey,
    pub version: String,
    pub owner: String,
    pub phase: Phase,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    pub finalizers: Vec<String>,
    /// The protobuf encoding of the type's spec message, with compressed content already decompressed.
    pub spec: Vec<u8>,
    /// Why the spec could not be decompressed; the spec must then not be compared.
    pub unreadable: Option<String>,
}

impl OmniResource {
    /// A new resource to create: running, owner `""`, version `undefined`.
    pub fn new(key: ResourceKey, spec: Vec<u8>) -> Self {
        OmniResource {
            key,
            version: "undefined".into(),
            owner: String::new(),
            phase: Phase::Running,
            labels: Vec::new(),
            annotations: Vec::new(),
            finalizers: Vec::new(),
            spec,
            unreadable: None,
        }
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelOp {
    Exists,
    Equal,
    In,
    Lt,
    Lte,
    LtNumeric,
    LteNumeric,
}

/// One label condition of a list; all terms must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelTerm {
    pub key: String,
    pub op: LabelOp,
    pub values: Vec<String>,
    pub invert: bool,
}

impl LabelTerm {
    pub fn equal(key: &str, value: &str) -> Self {
        LabelTerm {
            key: key.into(),
            op: LabelOp::Equal,
            values: vec![value.into()],
            invert: false,
        }
    }

    pub fn exists(key: &str) -> Self {
        LabelTerm {
            key: key.into(),
            op: LabelOp::Exists,
            values: Vec::new(),
            invert: false,
        }
    }

    /// Whether a resource's labels satisfy the term (as Omni evaluates it).
    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        let value = labels
            .iter()
            .find(|(k, _)| *k == self.key)
            .map(|(_, v)| v.as_str());
        let number = |s: &str| s.parse::<i64>().ok();
        let first = self.values.first().map(String::as_str).unwrap_or_default();
        let held = match (self.op, value) {
            (_, None) => false,
            (LabelOp::Exists, Some(_)) => true,
            (LabelOp::Equal, Some(v)) => v == first,
            (LabelOp::In, Some(v)) => self.values.iter().any(|w| w == v),
            (LabelOp::Lt, Some(v)) => v < first,
            (LabelOp::Lte, Some(v)) => v <= first,
            (LabelOp::LtNumeric, Some(v)) => {
                matches!((number(v), number(first)), (Some(a), Some(b)) if a < b)
            }
            (LabelOp::LteNumeric, Some(v)) => {
                matches!((number(v), number(first)), (Some(a), Some(b)) if a <= b)
            }
        };
        held != self.invert
    }
}

/// A cluster's health as `omnictl cluster status` judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterHealth {
    pub phase: String,
    pub ready: bool,
    pub healthy: bool,
    pub findings: Vec<String>,
}
