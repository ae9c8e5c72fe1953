//! Admission rules shared by the machine-set kinds and OmniMachine.

use omni_plugin_sdk::{Value, Verdict};

/// What Go's `uuid.Parse` accepts: canonical, `urn:uuid:`-prefixed, braced, or 32 bare hex digits.
pub fn is_uuid(s: &str) -> bool {
    let hex = |t: &str| t.chars().all(|c| c.is_ascii_hexdigit());
    let canonical = |t: &str| {
        let b = t.as_bytes();
        t.len() == 36
            && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
            && hex(&t[0..8])
            && hex(&t[9..13])
            && hex(&t[14..18])
            && hex(&t[19..23])
            && hex(&t[24..36])
    };
    match s.len() {
        36 => canonical(s),
        45 => {
            s.get(..9)
                .is_some_and(|p| p.eq_ignore_ascii_case("urn:uuid:"))
                && canonical(&s[9..])
        }
        38 => s.starts_with('{') && s.ends_with('}') && canonical(&s[1..37]),
        32 => hex(s),
        _ => false,
    }
}

/// `machineClass.size`: a positive integer, or one of the unlimited words.
pub fn machine_class_size(spec: &Value, v: &mut Verdict) {
    let size = &spec["machineClass"]["size"];
    match size {
        Value::Number(n) if n.as_i64().is_none_or(|i| i <= 0) => {
            v.invalid(
                "spec.machineClass.size",
                size.clone(),
                "machineClass size must be greater than zero",
            );
        }
        Value::String(s) if !["unlimited", "infinity", "∞"].contains(&s.as_str()) => {
            v.not_supported(
                "spec.machineClass.size",
                size.clone(),
                &["unlimited", "infinity", "∞"],
            );
        }
        _ => {}
    }
}

/// Each machine a UUID; a duplicate is reported at its later index and at the earlier one.
pub fn machines(spec: &Value, v: &mut Verdict) {
    let Some(list) = spec["machines"].as_array() else {
        return;
    };
    for (i, m) in list.iter().enumerate() {
        let id = m.as_str().unwrap_or_default();
        if !is_uuid(id) {
            v.invalid(
                &format!("spec.machines[{i}]"),
                m.clone(),
                "machine ID must be a UUID",
            );
        }
        if let Some(first) = list[..i].iter().position(|earlier| earlier == m) {
            v.duplicate(&format!("spec.machines[{i}]"), m.clone());
            v.duplicate(&format!("spec.machines[{first}]"), m.clone());
        }
    }
}

/// Each patch names exactly one source: a `file`, or non-empty `inline` content.
pub fn patches(spec: &Value, v: &mut Verdict) {
    let Some(list) = spec["patches"].as_array() else {
        return;
    };
    for (i, p) in list.iter().enumerate() {
        let has_file = p["file"].as_str().is_some_and(|f| !f.is_empty());
        let has_inline = !p["inline"].is_null();
        let field = format!("spec.patches[{i}]");
        match (has_file, has_inline) {
            (false, false) => v.required(&field, "patch requires exactly one of file or inline"),
            (true, true) => v.invalid(&field, p.clone(), "patch must not set both file and inline"),
            _ => {}
        }
    }
}

/// Kernel arguments need static machines: Omni cannot apply them to a machine class.
pub fn kernel_args(spec: &Value, v: &mut Verdict) {
    let has_args = spec["kernelArgs"].as_array().is_some_and(|a| !a.is_empty());
    if has_args && spec["machineClass"].is_object() {
        v.invalid(
            "spec.kernelArgs",
            spec["kernelArgs"].clone(),
            "kernelArgs are supported only for static machine sets",
        );
    }
}
