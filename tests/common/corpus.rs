//! Where the shared corpus of agent traces is: the folder `AUTOCONTEXT_CORPUS` names, or
//! `../shared/corpus` beside the repository. The tests include it through `common`, the
//! benchmarks with `#[path]`.

use std::path::{Path, PathBuf};

/// The corpus folder.
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("AUTOCONTEXT_CORPUS") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("shared").join("corpus"),
    }
}
