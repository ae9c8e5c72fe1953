//! Allocates until the host refuses to grow its memory.

use omni_plugin_sdk::{Host, Info, Plugin, ReconcileError};

struct Bomb;

impl Plugin for Bomb {
    fn describe() -> Info {
        Info {
            name: "bomb".into(),
            version: "1.0.0".into(),
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(_host: &H) -> Result<(), ReconcileError> {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(std::hint::black_box(vec![1u8; 1 << 20]));
        }
    }
}

omni_plugin_sdk::export_plugin!(Bomb);
