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
	return s.linkedFrom(text, rng, "", "")
}

// linkedFrom is linked for a page at another depth: each link's path
// starts with up ("../" from a page one level down) and, when target is
// not empty, opens in that browsing context ("_top" from a frame).
func (s *Server) linkedFrom(text string, rng Range, up, target string) string {
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
		b.WriteString(`<a class="fn" href="` + html.EscapeString(up+href) + `"`)
		if target != "" {
			b.WriteString(` target="` + target + `"`)
		}
		b.WriteString(`>` + html.EscapeString(name) + `</a>`)
		last = m[1]
	}
	b.WriteString(html.EscapeString(text[last:]))
	return b.String()
}

// markupRE finds what linkMarkup leaves as it is: elements whose content is
// not shown as text (style, script, title: a tooltip), comments and every
// tag.
var markupRE = regexp.MustCompile(`(?is)<(style|script|title)\b.*?</(style|script|title)\s*>|<!--.*?-->|<[^>]*>`)

// linkMarkup is linkedFrom for the text of a drawing or a page (SVG or
// HTML): every function name in its text becomes a link to the function
// page, the markup around it kept. In SVG the link sits inside the text
// element, where SVG allows an a element.
func (s *Server) linkMarkup(markup string, rng Range, up, target string) string {
	if !s.hasSamples() {
		return markup
	}
	var b strings.Builder
	last := 0
	for _, m := range markupRE.FindAllStringIndex(markup, -1) {
		if m[0] > last {
			b.WriteString(s.linkedFrom(html.UnescapeString(markup[last:m[0]]), rng, up, target))
		}
		b.WriteString(markup[m[0]:m[1]])
		last = m[1]
	}
	if last < len(markup) {
		b.WriteString(s.linkedFrom(html.UnescapeString(markup[last:]), rng, up, target))
	}
	return b.String()
}
