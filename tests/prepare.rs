//! `Tokenizer::prepare`: the vocabulary decoded before the first count (a Worker's startup does
//! it). A test binary of its own, so that nothing in this process has counted before it.

use autocontext::{TokenCounter, Tokenizer};
use autocontext_bpe::Encoding;

#[test]
fn prepare_decodes_the_vocabulary_the_first_count_would_and_nothing_else() {
    assert!(!Encoding::O200kBase.indexed(), "nothing counted yet");
    Tokenizer::Estimate.prepare();
    Tokenizer::Custom.prepare();
    assert!(!Encoding::O200kBase.indexed(), "no vocabulary of its own, none decoded");
    Tokenizer::O200kBase.prepare();
    assert!(Encoding::O200kBase.indexed());
    assert!(!Encoding::Cl100kBase.indexed(), "only the one asked for");
    // Counting after it counts as tiktoken does.
    let text = "hello world, a first count";
    let n = TokenCounter::new(Tokenizer::O200kBase).unwrap().count_text(text).unwrap();
    assert_eq!(n as usize, tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len());
    Tokenizer::O200kBase.prepare(); // again: nothing to do
    assert!(Encoding::O200kBase.indexed());
}
