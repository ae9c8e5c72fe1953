//! Tries ambient authority through std: files, directories, environment, arguments, and prints to stdout and
//! stderr. Under the host's deny-all WASI every probe must fail; it reports what it observed in its status.
//!
//! It also looks for what earlier calls left behind: `spec.plant` is copied into a static and into leaked heap
//! memory, and `spec.seek` (the text to look for, reversed, so the object itself never holds it) is searched for
//! in the whole of the instance's linear memory. `status.memoryHits` counts the places it was found, apart from
//! the probe's own copy.

use omni_plugin_sdk::{Host, Info, Plugin, ReconcileError, Value, json};

struct Snoop;

/// Where a planted text is copied outside the heap (zero-initialised data, as a guest's statics are).
static mut PLANTED: [u8; 256] = [0; 256];

fn plant(text: &str) {
    let bytes = text.as_bytes();
    let n = bytes.len().min(256);
    // SAFETY: the guest is single-threaded and nothing else touches PLANTED.
    unsafe {
        let planted = &mut *std::ptr::addr_of_mut!(PLANTED);
        planted[..n].copy_from_slice(&bytes[..n]);
    }
    for _ in 0..16 {
        Box::leak(text.to_string().into_boxed_str());
    }
}

/// Counts the places of linear memory (every page the instance has, from address 8) holding `needle`, apart from
/// `needle`'s own bytes.
fn memory_hits(needle: &[u8]) -> u64 {
    let Some(&first) = needle.first() else {
        return 0;
    };
    let own = needle.as_ptr() as usize;
    let end = core::arch::wasm32::memory_size(0) * 65536;
    let byte = |addr: usize| {
        // SAFETY: every address below the memory's size is readable in wasm; volatile, so it is really read.
        unsafe { std::ptr::read_volatile(addr as *const u8) }
    };
    let mut hits = 0;
    let mut addr = 8;
    while addr + needle.len() <= end {
        if byte(addr) == first
            && addr != own
            && needle.iter().enumerate().all(|(i, b)| byte(addr + i) == *b)
        {
            hits += 1;
        }
        addr += 1;
    }
    hits
}

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
        let object = host.object();
        if let Some(text) = object["spec"]["plant"].as_str() {
            plant(text);
        }
        let memory_hits = object["spec"]["seek"]
            .as_str()
            .map(|reversed| memory_hits(&reversed.bytes().rev().collect::<Vec<u8>>()));
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
            "memoryHits": memory_hits,
        });
        host.set_status(status);
        Ok(())
    }
}

omni_plugin_sdk::export_plugin!(Snoop);
