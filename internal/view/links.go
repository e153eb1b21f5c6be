package view

import (
	"html"
	"net/url"
	"regexp"
	"strings"
)

// identRE finds the words of a report that may name functions: C and Go
// identifiers, with the dots, colons and slashes of qualified names.
var identRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_.:/]*[A-Za-z0-9_]|[A-Za-z_]`)

// functions is the set of the names of the functions in the profile's
// stacks, for linking them from the analyses' pages.
func (s *Server) functions() map[string]bool {
	s.fnOnce.Do(func() {
		s.fns = map[string]bool{}
		for _, f := range s.p.Frames {
			if f.Function != "" {
				s.fns[f.Function] = true
			}
		}
	})
	return s.fns
}

// linked escapes a report's text for HTML and makes every word that names
// a function of the profile a link to the function page of it (of the
// time range rng), which opens it in every view.
func (s *Server) linked(text string, rng Range) string {
	if !s.hasSamples() {
		return html.EscapeString(text)
	}
	fns := s.functions()
	var b strings.Builder
	last := 0
	for _, m := range identRE.FindAllStringIndex(text, -1) {
		name := text[m[0]:m[1]]
		if !fns[name] {
			continue
		}
		b.WriteString(html.EscapeString(text[last:m[0]]))
		focus := url.QueryEscape("^" + regexp.QuoteMeta(name) + `\b`)
		href := functionPath + "?f=" + focus
		if !rng.Whole() {
			href = functionPath + rng.Query() + "&f=" + focus
		}
		b.WriteString(`<a class="fn" href="` + html.EscapeString(href) + `">` + html.EscapeString(name) + `</a>`)
		last = m[1]
	}
	b.WriteString(html.EscapeString(text[last:]))
	return b.String()
}
