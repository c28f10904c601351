//! A latency histogram shaped exactly as the HDR histogram Redis 7.0 keeps per command (lowest
//! value 1 ns, highest 1 s, 2 significant digits: 23 buckets of 128 sub-buckets), so that
//! `LATENCY HISTOGRAM`'s buckets and INFO latencystats' percentiles print the same numbers
//! Redis prints for the same samples. Values are nanoseconds. Knows nothing of commands.

/// Redis's `LATENCY_HISTOGRAM_MIN_VALUE` / `MAX_VALUE`, in nanoseconds.
const LOWEST: u64 = 1;
const HIGHEST: u64 = 1_000_000_000;
/// `sub_bucket_half_count_magnitude` for 2 significant digits (256 sub-buckets).
const HALF_MAGNITUDE: u32 = 7;
const HALF_COUNT: usize = 1 << HALF_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (2 * HALF_COUNT as u64) - 1;
/// 256 << 22 is the first power of two above 1 s: 23 buckets, `(23 + 1) * 128` counts.
const BUCKETS: usize = 23;
const COUNTS: usize = (BUCKETS + 1) * HALF_COUNT;

/// Counts of recorded values, by HDR index.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Box<[u64]>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; COUNTS].into_boxed_slice(),
            total: 0,
        }
    }
}

fn bucket_index(v: u64) -> u32 {
    let pow2ceiling = 64 - (v | SUB_BUCKET_MASK).leading_zeros();
    pow2ceiling - (HALF_MAGNITUDE + 1)
}

fn counts_index(v: u64) -> usize {
    let bucket = bucket_index(v);
    let sub = (v >> bucket) as usize;
    ((bucket as usize + 1) << HALF_MAGNITUDE) + sub - HALF_COUNT
}

fn value_at_index(index: usize) -> u64 {
    let mut bucket = (index >> HALF_MAGNITUDE) as i64 - 1;
    let mut sub = (index & (HALF_COUNT - 1)) + HALF_COUNT;
    if bucket < 0 {
        sub -= HALF_COUNT;
        bucket = 0;
    }
    (sub as u64) << bucket
}

fn lowest_equivalent(v: u64) -> u64 {
    let bucket = bucket_index(v);
    (v >> bucket) << bucket
}

fn highest_equivalent(v: u64) -> u64 {
    let bucket = bucket_index(v);
    let sub = v >> bucket;
    let adjusted = if sub >= 2 * HALF_COUNT as u64 {
        bucket + 1
    } else {
        bucket
    };
    lowest_equivalent(v) + (1u64 << adjusted) - 1
}

impl Histogram {
    /// Records one value, clamped to the tracked range as Redis's
    /// `updateCommandLatencyHistogram` clamps it.
    pub fn record(&mut self, ns: u64) {
        let v = ns.clamp(LOWEST, HIGHEST);
        self.counts[counts_index(v)] += 1;
        self.total += 1;
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
    }

    /// Values recorded.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// `hdr_value_at_percentile`: the highest value equivalent to the one at percentile `p`.
    pub fn value_at_percentile(&self, p: f64) -> u64 {
        let requested = p.min(100.0);
        let at = ((requested / 100.0) * self.total as f64 + 0.5) as u64;
        let at = at.max(1);
        let mut seen = 0;
        let mut value = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= at {
                value = value_at_index(i);
                break;
            }
        }
        if p == 0.0 {
            lowest_equivalent(value)
        } else {
            highest_equivalent(value)
        }
    }

    /// The `histogram_usec` pairs of LATENCY HISTOGRAM: Redis walks the histogram with a
    /// logarithmic iterator (first bucket 1024 ns, base 2) and prints, for every step whose
    /// cumulative count grew, the highest value equivalent to where the walk stopped (in µs)
    /// and the cumulative count.
    pub fn log_buckets(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut index: i64 = -1;
        let mut value = 0u64;
        let mut cumulative = 0u64;
        let mut level = 1024u64;
        let mut level_lowest = lowest_equivalent(level);
        let mut previous = 0u64;
        let peek_beyond = |index: i64, bound: u64| {
            index < COUNTS as i64 && value_at_index((index + 1) as usize) > bound
        };
        while cumulative < self.total || peek_beyond(index, level_lowest) {
            loop {
                if value >= level_lowest && index >= 0 {
                    level *= 2;
                    level_lowest = lowest_equivalent(level);
                    break;
                }
                index += 1;
                if index >= COUNTS as i64 {
                    break;
                }
                cumulative += self.counts[index as usize];
                value = value_at_index(index as usize);
            }
            if index >= COUNTS as i64 {
                if cumulative > previous {
                    out.push((highest_equivalent(value) / 1000, cumulative));
                }
                break;
            }
            if cumulative > previous {
                out.push((highest_equivalent(value) / 1000, cumulative));
            }
            previous = cumulative;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_print_redis_bucket_edges() {
        let mut h = Histogram::default();
        h.record(1000);
        assert_eq!(h.value_at_percentile(50.0), 1003);
        let mut h = Histogram::default();
        h.record(12_000);
        assert_eq!(h.value_at_percentile(99.0), 12_031);
        h.record(0);
        assert_eq!(h.value_at_percentile(0.0), 1);
        h.record(5_000_000_000);
        assert_eq!(h.total(), 3);
        assert!(h.value_at_percentile(100.0) >= HIGHEST);
    }

    #[test]
    fn log_buckets_are_cumulative_and_skip_empty_steps() {
        let mut h = Histogram::default();
        for _ in 0..35 {
            h.record(1000);
        }
        for _ in 0..10 {
            h.record(2000);
        }
        h.record(40_000);
        // 40 µs is reported at the 64 µs step, whose highest equivalent value is 66047 ns.
        assert_eq!(h.log_buckets(), vec![(1, 35), (2, 45), (66, 46)]);
        assert!(Histogram::default().log_buckets().is_empty());
    }

    #[test]
    fn slow_commands_get_the_bucket_labels_redis_prints() {
        // Read from Redis 7.0.15: `DEBUG SLEEP` for these many µs, then LATENCY HISTOGRAM debug.
        let redis = [
            (200, 264),
            (300, 528),
            (600, 1056),
            (1200, 2113),
            (2500, 4227),
            (5000, 8454),
            (9000, 16908),
            (20000, 33816),
        ];
        for (slept_us, label) in redis {
            let mut h = Histogram::default();
            // A sleep takes a little longer than asked, as the one Redis measured did.
            h.record(slept_us * 1000 + 20_000);
            assert_eq!(h.log_buckets(), vec![(label, 1)], "{slept_us} µs");
        }
    }
}
