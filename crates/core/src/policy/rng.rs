//! The randomness policy decisions use, injected so that a schedule is a pure function of
//! its seed: `SeededRng` (SplitMix64) for production and property tests, `NoJitter` for
//! tests that assert exact, unjittered delays.

/// A source of uniformly distributed 64-bit values for jitter.
pub trait Jitter {
    fn next_u64(&mut self) -> u64;
}

/// SplitMix64 (Steele, Lea and Flood 2014; Vigna's reference `splitmix64.c`): one `u64` of
/// state, full period 2^64, and every seed, 0 included, gives a well-mixed stream. Each
/// supervisor seeds its own, so supervisors that fail at the same instant disperse; it is
/// not for secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeededRng {
    state: u64,
}

impl SeededRng {
    pub fn new(seed: u64) -> Self {
        SeededRng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1): the top 53 bits, so every value is exactly representable.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

impl Jitter for SeededRng {
    fn next_u64(&mut self) -> u64 {
        SeededRng::next_u64(self)
    }
}

/// Always the midpoint of the range, which `Backoff::delay` maps to exactly the base delay:
/// for tests that assert an exact schedule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoJitter;

impl Jitter for NoJitter {
    fn next_u64(&mut self) -> u64 {
        1 << 63
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_splitmix64() {
        // The published first outputs for seed 1234567 (Rosetta Code, "Splitmix64").
        let mut rng = SeededRng::new(1_234_567);
        let got: Vec<u64> = (0..5).map(|_| rng.next_u64()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821,
            ]
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_stream_and_seeds_differ() {
        let stream = |seed| {
            let mut rng = SeededRng::new(seed);
            (0..8).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(stream(7), stream(7));
        assert_ne!(stream(0), stream(1));
        assert_ne!(stream(0)[0], 0);
    }

    #[test]
    fn floats_are_uniform_in_the_unit_interval() {
        let mut rng = SeededRng::new(987_654_321);
        let mut buckets = [0u32; 5];
        for _ in 0..100_000 {
            let x = rng.next_f64();
            assert!((0.0..1.0).contains(&x), "{x}");
            buckets[(x * 5.0) as usize] += 1;
        }
        // 20,000 expected per bucket; the standard deviation is about 126.
        for (i, n) in buckets.iter().enumerate() {
            assert!((19_000..=21_000).contains(n), "bucket {i}: {n}");
        }
    }

    #[test]
    fn no_jitter_is_the_midpoint() {
        assert_eq!(NoJitter.next_u64(), 1 << 63);
    }
}
