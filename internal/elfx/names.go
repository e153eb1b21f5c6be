package elfx

import (
	"debug/dwarf"
	"debug/elf"
	"path"
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// cloneSuffixes are the suffixes GCC (and LLVM) append to a function's
// symbol when it emits a specialised or split copy of it. Those with a
// numbered form take ".N" after the word (".constprop.0"); ".cold" may stand
// alone or be numbered too.
var cloneSuffixes = []string{
	"constprop", "isra", "part", "cold", "lto_priv", "localalias", "clone",
	"llvm",
}

// CleanName turns a raw symbol name into the source function name: clone
// suffixes (.constprop.N, .isra.N, .part.N, .cold, .lto_priv.N, ... in any
// combination) and symbol versions (@@GLIBC_2.34) are removed and C++/Rust
// names are demangled in simplified
// form (no parameters, no template arguments).
func CleanName(symbol string) string {
	name := stripVersion(symbol)
	name = StripClones(name)
	if IsMangled(name) {
		if d := demangleName(name); d != "" {
			return d
		}
	}
	return name
}

func demangleName(name string) (out string) {
	defer func() {
		if recover() != nil {
			out = ""
		}
	}()
	opts := []demangle.Option{demangle.NoParams, demangle.NoEnclosingParams, demangle.NoTemplateParams}
	if d := demangle.Filter(name, opts...); d != name {
		return d
	}
	if strings.HasPrefix(name, "__Z") { // Mach-O style extra underscore
		if d := demangle.Filter(name[1:], opts...); d != name[1:] {
			return d
		}
	}
	return ""
}

// Demangle returns the full demangled form of a C++ or Rust symbol, with
// its parameters and template arguments, and a clone's suffix as
// "[clone .constprop.0]" (c++filt's output); the symbol itself when it is
// not mangled or does not demangle.
func Demangle(symbol string) (out string) {
	defer func() {
		if recover() != nil {
			out = symbol
		}
	}()
	return demangle.Filter(stripVersion(symbol))
}

// stripTemplateArgs removes the template arguments that end a C++
// function's DW_AT_name ("f<int, 3>" → "f"); an operator's name
// ("operator<<", "operator<=>") is kept.
func stripTemplateArgs(name string) string {
	if !strings.HasSuffix(name, ">") || strings.HasPrefix(name, "operator") {
		return name
	}
	depth := 0
	for i := len(name) - 1; i >= 0; i-- {
		switch name[i] {
		case '>':
			depth++
		case '<':
			depth--
			if depth == 0 {
				if i == 0 {
					return name
				}
				return name[:i]
			}
		}
	}
	return name
}

// StripClones removes trailing clone suffixes: "f.constprop.0.isra.0" → "f",
// "f.cold" → "f", "f.part.0.cold.1" → "f". A name that would become empty is
// returned unchanged.
func StripClones(s string) string {
	for {
		t := stripOneClone(s)
		if t == s || t == "" {
			return s
		}
		s = t
	}
}

// IsPartClone reports whether symbol names the outlined part of a function
// that GCC's partial inlining split ("f.part.0", also "f.part.0.isra.0" or
// "f.constprop.0.part.0"): code of f that f's head, kept in f or inlined
// into f's callers, calls. The suffixes are read as StripClones removes them.
func IsPartClone(symbol string) bool {
	s := stripVersion(symbol)
	for {
		t := stripOneClone(s)
		if t == s || t == "" {
			return false
		}
		if w := s[len(t)+1:]; w == "part" || strings.HasPrefix(w, "part.") {
			return true
		}
		s = t
	}
}

func stripOneClone(s string) string {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 {
		return s
	}
	last := s[i+1:]
	if isDigits(last) {
		// "<word>.N": look at the word before the number.
		j := strings.LastIndexByte(s[:i], '.')
		if j <= 0 {
			return s
		}
		if isCloneWord(s[j+1 : i]) {
			return s[:j]
		}
		return s
	}
	if isCloneWord(last) {
		return s[:i]
	}
	return s
}

func isCloneWord(w string) bool {
	for _, c := range cloneSuffixes {
		if w == c {
			return true
		}
	}
	return false
}

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// IsMangled reports whether name looks like an Itanium C++ or Rust mangled
// name.
func IsMangled(name string) bool {
	return strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_R") || strings.HasPrefix(name, "__Z")
}

// stripVersion removes an ELF symbol version: "memcpy@@GLIBC_2.14" and
// "foo@VERS_1" → the name. Names that merely contain '@' (JIT perf-map
// entries such as "LazyCompile:foo /x.js@1") are left alone.
func stripVersion(s string) string {
	i := strings.IndexByte(s, '@')
	if i <= 0 || strings.ContainsAny(s, " \t/:") {
		return s
	}
	v := strings.TrimPrefix(s[i+1:], "@")
	if v == "" {
		return s
	}
	for j := 0; j < len(v); j++ {
		c := v[j]
		if !(c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return s
		}
	}
	return s[:i]
}

// IsGo reports whether f was built by the Go toolchain. Go's DWARF names
// are package-qualified already ("main.worker") and are used as they are.
func IsGo(f *elf.File) bool {
	return f.Section(".gopclntab") != nil || f.Section(".go.buildinfo") != nil || f.Section(".note.go.buildid") != nil
}

// AttrMIPSLinkageName is DW_AT_MIPS_linkage_name, which GCC emitted before
// DWARF 4 named DW_AT_linkage_name.
const AttrMIPSLinkageName dwarf.Attr = 0x2007

// DIENames is what naming a function needs of one DIE.
type DIENames struct {
	Name    string       // DW_AT_name
	Linkage string       // DW_AT_linkage_name (or DW_AT_MIPS_linkage_name)
	Ref     dwarf.Offset // DW_AT_abstract_origin, else DW_AT_specification; 0 if none

	// CXX: FuncWalker met the DIE in a C++ unit, inside the namespaces
	// Scope ("leveldb::"; "" at the top).
	CXX   bool
	Scope string

	// DW_AT_decl_file (an index in the unit's file table), DW_AT_decl_line
	// and DW_AT_decl_column; DeclLine 0 when the DIE has none.
	DeclFile, DeclLine, DeclColumn int64
}

// NamesOf reads the naming attributes of e.
func NamesOf(e *dwarf.Entry) DIENames {
	var n DIENames
	n.Name, _ = e.Val(dwarf.AttrName).(string)
	n.Linkage, _ = e.Val(dwarf.AttrLinkageName).(string)
	if n.Linkage == "" {
		n.Linkage, _ = e.Val(AttrMIPSLinkageName).(string)
	}
	if l, ok := e.Val(dwarf.AttrDeclLine).(int64); ok && l > 0 {
		n.DeclLine = l
		n.DeclFile, _ = e.Val(dwarf.AttrDeclFile).(int64)
		n.DeclColumn, _ = e.Val(dwarf.AttrDeclColumn).(int64)
	}
	if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
		n.Ref = o
	} else if o, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset); ok {
		n.Ref = o
	}
	return n
}

// FuncName returns the source name of the subprogram or inlined-subroutine
// DIE at off, which get reads (false when it cannot). It is the one naming
// rule of the symbolizer's frames and of the functions variables are
// sampled in, so that the two always agree:
//
//   - a mangled linkage name carries the qualified C++ or Rust name that
//     DW_AT_name lacks: it is demangled (CleanName);
//   - else DW_AT_name, without clone suffixes (a clone's DIE names itself
//     rarely; its abstract origin does); in C++, after the namespaces it
//     is declared in and without its template arguments, as the demangled
//     linkage name would read: GCC gives no linkage name to a function
//     without linkage (static, in an anonymous namespace, or a template
//     instance over a local type such as a lambda), so that
//     "DecodeEntry" inlined reads "leveldb::DecodeEntry" and
//     "__invoke_impl<void, main(int, char**)::<lambda()> >" reads
//     "std::__invoke_impl";
//   - else the name of the DIE it completes (DW_AT_abstract_origin,
//     DW_AT_specification), by the same rule;
//   - else an unmangled linkage name, an assembler label (glibc's
//     __GI___libc_malloc), cleaned.
//
// In Go objects (isGo) names are taken as they are. References are followed
// at most 8 deep.
func FuncName(off dwarf.Offset, isGo bool, get func(dwarf.Offset) (DIENames, bool)) string {
	return funcName(off, isGo, get, 0)
}

func funcName(off dwarf.Offset, isGo bool, get func(dwarf.Offset) (DIENames, bool), depth int) string {
	if depth > 8 {
		return ""
	}
	n, ok := get(off)
	if !ok {
		return ""
	}
	if n.Linkage != "" && !isGo && IsMangled(n.Linkage) {
		if c := CleanName(n.Linkage); c != n.Linkage {
			return c
		}
	}
	if n.Name != "" {
		if isGo {
			return n.Name
		}
		if n.CXX {
			return n.Scope + stripTemplateArgs(StripClones(n.Name))
		}
		return StripClones(n.Name)
	}
	if n.Ref != 0 && n.Ref != off {
		if r := funcName(n.Ref, isGo, get, depth+1); r != "" {
			return r
		}
	}
	if n.Linkage != "" {
		if isGo {
			return n.Linkage
		}
		return CleanName(n.Linkage)
	}
	return ""
}

// MatchName reports whether glob (path.Match syntax) names the function
// called name, as a debugger's breakpoint does: a glob names a function in
// any enclosing scope, so "area" and "Square::area" name
// "geo::Square::area" and "add" names "geo::Accum<long>::add(long)"; a
// glob that starts with "::" is anchored at the outermost scope
// ("::area" names only a function called area in no namespace or class).
// A C name has no scopes: only the glob that matches it whole names it.
func MatchName(glob, name string) bool {
	if g, ok := strings.CutPrefix(glob, "::"); ok {
		m, _ := path.Match(g, name)
		return m
	}
	if !strings.Contains(name, "::") {
		m, _ := path.Match(glob, name)
		return m
	}
	for _, s := range scopeTails(name) {
		if m, _ := path.Match(glob, s); m {
			return true
		}
	}
	return false
}

// scopeTails returns name and each tail of it that follows a "::" outside
// template arguments and parameter lists: "ns::F<std::string>::g(int)" →
// itself, "F<std::string>::g(int)", "g(int)".
func scopeTails(name string) []string {
	out := []string{name}
	depth := 0
	for i := 0; i+1 < len(name); i++ {
		switch name[i] {
		case '<', '(', '[':
			depth++
		case '>', ')', ']':
			depth = max(depth-1, 0)
		case ':':
			if depth == 0 && name[i+1] == ':' && i+2 < len(name) {
				out = append(out, name[i+2:])
				i++
			}
		}
	}
	return out
}
