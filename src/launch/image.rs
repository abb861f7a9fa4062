//! An engine's usual container image: what the deployment exports run a winner with elsewhere.
//! Each engine's folder names its own; the exports only read them.

/// A container image (without its tag) and the server's program inside it.
#[derive(Clone, Copy, Debug)]
pub struct ContainerImage {
    /// Repository, e.g. `vllm/vllm-openai`.
    pub repository: &'static str,
    /// The tag for an engine version (`None`: unknown).
    pub tag: fn(Option<&str>) -> String,
    /// The server's program inside the image.
    pub program: &'static str,
}

impl ContainerImage {
    /// The image reference for `version`, e.g. `vllm/vllm-openai:v0.32.0`.
    pub fn reference(&self, version: Option<&str>) -> String {
        format!("{}:{}", self.repository, (self.tag)(version))
    }
}

/// The tag of images tagged `v` and the engine's version (`0.32.0+cpu` → `v0.32.0`: a local
/// build's suffix dropped), `latest` when the version is unknown.
pub fn v_tag(version: Option<&str>) -> String {
    version.map_or_else(
        || "latest".into(),
        |v| format!("v{}", v.split('+').next().unwrap_or(v)),
    )
}
