//! The CRDs checked in under `crds/`, and the copies the CRDs chart installs
//! (`charts/omni-cluster-operator-crds/templates/`), are exactly what `omni_api::crds` generates from the Rust
//! types. `UPDATE_CRDS=1` rewrites them instead of failing.

use std::fs;
use std::path::PathBuf;

use omni_api::crds;

const REGENERATE: &str =
    "UPDATE_CRDS=1 cargo test -p omni-api --features schema --test crds_committed";

fn crds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crds")
}

fn chart_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../charts/omni-cluster-operator-crds/templates")
}

#[test]
fn committed_crds_match_the_rust_types() {
    check(&crds_dir(), "crds/");
}

#[test]
fn the_crds_chart_installs_exactly_the_generated_crds() {
    check(&chart_dir(), "charts/omni-cluster-operator-crds/templates/");
}

fn check(dir: &std::path::Path, shown: &str) {
    let files = crds::files().expect("rendering the CRDs");
    let dir = dir.to_path_buf();
    let update = std::env::var("UPDATE_CRDS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();

    for file in &files {
        let path = dir.join(&file.file_name);
        if fs::read_to_string(&path).ok().as_deref() != Some(file.yaml.as_str()) {
            if update {
                fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {shown}: {e}"));
                fs::write(&path, &file.yaml)
                    .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
            } else {
                stale.push(file.file_name.clone());
            }
        }
    }

    // A file for a kind that no longer exists would still be installed by `kubectl apply -f crds/`.
    let generated: Vec<&str> = files.iter().map(|f| f.file_name.as_str()).collect();
    for entry in fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("listing {shown}: {e}"))
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if (name.starts_with("omni.texashpc.com_")
            || name.starts_with("plugins.omni.texashpc.com_"))
            && !generated.contains(&name.as_str())
        {
            if update {
                fs::remove_file(entry.path()).unwrap_or_else(|e| panic!("removing {name}: {e}"));
            } else {
                stale.push(format!("{name} (no longer generated)"));
            }
        }
    }

    assert!(
        stale.is_empty(),
        "{shown} is out of date with the Rust types in plugins/api: {}.\nRegenerate with: {REGENERATE}",
        stale.join(", ")
    );
}

#[test]
fn rendered_yaml_reads_back_as_the_generated_crds() {
    // Guards the YAML encoder: "True"/"False" enum values, patterns full of backslashes and multi-line
    // descriptions must come back exactly.
    let files = crds::files().expect("rendering the CRDs");
    for (file, crd) in files.iter().zip(crds::all()) {
        let parsed: serde_json::Value =
            yaml_serde::from_str(&file.yaml).expect("parsing rendered YAML");
        assert_eq!(
            parsed, crd,
            "{} does not read back as the generated CRD",
            file.file_name
        );
    }
}

#[test]
fn every_kind_has_one_file_named_like_controller_gen_names_it() {
    let names: Vec<String> = crds::files()
        .expect("rendering the CRDs")
        .into_iter()
        .map(|f| f.file_name)
        .collect();
    assert_eq!(
        names,
        [
            "omni.texashpc.com_omniconnections.yaml",
            "omni.texashpc.com_omniclusters.yaml",
            "omni.texashpc.com_omnicontrolplanes.yaml",
            "omni.texashpc.com_omniworkers.yaml",
            "omni.texashpc.com_omnimachines.yaml",
            "omni.texashpc.com_omnihelmreleases.yaml",
            "omni.texashpc.com_omnikubeconfigexports.yaml",
            "omni.texashpc.com_omnisecretsyncs.yaml",
            "plugins.omni.texashpc.com_plugins.yaml",
            "plugins.omni.texashpc.com_pluginbindings.yaml",
            "plugins.omni.texashpc.com_clusterpluginbindings.yaml",
        ]
    );
}
