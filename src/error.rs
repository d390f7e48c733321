//! One error type for the whole crate.
//!
//! JavaScript sees every failure as a real `Error` whose `code` is one of the stable strings of
//! [`ErrorCode`], whose `message` says what was wrong and where (message index, field), and whose
//! `cause` is the host's own error when the host (summarizer, store, tokenizer) failed. The core
//! cannot hold a `JsValue`, so the host's error travels as an opaque [`HostError`] payload that
//! only the binding knows how to open.

use std::any::Any;
use std::fmt;

/// Stable error codes. They are part of the public API: hosts match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// An option is missing, of the wrong type or out of range.
    InvalidConfig,
    /// A message could not be read in the chosen wire format.
    InvalidMessage,
    /// A method argument is malformed (for example a reload uuid).
    InvalidArgument,
    /// A persisted state could not be restored.
    InvalidState,
    /// A reload named an offload this session does not have.
    NotFound,
    /// The offload store failed (get, put or delete).
    StoreFailed,
    /// The host's summarize function failed, timed out or returned something unusable.
    SummarizeFailed,
    /// The host's token counter failed or returned something unusable.
    TokenizerFailed,
    /// A limit of the engine was reached.
    LimitExceeded,
    /// A save named a revision that does not follow the stored one: another writer saved the
    /// session since this state was loaded.
    Conflict,
    /// The runtime refused what the engine needs to start: random values for its ids, which a
    /// Cloudflare Worker's global scope does not give (`cause` is what the runtime threw).
    Unavailable,
}

impl ErrorCode {
    /// Every code, in documentation order.
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::InvalidConfig,
        ErrorCode::InvalidMessage,
        ErrorCode::InvalidArgument,
        ErrorCode::InvalidState,
        ErrorCode::NotFound,
        ErrorCode::StoreFailed,
        ErrorCode::SummarizeFailed,
        ErrorCode::TokenizerFailed,
        ErrorCode::LimitExceeded,
        ErrorCode::Conflict,
        ErrorCode::Unavailable,
    ];

    /// The code as JavaScript sees it in `error.code`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidConfig => "INVALID_CONFIG",
            ErrorCode::InvalidMessage => "INVALID_MESSAGE",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::InvalidState => "INVALID_STATE",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::StoreFailed => "STORE_FAILED",
            ErrorCode::SummarizeFailed => "SUMMARIZE_FAILED",
            ErrorCode::TokenizerFailed => "TOKENIZER_FAILED",
            ErrorCode::LimitExceeded => "LIMIT_EXCEEDED",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::Unavailable => "UNAVAILABLE",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure reported by the host (summarizer, store, token counter).
///
/// `payload` is whatever the host threw, kept opaque so the binding can hand the very same
/// object back to JavaScript as `cause`.
pub struct HostError {
    message: String,
    payload: Option<Box<dyn Any>>,
}

impl HostError {
    /// A host error with a message and no payload (native hosts, tests).
    pub fn new(message: impl Into<String>) -> Self {
        HostError { message: message.into(), payload: None }
    }

    /// A host error carrying the host's own error value.
    pub fn with_payload(message: impl Into<String>, payload: Box<dyn Any>) -> Self {
        HostError { message: message.into(), payload: Some(payload) }
    }

    /// The host's message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Takes the host's own error value out, if there was one.
    pub fn take_payload(&mut self) -> Option<Box<dyn Any>> {
        self.payload.take()
    }
}

impl fmt::Debug for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostError").field("message", &self.message).field("payload", &self.payload.is_some()).finish()
    }
}

/// The crate's error: a stable code, a message that says what and where, optional location
/// (message index and field) and an optional host cause.
pub struct Error {
    code: ErrorCode,
    message: String,
    index: Option<usize>,
    field: Option<String>,
    cause: Option<HostError>,
}

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), index: None, field: None, cause: None }
    }

    pub(crate) fn config(field: &str, message: impl fmt::Display) -> Self {
        Error::new(ErrorCode::InvalidConfig, format!("option `{field}` {message}")).at_field(field)
    }

    pub(crate) fn message_at(index: usize, field: &str, message: impl fmt::Display) -> Self {
        let where_ = if field.is_empty() { format!("message {index}") } else { format!("message {index}, field `{field}`") };
        Error::new(ErrorCode::InvalidMessage, format!("{where_}: {message}")).at_index(index).at_field(field)
    }

    pub(crate) fn host(code: ErrorCode, what: &str, cause: HostError) -> Self {
        let mut e = Error::new(code, format!("{what}: {}", cause.message()));
        e.cause = Some(cause);
        e
    }

    pub(crate) fn at_index(mut self, index: usize) -> Self {
        self.index = Some(index);
        self
    }

    pub(crate) fn at_field(mut self, field: &str) -> Self {
        if !field.is_empty() {
            self.field = Some(field.to_string());
        }
        self
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message, without the code.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Index of the offending message, when one message was at fault.
    pub fn index(&self) -> Option<usize> {
        self.index
    }

    /// Name of the offending field or option, when one was at fault.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The host error behind this one, if any.
    pub fn cause_mut(&mut self) -> Option<&mut HostError> {
        self.cause.as_mut()
    }

    /// Shifts the message index (used when a batch starts at an offset).
    pub(crate) fn offset_index(mut self, by: usize) -> Self {
        if let Some(i) = self.index {
            let shifted = i + by;
            self.message = self.message.replacen(&format!("message {i}"), &format!("message {shifted}"), 1);
            self.index = Some(shifted);
        }
        self
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_listed_once_in_order() {
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(*code as usize, i, "{code}");
        }
        assert_eq!(ErrorCode::Unavailable as usize + 1, ErrorCode::ALL.len(), "the last variant closes the list");
    }
}
