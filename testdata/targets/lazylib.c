/* lazylib: 1000 small functions (lz_1000 … lz_1999) for lazymain to call
 * through its PLT, each bound by the dynamic loader at its first call. */
#define F(n) int lz_##n(int x) { return x + n; }
#define F10(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) F(n##7) F(n##8) F(n##9)
#define F100(n) F10(n##0) F10(n##1) F10(n##2) F10(n##3) F10(n##4) F10(n##5) F10(n##6) F10(n##7) F10(n##8) F10(n##9)
F100(10) F100(11) F100(12) F100(13) F100(14) F100(15) F100(16) F100(17) F100(18) F100(19)
