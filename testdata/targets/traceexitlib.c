/* The library traceexit loads: outer calls inner. */
__attribute__((noipa)) long inner(long n) { return n * 3; }
__attribute__((noipa)) long outer(long n) { return inner(n) + 1; }
