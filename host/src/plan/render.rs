//! A plan as people and tools read it: text for a terminal, Markdown for a pull-request comment, JSON for
//! programs. Each review-checklist answer is a line of its own in every format.

use std::fmt::Write as _;

use super::effects::{ObjectPlan, Plan};

/// The formats `--format` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

pub fn render(plan: &Plan, format: Format) -> String {
    match format {
        Format::Text => text(plan),
        Format::Markdown => markdown(plan),
        Format::Json => serde_json::to_string_pretty(plan).unwrap_or_default() + "\n",
    }
}

fn title(o: &ObjectPlan) -> String {
    format!("{} {}/{}", o.kind, o.namespace, o.name)
}

/// The lines that say what happens to one object, shared by text and Markdown.
fn details(o: &ObjectPlan) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    if let Some(e) = &o.error {
        out.push((format!("error: {e}"), Vec::new()));
    }
    if let Some(r) = &o.removal {
        out.push((format!("removal: {r}"), Vec::new()));
    }
    for n in &o.notes {
        out.push((n.clone(), Vec::new()));
    }
    for r in &o.remote {
        let verb = match r.action {
            "create" => "creates",
            "update" => "updates",
            "pause" => "pauses",
            "resume" => "resumes",
            "delete" => "deletes",
            _ => "orphans",
        };
        out.push((format!("remote cluster: {verb} {}", r.cluster), Vec::new()));
    }
    if !o.machines_destroyed.is_empty() {
        out.push((
            format!("machines destroyed: {}", o.machines_destroyed.join(", ")),
            Vec::new(),
        ));
    }
    for n in &o.networking {
        out.push((format!("networking: {n}"), Vec::new()));
    }
    for c in &o.omni {
        out.push((
            format!("omni: {} {} {}", c.op.name(), c.type_, c.id),
            c.diff.clone(),
        ));
    }
    for h in &o.helm {
        out.push((
            format!("helm: {} {}: {}", h.action, h.release, h.detail),
            h.diff.clone(),
        ));
    }
    for w in &o.kubernetes_writes {
        out.push((
            format!("kubernetes ({}): {} {}", w.cluster, w.method, w.path),
            Vec::new(),
        ));
    }
    out
}

fn text(plan: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", plan.summary);
    let _ = writeln!(s);
    for a in &plan.checklist {
        let _ = writeln!(s, "{} {}", a.question, a.answer);
    }
    for o in plan.objects.iter().filter(|o| o.acts()) {
        let _ = writeln!(s);
        let _ = writeln!(s, "{}: {}", title(o), o.change.word());
        for (line, diff) in details(o) {
            let _ = writeln!(s, "  {line}");
            for d in diff {
                let _ = writeln!(s, "      {d}");
            }
        }
    }
    let unchanged = plan.objects.iter().filter(|o| !o.acts()).count();
    if unchanged > 0 {
        let _ = writeln!(s);
        let _ = writeln!(s, "{unchanged} objects unchanged");
    }
    s
}

/// Markdown text with the characters that would start markup escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn markdown(plan: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### {}", escape(&plan.summary));
    let _ = writeln!(s);
    let _ = writeln!(s, "| Review checklist | Answer |");
    let _ = writeln!(s, "| --- | --- |");
    for a in &plan.checklist {
        let _ = writeln!(s, "| {} | {} |", escape(a.question), escape(&a.answer));
    }
    for o in plan.objects.iter().filter(|o| o.acts()) {
        let _ = writeln!(s);
        let _ = writeln!(s, "#### {}: {}", escape(&title(o)), escape(o.change.word()));
        for (line, diff) in details(o) {
            let _ = writeln!(s, "- {}", escape(&line));
            if !diff.is_empty() {
                let _ = writeln!(s);
                let _ = writeln!(s, "  ```diff");
                for d in diff {
                    // A fence inside the diff would end the block early.
                    let _ = writeln!(s, "  {}", d.replace("```", "'''"));
                }
                let _ = writeln!(s, "  ```");
            }
        }
    }
    s
}
