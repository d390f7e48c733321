//! The WebAssembly binding: the only code that touches `wasm_bindgen` and `js_sys`.
//!
//! The boundary is JSON strings: options, messages, state and results cross it as JSON text, so
//! the core never sees a `JsValue`. The host (store, summarize function, token counter) crosses
//! it as JavaScript objects, adapted to the core's traits in [`host`]. Every core error becomes a
//! real JavaScript `Error` named `AutoContextError` with a stable `code` ([`error`]). The
//! hand-written TypeScript wrapper in `js/` is the public API; this layer is its engine room.

/// The module's allocator: Talc, in place of the standard library's dlmalloc. The engine
/// allocates in small pieces (a message's JSON tree, its blocks, a pass's copies) and frees them
/// in bulk, and Talc's bins serve that faster: paired against dlmalloc on the same build, one
/// pass over the largest trace took about 12% less CPU in Node, a Worker's turn 8 to 15% less
/// in workerd, for 1% more memory after adding the whole corpus and a module 2 KB smaller. It
/// takes pages with `memory.grow` as it needs them, as the vocabulary's table does (which
/// takes pages of its own): a heap that does not continue the last one is claimed apart.
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

mod class;
mod convert;
mod error;
mod host;
mod random;
mod reload;
mod summarize;

/// A `Promise` settled by `future`. The future is boxed first, so the promise machinery of
/// `future_to_promise` (task, waker, callbacks) is compiled once for every asynchronous method
/// rather than once per method.
fn future_to_promise(
    future: impl std::future::Future<Output = Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue>> + 'static,
) -> js_sys::Promise {
    let boxed: futures_util::future::LocalBoxFuture<'static, _> = Box::pin(future);
    wasm_bindgen_futures::future_to_promise(boxed)
}
