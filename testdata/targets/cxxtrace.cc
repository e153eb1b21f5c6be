/* A C++ program with libstdc++ for the tracer's names: functions in
 * namespaces, a class template with two instances of one member, virtual
 * calls, a lambda run on a std::thread, and exceptions thrown in one
 * function and caught two frames up (in handle), and a static function
 * and a template instance over a lambda's type, which have no linkage
 * name. Prints the calls it made of each traced function. Usage:
 * cxxtrace N (requests per thread). */
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace geo {

struct Shape {
	virtual ~Shape() = default;
	virtual long area() const = 0;
};

struct Square : Shape {
	long side;
	explicit Square(long s) : side(s) {}
	__attribute__((noinline)) long area() const override { return side * side; }
};

struct Strip : Shape {
	std::vector<long> cells;
	__attribute__((noinline)) long area() const override {
		long s = 0;
		for (long c : cells) s += c;
		return s;
	}
};

template <typename T> struct Accum {
	T total{};
	__attribute__((noinline)) void add(T v) { total += v; }
};

} // namespace geo

namespace svc {

/* Without linkage: its DWARF name has no linkage name to demangle. */
static inline long digit(char c, const std::string &s) {
	if (c < '0' || c > '9') throw std::invalid_argument(s);
	return c - '0';
}

__attribute__((noinline)) long parse_size(const std::string &s) {
	long n = 0;
	for (char c : s) n = n * 10 + digit(c, s);
	return n;
}

__attribute__((noinline)) std::unique_ptr<geo::Shape> make_shape(const std::string &req) {
	long n = parse_size(req.substr(1));
	if (req[0] == 's') return std::make_unique<geo::Square>(n);
	auto p = std::make_unique<geo::Strip>();
	p->cells.assign(n, 1);
	return p;
}

__attribute__((noinline)) long handle(const std::string &req, geo::Accum<long> &a, geo::Accum<double> &d) {
	try {
		long v = make_shape(req)->area();
		a.add(v);
		d.add(v / 2.0);
		return v;
	} catch (const std::invalid_argument &) {
		return -1;
	}
}

} // namespace svc

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long bad[2] = {0, 0};
	std::vector<std::thread> ts;
	for (int t = 0; t < 2; t++)
		ts.emplace_back([&, t] {
			geo::Accum<long> a;
			geo::Accum<double> d;
			for (long i = 0; i < n; i++) {
				std::string req = i % 5 == 4 ? "s1x" : (i % 2 ? "s" : "t") + std::to_string(i % 40);
				if (svc::handle(req, a, d) < 0) bad[t]++;
			}
		});
	for (auto &t : ts) t.join();
	/* handle is called 2n times; the others once per request that parses. */
	printf("count handle %ld\ncount thrown %ld\n", 2 * n, bad[0] + bad[1]);
	return 0;
}
