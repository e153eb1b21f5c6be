package expr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"n", "n"},
		{"j->size", "j->size"},
		{"cfg.limits[2]", "cfg.limits[2]"},
		{"*p", "*p"},
		{"list->head->len", "list->head->len"},
		{"a + b * c", "(a + (b * c))"},
		{"(a + b) * c", "((a + b) * c)"},
		{"a - b - c", "((a - b) - c)"},
		{"n / 2 > 10 && !done", "(((n / 2) > 10) && !done)"},
		{"-x[i+1].y", "-x[(i + 1)].y"},
		{"a == b || c != d", "((a == b) || (c != d))"},
		{"0x10 + 1.5e3", "(0x10 + 1.5e3)"},
		{"x << 2 | 1", "((x << 2) | 1)"},
		{"((list*)de->v.val)->len", "((list *)de->v.val)->len"},
		{"((struct list *)p)->len", "((struct list *)p)->len"},
		{"(const char * const)s", "((char *)s)"},
		{"(unsigned long)x + 1", "(((unsigned long)x) + 1)"},
		{"(enum color)c", "((enum color)c)"},
		{"(T)x", "((T)x)"},
		{"(T)(x)", "((T)x)"},
		{"(a)*b", "(a * b)"},
		{"(a) - b", "(a - b)"},
		{"&x->f", "&x->f"},
		{"*&x", "*&x"},
		{"sizeof(struct job)", "sizeof(struct job)"},
		{"sizeof(job *)", "sizeof(job *)"},
		{"sizeof(n)", "sizeof(n)"},
		{"sizeof j->size + 1", "(sizeof(j->size) + 1)"},
	} {
		n, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if n.String() != c.want {
			t.Errorf("Parse(%q) = %s, want %s", c.in, n, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		in  string
		col int
	}{
		{"", 1}, {"a +", 4}, {"a[1", 4}, {"(a", 3}, {"a.", 3}, {"a $ b", 3}, {"a b", 3}, {"j->1", 4},
		{"((list*)p", 10}, {"(struct)p", 9}, {"(list *)", 9}, {"sizeof", 7}, {"((list*)de->v.val))->len", 19},
	} {
		_, err := Parse(c.in)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Col != c.col {
			t.Errorf("Parse(%q) = %v, want a syntax error at column %d", c.in, err, c.col)
		}
	}
}

func TestParseSpec(t *testing.T) {
	s, err := ParseSpec("hier-*@work*@n / 2")
	if err != nil {
		t.Fatal(err)
	}
	if !s.MatchProg("/tmp/hier-test") || s.MatchProg("/tmp/other") || !s.MatchFunc("worker") || s.MatchFunc("main") {
		t.Errorf("matching of %+v", s)
	}
	for _, bad := range []string{"n", "p@n", "@f@n", "p@@n", "p@[@n"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
	_, err = ParseSpec("prog@f@a +")
	if err == nil || !strings.Contains(err.Error(), "column 11") {
		t.Errorf("error column counts in the whole spec: %v", err)
	}
}

// obj is an in-memory program value for these tests: the language is tested
// here on known values; DWARF-backed objects are tested end to end.
type obj struct {
	scalar  *Scalar
	fields  map[string]*obj
	elems   []*obj
	pointee *obj // for pointers; nil pointer when isPtr and pointee == nil
	isPtr   bool
}

func (o *obj) Member(name string, arrow bool) (Object, error) {
	t := o
	if arrow {
		if !o.isPtr {
			return nil, &TypeError{0, "-> on a non-pointer"}
		}
		if o.pointee == nil {
			return nil, fmt.Errorf("null pointer: %w", ErrMissing)
		}
		t = o.pointee
	}
	f, ok := t.fields[name]
	if !ok {
		return nil, &TypeError{0, "no field " + name}
	}
	return f, nil
}
func (o *obj) Index(i int64) (Object, error) {
	if i < 0 || int(i) >= len(o.elems) {
		return nil, fmt.Errorf("index out of range: %w", ErrMissing)
	}
	return o.elems[i], nil
}
func (o *obj) Deref() (Object, error) {
	if o.pointee == nil {
		return nil, fmt.Errorf("null pointer: %w", ErrMissing)
	}
	return o.pointee, nil
}
func (o *obj) Scalar() (Scalar, error) {
	if o.scalar == nil {
		return Scalar{}, &TypeError{0, "not a scalar"}
	}
	return *o.scalar, nil
}

type env map[string]*obj

func (e env) Var(name string) (Object, error) {
	if o, ok := e[name]; ok {
		return o, nil
	}
	return nil, &TypeError{0, "no variable " + name}
}

func sc(s Scalar) *obj { return &obj{scalar: &s} }

func TestEval(t *testing.T) {
	job := &obj{fields: map[string]*obj{"size": sc(IntValue(4096))}}
	head := &obj{fields: map[string]*obj{"len": sc(UintValue(7))}}
	e := env{
		"n":    sc(IntValue(20000000)),
		"j":    {isPtr: true, pointee: job},
		"cfg":  {fields: map[string]*obj{"limits": {elems: []*obj{sc(IntValue(1)), sc(IntValue(2)), sc(IntValue(30))}}}},
		"p":    {isPtr: true, pointee: sc(FloatValue(2.5))},
		"list": {isPtr: true, pointee: &obj{fields: map[string]*obj{"head": {isPtr: true, pointee: head}}}},
		"null": {isPtr: true},
		"u":    sc(UintValue(3)),
		"zero": sc(IntValue(0)),
	}
	for _, c := range []struct {
		in   string
		want string
	}{
		{"n", "20000000"},
		{"j->size", "4096"},
		{"cfg.limits[2]", "30"},
		{"cfg.limits[n - 19999999]", "2"},
		{"*p", "2.5"},
		{"list->head->len", "7"},
		{"n / 2 > 1000", "1"},
		{"-u", "18446744073709551613"},
		{"u - 4", "18446744073709551615"}, // unsigned wins, as in C
		{"*p * 2", "5"},
		{"zero && null->x", "0"}, // short-circuit: null never read
		{"!zero || null->x", "1"},
		{"7 % 4 + (1 << 4)", "19"},
		{"-n >> 1", "-10000000"},        // arithmetic shift of a signed value
		{"u << 65", "6"},                // shift counts modulo 64
		{"(u ^ 1) | (u & 2)", "2"},      // unsigned bitwise
		{"-7 / 2 * 10 + -7 % 2", "-31"}, // signed division truncates
		{"u - 4 > 0", "1"},              // an unsigned comparison
		{"-1 < 0", "1"},                 // a signed one
		{"*p >= 2.5 && *p != 2 && *p <= 3", "1"},
		{"*p % 2", "0.5"},
	} {
		n, err := Parse(c.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.in, err)
		}
		v, err := Eval(n, e)
		if err != nil {
			t.Errorf("Eval(%q): %v", c.in, err)
			continue
		}
		if v.String() != c.want {
			t.Errorf("Eval(%q) = %s, want %s", c.in, v, c.want)
		}
	}
	for _, c := range []struct {
		in      string
		missing bool
	}{
		{"null->x", true}, {"*null", true}, {"cfg.limits[9]", true}, {"n / zero", true},
		{"u % zero", true}, {"nosuch", false}, {"*p << 1", false}, {"j->nosuch", false}, {"n->x", false}, {"cfg", false}, {"cfg.limits[1.5]", false}, {"(n + 1).x", false},
	} {
		n, err := Parse(c.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.in, err)
		}
		_, err = Eval(n, e)
		if err == nil {
			t.Errorf("Eval(%q) succeeded", c.in)
			continue
		}
		if errors.Is(err, ErrMissing) != c.missing {
			t.Errorf("Eval(%q) = %v: missing %v, want %v", c.in, err, errors.Is(err, ErrMissing), c.missing)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"n", "j->size", "cfg.limits[2]", "*p", "a+b*c", "((", "1e", "0x", "a[", "!-~*x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err == nil {
			if _, err := Parse(n.String()); err != nil {
				t.Errorf("printed form %q of %q does not parse: %v", n, s, err)
			}
		}
	})
}
