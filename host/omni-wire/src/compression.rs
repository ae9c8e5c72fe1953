//! ConfigPatch and KubernetesManifestGroup content: Omni's Go client compresses
//! content of 2 KiB or more with zstd and a shared dictionary (`config.1.zdict`, dictionary ID 1). Readers must
//! decompress before comparing; writers may always send plain data.

use std::sync::Arc;

/// What Go's client compresses at and above (`CompressionThresholdBytes`).
pub const THRESHOLD_BYTES: usize = 2048;

/// Content larger than this after decompression is refused: Omni's messages are capped at 32 MiB.
const MAX_DECOMPRESSED: usize = 32 * 1024 * 1024;

/// A zstd dictionary, loaded once and shared. The decoding form is digested once here, not on every read.
#[derive(Clone)]
pub struct Dictionary {
    bytes: Arc<[u8]>,
    decoding: Arc<zstd::dict::DecoderDictionary<'static>>,
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dictionary({} bytes)", self.bytes.len())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompressionError {
    #[error("not a zstd dictionary (magic 0xEC30A437 expected)")]
    NotADictionary,
    #[error("zstd content could not be decompressed with the configured dictionary: {0}")]
    Corrupt(String),
    #[error("zstd compression failed: {0}")]
    Compress(String),
}

impl Dictionary {
    pub fn new(bytes: Vec<u8>) -> Result<Self, CompressionError> {
        if bytes.len() < 8 || bytes[..4] != [0x37, 0xA4, 0x30, 0xEC] {
            return Err(CompressionError::NotADictionary);
        }
        let decoding = Arc::new(zstd::dict::DecoderDictionary::copy(&bytes));
        Ok(Dictionary {
            bytes: bytes.into(),
            decoding,
        })
    }

    /// The dictionary ID frames compressed with it carry.
    pub fn id(&self) -> u32 {
        u32::from_le_bytes([self.bytes[4], self.bytes[5], self.bytes[6], self.bytes[7]])
    }

    /// Streams the frame, so the buffer grows with the content instead of being sized for the largest allowed.
    pub fn decompress(&self, compressed: &[u8]) -> Result<Vec<u8>, CompressionError> {
        use std::io::Read as _;
        let decoder =
            zstd::stream::read::Decoder::with_prepared_dictionary(compressed, &self.decoding)
                .map_err(|e| CompressionError::Corrupt(e.to_string()))?;
        let mut plain = Vec::new();
        decoder
            .take(MAX_DECOMPRESSED as u64 + 1)
            .read_to_end(&mut plain)
            .map_err(|e| CompressionError::Corrupt(e.to_string()))?;
        if plain.len() > MAX_DECOMPRESSED {
            return Err(CompressionError::Corrupt(format!(
                "the content is larger than {MAX_DECOMPRESSED} bytes"
            )));
        }
        Ok(plain)
    }

    /// Compresses as Omni's client does (default level, content size in the frame). The bytes differ from Go's
    /// encoder; only the decompressed content is ever compared.
    pub fn compress(&self, plain: &[u8]) -> Result<Vec<u8>, CompressionError> {
        let mut encoder = zstd::bulk::Compressor::with_dictionary(3, &self.bytes)
            .map_err(|e| CompressionError::Compress(e.to_string()))?;
        encoder
            .include_contentsize(true)
            .map_err(|e| CompressionError::Compress(e.to_string()))?;
        encoder
            .compress(plain)
            .map_err(|e| CompressionError::Compress(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn omni_dictionary() -> Dictionary {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/data/omni/config.1.zdict"
        );
        Dictionary::new(std::fs::read(path).expect("the shared dictionary")).expect("a dictionary")
    }

    #[test]
    fn omnis_dictionary_round_trips_patches() {
        let dictionary = omni_dictionary();
        assert_eq!(dictionary.id(), 1);
        let patch =
            "machine:\n    network:\n        kubespan:\n            enabled: true\n".repeat(64);
        let compressed = dictionary.compress(patch.as_bytes()).expect("compresses");
        assert!(compressed.len() < patch.len() / 4);
        assert_eq!(
            dictionary.decompress(&compressed).expect("decompresses"),
            patch.as_bytes()
        );
    }

    #[test]
    fn garbage_is_reported_not_guessed() {
        assert_eq!(
            Dictionary::new(b"hello world".to_vec()).unwrap_err(),
            CompressionError::NotADictionary
        );
        let e = omni_dictionary()
            .decompress(b"not zstd at all")
            .unwrap_err();
        assert!(matches!(e, CompressionError::Corrupt(_)), "{e:?}");
    }
}
