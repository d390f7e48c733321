//! Reloads without a memory, as JavaScript functions: for request handlers that compressed
//! with the stateless `compress()` and later get the model's `context_reload` call.

use super::future_to_promise;
use js_sys::Promise;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert;
use super::error::{js_field_error, to_js};
use super::host::JsStore;
use crate::engine::offload::OffloadRecord;
use crate::error::ErrorCode;
use crate::format::Format;
use crate::options::Config;

/// What the options of a standalone reload say: the format (when named), the page size, and
/// the offload records when the host kept them.
struct Options {
    format: Option<Format>,
    limit: usize,
    offloads: Option<Vec<OffloadRecord>>,
}

/// Reads the options: the engine's own options (the ones `compress()` took; only `format`,
/// `toolResultLimit` and `offloadReloadLimit` matter here) plus `offloads`, the records
/// `compress()` returned.
fn options(options_json: &str) -> Result<Options, JsValue> {
    let mut value = convert::parse(options_json, ErrorCode::InvalidConfig, "options")?;
    let offloads = match value.as_object_mut().and_then(|o| o.remove("offloads")) {
        None | Some(Value::Null) => None,
        list => Some(crate::fields::list::<OffloadRecord>(list.as_ref(), "offloads").map_err(|e| {
            js_field_error(
                ErrorCode::InvalidArgument,
                "offloads",
                format!("`offloads` must be the offload records compress() returned ({e})"),
            )
        })?),
    };
    let named = value.get("format").is_some_and(|f| !f.is_null());
    let config = Config::from_json(&value).map_err(to_js)?;
    Ok(Options { format: named.then_some(config.format), limit: config.offload_reload_limit as usize, offloads })
}

/// The original messages of an offload, from the store alone; resolves to JSON text of an
/// array of wire messages.
#[wasm_bindgen(js_name = reloadOffload, unchecked_return_type = "Promise<string>")]
pub fn reload_offload(store: JsStore, session_id: String, uuid: String, options_json: &str) -> Promise {
    let options = options(options_json);
    future_to_promise(async move {
        let o = options?;
        let messages = crate::engine::reload::reload(&store, &session_id, &uuid, o.format, o.offloads.as_deref()).await.map_err(to_js)?;
        Ok(JsValue::from_str(&crate::json::array_to_string(&messages)))
    })
}

/// Executes a `context_reload` call (JSON text of the call or its arguments) from the store
/// alone; resolves to the text to send back as the tool's result.
#[wasm_bindgen(js_name = handleReloadCallIn, unchecked_return_type = "Promise<string>")]
pub fn handle_reload_call_in(store: JsStore, session_id: String, call_json: &str, options_json: &str) -> Promise {
    let options = options(options_json);
    let call = convert::parse(call_json, ErrorCode::InvalidArgument, "reload call arguments");
    future_to_promise(async move {
        let (o, call) = (options?, call?);
        let format = o.format.unwrap_or_default();
        let text =
            crate::engine::reload::handle_call(&store, &session_id, &call, format, o.limit, o.offloads.as_deref()).await.map_err(to_js)?;
        Ok(JsValue::from_str(&text))
    })
}
