//! The host's JavaScript objects adapted to the core's traits.
//!
//! The store is duck-typed: any object with `get`, `put` and `delete` methods, sync or async
//! (every return value is awaited through `Promise.resolve`). The summarize function receives
//! the request as JSON text and resolves to JSON text (the TypeScript wrapper adapts the user's
//! function to that). The token counter is a synchronous `(text) => number`. Whatever a host
//! function throws or rejects with becomes the payload of a [`HostError`], so it reaches the
//! caller unchanged as the `cause` of the final error.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::error::{describe, host_error, js_field_error};
use crate::error::{ErrorCode, HostError};
use crate::host::{Clock, OffloadStore, SummarizeRequest, Summarizer, Summary};
use crate::tokens::TextCounter;

#[wasm_bindgen(typescript_custom_section)]
const HOST_TS: &str = r#"
/** An offload store as the binding calls it; each method may return a value or a Promise. */
export interface WasmStore {
  get(key: string): string | Uint8Array | null | undefined | Promise<string | Uint8Array | null | undefined>;
  /**
   * `value` is the UTF-8 text to store, as a view of the engine's memory: valid only during the
   * call (copy or decode it before returning).
   */
  put(key: string, value: Uint8Array): unknown;
  delete(key: string): unknown;
}
/** What the binding needs from the host. */
export interface WasmHost {
  store: WasmStore;
  /** Receives a SummarizeRequest as JSON text; resolves to JSON `{text, inputTokens?, outputTokens?}`. */
  summarize?: (requestJson: string) => string | Promise<string>;
  /** Counts tokens for `tokenizer: "custom"`. */
  countTokens?: (text: string) => number;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// The host object: `{ store, summarize?, countTokens? }`.
    #[wasm_bindgen(typescript_type = "WasmHost")]
    pub type JsHost;

    /// A duck-typed offload store.
    #[wasm_bindgen(typescript_type = "WasmStore")]
    pub type JsStore;

    #[wasm_bindgen(method, catch, structural, js_name = get)]
    fn js_get(this: &JsStore, key: &str) -> Result<JsValue, JsValue>;

    // The value as bytes: a string argument would be decoded from UTF-8 into a JavaScript
    // string on every put (a fifth of a pass's time in Node), which a store that writes bytes
    // does not need.
    #[wasm_bindgen(method, catch, structural, js_name = put)]
    fn js_put(this: &JsStore, key: &str, value: &[u8]) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(method, catch, structural, js_name = delete)]
    fn js_delete(this: &JsStore, key: &str) -> Result<JsValue, JsValue>;
}

/// The host's pieces, checked.
pub(crate) struct HostParts {
    pub store: JsStore,
    pub summarizer: Option<JsSummarizer>,
    pub counter: Option<JsCounter>,
}

impl HostParts {
    /// Reads and checks the host object (`store` must have the three methods; the functions
    /// are optional).
    pub fn read(host: &JsHost) -> Result<HostParts, JsValue> {
        let host: &JsValue = host.as_ref();
        if !host.is_object() {
            return Err(js_field_error(
                ErrorCode::InvalidConfig,
                "store",
                format!("the host must be an object with a store, got {}", describe(host)),
            ));
        }
        let store = prop(host, "store")?;
        for method in ["get", "put", "delete"] {
            let f = if store.is_object() { prop(&store, method)? } else { JsValue::UNDEFINED };
            if !f.is_function() {
                return Err(js_field_error(
                    ErrorCode::InvalidConfig,
                    "store",
                    format!("option `store` must be an object with get, put and delete methods; its `{method}` is {}", describe(&f)),
                ));
            }
        }
        Ok(HostParts {
            store: store.unchecked_into(),
            summarizer: optional_fn(host, "summarize", "summarize")?.map(JsSummarizer),
            counter: optional_fn(host, "countTokens", "tokenizer")?.map(JsCounter),
        })
    }
}

fn prop(target: &JsValue, key: &str) -> Result<JsValue, JsValue> {
    // A throwing getter is the host's fault; report it as a configuration error.
    Reflect::get(target, &JsValue::from_str(key)).map_err(|e| {
        let err = js_field_error(ErrorCode::InvalidConfig, key, format!("reading `{key}` of the host threw"));
        let _ = Reflect::set(&err, &JsValue::from_str("cause"), &e);
        err
    })
}

fn optional_fn(host: &JsValue, key: &str, option: &str) -> Result<Option<Function>, JsValue> {
    let v = prop(host, key)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.dyn_into::<Function>().map(Some).map_err(|v| {
        js_field_error(ErrorCode::InvalidConfig, option, format!("option `{option}` must be a function, got {}", describe(&v)))
    })
}

/// Awaits what a host call returned (a value or a Promise); a throw or a rejection becomes a
/// host error carrying the thrown value.
async fn settle(returned: Result<JsValue, JsValue>) -> Result<JsValue, HostError> {
    let value = returned.map_err(host_error)?;
    JsFuture::from(Promise::resolve(&value)).await.map_err(host_error)
}

impl OffloadStore for JsStore {
    async fn get(&self, key: &str) -> Result<Option<String>, HostError> {
        let v = settle(self.js_get(key)).await?;
        if v.is_null() || v.is_undefined() {
            return Ok(None);
        }
        if let Some(text) = v.as_string() {
            return Ok(Some(text));
        }
        match v.dyn_ref::<js_sys::Uint8Array>() {
            Some(bytes) => String::from_utf8(bytes.to_vec())
                .map(Some)
                .map_err(|_| HostError::new("store.get resolved to a Uint8Array that is not UTF-8 text")),
            None => {
                Err(HostError::new(format!("store.get must resolve to a string, a Uint8Array, null or undefined, got {}", describe(&v))))
            }
        }
    }

    async fn put(&self, key: &str, value: &str) -> Result<(), HostError> {
        settle(self.js_put(key, value.as_bytes())).await.map(drop)
    }

    async fn delete(&self, key: &str) -> Result<(), HostError> {
        settle(self.js_delete(key)).await.map(drop)
    }
}

/// The summarize adapter: called with the request as JSON text, resolves to JSON text.
pub(crate) struct JsSummarizer(Function);

impl Summarizer for JsSummarizer {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        let text = super::convert::to_text(request);
        let v = settle(self.0.call1(&JsValue::UNDEFINED, &JsValue::from_str(&text))).await?;
        let json = v.as_string().ok_or_else(|| HostError::new(format!("summarize must resolve to JSON text, got {}", describe(&v))))?;
        super::convert::summary(&json)
    }
}

/// The host's synchronous token counter.
pub(crate) struct JsCounter(Function);

impl TextCounter for JsCounter {
    fn count(&self, text: &str) -> Result<u32, HostError> {
        let v = self.0.call1(&JsValue::UNDEFINED, &JsValue::from_str(text)).map_err(host_error)?;
        match v.as_f64() {
            Some(n) if n.is_finite() && n >= 0.0 => Ok(n.ceil().min(u32::MAX as f64) as u32),
            _ => Err(HostError::new(format!(
                "the tokenizer function must return a finite, non-negative number synchronously, got {}",
                describe(&v)
            ))),
        }
    }
}

/// The JavaScript clock (`Date.now()`).
pub(crate) struct JsClock;

impl Clock for JsClock {
    fn now_ms(&self) -> f64 {
        js_sys::Date::now()
    }
}
