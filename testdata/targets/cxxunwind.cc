/* A C++ program whose exceptions unwind through the functions a trace
 * probes: parse throws on a bad request; check hands its frame to parse
 * (a tail call at -O2); nest recurses DEPTH times around check, each
 * level with a std::string to destroy on the way up (a clean-up landing
 * pad that calls _Unwind_Resume); handle catches, and then sleeps
 * CATCH_MS, so a call the exception left and that ended only at the
 * next traced event would last that long. finish makes a tail call to a
 * function that is not traced. Two threads. Prints its calls of each
 * function and how many requests threw. Usage: cxxunwind N (requests
 * per thread). */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <time.h>
#include <vector>

enum { DEPTH = 3, CATCH_MS = 30 };

namespace svc {

struct Bad : std::runtime_error {
	using std::runtime_error::runtime_error;
};

__attribute__((noinline)) long parse(const std::string &s) {
	long n = 0;
	for (char c : s) {
		if (c < '0' || c > '9') throw Bad("bad digit in " + s);
		n = n * 10 + (c - '0');
	}
	return n;
}

__attribute__((noinline)) long check(const std::string &s) {
	if (s.empty()) return -2;
	return parse(s);
}

__attribute__((noinline)) long nest(int depth, const std::string &s) {
	if (depth == 0) return check(s);
	std::string tag = "level" + std::to_string(depth);
	long r = nest(depth - 1, s);
	return r + (long)tag.size();
}

__attribute__((noinline)) long scale(long v) { return v * 3 + 1; }

__attribute__((noinline)) long finish(long v) {
	if (v < 0) return 0;
	return scale(v + 1);
}

__attribute__((noinline)) long handle(const std::string &req) {
	try {
		return finish(nest(DEPTH, req));
	} catch (const Bad &) {
		struct timespec ts = {0, CATCH_MS * 1000000L};
		nanosleep(&ts, nullptr);
		return -1;
	}
}

} // namespace svc

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 100;
	long bad[2] = {0, 0}, sum[2] = {0, 0};
	std::vector<std::thread> ts;
	for (int t = 0; t < 2; t++)
		ts.emplace_back([&, t] {
			for (long i = 0; i < n; i++) {
				std::string req = i % 5 == 4 ? "1x" : std::to_string(i * 7 + t);
				long v = svc::handle(req);
				if (v < 0) bad[t]++;
				else sum[t] += v;
			}
		});
	for (auto &t : ts) t.join();
	long thrown = bad[0] + bad[1];
	printf("sum %ld\n", sum[0] + sum[1]);
	printf("count handle %ld\ncount nest %ld\ncount check %ld\ncount parse %ld\ncount finish %ld\ncount thrown %ld\n",
	       2 * n, 2 * n * (DEPTH + 1), 2 * n, 2 * n, 2 * n - thrown, thrown);
	return 0;
}
