//! Core errors as JavaScript errors, and JavaScript exceptions as host errors.
//!
//! A core [`Error`] becomes a `js_sys::Error` named `AutoContextError` carrying `code`, and
//! `index` / `field` when the core located the fault. When the host failed, the value the host
//! threw travelled through the core as the opaque payload of a [`HostError`]; it comes back out
//! here as `cause`, the very same object.

use js_sys::{Array, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::error::{Error, ErrorCode, HostError};

/// The `name` of every error the binding throws.
pub(crate) const ERROR_NAME: &str = "AutoContextError";

/// Converts a core error into the JavaScript error thrown to the host.
pub(crate) fn to_js(mut e: Error) -> JsValue {
    let err = js_sys::Error::new(e.message());
    err.set_name(ERROR_NAME);
    set(&err, "code", &JsValue::from_str(e.code().as_str()));
    if let Some(i) = e.index() {
        set(&err, "index", &JsValue::from_f64(i as f64));
    }
    if let Some(f) = e.field() {
        set(&err, "field", &JsValue::from_str(f));
    }
    let payload = e.cause_mut().and_then(HostError::take_payload);
    if let Some(Ok(cause)) = payload.map(|p| p.downcast::<JsValue>()) {
        set(&err, "cause", &cause);
    }
    err.into()
}

/// A JavaScript error with a code and a message, for faults the binding itself detects.
pub(crate) fn js_error(code: ErrorCode, message: impl Into<String>) -> JsValue {
    to_js(Error::new(code, message))
}

/// The same, naming the offending field or option.
pub(crate) fn js_field_error(code: ErrorCode, field: &str, message: impl Into<String>) -> JsValue {
    let message = message.into();
    let err = to_js(Error::new(code, message));
    set(&err, "field", &JsValue::from_str(field));
    err
}

/// What the host threw, kept whole as the payload of a host error.
pub(crate) fn host_error(thrown: JsValue) -> HostError {
    let message = describe_thrown(&thrown);
    HostError::with_payload(message, Box::new(thrown))
}

/// A short text for a thrown value: an error's message, a string itself, or its type.
fn describe_thrown(v: &JsValue) -> String {
    if let Some(e) = v.dyn_ref::<js_sys::Error>() {
        let m: String = e.message().into();
        return if m.is_empty() { String::from(e.name()) } else { m };
    }
    if let Some(s) = v.as_string() {
        return s;
    }
    format!("threw {}", describe(v))
}

/// The JavaScript type of a value, for messages (`a number`, `null`, `an object`, ...).
pub(crate) fn describe(v: &JsValue) -> String {
    if v.is_null() {
        return "null".into();
    }
    if v.is_undefined() {
        return "undefined".into();
    }
    if let Some(n) = v.as_f64() {
        return format!("the number {}", crate::json::Num(n));
    }
    if let Some(b) = v.as_bool() {
        return format!("the boolean {b}");
    }
    if v.is_string() {
        return "a string".into();
    }
    if v.is_instance_of::<js_sys::Promise>() {
        return "a Promise".into();
    }
    if Array::is_array(v) {
        return "an array".into();
    }
    if v.is_function() {
        return "a function".into();
    }
    match v.js_typeof().as_string().as_deref() {
        Some("object") => "an object".into(),
        Some(t) => format!("a {t}"),
        None => "a value".into(),
    }
}

fn set(target: &JsValue, key: &str, value: &JsValue) {
    // Setting a property on a fresh Error cannot fail; ignore the impossible error.
    let _ = Reflect::set(target, &JsValue::from_str(key), value);
}
