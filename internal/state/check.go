package state

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/expr"
)

// SpecProblem is what CheckSpec found wrong with a spec for one program:
// Fatal problems (a name that exists nowhere in the program, with a close
// one that does) stop the command before it starts; the others are
// warnings (a function only a library may define).
type SpecProblem struct {
	Msg   string
	Fatal bool
}

// CheckSpec resolves a PROG@FUNC@EXPR spec against the executable that is
// about to be sampled, before sampling starts: the program pattern must
// match it, the function pattern must name a function of it, and each name
// the expression reads must be a parameter or local of that function or a
// global, and each type it names a type of the program. It returns nil
// when everything resolves, when the executable has no DWARF (which the
// recorder reports itself), and for a spec whose pattern names a shared
// object the executable is not (libfoo.so@FUNC@EXPR), which may be loaded
// only later.
func CheckSpec(sp *expr.Spec, exe string) []SpecProblem {
	base := filepath.Base(exe)
	if !sp.MatchProg(exe) && namesObject(sp) {
		return nil // a shared object's spec: the object may be loaded later (dlopen)
	}
	if !sp.MatchProg(exe) {
		msg := fmt.Sprintf("--expr %q: the program pattern %q does not match %s, the program sampled", sp.Text, sp.Prog, base)
		if !hasGlob(sp.Prog) && misspelt(sp.Prog, base) {
			return []SpecProblem{{msg + fmt.Sprintf(": did you mean %q?", base), true}}
		}
		return []SpecProblem{{msg + "; it applies only to programs it execs", false}}
	}
	in, err := dwarfx.Open(exe)
	if err != nil {
		return nil
	}
	var fns []*dwarfx.Function
	if hasGlob(sp.Func) {
		for _, f := range in.Functions() {
			if sp.MatchFunc(f.Name) {
				fns = append(fns, f)
			}
		}
	} else {
		fns = in.FunctionsNamed(sp.Func)
	}
	var out []SpecProblem
	if len(fns) == 0 && !(!hasGlob(sp.Func) && in.FunctionNames()[sp.Func]) {
		msg := fmt.Sprintf("--expr %q: no function %s in %s", sp.Text, sp.Func, base)
		var names []string
		for n := range in.FunctionNames() {
			names = append(names, n)
		}
		if near := nearest(sp.Func, names); near != "" && !hasGlob(sp.Func) {
			return []SpecProblem{{msg + fmt.Sprintf(": did you mean %q?", near), true}}
		}
		if !hasGlob(sp.Func) && hasSymbol(exe, sp.Func) {
			return nil // defined without DWARF: nothing more to check
		}
		return []SpecProblem{{msg + "; the expression is evaluated only if a library the program loads defines one", false}}
	}
	if len(fns) == 0 {
		return nil // inlined everywhere: its variables are checked at each sample
	}
	// Names: a local or parameter of a matching function, or a global.
	locals := map[string]bool{}
	for _, f := range fns {
		for _, v := range f.AllVariables() {
			locals[v.Name] = true
		}
	}
	for _, id := range expr.Idents(sp.Expr) {
		if locals[id] {
			continue
		}
		if _, ok := in.GlobalFrom(sp.Func, id); ok {
			continue
		}
		msg := fmt.Sprintf("--expr %q: no variable %s in %s or among the globals of %s", sp.Text, id, sp.Func, base)
		if hasGlob(sp.Func) {
			msg = fmt.Sprintf("--expr %q: no variable %s in the functions %s matches or among the globals of %s: it will be missing", sp.Text, id, sp.Func, base)
		}
		var names []string
		for n := range locals {
			names = append(names, n)
		}
		if near := nearest(id, names); near != "" {
			msg += fmt.Sprintf(": did you mean %q?", near)
		} else if len(names) > 0 {
			sort.Strings(names)
			if len(names) > 12 {
				names = append(names[:12], "...")
			}
			msg += "; its variables are " + strings.Join(names, ", ")
		}
		// A function pattern may match functions without the name: a
		// warning there, the value is missing at their samples.
		out = append(out, SpecProblem{msg, !hasGlob(sp.Func)})
	}
	// Fields, with the types the names have (when all their declarations
	// agree on one).
	vars := map[string]*dwarfx.Type{}
	ambiguous := map[string]bool{}
	for _, f := range fns {
		for _, v := range f.AllVariables() {
			if t, ok := vars[v.Name]; ok && t != v.Type() {
				ambiguous[v.Name] = true
			}
			vars[v.Name] = v.Type()
		}
	}
	typeOf := func(name string) *dwarfx.Type {
		if ambiguous[name] {
			return nil
		}
		if t, ok := vars[name]; ok {
			return t
		}
		if g, ok := in.GlobalFrom(sp.Func, name); ok {
			return g.Type()
		}
		return nil
	}
	col := len(sp.Prog) + len(sp.Func) + 2 // columns in the whole spec
	if msg := checkFields(sp.Expr, typeOf, in); msg != "" {
		out = append(out, SpecProblem{fmt.Sprintf("--expr %q: column %s", sp.Text, shiftCol(msg, col)), true})
	}
	for _, t := range typeNames(sp.Expr) {
		if _, ok := in.TypeNamed(t); !ok {
			msg := fmt.Sprintf("--expr %q: no type %s in %s", sp.Text, t, base)
			if near := nearest(strings.TrimRight(t, " *"), in.TypeNames()); near != "" {
				msg += fmt.Sprintf(": did you mean %q?", near)
			}
			out = append(out, SpecProblem{msg, true})
		}
	}
	return out
}

// checkFields finds the first member access of n that names no field of
// its struct or union, as "COL: MESSAGE"; "" when there is none or when a
// type is not known statically.
func checkFields(n expr.Node, typeOf func(string) *dwarfx.Type, in *dwarfx.Info) string {
	var msg string
	var typ func(expr.Node) *dwarfx.Type
	typ = func(n expr.Node) *dwarfx.Type {
		if msg != "" {
			return nil
		}
		switch n := n.(type) {
		case *expr.Ident:
			return typeOf(n.Name)
		case *expr.Cast:
			typ(n.X)
			t, _ := in.TypeNamed(n.Type)
			return t
		case *expr.Member:
			t := typ(n.X)
			if t == nil {
				return nil
			}
			u := t.Underlying()
			if n.Arrow {
				x := n.X.String()
				switch {
				case u.Kind == dwarfx.Pointer && (u.Elem == nil || u.Elem.Underlying().Kind == dwarfx.Void):
					msg = fmt.Sprintf("%d: %s points to void: cast it to the type it points to, e.g. ((struct T *)%s)", n.Col, x, x)
					return nil
				case u.Kind != dwarfx.Pointer && (t.IsScalar() || u.Kind == dwarfx.Struct || u.Kind == dwarfx.Union || u.Kind == dwarfx.Class):
					msg = fmt.Sprintf("%d: %s has type %s, not a pointer", n.Col, x, t.Name)
					if !t.IsScalar() {
						msg += ": use . for a member"
					}
					return nil
				case u.Kind != dwarfx.Pointer:
					return nil
				}
				u = u.Elem.Underlying()
			}
			if u.Kind != dwarfx.Struct && u.Kind != dwarfx.Union && u.Kind != dwarfx.Class {
				return nil
			}
			if len(u.Fields) == 0 {
				return nil // incomplete here: known only at the sample
			}
			f, ok := u.Field(n.Name)
			if !ok {
				var names []string
				for _, f := range u.Fields {
					if f.Name != "" {
						names = append(names, f.Name)
					}
				}
				msg = fmt.Sprintf("%d: %s has no field %s", n.Col, u.Name, n.Name)
				if near := nearest(n.Name, names); near != "" {
					msg += fmt.Sprintf(": did you mean %q?", near)
				} else {
					msg += "; its fields are " + strings.Join(names, ", ")
				}
				return nil
			}
			return f.Type
		case *expr.Index:
			t := typ(n.X)
			typ(n.I)
			if t == nil {
				return nil
			}
			if u := t.Underlying(); u.Kind == dwarfx.Array || u.Kind == dwarfx.Pointer {
				return u.Elem
			}
			return nil
		case *expr.Unary:
			t := typ(n.X)
			switch {
			case t == nil:
				return nil
			case n.Op == "*" && t.Underlying().Kind == dwarfx.Pointer:
				return t.Underlying().Elem
			case n.Op == "&":
				return dwarfx.PointerTo(t)
			}
			return nil
		case *expr.Binary:
			typ(n.X)
			typ(n.Y)
		}
		return nil
	}
	typ(n)
	return msg
}

// shiftCol adds off to the column "COL: ..." starts with.
func shiftCol(msg string, off int) string {
	c, rest, _ := strings.Cut(msg, ":")
	var col int
	fmt.Sscan(c, &col)
	return fmt.Sprintf("%d:%s", col+off, rest)
}

// typeNames lists the types an expression names in casts and sizeof.
func typeNames(n expr.Node) []string {
	var out []string
	var walk func(expr.Node)
	walk = func(n expr.Node) {
		switch n := n.(type) {
		case *expr.Cast:
			out = append(out, n.Type)
			walk(n.X)
		case *expr.Sizeof:
			if n.Type != "" {
				out = append(out, n.Type)
			} else if !n.Ambiguous {
				walk(n.X)
			}
		case *expr.Member:
			walk(n.X)
		case *expr.Index:
			walk(n.X)
			walk(n.I)
		case *expr.Unary:
			walk(n.X)
		case *expr.Binary:
			walk(n.X)
			walk(n.Y)
		}
	}
	walk(n)
	return out
}

func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// misspelt reports whether a name looks like a misspelling of another:
// one edit away (a transposition is one), two for names of 5 letters or
// more, three from 9.
func misspelt(a, b string) bool {
	d, n := distance(a, b), min(len(a), len(b))
	return n >= 2 && d > 0 && (d == 1 || d == 2 && n >= 5 || d == 3 && n >= 9)
}

// nearest returns the name closest to a that close accepts, or "".
func nearest(a string, names []string) string {
	best, bd := "", 1<<30
	for _, n := range names {
		if d := distance(a, n); misspelt(a, n) && (d < bd || d == bd && n < best) {
			best, bd = n, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1) // a transposition
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// hasSymbol reports whether the ELF file defines a symbol called name.
func hasSymbol(file, name string) bool {
	f, err := elf.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := get()
		for _, s := range syms {
			if s.Name == name && s.Section != elf.SHN_UNDEF {
				return true
			}
		}
	}
	return false
}
