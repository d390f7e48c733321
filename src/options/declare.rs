//! How the table of options becomes code: the `options!` macro.
//!
//! Each row of the table in [`super`] declares one option once: its documentation, its name,
//! its field and type, its default, and what it needs besides what its type gives (see
//! [`super::read::OptionValue`]). From the rows the macro writes the [`super::Config`] struct,
//! its `Default`, the reading of options from JSON (unknown names refused, with a hint), their
//! writing back, the validation, and the table ([`OptionDoc`]s) the TypeScript declarations and the
//! README's options table are generated from (`tests/generated.rs` checks them).
//!
//! A row, its parts in this order, all after the type optional:
//!
//! ```text
//! /// What the option does (first paragraph: the README's line; the whole: the docs).
//! "jsName" rust_name: Type = default_expression,
//!     host "why",                                  (JavaScript takes it with the host's pieces)
//!     shown "how the docs state the default",      (else the default's JSON)
//!     saved always,                                (else saved only when not the default)
//!     used_by "ladder step" if |c| condition,      (refused, and not saved, without that step)
//!     unless_given |c| derivation,                 (adjusts the default from other options)
//!     given |c| check,                             (a check made only when the option is given)
//!     check |c| check;                             (a check of the value, made by `validate`)
//! ```

use std::borrow::Cow;

use serde_json::Value;

/// One option as the documentation shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionDoc {
    /// Its name, as hosts write it.
    pub name: &'static str,
    /// Its TypeScript type.
    pub ts: &'static str,
    /// Its default, as the docs state it.
    pub default: Cow<'static, str>,
    /// What it does: the first paragraph is the README's line, the whole the TypeScript docs.
    pub doc: &'static str,
    /// A host option: JavaScript takes it with the host's pieces (a function, an object); the
    /// engine reads at most its name.
    pub host: bool,
}

/// Writes the options from their rows; see the module docs.
macro_rules! options {
    ($(
        $(#[doc = $doc:literal])*
        $name:literal $field:ident : $ty:ty = $default:expr
        $(, host $host:literal)?
        $(, shown $shown:literal)?
        $(, saved $always:ident)?
        $(, used_by $step:literal if $uses:expr)?
        $(, unless_given $derive:expr)?
        $(, given $given:expr)?
        $(, check $check:expr)?
        ;
    )*) => {
        /// Engine options, one field per option of the table below. Build with
        /// [`Config::default`] and change fields, or read from JSON with [`Config::from_json`];
        /// either way call [`Config::validate`] (the engine does).
        ///
        /// ```
        /// let mut c = autocontext::Config::default();
        /// c.max_token = 32_000;
        /// c.validate().unwrap();
        /// assert_eq!(c.trigger_tokens(), 24_000);
        /// ```
        #[derive(Debug, Clone, PartialEq)]
        pub struct Config {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        /// Runs a row's closure on the options (its type gives the closure's).
        fn with<T>(c: &Config, f: impl FnOnce(&Config) -> T) -> T {
            f(c)
        }

        /// Runs a row's closure that adjusts the options.
        fn with_mut(c: &mut Config, f: impl FnOnce(&mut Config)) {
            f(c)
        }

        impl Default for Config {
            fn default() -> Self {
                Config { $( $field: $default, )* }
            }
        }

        /// The name of every engine option, in the order of the table.
        pub const NAMES: &[&str] = &[$($name),*];

        /// Every engine option as the documentation shows it, in the order of the table.
        pub fn engine_options() -> Vec<OptionDoc> {
            let defaults = Config::default();
            vec![$(
                OptionDoc {
                    name: $name,
                    ts: <$ty as OptionValue>::TS,
                    default: options!(@shown $($shown)? ; defaults.$field.write()),
                    doc: concat!($($doc, "\n"),*),
                    host: options!(@host $($host)?),
                },
            )*]
        }

        impl Config {
            /// Reads every option given (the names were checked), then adjusts the defaults that
            /// follow other options.
            fn read_given(&mut self, obj: &Map<String, Value>) -> Result<()> {
                $(
                    if let Some(v) = obj.get($name) {
                        if let Some(x) = <$ty as OptionValue>::read(v, $name)? {
                            self.$field = x;
                        }
                    }
                )*
                $($(
                    if !obj.contains_key($name) {
                        with_mut(self, $derive);
                    }
                )?)*
                Ok(())
            }

            /// The checks of options made only when they are given: one the ladder would ignore
            /// is refused (a likely mistake: `concepts` without fact retrieval).
            fn check_given(&self, obj: &Map<String, Value>) -> Result<()> {
                $(
                    if obj.get($name).is_some_and(|v| !v.is_null()) {
                        $( with(self, $given)?; )?
                        $(
                            if !with(self, $uses) {
                                return Err(Error::config(
                                    $name,
                                    format!(
                                        "has no effect: the ladder has no {} step (choose a preset with it, or name it in `strategies`)",
                                        $step
                                    ),
                                ));
                            }
                        )?
                    }
                )*
                Ok(())
            }

            /// Checks every value and the relations between them.
            pub fn validate(&self) -> Result<()> {
                $($( with(self, $check)?; )?)*
                Ok(())
            }

            /// The options as JSON, as [`Config::from_json`] reads them: those saved always, and
            /// the others when they are not the default (and the ladder uses them), so a state
            /// restores under the same checks.
            pub fn to_json(&self) -> Value {
                let defaults = Config::default();
                let mut out = Map::new();
                $(
                    let saved = options!(@always $($always)?) || (self.$field != defaults.$field $( && with(self, $uses) )?);
                    if saved {
                        out.insert($name.into(), self.$field.write());
                    }
                )*
                Value::Object(out)
            }
        }
    };
    (@shown $shown:literal ; $value:expr) => { Cow::Borrowed($shown) };
    (@shown ; $value:expr) => { Cow::Owned(shown(&$value)) };
    (@host $why:literal) => { true };
    (@host) => { false };
    (@always always) => { true };
    (@always) => { false };
}

pub(crate) use options;

/// A default as the docs state it: a number or `true` as written, a name quoted, a list empty.
pub fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("`'{s}'`"),
        Value::Array(a) if a.is_empty() => "`[]`".into(),
        Value::Null => "none".into(),
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) && !n.is_u64() => format!("{}", n.as_f64().unwrap_or(0.0) as i64),
        other => other.to_string(),
    }
}
