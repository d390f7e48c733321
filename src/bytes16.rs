//! Sixteen bytes of a text compared at once: the one place the engine uses SIMD instructions.
//!
//! The identifier scan and the JSON writer spend most of their time on stretches of bytes that
//! need nothing done: words that cannot be identifiers, a string with nothing to escape. Where
//! the package runs, a byte at a time (or eight, in a `u64`) costs more than sixteen in one
//! 128-bit register; so the two ask this module about sixteen bytes at once. [`Lanes`] holds
//! sixteen of them; a comparison gives a lane per byte, and [`Lanes::bits`] a bit per byte
//! (the first byte the lowest bit), which the callers read with `trailing_zeros`.
//!
//! - WebAssembly with `simd128` (the package's builds enable it: every runtime the package
//!   supports has it): its 128-bit instructions.
//! - x86_64 (native builds, tests and benchmarks): SSE2, part of every x86_64 processor.
//! - Anywhere else: [`ENABLED`] is false, and the callers keep their walks of a byte (the scan)
//!   or eight (the writer) at a time: the same answers, which a test of each caller compares.
//!
//! The `unsafe` is the load (sixteen bytes an array reference holds, read unaligned, as both
//! instruction sets allow) and, on x86_64, SSE2's comparisons, which older compilers require to
//! be called in `unsafe` (SSE2 is always there, so they have no condition to meet).

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod imp {
    use core::arch::wasm32::*;

    pub(crate) const ENABLED: bool = true;

    /// Sixteen bytes, or sixteen lanes of a comparison (each all ones or all zeros).
    #[derive(Clone, Copy)]
    pub(crate) struct Lanes(v128);

    impl Lanes {
        #[inline(always)]
        pub(crate) fn load(b: &[u8; 16]) -> Lanes {
            // SAFETY: `b` is sixteen readable bytes; `v128_load` has no alignment requirement.
            Lanes(unsafe { v128_load(b.as_ptr().cast()) })
        }

        /// The lanes whose byte is `c`.
        #[inline(always)]
        pub(crate) fn eq(self, c: u8) -> Lanes {
            Lanes(i8x16_eq(self.0, u8x16_splat(c)))
        }

        /// The lanes whose byte is in `lo..=hi`.
        #[inline(always)]
        pub(crate) fn within(self, lo: u8, hi: u8) -> Lanes {
            Lanes(u8x16_le(i8x16_sub(self.0, u8x16_splat(lo)), u8x16_splat(hi.wrapping_sub(lo))))
        }

        /// The lanes whose byte is below `c`.
        #[inline(always)]
        pub(crate) fn below(self, c: u8) -> Lanes {
            Lanes(u8x16_lt(self.0, u8x16_splat(c)))
        }

        #[inline(always)]
        pub(crate) fn or(self, other: Lanes) -> Lanes {
            Lanes(v128_or(self.0, other.0))
        }

        /// A bit per lane that is set, the first byte's the lowest.
        #[inline(always)]
        pub(crate) fn bits(self) -> u32 {
            u32::from(i8x16_bitmask(self.0))
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use core::arch::x86_64::*;

    pub(crate) const ENABLED: bool = true;

    /// Sixteen bytes, or sixteen lanes of a comparison (each all ones or all zeros).
    #[derive(Clone, Copy)]
    pub(crate) struct Lanes(__m128i);

    // SSE2 is part of x86_64: its intrinsics have no condition to meet. Compilers before 1.87
    // require `unsafe` to call them; later ones find that `unsafe` unused.
    #[allow(unused_unsafe)]
    impl Lanes {
        #[inline(always)]
        pub(crate) fn load(b: &[u8; 16]) -> Lanes {
            // SAFETY: `b` is sixteen readable bytes; `loadu` has no alignment requirement.
            Lanes(unsafe { _mm_loadu_si128(b.as_ptr().cast()) })
        }

        #[inline(always)]
        fn splat(c: u8) -> __m128i {
            unsafe { _mm_set1_epi8(c as i8) }
        }

        /// The lanes whose byte is `c`.
        #[inline(always)]
        pub(crate) fn eq(self, c: u8) -> Lanes {
            Lanes(unsafe { _mm_cmpeq_epi8(self.0, Self::splat(c)) })
        }

        /// The lanes whose byte is at most `c` (SSE2 compares bytes as unsigned only by `min`).
        #[inline(always)]
        fn at_most(x: __m128i, c: u8) -> __m128i {
            unsafe { _mm_cmpeq_epi8(_mm_min_epu8(x, Self::splat(c)), x) }
        }

        /// The lanes whose byte is in `lo..=hi`.
        #[inline(always)]
        pub(crate) fn within(self, lo: u8, hi: u8) -> Lanes {
            Lanes(Self::at_most(unsafe { _mm_sub_epi8(self.0, Self::splat(lo)) }, hi.wrapping_sub(lo)))
        }

        /// The lanes whose byte is below `c` (`c` > 0).
        #[inline(always)]
        pub(crate) fn below(self, c: u8) -> Lanes {
            Lanes(Self::at_most(self.0, c - 1))
        }

        #[inline(always)]
        pub(crate) fn or(self, other: Lanes) -> Lanes {
            Lanes(unsafe { _mm_or_si128(self.0, other.0) })
        }

        /// A bit per lane that is set, the first byte's the lowest.
        #[inline(always)]
        pub(crate) fn bits(self) -> u32 {
            unsafe { _mm_movemask_epi8(self.0) as u32 }
        }
    }
}

/// Neither: the same operations a byte at a time, never called while [`ENABLED`] is false (they
/// keep the callers' sixteen-byte walks compiling, and the callers' tests meaningful).
#[cfg(not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128"))))]
mod imp {
    pub(crate) const ENABLED: bool = false;

    #[derive(Clone, Copy)]
    pub(crate) struct Lanes([bool; 16], [u8; 16]);

    impl Lanes {
        pub(crate) fn load(b: &[u8; 16]) -> Lanes {
            Lanes([false; 16], *b)
        }

        fn map(self, f: impl Fn(u8) -> bool) -> Lanes {
            Lanes(self.1.map(f), self.1)
        }

        pub(crate) fn eq(self, c: u8) -> Lanes {
            self.map(|x| x == c)
        }

        pub(crate) fn within(self, lo: u8, hi: u8) -> Lanes {
            self.map(|x| (lo..=hi).contains(&x))
        }

        pub(crate) fn below(self, c: u8) -> Lanes {
            self.map(|x| x < c)
        }

        pub(crate) fn or(self, other: Lanes) -> Lanes {
            Lanes(std::array::from_fn(|k| self.0[k] || other.0[k]), self.1)
        }

        pub(crate) fn bits(self) -> u32 {
            self.0.iter().rev().fold(0, |acc, &set| acc << 1 | u32::from(set))
        }
    }
}

pub(crate) use imp::{Lanes, ENABLED};

/// The sixteen bytes of `b` from `i`, when it has that many.
#[inline(always)]
pub(crate) fn at(b: &[u8], i: usize) -> Option<&[u8; 16]> {
    b.get(i..i + 16).and_then(|s| s.try_into().ok())
}

/// Where the first byte of `b` in `lo..=hi` is, from `from` on: sixteen bytes at a time, then
/// (or without SIMD) one at a time. Its caller is the binding's ASCII pass (`src/wasm`), which
/// native builds leave out; the tests below check it natively.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn find_within(b: &[u8], from: usize, lo: u8, hi: u8) -> Option<usize> {
    let mut i = from;
    if ENABLED {
        while let Some(block) = at(b, i) {
            let found = Lanes::load(block).within(lo, hi).bits();
            if found != 0 {
                return Some(i + found.trailing_zeros() as usize);
            }
            i += 16;
        }
    }
    b[i..].iter().position(|x| (lo..=hi).contains(x)).map(|p| i + p)
}

/// How many bytes of `b` are in `lo..=hi`: sixteen at a time, then (or without SIMD) one at a
/// time.
pub(crate) fn count_within(b: &[u8], lo: u8, hi: u8) -> usize {
    let mut n = 0;
    let mut i = 0;
    if ENABLED {
        while let Some(block) = at(b, i) {
            n += Lanes::load(block).within(lo, hi).bits().count_ones() as usize;
            i += 16;
        }
    }
    n + b[i..].iter().filter(|x| (lo..=hi).contains(*x)).count()
}

/// Texts that test a caller's sixteen-byte walk against its byte-at-a-time one.
#[cfg(test)]
pub(crate) mod texts {
    /// Every string of every trace of the shared corpus (none when there is no corpus).
    pub(crate) fn corpus() -> Vec<String> {
        fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::String(s) => out.push(s.clone()),
                serde_json::Value::Array(items) => items.iter().for_each(|x| strings(x, out)),
                serde_json::Value::Object(map) => map.iter().for_each(|(k, x)| {
                    out.push(k.clone());
                    strings(x, out)
                }),
                _ => {}
            }
        }
        let dir = match std::env::var_os("AUTOCONTEXT_CORPUS") {
            Some(p) => std::path::PathBuf::from(p),
            None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
        };
        let mut out = Vec::new();
        for path in std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()) {
            if let Some(v) = std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()) {
                strings(&v, &mut out);
            }
        }
        out
    }

    /// Strings made to land every kind of byte at every offset of a block: pieces of runs,
    /// separators, escapes, backslashes, quotes, control characters and characters of two, three
    /// and four bytes, after every length of plain run, and in pseudo-random sequences.
    pub(crate) fn adversarial() -> Vec<String> {
        const PIECES: [&str; 44] = [
            "a",
            "Z",
            "7",
            "_",
            ".",
            "/",
            "-",
            ":",
            "~",
            "@",
            "#",
            " ",
            "\\",
            "\\n",
            "\\\\n",
            "\\u00e9",
            "\\x",
            "\"",
            "'",
            "\n",
            "\t",
            "\u{1}",
            "\u{1f}",
            "\u{7f}",
            "é",
            "€",
            "😀",
            "—",
            "→",
            "─",
            "ↀ",
            "⁰",
            "⏿",
            "€→",
            "Ω",
            "C:\\",
            "\\\\nas",
            "https://",
            "E0425",
            "getUserName",
            "Word",
            "HTTPServer",
            "HttpServer",
            "1234",
        ];
        let mut out = Vec::new();
        for piece in PIECES {
            for before in 0..34 {
                for after in ["", "x", "abc_def/ghi", "é", "\\n"] {
                    out.push(format!("{}{piece}{after}{}", "k".repeat(before), "m".repeat(before % 7)));
                    out.push(format!("{}{piece}{after}", " ".repeat(before)));
                }
            }
        }
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut s = String::new();
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            for _ in 0..(seed >> 58) + 1 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let piece = PIECES[(seed >> 33) as usize % PIECES.len()];
                s.push_str(&piece.repeat(1 + (seed >> 60) as usize % 3));
            }
            out.push(s);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_comparison_gives_a_bit_per_byte_in_order() {
        // Every byte value in every lane, against bounds at the edges of signed and unsigned.
        for start in (0..256).step_by(16) {
            let b: [u8; 16] = std::array::from_fn(|k| (start + k) as u8);
            let bits = |f: &dyn Fn(u8) -> bool| b.iter().enumerate().fold(0u32, |acc, (k, &x)| acc | u32::from(f(x)) << k);
            let v = Lanes::load(&b);
            for c in [0u8, 1, 0x1f, 0x20, b'"', b'\\', 0x7f, 0x80, 0x81, 0xc0, 0xfe, 0xff] {
                assert_eq!(v.eq(c).bits(), bits(&|x| x == c));
                if c > 0 {
                    assert_eq!(v.below(c).bits(), bits(&|x| x < c));
                }
            }
            for (lo, hi) in [(b'a', b'z'), (b'0', b'9'), (0, 0x1f), (0x70, 0x90), (0x80, 0xff), (b'-', b'.')] {
                assert_eq!(v.within(lo, hi).bits(), bits(&|x| (lo..=hi).contains(&x)));
                assert_eq!(v.within(lo, hi).or(v.eq(b'#')).bits(), bits(&|x| (lo..=hi).contains(&x) || x == b'#'));
            }
        }
        assert!(at(b"0123456789abcdef", 0).is_some() && at(b"0123456789abcdef", 1).is_none());
    }

    #[test]
    fn finding_and_counting_a_range_agree_with_a_byte_at_a_time() {
        for text in texts::adversarial().iter().chain(&texts::corpus()) {
            let b = text.as_bytes();
            for (lo, hi) in [(0x80, 0xff), (0x80, 0xbf), (b'\\', b'\\'), (0, 0x1f)] {
                let inside = |x: &u8| (lo..=hi).contains(x);
                assert_eq!(count_within(b, lo, hi), b.iter().filter(|x| inside(x)).count(), "{text:?}");
                for from in [0, 1, 15, 16, 17, b.len() / 2, b.len()].into_iter().filter(|&f| f <= b.len()) {
                    let want = b[from..].iter().position(inside).map(|p| from + p);
                    assert_eq!(find_within(b, from, lo, hi), want, "{text:?} from {from}");
                }
            }
        }
    }
}
