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

/// A `Promise` settled by `future`. The future is boxed first, so the promise machinery of
/// `future_to_promise` (task, waker, callbacks) is compiled once for every asynchronous method
/// rather than once per method.
fn future_to_promise(
    future: impl std::future::Future<Output = Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue>> + 'static,
) -> js_sys::Promise {
    let boxed: futures_util::future::LocalBoxFuture<'static, _> = Box::pin(future);
    wasm_bindgen_futures::future_to_promise(boxed)
}
