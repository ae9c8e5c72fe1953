#!/usr/bin/env python3
"""Writes src/api/builtin_types/generated.rs: the shape of the built-in types kube-sim decodes
from protobuf and publishes in its OpenAPI documents.

Reads the Go types (types.go) of a kubernetes/api checkout, whose struct tags give each field's protobuf tag
number and its JSON name and omitempty rule, and whose Go types give pointer-ness (what JSON emits for a field
that is absent on the wire). meta/v1 is not in kubernetes/api; its few types are listed in builtin_types/mod.rs.

Usage: gen_builtin_types.py <kubernetes/api git dir> > src/api/builtin_types/generated.rs
(the types are read at the tag REF, the release matching the Kubernetes version kube-sim reports)
"""
import re
import subprocess
import sys

# The kubernetes/api release matching the Kubernetes version kube-sim reports (v1.32).
REF = "v0.32.9"

# The kinds kube-sim accepts as protobuf request bodies; every message they reach is written out.
ROOTS = ["core/v1.Namespace", "core/v1.Secret", "core/v1.ConfigMap", "core/v1.ServiceAccount", "core/v1.Event",
         "core/v1.Service", "core/v1.Pod", "core/v1.PersistentVolumeClaim", "core/v1.Endpoints", "core/v1.Node",
         "events/v1.Event", "coordination/v1.Lease", "rbac/v1.Role", "rbac/v1.ClusterRole", "rbac/v1.RoleBinding",
         "rbac/v1.ClusterRoleBinding", "admissionregistration/v1.ValidatingWebhookConfiguration",
         "admissionregistration/v1.MutatingWebhookConfiguration", "apps/v1.Deployment", "apps/v1.StatefulSet",
         "apps/v1.DaemonSet", "apps/v1.ReplicaSet", "batch/v1.Job", "batch/v1.CronJob", "networking/v1.Ingress",
         "networking/v1.NetworkPolicy", "policy/v1.PodDisruptionBudget", "autoscaling/v2.HorizontalPodAutoscaler",
         "autoscaling/v1.Scale", "authentication/v1.TokenRequest", "authentication/v1.TokenReview",
         "authentication/v1.SelfSubjectReview", "authorization/v1.SelfSubjectAccessReview",
         "authorization/v1.SubjectAccessReview", "authorization/v1.SelfSubjectRulesReview",
         "authorization/v1.LocalSubjectAccessReview"]

GROUPS = ["core/v1", "apps/v1", "batch/v1", "networking/v1", "policy/v1", "autoscaling/v2", "autoscaling/v1",
          "rbac/v1", "coordination/v1", "events/v1", "discovery/v1", "storage/v1", "authentication/v1",
          "authorization/v1", "scheduling/v1", "node/v1", "certificates/v1", "admissionregistration/v1",
          "flowcontrol/v1"]

SPECIAL = {
    "metav1.Time": "Time", "metav1.MicroTime": "MicroTime",
    "resource.Quantity": "Quantity", "intstr.IntOrString": "IntOrString", "runtime.RawExtension": "Raw",
    "metav1.FieldsV1": "Raw", "types.UID": "Str", "metav1.Timestamp": None,
}
SCALAR = {"string": "Str", "int32": "I32", "int64": "I64", "bool": "Bool", "[]byte": "Bytes",
          "uint32": "I64", "uint64": "I64", "int": "I64", "byte": "I32"}


def show(gitdir, path):
    return subprocess.run(["git", "-C", gitdir, "show", f"{REF}:{path}"], check=True, capture_output=True,
                          text=True).stdout


def parse(src, pkg):
    imports = {}
    for m in re.finditer(r'^\s*(\w+)?\s*"([^"]+)"', src.split("\n)\n", 1)[0], re.M):
        alias, path = m.group(1), m.group(2)
        imports[alias or path.rsplit("/", 1)[-1]] = path
    aliases = {}
    for m in re.finditer(r"^type (\w+) (\S[^\n{]*)$", src, re.M):
        aliases[m.group(1)] = m.group(2).strip()
    structs = {}
    for m in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", src, re.M | re.S):
        fields = []
        markers = {}
        for line in m.group(2).split("\n"):
            line = line.strip()
            if line.startswith("//"):
                # `// +listType=map`, `// +listMapKey=name` (repeatable) above the field.
                mk = re.match(r"//\s*\+(listType|listMapKey|mapType)=(\S+)", line)
                if mk:
                    markers.setdefault(mk.group(1), []).append(mk.group(2))
                continue
            if not line:
                markers = {}
                continue
            # `Name Type `tags`` or an embedded `pkg.Type `tags`` (ObjectMeta, ListMeta).
            fm = re.match(r"(?:(\w+)\s+)?(\S+)\s+`(.*)`", line)
            if not fm:
                continue
            tags = fm.group(3)
            # `bytes,6,opt,name=x`, and a few fields without the `opt`/`rep` label (`bytes,6,name=x`).
            pb = re.search(r'protobuf:"(\w+),(\d+),(?:(\w+),)?name=(\w+)', tags)
            js = re.search(r'json:"([^"]*)"', tags)
            if not pb or not js:
                continue
            jname, *opts = js.group(1).split(",")
            if jname == "-":
                continue
            if not jname:
                # An embedded struct without a JSON name (`VolumeSource `json:""``, `json:",inline"`) has its
                # fields promoted into the parent's JSON; written with an empty name.
                if fm.group(1) is not None:
                    continue
            strategy = re.search(r'patchStrategy:"([^"]*)"', tags)
            merge_key = re.search(r'patchMergeKey:"([^"]*)"', tags)
            extra = {
                "strategy": strategy.group(1) if strategy else "",
                "merge_key": merge_key.group(1) if merge_key else "",
                "list_type": (markers.get("listType") or markers.get("mapType") or [""])[0],
                "list_keys": markers.get("listMapKey", []),
            }
            markers = {}
            fields.append((int(pb.group(2)), jname, "omitempty" in opts, fm.group(2), extra))
        structs[m.group(1)] = fields
    return imports, aliases, structs


def main():
    gitdir = sys.argv[1]
    packages = {}
    for g in GROUPS:
        packages[g] = parse(show(gitdir, f"{g}/types.go"), g)
    known = {f"{g}.{s}" for g, (_, _, ss) in packages.items() for s in ss}

    def resolve(g, t):
        """(kind, repeated, map, pointer) for a Go type in package g."""
        imports, aliases, structs = packages[g]
        pointer = t.startswith("*")
        t = t.lstrip("*")
        repeated = mapped = False
        if t == "[]byte":
            return ("Bytes", False, False, pointer)
        if t.startswith("[]"):
            repeated, t = True, t[2:].lstrip("*")
        elif t.startswith("map["):
            mapped, t = True, t.split("]", 1)[1].lstrip("*")
            if t == "[]byte":
                return ("Bytes", False, True, pointer)
        # Follow local type aliases (RestartPolicy string, ResourceList map[..]Quantity, ...).
        seen = 0
        while t in aliases and t not in structs and seen < 8:
            target = aliases[t]
            seen += 1
            if target.startswith("map[") and not mapped:
                mapped, t = True, target.split("]", 1)[1].lstrip("*")
            elif target.startswith("[]") and target != "[]byte" and not repeated:
                repeated, t = True, target[2:]
            else:
                t = target
        if t in SCALAR:
            return (SCALAR[t], repeated, mapped, pointer)
        if t in SPECIAL:
            return (SPECIAL[t], repeated, mapped, pointer)
        if "." in t:
            alias, name = t.split(".", 1)
            path = imports.get(alias, "")
            if path.endswith("apimachinery/pkg/apis/meta/v1"):
                return (f'Msg("meta.{name}")', repeated, mapped, pointer)
            if path.startswith("k8s.io/api/"):
                other = path[len("k8s.io/api/"):]
                if other in packages:
                    if name in packages[other][2]:
                        return (f'Msg("{other}.{name}")', repeated, mapped, pointer)
                    # An alias in the other package (core/v1 ResourceList from apps/v1): resolve there.
                    return resolve(other, ("*" if pointer else "") + ("[]" if repeated else "") + name)
            return (None, repeated, mapped, pointer)
        if t in structs:
            return (f'Msg("{g}.{t}")', repeated, mapped, pointer)
        return (None, repeated, mapped, pointer)

    out = [f"// @generated by tools/gen_builtin_types.py from the Go types of kubernetes/api {REF}: do not edit.",
           "//! Each built-in message's fields: protobuf tag, JSON name, value type, how JSON shows it, and its merge rules.",
           "", "use super::{Field, Patch, Presence, Ty};", "",
           "/// (message, fields), sorted by message name.",
           "pub static MESSAGES: &[(&str, &[Field])] = &["]
    rows_of = {}
    for g in sorted(packages):
        _, _, structs = packages[g]
        for s in sorted(structs):
            rows_of[f"{g}.{s}"] = [(tag, jname, omit) + resolve(g, gotype) + (extra,)
                                   for tag, jname, omit, gotype, extra in sorted(structs[s], key=lambda f: f[0])]
    # Each kind's list (`ConfigMapList`) too, for protobuf answers to lists.
    roots = ROOTS + [r + "List" for r in ROOTS if r + "List" in rows_of]
    reachable, todo = set(), list(roots)
    while todo:
        m = todo.pop()
        if m in reachable or m not in rows_of:
            continue
        reachable.add(m)
        for row in rows_of[m]:
            if row[3] and row[3].startswith("Msg("):
                todo.append(row[3][5:-2])
    for g in sorted(packages):
        _, _, structs = packages[g]
        for s in sorted(structs):
            if f"{g}.{s}" not in reachable:
                continue
            rows = []
            for tag, jname, omit, kind, repeated, mapped, pointer, extra in rows_of[f"{g}.{s}"]:
                if kind is None:
                    continue
                if pointer:
                    presence = "Pointer"
                elif omit:
                    presence = "OmitEmpty"
                else:
                    presence = "Always"
                if repeated or mapped:
                    presence = "OmitEmpty" if omit else "Always"
                kind = kind if kind.startswith("Msg") else f"Ty::{kind}"
                kind = kind.replace("Msg(", "Ty::Msg(")
                keys = ", ".join(f'"{k}"' for k in extra["list_keys"])
                rows.append(f'        Field {{ tag: {tag}, json: "{jname}", ty: {kind}, repeated: {str(repeated).lower()}, '
                            f'map: {str(mapped).lower()}, presence: Presence::{presence}, '
                            f'patch: Patch {{ strategy: "{extra["strategy"]}", merge_key: "{extra["merge_key"]}", '
                            f'list_type: "{extra["list_type"]}", list_keys: &[{keys}] }} }},')
            out.append(f'    ("{g}.{s}", &[')
            out.extend(rows)
            out.append("    ]),")
    out.append("];")
    print("\n".join(out))


main()
