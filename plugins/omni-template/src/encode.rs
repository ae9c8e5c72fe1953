//! The template as YAML documents: keys in the Go operator's field order,
//! its `omitempty` rules, two-space indentation; `status.templateHash` is the SHA-256 of these bytes.
//!
//! Integers in inline patches and manifests stay integers (the Go operator printed 1000000 as `1e+06`), so
//! the hash differs from the Go operator's only for such templates.

use sha2::{Digest, Sha256};

use crate::model::{
    Cluster, Machine, MachineSet, Patch, SetKind, Size, Strategy, StringMap, Template,
};
use omni_plugin_sdk::go::yaml::{self, Node};

/// The template's YAML text.
pub fn to_yaml(template: &Template) -> String {
    let mut docs = vec![
        cluster(&template.cluster),
        machine_set(&template.control_plane),
    ];
    docs.extend(template.workers.iter().map(machine_set));
    docs.extend(template.machines.iter().map(machine));
    yaml::to_string(&docs, 2)
}

/// Lowercase hex SHA-256 of the template's YAML text.
pub fn template_hash(yaml: &str) -> String {
    hex(&Sha256::digest(yaml.as_bytes()))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Builds a mapping in field order, leaving out what `omitempty` leaves out.
#[derive(Default)]
struct Doc(Vec<(String, Node)>);

impl Doc {
    fn put(&mut self, key: &str, value: Node) -> &mut Self {
        self.0.push((key.to_string(), value));
        self
    }

    fn str(&mut self, key: &str, value: &str) -> &mut Self {
        self.put(key, Node::Str(value.to_string()))
    }

    fn opt_str(&mut self, key: &str, value: Option<&str>) -> &mut Self {
        match value {
            Some(v) if !v.is_empty() => self.str(key, v),
            _ => self,
        }
    }

    fn flag(&mut self, key: &str, value: bool) -> &mut Self {
        if value {
            self.put(key, Node::Bool(true))
        } else {
            self
        }
    }

    fn map(&mut self, key: &str, value: &StringMap) -> &mut Self {
        if value.is_empty() {
            return self;
        }
        // go-yaml sorts map keys; BTreeMap order is byte order, so re-sort the way go-yaml does.
        let mut entries: Vec<(&String, &String)> = value.iter().collect();
        entries.sort_by(|a, b| yaml::natural_cmp(a.0, b.0));
        self.put(
            key,
            Node::Map(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), Node::Str(v.clone())))
                    .collect(),
            ),
        )
    }

    fn strings(&mut self, key: &str, value: &[String]) -> &mut Self {
        if value.is_empty() {
            return self;
        }
        self.put(
            key,
            Node::Seq(value.iter().map(|s| Node::Str(s.clone())).collect()),
        )
    }

    fn patches(&mut self, value: &[Patch]) -> &mut Self {
        if value.is_empty() {
            return self;
        }
        self.put("patches", Node::Seq(value.iter().map(patch).collect()))
    }

    fn done(self) -> Node {
        Node::Map(self.0)
    }
}

fn cluster(c: &Cluster) -> Node {
    let mut d = Doc::default();
    d.str("kind", "Cluster")
        .str("name", &c.name)
        .map("labels", &c.labels)
        .map("annotations", &c.annotations);
    let mut k = Doc::default();
    k.str("version", &c.kubernetes_version);
    if !c.manifests.is_empty() {
        let manifests = c
            .manifests
            .iter()
            .map(|m| {
                let mut e = Doc::default();
                e.str("name", &m.name).str("mode", m.mode.as_str());
                if m.file.is_none() {
                    e.put(
                        "inline",
                        Node::Seq(m.inline.iter().map(Node::from_json).collect()),
                    );
                }
                e.opt_str("file", m.file.as_deref());
                e.done()
            })
            .collect();
        k.put("manifests", Node::Seq(manifests));
    }
    d.put("kubernetes", k.done());
    let mut t = Doc::default();
    t.str("version", &c.talos_version);
    d.put("talos", t.done());
    if let Some(f) = &c.features {
        let mut fd = Doc::default();
        fd.flag("enableWorkloadProxy", f.enable_workload_proxy)
            .flag(
                "useEmbeddedDiscoveryService",
                f.use_embedded_discovery_service,
            )
            .flag("diskEncryption", f.disk_encryption);
        if let Some(interval) = &f.backup_interval {
            let mut b = Doc::default();
            b.str("interval", interval);
            fd.put("backupConfiguration", b.done());
        }
        d.put("features", fd.done());
    }
    d.patches(&c.patches)
        .strings("systemExtensions", &c.system_extensions)
        .strings("kernelArgs", &c.kernel_args);
    d.done()
}

fn machine_set(s: &MachineSet) -> Node {
    let mut d = Doc::default();
    match s.kind {
        SetKind::ControlPlane => d.str("kind", "ControlPlane"),
        SetKind::Workers => d.str("kind", "Workers").opt_str("name", s.name.as_deref()),
    };
    d.map("labels", &s.labels)
        .map("annotations", &s.annotations)
        .strings("machines", &s.machines);
    if let Some(class) = &s.machine_class {
        let mut c = Doc::default();
        c.str("name", &class.name);
        c.put(
            "size",
            match &class.size {
                Size::Count(n) => Node::Number(n.to_string()),
                Size::Word(w) => Node::Str(w.clone()),
            },
        );
        d.put("machineClass", c.done());
    }
    if let Some(b) = &s.bootstrap {
        let mut bd = Doc::default();
        bd.str("clusterUUID", &b.cluster_uuid)
            .str("snapshot", &b.snapshot);
        d.put("bootstrapSpec", bd.done());
    }
    for (key, strategy_value) in [
        ("updateStrategy", &s.update_strategy),
        ("upgradeStrategy", &s.upgrade_strategy),
        ("deleteStrategy", &s.delete_strategy),
    ] {
        if let Some(st) = strategy_value {
            d.put(key, strategy(st));
        }
    }
    d.patches(&s.patches)
        .strings("systemExtensions", &s.system_extensions)
        .strings("kernelArgs", &s.kernel_args);
    d.done()
}

fn strategy(s: &Strategy) -> Node {
    let mut d = Doc::default();
    d.opt_str("type", s.type_.map(|t| t.as_str()));
    if let Some(rolling) = &s.rolling {
        let mut r = Doc::default();
        if let Some(n) = rolling {
            r.put("maxParallelism", Node::Number(n.to_string()));
        }
        d.put("rolling", r.done());
    }
    d.done()
}

fn machine(m: &Machine) -> Node {
    let mut d = Doc::default();
    d.str("kind", "Machine")
        .str("name", &m.name)
        .map("labels", &m.labels)
        .map("annotations", &m.annotations);
    d.flag("locked", m.locked);
    if let Some(disk) = &m.install_disk {
        let mut i = Doc::default();
        i.str("disk", disk);
        d.put("install", i.done());
    }
    d.patches(&m.patches)
        .strings("systemExtensions", &m.system_extensions)
        .strings("kernelArgs", &m.kernel_args);
    d.done()
}

fn patch(p: &Patch) -> Node {
    let mut d = Doc::default();
    d.opt_str("file", p.file.as_deref())
        .opt_str("name", p.name.as_deref())
        .opt_str("idOverride", p.id_override.as_deref())
        .map("labels", &p.labels)
        .map("annotations", &p.annotations);
    if let Some(inline) = &p.inline {
        d.put("inline", Node::from_json(inline));
    }
    d.done()
}
