//! The size of a model's weights on disk, which an engine holds in memory beside its KV cache.

use std::path::Path;

/// File endings of weights: safetensors, PyTorch checkpoints, GGUF.
const WEIGHT_FILES: &[&str] = &[".safetensors", ".bin", ".pt", ".pth", ".gguf"];

/// Bytes of the weights of `model`: a weight file's size, or the sum of the weight files at
/// the top of a model folder; `None` for a name that is no local path (a hub id) or a folder
/// without weight files.
pub(crate) fn weights_bytes(model: &str) -> Option<u64> {
    let path = Path::new(model);
    let is_weights = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| WEIGHT_FILES.iter().any(|end| n.ends_with(end)))
    };
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return is_weights(path).then_some(meta.len());
    }
    let total: u64 = std::fs::read_dir(path)
        .ok()?
        .flatten()
        .filter(|e| is_weights(&e.path()))
        .filter_map(|e| e.metadata().ok().filter(|m| m.is_file()))
        .map(|m| m.len())
        .sum();
    (total > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folders_weight_files_are_summed_and_other_files_left_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("model-00001.safetensors"), vec![0u8; 300]).unwrap();
        std::fs::write(dir.path().join("model-00002.safetensors"), vec![0u8; 200]).unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), vec![0u8; 999]).unwrap();
        let folder = dir.path().display().to_string();
        assert_eq!(weights_bytes(&folder), Some(500));
        let file = dir.path().join("model-00002.safetensors");
        assert_eq!(weights_bytes(&file.display().to_string()), Some(200));
        assert_eq!(weights_bytes("Qwen/Qwen2.5-0.5B"), None, "a hub id");
        std::fs::remove_file(dir.path().join("model-00001.safetensors")).unwrap();
        std::fs::remove_file(file).unwrap();
        assert_eq!(weights_bytes(&folder), None, "no weights left");
    }
}
