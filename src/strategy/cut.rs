//! A text cut to its head and tail around a notice and an offload marker: how truncation
//! shortens a tool result, and how the emergency step shortens a user message that alone keeps
//! the request over the window.

use crate::message::{char_count, head_chars, offload_marker, tail_chars};

/// Characters a cut must remove, net of the notice and marker it adds.
pub(crate) const MIN_CUT_CHARS: usize = 300;

/// Whether a tool result of `content` is cut at `limit`: over the limit, and by enough that the
/// cut removes [`MIN_CUT_CHARS`] net (decided on characters, the same on every pass).
pub(crate) fn worth_cutting(content: &str, limit: usize) -> bool {
    // Over the limit: its UTF-8 length settles most contents, and its characters are counted
    // once otherwise.
    if content.len() <= limit {
        return false;
    }
    let total = char_count(content);
    if total <= limit {
        return false;
    }
    // What `shorten` keeps, counted without writing it: the head's and tail's characters (the
    // content is longer than both) and the notice's.
    let (head, tail) = (limit * 6 / 10, limit * 3 / 10);
    let cut = head + tail + notice(total - head - tail, total, "00000000-0000-4000-8000-000000000000").chars().count();
    total >= cut + MIN_CUT_CHARS
}

/// `content` cut to its first and last characters (six and three tenths of `limit`) around a
/// notice of what was omitted and the marker of the offload `uuid`; `content` has more than
/// `limit` characters.
pub(super) fn shorten(content: &str, limit: usize, uuid: &str) -> String {
    cut_at(content, limit, uuid).0
}

/// [`shorten`]'s text, with the length of the head it keeps.
pub(super) fn cut_at(content: &str, limit: usize, uuid: &str) -> (String, usize) {
    let total = char_count(content);
    let (head, tail) = (head_chars(content, limit * 6 / 10), tail_chars(content, limit * 3 / 10));
    // Each has as many characters as asked: the content has more than both together.
    let omitted = total.saturating_sub(limit * 6 / 10 + limit * 3 / 10);
    ([head, &notice(omitted, total, uuid), tail].concat(), head.len())
}

/// The lines `shorten` puts between the head and the tail.
fn notice(omitted: usize, total: usize, uuid: &str) -> String {
    format!(
        "\n[... {omitted} of {total} characters omitted; call context_reload with the uuid below for the full output ...]\n{}\n",
        offload_marker(uuid)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_keeps_head_tail_and_marker() {
        let s: String = (0..1000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let out = shorten(&s, 200, "u-1");
        assert!(out.starts_with(&s[..120]));
        assert!(out.ends_with(&s[1000 - 60..]));
        assert!(out.contains("820 of 1000 characters omitted"));
        assert!(out.contains("<!-- CONTEXT_OFFLOAD: uuid=u-1 -->"));
    }
}
