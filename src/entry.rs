//! A message of the working list, with what is computed once for it: its tokens, whether the
//! host pinned it, its identifiers.
//!
//! The engine's state holds the working list as entries; the rungs read them to plan their
//! edits, and the engine's pass and its satellites copy them forward. Counting or scanning a
//! message again on every pass would make a pass cost the size of the history, so what a
//! message is worth is kept beside it.

use std::rc::Rc;

use crate::identifiers::Found;
use crate::message::Message;

/// A message of the working list with its cached token count.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The message.
    pub msg: Rc<Message>,
    /// Its tokens, counted once.
    pub tokens: u32,
    /// The host pinned it: no step replaces it.
    pub pinned: bool,
    /// Its identifiers, found once ([`crate::identifiers`]); shared by the copies of the entry each pass makes.
    pub(crate) ids: Found,
}

impl Entry {
    /// An unpinned entry.
    pub fn new(msg: Rc<Message>, tokens: u32) -> Entry {
        Entry::with_pin(msg, tokens, false)
    }

    /// An entry, pinned or not.
    pub fn with_pin(msg: Rc<Message>, tokens: u32, pinned: bool) -> Entry {
        Entry { msg, tokens, pinned, ids: Found::default() }
    }
}

impl AsRef<Message> for Entry {
    fn as_ref(&self) -> &Message {
        &self.msg
    }
}
