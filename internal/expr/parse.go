// Package expr is culprit's expression language: the C-like expressions a
// user samples at each tick (`n`, `j->size`, `cfg.limits[2]`, `*p`,
// `list->head->len / 2 > 10`) and the `PROG@FUNC@EXPR` specs that say where.
// It parses and evaluates over an abstract Object interface; reading program
// state (DWARF locations, registers, memory) is the caller's business. It is
// written by hand because the Go expression parser (go/parser) does not parse
// C's `->` and no maintained Go library parses C expressions alone.
package expr

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/elfx"
)

// Node is a parsed expression.
type Node interface {
	Pos() int // 1-based column in the source
	String() string
}

type (
	// Ident is a variable name.
	Ident struct {
		Col  int
		Name string
	}
	// Number is an integer or floating-point literal.
	Number struct {
		Col     int
		Text    string
		IsFloat bool
		Int     int64
		Float   float64
	}
	// Member is X.Name, or X->Name when Arrow.
	Member struct {
		Col   int
		X     Node
		Name  string
		Arrow bool
	}
	// Index is X[I].
	Index struct {
		Col  int
		X, I Node
	}
	// Unary is Op X with Op one of - ! * ~.
	Unary struct {
		Col int
		Op  string
		X   Node
	}
	// Binary is X Op Y.
	Binary struct {
		Col  int
		Op   string
		X, Y Node
	}
	// Cast is (Type)X: Type is a C type name as written, qualifiers
	// dropped ("struct list *", "list *", "unsigned long").
	Cast struct {
		Col  int
		Type string
		X    Node
	}
	// Sizeof is sizeof(Type) when Type is set, else sizeof X. When X is
	// a lone name in parentheses, it may name a type or a variable:
	// Ambiguous is set and the evaluator decides.
	Sizeof struct {
		Col       int
		Type      string
		X         Node
		Ambiguous bool
	}
)

func (n *Ident) Pos() int  { return n.Col }
func (n *Number) Pos() int { return n.Col }
func (n *Member) Pos() int { return n.Col }
func (n *Index) Pos() int  { return n.Col }
func (n *Unary) Pos() int  { return n.Col }
func (n *Binary) Pos() int { return n.Col }
func (n *Cast) Pos() int   { return n.Col }
func (n *Sizeof) Pos() int { return n.Col }

func (n *Ident) String() string  { return n.Name }
func (n *Number) String() string { return n.Text }
func (n *Member) String() string {
	if n.Arrow {
		return operand(n.X) + "->" + n.Name
	}
	return operand(n.X) + "." + n.Name
}
func (n *Index) String() string { return operand(n.X) + "[" + n.I.String() + "]" }

// operand spells the left side of a postfix operator, in parentheses when
// it is a prefix operation.
func operand(n Node) string {
	if _, ok := n.(*Unary); ok {
		return "(" + n.String() + ")"
	}
	return n.String()
}
func (n *Unary) String() string  { return n.Op + n.X.String() }
func (n *Binary) String() string { return "(" + n.X.String() + " " + n.Op + " " + n.Y.String() + ")" }
func (n *Cast) String() string   { return "((" + n.Type + ")" + n.X.String() + ")" }
func (n *Sizeof) String() string {
	if n.Type != "" {
		return "sizeof(" + n.Type + ")"
	}
	return "sizeof(" + n.X.String() + ")"
}

// SyntaxError is a parse error at a column.
type SyntaxError struct {
	Col int
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("column %d: %s", e.Col, e.Msg) }

type token struct {
	kind string // "ident", "number", "op", "eof"
	text string
	col  int
}

var ops = []string{"->", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>",
	"+", "-", "*", "/", "%", "<", ">", "!", "~", "&", "|", "^", ".", "[", "]", "(", ")"}

func lex(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			toks = append(toks, token{"ident", src[i:j], i + 1})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] == '.' ||
				(src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(strings.ToLower(src[i:j]), "0x")) {
				j++
			}
			toks = append(toks, token{"number", src[i:j], i + 1})
			i = j
		default:
			matched := false
			for _, op := range ops {
				if strings.HasPrefix(src[i:], op) {
					toks = append(toks, token{"op", op, i + 1})
					i += len(op)
					matched = true
					break
				}
			}
			if !matched {
				return nil, &SyntaxError{i + 1, fmt.Sprintf("unexpected character %q", c)}
			}
		}
	}
	return append(toks, token{"eof", "", len(src) + 1}), nil
}

// binary operator precedence, C's order.
var prec = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
	"==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
	"<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

// Parse parses an expression.
func Parse(src string) (Node, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	if p.peek().kind == "eof" {
		return nil, &SyntaxError{1, "empty expression"}
	}
	n, err := p.binary(1)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != "eof" {
		return nil, &SyntaxError{t.col, fmt.Sprintf("unexpected %q after a complete expression", t.text)}
	}
	return n, nil
}

func (p *parser) binary(min int) (Node, error) {
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		pr, ok := prec[t.text]
		if t.kind != "op" || !ok || pr < min {
			return x, nil
		}
		p.next()
		y, err := p.binary(pr + 1)
		if err != nil {
			return nil, err
		}
		x = &Binary{Col: t.col, Op: t.text, X: x, Y: y}
	}
}

func (p *parser) unary() (Node, error) {
	t := p.peek()
	if t.kind == "ident" && t.text == "sizeof" {
		return p.sizeof()
	}
	if t.kind == "op" && t.text == "(" {
		if typ, end, ok := p.typeName(p.i + 1); ok {
			p.i = end
			x, err := p.unary()
			if err != nil {
				return nil, err
			}
			return &Cast{Col: t.col, Type: typ, X: x}, nil
		}
	}
	if t.kind == "op" && (t.text == "-" || t.text == "!" || t.text == "*" || t.text == "~" || t.text == "&" || t.text == "+") {
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &Unary{Col: t.col, Op: t.text, X: x}, nil
	}
	return p.postfix()
}

// typeKeywords start a type name in C.
var typeKeywords = map[string]bool{
	"struct": true, "union": true, "enum": true, "const": true, "volatile": true,
	"unsigned": true, "signed": true, "int": true, "char": true, "long": true, "short": true,
	"float": true, "double": true, "void": true, "_Bool": true, "bool": true,
}

// typeName recognises "TYPE )" at token i, the inside of a cast or of
// sizeof(TYPE), and returns the type's text and the index after ")". Without
// a symbol table a lone name is a type only where an expression cannot be:
// "(T)" followed by a name, a number or "(" is a cast; "(T)*p", "(T)-1" and
// "(T)&x" read as arithmetic on a variable T (write "(T)(*p)" to cast).
func (p *parser) typeName(i int) (string, int, bool) {
	var words []string
	j := i
	keyword := false
	for j < len(p.toks) && p.toks[j].kind == "ident" {
		w := p.toks[j].text
		if typeKeywords[w] {
			keyword = true
		}
		if w != "const" && w != "volatile" {
			words = append(words, w)
		}
		j++
	}
	if j == i || len(words) == 0 && !keyword {
		return "", 0, false
	}
	if len(words) > 1 && !keyword {
		return "", 0, false // "a b" is neither
	}
	if len(words) > 0 && (words[0] == "struct" || words[0] == "union" || words[0] == "enum") && len(words) != 2 {
		return "", 0, false // a tag needs its name
	}
	ptrs := 0
	for j < len(p.toks) && p.toks[j].kind == "op" && p.toks[j].text == "*" {
		ptrs++
		j++
	}
	for j < len(p.toks) && p.toks[j].kind == "ident" && (p.toks[j].text == "const" || p.toks[j].text == "volatile") {
		j++ // "char * const"
		for j < len(p.toks) && p.toks[j].kind == "op" && p.toks[j].text == "*" {
			ptrs++
			j++
		}
	}
	if j >= len(p.toks) || p.toks[j].text != ")" || p.toks[j].kind != "op" {
		return "", 0, false
	}
	if !keyword && ptrs == 0 {
		// (T) alone: a cast only when an operand follows.
		n := p.toks[j+1]
		if n.kind != "ident" && n.kind != "number" && !(n.kind == "op" && (n.text == "(" || n.text == "!" || n.text == "~")) {
			return "", 0, false
		}
	}
	typ := strings.Join(words, " ")
	if ptrs > 0 {
		typ += " " + strings.Repeat("*", ptrs)
	}
	return typ, j + 1, true
}

func (p *parser) sizeof() (Node, error) {
	t := p.next()
	if n := p.peek(); n.kind == "op" && n.text == "(" {
		if typ, end, ok := p.typeName(p.i + 1); ok {
			p.i = end
			return &Sizeof{Col: t.col, Type: typ}, nil
		}
		// sizeof(name): a type or a variable, known only to the evaluator.
		if p.toks[p.i+1].kind == "ident" && p.toks[p.i+2].kind == "op" && p.toks[p.i+2].text == ")" {
			name := p.toks[p.i+1]
			p.i += 3
			return &Sizeof{Col: t.col, X: &Ident{Col: name.col, Name: name.text}, Ambiguous: true}, nil
		}
	}
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	return &Sizeof{Col: t.col, X: x}, nil
}

func (p *parser) postfix() (Node, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == "op" && (t.text == "." || t.text == "->"):
			p.next()
			name := p.next()
			if name.kind != "ident" {
				return nil, &SyntaxError{name.col, fmt.Sprintf("want a field name after %q", t.text)}
			}
			x = &Member{Col: t.col, X: x, Name: name.text, Arrow: t.text == "->"}
		case t.kind == "op" && t.text == "[":
			p.next()
			i, err := p.binary(1)
			if err != nil {
				return nil, err
			}
			if c := p.next(); c.text != "]" {
				return nil, &SyntaxError{c.col, "want ] to close ["}
			}
			x = &Index{Col: t.col, X: x, I: i}
		default:
			return x, nil
		}
	}
}

func (p *parser) primary() (Node, error) {
	t := p.next()
	switch t.kind {
	case "ident":
		return &Ident{Col: t.col, Name: t.text}, nil
	case "number":
		return parseNumber(t)
	case "op":
		if t.text == "(" {
			x, err := p.binary(1)
			if err != nil {
				return nil, err
			}
			if c := p.next(); c.text != ")" {
				return nil, &SyntaxError{c.col, "want ) to close ("}
			}
			return x, nil
		}
	case "eof":
		return nil, &SyntaxError{t.col, "expression ends too early"}
	}
	return nil, &SyntaxError{t.col, fmt.Sprintf("unexpected %q", t.text)}
}

func parseNumber(t token) (Node, error) {
	text := strings.TrimRight(t.text, "uUlL")
	if v, err := strconv.ParseInt(text, 0, 64); err == nil {
		return &Number{Col: t.col, Text: t.text, Int: v}, nil
	}
	if v, err := strconv.ParseUint(text, 0, 64); err == nil {
		return &Number{Col: t.col, Text: t.text, Int: int64(v)}, nil
	}
	if v, err := strconv.ParseFloat(strings.TrimRight(text, "fF"), 64); err == nil {
		return &Number{Col: t.col, Text: t.text, IsFloat: true, Float: v}, nil
	}
	return nil, &SyntaxError{t.col, fmt.Sprintf("bad number %q", t.text)}
}

// Spec is a PROG@FUNC@EXPR sampling spec: evaluate Expr at samples of
// programs whose executable base name matches Prog, in the frame of a
// function matching Func that is on the stack.
type Spec struct {
	Text string
	Prog string // glob on the executable's base name
	Func string // glob on the source function name
	Expr Node
}

// ParseSpec parses PROG@FUNC@EXPR. Globs use path.Match syntax (* ? [..]).
func ParseSpec(s string) (*Spec, error) {
	parts := strings.SplitN(s, "@", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("expression spec %q: want PROG@FUNC@EXPR, e.g. 'myprog@worker@n' or '*@*@cfg.limit'", s)
	}
	for i, glob := range parts[:2] {
		if glob == "" {
			return nil, fmt.Errorf("expression spec %q: empty %s pattern (use * for any)", s, [2]string{"program", "function"}[i])
		}
		if _, err := path.Match(glob, ""); err != nil {
			return nil, fmt.Errorf("expression spec %q: bad pattern %q: %v", s, glob, err)
		}
	}
	e, err := Parse(parts[2])
	if err != nil {
		var se *SyntaxError
		if ok := asSyntax(err, &se); ok {
			// Columns in the whole spec, as the user typed it.
			return nil, fmt.Errorf("expression spec %q: column %d: %s", s, se.Col+len(parts[0])+len(parts[1])+2, se.Msg)
		}
		return nil, fmt.Errorf("expression spec %q: %w", s, err)
	}
	return &Spec{Text: s, Prog: parts[0], Func: parts[1], Expr: e}, nil
}

func asSyntax(err error, target **SyntaxError) bool {
	se, ok := err.(*SyntaxError)
	if ok {
		*target = se
	}
	return ok
}

// MatchProg reports whether the executable base name matches.
func (s *Spec) MatchProg(exe string) bool {
	ok, _ := path.Match(s.Prog, path.Base(exe))
	return ok
}

// MatchFunc reports whether the glob names a source function: in any
// enclosing scope, as elfx.MatchName says.
func (s *Spec) MatchFunc(fn string) bool {
	return elfx.MatchName(s.Func, fn)
}

// Idents lists the variable names an expression reads, in order, once each.
func Idents(n Node) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(Node)
	walk = func(n Node) {
		switch n := n.(type) {
		case *Ident:
			if !seen[n.Name] {
				seen[n.Name] = true
				out = append(out, n.Name)
			}
		case *Member:
			walk(n.X)
		case *Index:
			walk(n.X)
			walk(n.I)
		case *Unary:
			walk(n.X)
		case *Binary:
			walk(n.X)
			walk(n.Y)
		case *Cast:
			walk(n.X)
		case *Sizeof:
			// sizeof reads no value
		}
	}
	walk(n)
	return out
}

// Paths name what an expression reaches from a variable, the same way
// wherever they are built: a collector that reads c->id at a probe names
// the value so, and an evaluator finds it by the same name.

// PathMember is p.name, or p->name when arrow.
func PathMember(p, name string, arrow bool) string {
	if arrow {
		return p + "->" + name
	}
	return p + "." + name
}

// PathIndex is p[i].
func PathIndex(p string, i int64) string { return fmt.Sprintf("%s[%d]", p, i) }

// PathDeref is (*p).
func PathDeref(p string) string { return "(*" + p + ")" }
