//! Marks whether the project's shared data (`../shared/data`: production traces and real
//! measurements, checked out beside the repository) is present, so the tests that read it are
//! ignored with their reason where it is not (`cfg(shared_data)`). Looked at again when this
//! file or `INFERTUNE_SHARED_DATA` changes, not on every build.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(shared_data)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=INFERTUNE_SHARED_DATA");
    if std::path::Path::new("../shared/data").is_dir() {
        println!("cargo::rustc-cfg=shared_data");
    }
}
