//! The WebAssembly binding: the only code that touches `wasm_bindgen` and `js_sys`.
//!
//! The boundary is JSON strings: options, messages, state and results cross it as JSON text, so
//! the core never sees a `JsValue`. The host (store, summarize function, token counter) crosses
//! it as JavaScript objects, adapted to the core's traits in [`host`]. Every core error becomes a
//! real JavaScript `Error` named `AutoContextError` with a stable `code` ([`error`]). The
//! hand-written TypeScript wrapper in `js/` is the public API; this layer is its engine room.

mod class;
mod convert;
mod error;
mod host;
mod reload;
mod summarize;
