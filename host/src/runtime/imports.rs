//! A plugin's imports against its grants, checked before it ever runs: a component imports exactly the
//! interfaces its code calls (the SDK keeps unused ones out), so an import outside the grants is refused at
//! load with the capability named, instead of surfacing as a denied call in the middle of a reconcile.

use wasmtime::Engine;
use wasmtime::component::Component;

use super::error::{ErrorKind, PluginError};
use crate::contract::{Capability, Grants};

/// The contract package and the major line this host serves.
const CONTRACT_PACKAGE: &str = "omni:operator";
const CONTRACT_LINE: &str = "0.1.";

/// WASI packages a std guest pulls in. They are linked against a deny-all context: streams go to capture
/// buffers, there are no files, environment or arguments, and clocks and randomness grant no authority.
/// Anything else (`wasi:sockets`, `wasi:http`, …) is refused.
const SANDBOXED_WASI: [&str; 5] = [
    "wasi:cli",
    "wasi:io",
    "wasi:clocks",
    "wasi:random",
    "wasi:filesystem",
];

/// Checks every import of `component`; returns the import names, or the refusal listing each offending
/// import.
pub(crate) fn check(
    plugin: &str,
    engine: &Engine,
    component: &Component,
    grants: &Grants,
) -> Result<Vec<String>, PluginError> {
    let mut names = Vec::new();
    let mut refusals = Vec::new();
    for (name, _) in component.component_type().imports(engine) {
        if let Err(refusal) = check_one(name, grants) {
            refusals.push(refusal);
        }
        names.push(name.to_owned());
    }
    if refusals.is_empty() {
        Ok(names)
    } else {
        Err(PluginError::new(
            plugin,
            ErrorKind::DeniedCapability,
            refusals.join("; "),
        ))
    }
}

fn check_one(import: &str, grants: &Grants) -> Result<(), String> {
    let (path, version) = import.split_once('@').unwrap_or((import, ""));
    let Some((package, interface)) = path.split_once('/') else {
        return Err(format!(
            "imports {import}, which is not an interface this host provides"
        ));
    };
    if package == CONTRACT_PACKAGE {
        if !version.starts_with(CONTRACT_LINE) {
            return Err(format!(
                "imports {import}, but this host serves {CONTRACT_PACKAGE} {CONTRACT_LINE}x; rebuild the plugin against it"
            ));
        }
        return match Capability::guarding(interface) {
            Ok(None) => Ok(()),
            Ok(Some(capability)) if grants.allows(capability) => Ok(()),
            Ok(Some(capability)) => Err(format!(
                "imports {import} (capability {:?}), which its grants do not include",
                capability.name()
            )),
            Err(()) => Err(format!(
                "imports {import}, which this host does not provide"
            )),
        };
    }
    if SANDBOXED_WASI.contains(&package) {
        return Ok(());
    }
    Err(format!(
        "imports {import}, which the plugin sandbox never provides"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_and_types_need_no_grant() {
        assert_eq!(
            check_one("omni:operator/context@0.1.0", &Grants::none()),
            Ok(())
        );
        assert_eq!(
            check_one("omni:operator/types@0.1.0", &Grants::none()),
            Ok(())
        );
    }

    #[test]
    fn capability_interfaces_need_their_grant() {
        let err = check_one("omni:operator/omni@0.1.0", &Grants::none()).unwrap_err();
        assert_eq!(
            err,
            "imports omni:operator/omni@0.1.0 (capability \"omni\"), which its grants do not include"
        );
        assert_eq!(
            check_one(
                "omni:operator/omni@0.1.0",
                &Grants::none().with(Capability::Omni)
            ),
            Ok(())
        );
    }

    #[test]
    fn std_wasi_is_sandboxed_and_network_is_refused() {
        assert_eq!(
            check_one("wasi:cli/environment@0.2.6", &Grants::none()),
            Ok(())
        );
        assert_eq!(
            check_one("wasi:filesystem/preopens@0.2.6", &Grants::none()),
            Ok(())
        );
        let err = check_one("wasi:sockets/tcp@0.2.6", &Grants::none()).unwrap_err();
        assert!(err.contains("never provides"), "{err}");
    }

    #[test]
    fn other_contract_lines_and_unknown_interfaces_are_refused() {
        assert!(
            check_one("omni:operator/context@1.0.0", &Grants::none())
                .unwrap_err()
                .contains("rebuild")
        );
        assert!(
            check_one("omni:operator/admin@0.1.0", &Grants::none())
                .unwrap_err()
                .contains("does not provide")
        );
    }
}
