//! What the seeded fuzz tests of this crate share: a small xorshift generator, so a failing
//! input can be found again from its seed.

/// xorshift64* : fast, seedable, good enough to pick mutations.
pub struct Rng(pub u64);

#[allow(dead_code)] // each test uses what it needs
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}
