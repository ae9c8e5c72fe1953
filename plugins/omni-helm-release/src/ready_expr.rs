//! `dependsOn[].readyExpr` (Flux's CEL readiness check): an expression over `self` (this OmniHelmRelease) and
//! `dep` (the dependency), both as the API server stores them, that must be `true` for the dependency to count as
//! ready. It replaces the built-in check (`Ready=True` for the current generation), as Flux's does without its
//! additive feature gate.

use omni_api::cel;
use omni_plugin_sdk::Value;

/// Why `expr` is no readiness expression, or None.
pub fn problem(expr: &str) -> Option<String> {
    cel::compile("readyExpr", expr).err()
}

/// Whether `expr` holds for `this` and `dep`; an expression that fails or answers anything but a boolean says
/// why.
pub fn holds(expr: &str, this: &Value, dep: &Value) -> Result<bool, String> {
    let program = cel::compile("readyExpr", expr)?;
    cel::truth("readyExpr", &program, &[("self", this), ("dep", dep)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use omni_plugin_sdk::json;

    #[test]
    fn an_expression_over_self_and_dep_decides() {
        let this = json!({"metadata": {"name": "web", "annotations": {"wave": "2"}}});
        let dep = json!({"metadata": {"generation": 3},
            "status": {"observedGeneration": 3, "releaseStatus": "deployed",
                "conditions": [{"type": "Ready", "status": "False"}]}});
        let deployed = "dep.status.releaseStatus == 'deployed' && \
                        dep.metadata.generation == dep.status.observedGeneration";
        assert_eq!(holds(deployed, &this, &dep), Ok(true));
        assert_eq!(
            holds(
                "dep.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
                &this,
                &dep
            ),
            Ok(false)
        );
        assert_eq!(
            holds("self.metadata.annotations.wave == '2'", &this, &dep),
            Ok(true)
        );
        assert!(
            holds("dep.status.releaseStatus", &this, &dep).is_err_and(|e| e.contains("not true"))
        );
        assert!(holds("dep.nothing.here == 1", &this, &dep).is_err());
        assert!(problem("dep.status ==").is_some());
        assert!(problem(&"1 == 1 && ".repeat(1000)).is_some());
        assert_eq!(problem("true"), None);
        for refused in [
            "1 / 0 == 1",
            "dep.n % 0 == 0",
            "'\\x' == 'a'",
            "dep.n + 1 > 2",
            "dep.n - 1 > 2",
        ] {
            assert!(
                problem(refused).is_some_and(|w| w.contains("may not use")),
                "{refused}"
            );
            assert!(holds(refused, &this, &dep).is_err(), "{refused}");
        }
        assert_eq!(
            problem("dep.metadata.name == 'a-b/c+d'"),
            None,
            "inside a string they are text"
        );
    }

    /// Whatever an object's author writes, judging it answers: 50,000 expressions built from CEL's tokens (and
    /// the ones the interpreter cannot be trusted with) each get an answer, never a panic.
    #[test]
    fn no_expression_makes_the_judgement_panic() {
        let atoms = [
            "dep",
            "self",
            ".",
            "status",
            "n",
            "==",
            "!=",
            "<",
            "(",
            ")",
            "'x'",
            "\"y\"",
            "1",
            "0",
            "-",
            "+",
            "/",
            "%",
            "*",
            "&&",
            "||",
            "!",
            "[",
            "]",
            "{",
            "}",
            ":",
            ",",
            "exists(",
            "all(",
            "c",
            "size(",
            "?",
            "in",
            "'",
            "\\",
            "0x",
            "1.5e",
            "has(",
            "9223372036854775807",
            "\n",
            " ",
        ];
        let dep = json!({"status": {"n": 9223372036854775807i64, "l": [0, 1], "s": "x"}});
        let mut seed: u64 = 7;
        for _ in 0..50_000 {
            let mut expr = String::new();
            for _ in 0..(seed % 14 + 1) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                expr.push_str(atoms[(seed >> 33) as usize % atoms.len()]);
            }
            let answered = std::panic::catch_unwind(|| holds(&expr, &dep, &dep));
            assert!(answered.is_ok(), "a panic on {expr:?}");
        }
    }
}
