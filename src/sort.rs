//! The engine's one sort: stable, by a number.
//!
//! Every `sort_by_key` on a type of its own is a copy of the standard library's sort in the
//! WebAssembly module (a few kilobytes each, about 80 KB for a dozen callers in the default
//! build), though each sorts a handful of items outside any hot loop. Here every caller sorts
//! the same thing instead, the pairs of a key and a position, and moves its items into that
//! order: one copy of the sort for the whole engine.

/// Sorts `items` by `key`, ascending; items with equal keys keep their order.
///
/// A caller that sorts by two fields packs them into the key with [`pair`], the first high;
/// one that sorts descending negates it (`!k`), which keeps equal keys in order as well.
pub(crate) fn by_key<T>(items: &mut Vec<T>, key: impl Fn(&T) -> u128) {
    if items.len() < 2 {
        return;
    }
    let mut keyed: Vec<(u128, usize)> = items.iter().enumerate().map(|(i, t)| (key(t), i)).collect();
    // Keys paired with distinct positions are distinct: the unstable sort is stable here.
    keyed.sort_unstable();
    let mut old: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(keyed.into_iter().filter_map(|(_, i)| old[i].take()));
}

/// Two fields as one key, `high` first.
pub(crate) fn pair(high: u64, low: u64) -> u128 {
    (high as u128) << 64 | low as u128
}

/// A float as a key in the same order as [`f64::total_cmp`].
pub(crate) fn float_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_by_key_like_the_standard_sort() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        for len in [0usize, 1, 2, 3, 17, 200] {
            let items: Vec<(u8, usize)> = (0..len)
                .map(|i| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    ((rng % 5) as u8, i)
                })
                .collect();
            let mut ours = items.clone();
            by_key(&mut ours, |t| t.0 as u128);
            let mut std = items.clone();
            std.sort_by_key(|t| t.0);
            assert_eq!(ours, std, "{len} items");
            let mut down = items.clone();
            by_key(&mut down, |t| !(t.0 as u128));
            let mut std_down = items;
            std_down.sort_by_key(|t| std::cmp::Reverse(t.0));
            assert_eq!(down, std_down, "{len} items, descending");
        }
    }

    #[test]
    fn floats_in_total_order() {
        let xs = [f64::NEG_INFINITY, -2.5, -1e-300, -0.0, 0.0, 1e-300, 1.0, 2.5, f64::INFINITY];
        for w in xs.windows(2) {
            assert!(float_key(w[0]) < float_key(w[1]), "{} < {}", w[0], w[1]);
        }
    }
}
