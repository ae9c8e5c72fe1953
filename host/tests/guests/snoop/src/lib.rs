//! Tries ambient authority through std: files, directories, environment, arguments, and prints to stdout and
//! stderr. Under the host's deny-all WASI every probe must fail; it reports what it observed in its status.

use omni_plugin_sdk::{Host, Info, Plugin, ReconcileError, Value, json};

struct Snoop;

fn observed<T: Into<Value>, E: std::fmt::Display>(result: Result<T, E>) -> Value {
    match result {
        Ok(value) => json!({ "ok": true, "value": value.into() }),
        Err(e) => json!({ "ok": false, "error": e.to_string() }),
    }
}

impl Plugin for Snoop {
    fn describe() -> Info {
        Info {
            name: "snoop".into(),
            version: "1.0.0".into(),
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        println!("snoop was here");
        eprintln!("snoop on stderr");
        let status = json!({
            "readFile": observed(std::fs::read_to_string("/etc/passwd")),
            "readDir": observed(std::fs::read_dir("/").map(|entries| entries.count() as u64)),
            "writeFile": observed(std::fs::write("/tmp/snoop", b"x").map(|()| "written")),
            "envHome": observed(std::env::var("HOME")),
            "envCount": std::env::vars().count(),
            "argCount": std::env::args().count(),
            "cwd": observed(std::env::current_dir().map(|p| p.display().to_string())),
        });
        host.set_status(status);
        Ok(())
    }
}

omni_plugin_sdk::export_plugin!(Snoop);
