//! The CEL that OmniHelmRelease fields carry (`dependsOn[].readyExpr`, `healthCheckExprs`), compiled behind a
//! guard: the embedded interpreter (`cel-interpreter` 0.9.1) panics instead of answering an error on an integer
//! division by zero, an escape it cannot read and a literal past 64 bits. An object's author writes these
//! expressions, so they are untrusted input to whoever evaluates them (a plugin, whose call a panic ends, and the
//! host, which runs health checks); expressions using what the interpreter is not trusted with are refused before
//! they are compiled. Readiness and health expressions compare fields and need none of it.

use cel_interpreter::{Context, Program};
use serde_json::Value;

/// The longest expression taken: readiness and health checks are a line or two.
pub const MAX_EXPR: usize = 4096;

/// The longest number literal taken (an `i64` has 19 digits).
const MAX_NUMBER: usize = 15;

/// `expr` compiled once its length and what the interpreter is trusted with are checked; or why not, the message
/// naming the field (`readyExpr`, `healthCheckExprs[0].current`).
pub fn compile(field: &str, expr: &str) -> Result<Program, String> {
    if expr.len() > MAX_EXPR {
        return Err(format!(
            "{field} is {} characters; at most {MAX_EXPR} are taken",
            expr.len()
        ));
    }
    if let Some(what) = untrusted(expr) {
        return Err(format!(
            "{field} may not use {what}: these expressions compare fields, and the CEL interpreter embedded here \
             is not trusted with arithmetic, escapes or long numbers (it stops on a division by zero, a bad \
             escape or a number it cannot hold)"
        ));
    }
    Program::compile(expr).map_err(|e| format!("{field} is not a CEL expression: {e}"))
}

/// What `program` answers with `variables` bound, as a boolean; anything else (an error, another type) says why,
/// naming `field`.
pub fn truth(field: &str, program: &Program, variables: &[(&str, &Value)]) -> Result<bool, String> {
    let mut context = Context::default();
    for (name, value) in variables {
        context
            .add_variable(*name, *value)
            .map_err(|e| format!("{field}: {name}: {e}"))?;
    }
    match program.execute(&context) {
        Ok(cel_interpreter::Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("{field} answered {other:?}, not true or false")),
        Err(e) => Err(format!("{field} failed: {e}")),
    }
}

/// The first arithmetic operator or over-long number outside a string literal, or a backslash anywhere: what the
/// interpreter panics on with some operands.
fn untrusted(expr: &str) -> Option<String> {
    let mut quote: Option<char> = None;
    let mut number = 0usize;
    for c in expr.chars() {
        match (quote, c) {
            (_, '\\') => return Some(format!("{c:?}")),
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '/' | '%' | '+' | '-' | '*') => return Some(format!("{c:?}")),
            (None, c) if c.is_ascii_digit() || (number > 0 && c.is_ascii_alphanumeric()) => {
                number += 1;
                if number > MAX_NUMBER {
                    return Some(format!("a number of more than {MAX_NUMBER} digits"));
                }
            }
            (None, _) => number = 0,
        }
        if quote.is_some() {
            number = 0;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_the_interpreter_is_not_trusted_with_is_refused_naming_the_field() {
        for refused in [
            "1 / 0 == 1",
            "n % 0 == 0",
            "'\\x' == 'a'",
            "n + 1 > 2",
            "n - 1 > 2",
            "n == 12345678901234567890",
        ] {
            let e = compile("healthCheckExprs[0].current", refused).err();
            assert!(
                e.as_deref()
                    .is_some_and(|e| e.starts_with("healthCheckExprs[0].current may not use")),
                "{refused}: {e:?}"
            );
        }
        assert!(
            compile("x", "a.b == 'a-b/c+d*%'").is_ok(),
            "text in strings"
        );
        assert!(compile("x", &"true && ".repeat(600)).is_err_and(|e| e.contains("at most")));
        assert!(compile("x", "a ==").is_err_and(|e| e.contains("x is not a CEL expression")));
    }

    #[test]
    fn a_boolean_answer_is_the_truth_and_anything_else_an_error() {
        let status = json!({"phase": "Ready", "observedGeneration": 2});
        let vars = [("status", &status)];
        let ready = compile("f", "status.phase == 'Ready'").unwrap();
        assert_eq!(truth("f", &ready, &vars), Ok(true));
        let phase = compile("f", "status.phase").unwrap();
        assert!(truth("f", &phase, &vars).is_err_and(|e| e.contains("not true or false")));
        let missing = compile("f", "spec.replicas == 1").unwrap();
        assert!(truth("f", &missing, &vars).is_err_and(|e| e.starts_with("f failed")));
    }
}
