//! Build script: generates the exact tokenizer's tables into `OUT_DIR`, so nothing generated is
//! committed and every table comes from the same pinned sources the tests compare against.
//!
//! - `unicode_classes.rs`: the character classes the two split patterns use (letters by case,
//!   marks, numbers, white space), taken from `regex-syntax`, the Unicode tables of the regex
//!   engine that tiktoken's own split runs on, so both agree on every code point.
//! - `<encoding>.vocab`, for each encoding the cargo features select (`o200k`, `cl100k`): every
//!   token in rank order, each one after the first 256 as the pair of lower-ranked tokens it
//!   concatenates (see `vocab.rs` for why and how). It is embedded with `include_bytes!`, and
//!   the first count decodes it. The tokens come from `tiktoken-rs` (MIT, like OpenAI's
//!   vocabulary files it embeds).
//!
//! A build without either feature (the estimator-only build) generates nothing.

#[cfg(any(feature = "o200k", feature = "cl100k"))]
mod unicode;
#[cfg(any(feature = "o200k", feature = "cl100k"))]
mod vocab;

fn main() {
    println!("cargo:rerun-if-changed=build");
    #[cfg(any(feature = "o200k", feature = "cl100k"))]
    {
        let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        unicode::generate(&out.join("unicode_classes.rs"));
        #[cfg(feature = "o200k")]
        vocab::generate(&tiktoken_rs::o200k_base().expect("tiktoken-rs builds o200k_base"), &out, "o200k_base");
        #[cfg(feature = "cl100k")]
        vocab::generate(&tiktoken_rs::cl100k_base().expect("tiktoken-rs builds cl100k_base"), &out, "cl100k_base");
    }
}
