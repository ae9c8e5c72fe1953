//! The finalizer rules the host applies for plugins that declare one: added before the plugin's first
//! side effect unless the object already carries the current or a legacy name; on deletion every name the
//! plugin answers to is removed together.

/// The finalizers the object should carry before a reconcile, when they must change.
pub fn to_add(
    current: &[String],
    finalizer: Option<&str>,
    legacy: &[String],
) -> Option<Vec<String>> {
    let f = finalizer?;
    let held = current.iter().any(|c| c == f || legacy.contains(c));
    if held {
        return None;
    }
    let mut next = current.to_vec();
    next.push(f.to_string());
    Some(next)
}

/// Whether a deleting object still waits for this plugin's cleanup.
pub fn held(current: &[String], finalizer: Option<&str>, legacy: &[String]) -> bool {
    current
        .iter()
        .any(|c| Some(c.as_str()) == finalizer || legacy.contains(c))
}

/// The finalizers left once this plugin's cleanup is done (other controllers' finalizers stay).
pub fn after_cleanup(
    current: &[String],
    finalizer: Option<&str>,
    legacy: &[String],
) -> Vec<String> {
    current
        .iter()
        .filter(|c| Some(c.as_str()) != finalizer && !legacy.contains(c))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEW: &str = omni_api::FINALIZER;
    const OLD: &str = omni_api::LEGACY_FINALIZER;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_current_finalizer_is_added_when_neither_name_is_present() {
        assert_eq!(
            to_add(&v(&["other"]), Some(NEW), &v(&[OLD])),
            Some(v(&["other", NEW]))
        );
        assert_eq!(to_add(&v(&[NEW]), Some(NEW), &v(&[OLD])), None);
    }

    #[test]
    fn an_object_with_only_the_legacy_finalizer_is_not_given_the_new_one() {
        assert_eq!(to_add(&v(&[OLD]), Some(NEW), &v(&[OLD])), None);
        assert!(held(&v(&[OLD]), Some(NEW), &v(&[OLD])));
    }

    #[test]
    fn cleanup_removes_both_names_and_keeps_others() {
        assert_eq!(
            after_cleanup(&v(&[OLD, "keep", NEW]), Some(NEW), &v(&[OLD])),
            v(&["keep"])
        );
    }

    #[test]
    fn plugins_without_a_finalizer_add_none_and_hold_none() {
        assert_eq!(to_add(&v(&[]), None, &[]), None);
        assert!(!held(&v(&[NEW]), None, &[]));
    }
}
