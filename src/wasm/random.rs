//! The seed of the engine's ids ([`crate::random`]), drawn from the host's
//! `crypto.getRandomValues` before the first engine is made.
//!
//! Drawn here rather than where the first id is made, because here a refusal can be reported:
//! a Cloudflare Worker gives no random values in its global scope (a memory made there would
//! make the same ids in every isolate started from it), and a draw refused in the core could
//! only abort the module with `unreachable`. Here it is an `UNAVAILABLE` error whose `cause`
//! is what the runtime threw, and the same memory made in a request handler works.

use wasm_bindgen::prelude::*;

use super::error::to_js;
use crate::error::{Error, ErrorCode};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues, catch)]
    fn get_random_values(bytes: &mut [u8]) -> Result<(), JsValue>;
}

/// Draws the seed unless it is drawn already; the error when the host refuses.
pub(crate) fn ensure_seed() -> Result<(), JsValue> {
    if crate::random::seeded() {
        return Ok(());
    }
    let mut bytes = [0u8; 16];
    if let Err(thrown) = get_random_values(&mut bytes) {
        let message = "a memory needs random values for its ids, and this runtime gave none (in a Cloudflare Worker, make the \
                       memory inside a request handler, not in the global scope); crypto.getRandomValues threw";
        return Err(to_js(Error::host(ErrorCode::Unavailable, message, super::error::host_error(thrown))));
    }
    crate::random::seed(u128::from_le_bytes(bytes));
    Ok(())
}
