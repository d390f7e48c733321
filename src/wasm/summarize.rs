//! The built-in summarizers as JavaScript functions.

use wasm_bindgen::prelude::*;

use super::convert;
use super::error::to_js;
use crate::error::ErrorCode;
use crate::summarize::{offline_summary, request_from_json};

/// The offline summary of a summarize request (JSON text of the request the engine handed the
/// host: `prompt`, and optionally `kind`, `system`, `messages`, `targetChars`).
#[wasm_bindgen(js_name = offlineSummarize)]
pub fn offline_summarize(request_json: &str) -> Result<String, JsValue> {
    let value = convert::parse(request_json, ErrorCode::InvalidArgument, "summarize request")?;
    let request = request_from_json(&value).map_err(to_js)?;
    Ok(offline_summary(&request))
}
