/* tailplt.c: tail calls through a shared library's own PLT. Built with
 * -O2 -fPIC -shared, entry and decide are exported, so entry's last call
 * of decide is a jump to decide@plt, and decide's of the static spin a
 * jump to spin: while spin runs, no stack holds entry's or decide's frame.
 * outer calls entry through the PLT too. */
static volatile long sink;

static __attribute__((noinline)) long spin(long n)
{
	for (long i = 0; i < n; i++)
		sink += i;
	return sink;
}

__attribute__((noinline)) long decide(long n)
{
	if (n > 3)
		return spin(n);
	return 0;
}

__attribute__((noinline)) long entry(long n)
{
	sink++;
	return decide(n + 1);
}

__attribute__((noinline)) long outer(long n)
{
	long r = entry(n);
	return r + sink;
}
