// A question-and-answer site's page renderer in the manner of Stack
// Overflow's home page: posts (make_posts) are rendered one by one
// (render_page → render_post): each body is split into lines, each line's
// trailing whitespace trimmed (text::trim_trailing), links found
// (a regular expression), the text escaped for HTML (text::html_escape)
// and its words counted for the summary.
//
// The regular expressions are a small backtracking engine (namespace rx):
// a pattern is a chain of nodes (virtual match), character classes are
// template parameters (rx::Plus<Pred>, rx::One<Pred>), and a search tries
// the pattern at each start position in turn.
//
// The bug (scalability): text::trim_trailing finds the trailing whitespace
// with a search for [ \t]+$ . On a line holding a run of k spaces that is
// not at the end of the line, the search starts at each of the k
// positions, takes the rest of the run greedily, fails at $ and gives back
// one character at a time: O(k^2) steps for a run that a loop from the end
// of the line would never look at. The fix trims with that loop.
//
//   prog normal|buggy   (ordinary posts, or the same with a few posts that
//                        hold a line of 8,000 spaces)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#define noinline __attribute__((noinline))

namespace rx {

struct Node {
	const Node *next = nullptr;
	virtual ~Node() = default;
	// match: whether this node and the rest of the chain match s from i.
	virtual bool match(std::string_view s, size_t i) const = 0;
	bool rest(std::string_view s, size_t i) const { return next == nullptr || next->match(s, i); }
};

// Plus<Pred>: one or more characters of the class, greedy, backtracking.
template <class Pred> struct Plus final : Node {
	Pred p;
	bool match(std::string_view s, size_t i) const override
	{
		size_t j = i;
		while (j < s.size() && p(s[j]))
			j++;
		for (; j > i; j--)
			if (rest(s, j))
				return true;
		return false;
	}
};

template <class Pred> struct One final : Node {
	Pred p;
	bool match(std::string_view s, size_t i) const override { return i < s.size() && p(s[i]) && rest(s, i + 1); }
};

struct Lit final : Node {
	std::string lit;
	explicit Lit(std::string l) : lit(std::move(l)) {}
	bool match(std::string_view s, size_t i) const override
	{
		return s.substr(i, lit.size()) == lit && rest(s, i + lit.size());
	}
};

struct End final : Node {
	bool match(std::string_view s, size_t i) const override { return i == s.size() && rest(s, i); }
};

struct Space {
	bool operator()(char c) const { return c == ' ' || c == '\t'; }
};
struct UrlChar {
	bool operator()(char c) const { return c > ' ' && c != '"' && c != '<' && c != '>' && c != ')'; }
};

class Regex {
	std::vector<std::unique_ptr<Node>> nodes_;

public:
	Regex &then(std::unique_ptr<Node> n)
	{
		if (!nodes_.empty())
			nodes_.back()->next = n.get();
		nodes_.push_back(std::move(n));
		return *this;
	}
	// search: the first position from which the pattern matches, or npos.
	size_t search(std::string_view s) const
	{
		for (size_t i = 0; i <= s.size(); i++)
			if (nodes_.front()->match(s, i))
				return i;
		return std::string_view::npos;
	}
};

} // namespace rx

namespace text {

// trailing_ws: [ \t]+$
static const rx::Regex &trailing_ws()
{
	static rx::Regex r = [] {
		rx::Regex x;
		x.then(std::make_unique<rx::Plus<rx::Space>>()).then(std::make_unique<rx::End>());
		return x;
	}();
	return r;
}

// link: https?://[^ "<>)]+
static const rx::Regex &link()
{
	static rx::Regex r = [] {
		rx::Regex x;
		x.then(std::make_unique<rx::Lit>("http"));
		x.then(std::make_unique<rx::Plus<rx::UrlChar>>());
		return x;
	}();
	return r;
}

// trim_trailing is the root cause: it searches for [ \t]+$ (fix: a loop
// from the end of the line while the character is a space or a tab).
noinline void trim_trailing(std::string &line)
{
	size_t at = trailing_ws().search(line);
	if (at != std::string::npos)
		line.erase(at);
}

noinline void html_escape(std::string_view in, std::string &out)
{
	for (char c : in) {
		switch (c) {
		case '<': out += "&lt;"; break;
		case '>': out += "&gt;"; break;
		case '&': out += "&amp;"; break;
		case '"': out += "&quot;"; break;
		default: out += c;
		}
	}
}

noinline size_t count_words(std::string_view s)
{
	size_t n = 0;
	bool in = false;
	for (char c : s) {
		bool w = c != ' ' && c != '\t';
		n += w && !in;
		in = w;
	}
	return n;
}

} // namespace text

struct Post {
	long id;
	std::string title, body;
};

struct Stats {
	size_t words = 0, links = 0, bytes = 0;
};

noinline void render_post(const Post &p, std::string &page, Stats &st)
{
	page += "<div class=\"question-summary\"><h3>";
	text::html_escape(p.title, page);
	page += "</h3><div class=\"excerpt\">";
	size_t start = 0;
	while (start < p.body.size()) {
		size_t nl = p.body.find('\n', start);
		if (nl == std::string::npos)
			nl = p.body.size();
		std::string line = p.body.substr(start, nl - start);
		start = nl + 1;
		text::trim_trailing(line);
		if (text::link().search(line) != std::string_view::npos)
			st.links++;
		st.words += text::count_words(line);
		text::html_escape(line, page);
		page += "<br>";
	}
	page += "</div></div>\n";
}

noinline size_t render_page(const std::vector<Post> &posts, Stats &st)
{
	std::string page;
	size_t total = 0;
	for (size_t i = 0; i < posts.size(); i++) {
		render_post(posts[i], page, st);
		if (page.size() > (1 << 20)) { // a page is sent every megabyte
			total += page.size();
			page.clear();
		}
	}
	return total + page.size();
}

noinline std::vector<Post> make_posts(bool with_runs)
{
	static const char *words[] = {"how", "to", "parse", "a", "string", "in", "C#", "regex", "<div>", "performance", "list",
				      "null", "&&", "return", "value", "why", "is", "my", "loop", "slow", "\"quoted\"", "array"};
	std::vector<Post> posts;
	uint64_t x = 0x853c49e6748fea9bULL;
	auto rnd = [&x] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; };
	for (long i = 0; i < 3000; i++) {
		Post p;
		p.id = 38000000 + i;
		for (int w = 0; w < 8; w++)
			p.title += std::string(words[rnd() % 22]) + " ";
		int lines = 20 + (int)(rnd() % 30);
		for (int l = 0; l < lines; l++) {
			int n = 4 + (int)(rnd() % 14);
			for (int w = 0; w < n; w++) {
				p.body += words[rnd() % 22];
				p.body += rnd() % 9 ? " " : "  ";
			}
			if (rnd() % 7 == 0)
				p.body += "see https://example.com/q/" + std::to_string(rnd() % 100000);
			if (rnd() % 4 == 0)
				p.body.append(1 + rnd() % 6, ' '); // trailing whitespace, trimmed
			p.body += '\n';
		}
		// The buggy input: a few posts hold a line of 8,000 spaces followed
		// by a character (a code block pasted with its indentation).
		if (with_runs && i % 1000 == 500)
			p.body += std::string(8000, ' ') + "}\n";
		posts.push_back(std::move(p));
	}
	return posts;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (std::strcmp(argv[1], "normal") && std::strcmp(argv[1], "buggy"))) {
		std::fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	std::vector<Post> posts = make_posts(std::strcmp(argv[1], "buggy") == 0);
	Stats st;
	size_t bytes = 0;
	for (int round = 0; round < 8; round++) // the page is rendered for 8 requests
		bytes += render_page(posts, st);
	std::printf("%zu posts, %zu bytes of HTML, %zu words, %zu links\n", posts.size(), bytes, st.words, st.links);
	return 0;
}
