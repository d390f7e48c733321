//! Messages' JSON text as a pass just wrote it, for the log's flush that follows.
//!
//! A pass offloads the originals it replaces, each offload's payload holding their text; the
//! flush after the pass then writes the log's tail, which holds those same originals (the
//! working list's message and the log's are one shared value, [`crate::message::Wire`]). Both
//! wrote every message with the same writer, so a large pass wrote most of the conversation's
//! text twice: a tenth of a pass over a long trace in WebAssembly went to writing the log's
//! chunks. The pass keeps its payloads here with where each message lies in them, and the flush
//! copies a message's text instead of writing it again: the same bytes, since they came from
//! the same writer and the value cannot change (it is shared, never written to).
//!
//! A message is known by its value's address; the memo holds each value it names, so that no
//! address is reused while it stands. It lives from a pass's offloads to the flush after the
//! pass, which takes it (a failed pass's memo is dropped there too).

use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

use serde_json::Value;

/// The texts of the messages a pass wrote into its payloads.
#[derive(Default)]
pub(crate) struct Texts {
    /// The payloads, as written.
    bodies: Vec<String>,
    /// Per message value (by address): its payload and where its text lies there.
    spans: HashMap<*const Value, (usize, Range<usize>)>,
    /// The values named in `spans`, held so that their addresses stay theirs.
    held: Vec<Rc<Value>>,
}

impl Texts {
    /// Keeps `body`, a payload whose message `values[k]` is the text at `spans[k]`.
    pub fn keep(&mut self, body: String, values: impl IntoIterator<Item = Rc<Value>>, spans: impl IntoIterator<Item = Range<usize>>) {
        let at = self.bodies.len();
        for (v, span) in values.into_iter().zip(spans) {
            debug_assert!(body.get(span.clone()).is_some(), "a span on the payload's character boundaries");
            self.spans.insert(Rc::as_ptr(&v), (at, span));
            self.held.push(v);
        }
        self.bodies.push(body);
    }

    /// The text written for `v`, when a payload holds it.
    pub fn of(&self, v: &Rc<Value>) -> Option<&str> {
        let (body, span) = self.spans.get(&Rc::as_ptr(v))?;
        Some(&self.bodies[*body][span.clone()])
    }
}

/// Writes `v` as JSON text to `out`: the text `texts` holds of it, else written anew.
pub(crate) fn write(out: &mut String, texts: &Texts, v: &Rc<Value>) {
    match texts.of(v) {
        Some(text) => out.push_str(text),
        None => crate::json::write(out, v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_kept_text_is_found_by_its_value_and_an_equal_value_writes_anew() {
        let v = Rc::new(json!({"role": "user", "content": "a \"quoted\"\nline"}));
        let twin = Rc::new((*v).clone());
        let mut body = String::from("{\"messages\":[");
        let start = body.len();
        crate::json::write(&mut body, &v);
        let span = start..body.len();
        body.push_str("]}");
        let mut texts = Texts::default();
        texts.keep(body, [Rc::clone(&v)], std::iter::once(span));
        assert_eq!(texts.of(&v), Some(r#"{"role":"user","content":"a \"quoted\"\nline"}"#));
        assert_eq!(texts.of(&twin), None, "known by address, not by value");
        let (mut a, mut b) = (String::new(), String::new());
        write(&mut a, &texts, &v);
        write(&mut b, &texts, &twin);
        assert_eq!(a, b, "the kept text is the writer's text");
    }
}
