package symbol

import (
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
	name = stripClones(name)
	if isMangled(name) {
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

// stripClones removes trailing clone suffixes: "f.constprop.0.isra.0" → "f",
// "f.cold" → "f", "f.part.0.cold.1" → "f". A name that would become empty is
// returned unchanged.
func stripClones(s string) string {
	for {
		t := stripOneClone(s)
		if t == s || t == "" {
			return s
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

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isMangled reports whether name looks like an Itanium C++ or Rust mangled
// name.
func isMangled(name string) bool {
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
