//! Build script: generates the exact tokenizer's tables into `OUT_DIR`, so nothing generated is
//! committed and every table comes from the same pinned sources the tests compare against.
//!
//! - `unicode_classes.rs`: the character classes the two split patterns use (letters by case,
//!   marks, numbers, white space), taken from `regex-syntax`, the Unicode tables of the regex
//!   engine that tiktoken's own split runs on, so both agree on every code point.
//! - `<encoding>.lens` and `<encoding>.bytes`, for each encoding the cargo features select
//!   (`o200k`, `cl100k`): every token's bytes in rank order, one length byte per token and the
//!   bytes concatenated. They are embedded with `include_bytes!` and become a data segment of the
//!   `.wasm`, so loading a vocabulary is a memory copy made by the runtime, not a parse. The
//!   tokens come from `tiktoken-rs` (MIT, like OpenAI's vocabulary files it embeds).

mod unicode;
mod vocab;

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    unicode::generate(&out.join("unicode_classes.rs"));
    if env::var_os("CARGO_FEATURE_O200K").is_some() {
        let bpe = tiktoken_rs::o200k_base().expect("tiktoken-rs builds o200k_base");
        vocab::generate(&bpe, &out, "o200k_base");
    }
    if env::var_os("CARGO_FEATURE_CL100K").is_some() {
        let bpe = tiktoken_rs::cl100k_base().expect("tiktoken-rs builds cl100k_base");
        vocab::generate(&bpe, &out, "cl100k_base");
    }
}
