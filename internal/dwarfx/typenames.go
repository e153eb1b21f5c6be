package dwarfx

import (
	"debug/dwarf"
	"sort"
	"strings"
	"sync"
)

// typeNames indexes the named types declared at the top level of the
// units: "struct list", "union value", "enum color", typedef names and
// base types ("int", "unsigned long"), each to its first complete
// definition.
type typeNames struct {
	once   sync.Once
	byName map[string]dwarf.Offset
}

// TypeNamed returns the type a C type name denotes in the object: "struct
// list", "union u", "enum color", a typedef ("list", "size_t") or a base
// type ("int", "unsigned long", "char"); a trailing "*" (any number) makes
// a pointer to it. Qualifiers (const, volatile) are ignored. The first call
// reads every unit's top-level type declarations.
func (i *Info) TypeNamed(name string) (*Type, bool) {
	base, ptrs := splitPointers(name)
	if base == "" {
		return nil, false
	}
	i.names.once.Do(i.indexTypeNames)
	var t *Type
	if base == "void" {
		t = voidType
	} else {
		off, ok := i.names.byName[base]
		if !ok {
			off, ok = i.names.byName[canonBase(base)]
		}
		if !ok {
			return nil, false
		}
		t = i.typeAt(off)
		if t.Kind == Invalid {
			return nil, false
		}
	}
	for ; ptrs > 0; ptrs-- {
		t = PointerTo(t)
	}
	return t, true
}

// TypeNames lists the names TypeNamed knows, sorted (for suggestions).
func (i *Info) TypeNames() []string {
	i.names.once.Do(i.indexTypeNames)
	out := make([]string, 0, len(i.names.byName))
	for n := range i.names.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// PointerTo makes the type "pointer to t".
func PointerTo(t *Type) *Type {
	name := t.Name + " *"
	if strings.HasSuffix(t.Name, "*") {
		name = t.Name + "*"
	}
	return &Type{Kind: Pointer, Name: name, Size: 8, Elem: t}
}

// splitPointers splits "struct list **" into "struct list" and 2, dropping
// qualifiers and normalising spaces.
func splitPointers(name string) (string, int) {
	ptrs := 0
	name = strings.TrimSpace(name)
	for strings.HasSuffix(name, "*") {
		ptrs++
		name = strings.TrimSpace(strings.TrimSuffix(name, "*"))
	}
	var words []string
	for _, w := range strings.Fields(name) {
		if w != "const" && w != "volatile" && w != "restrict" {
			words = append(words, w)
		}
	}
	return strings.Join(words, " "), ptrs
}

// canonBase spells C's integer type names as GCC's DWARF does ("long" is
// "long int", "unsigned" is "unsigned int").
func canonBase(s string) string {
	switch s {
	case "long", "signed long", "long signed int", "signed long int":
		return "long int"
	case "unsigned long", "long unsigned", "long unsigned int":
		return "long unsigned int"
	case "unsigned", "unsigned int", "signed":
		if s == "signed" {
			return "int"
		}
		return "unsigned int"
	case "short", "signed short", "short signed int", "signed short int":
		return "short int"
	case "unsigned short", "short unsigned", "short unsigned int":
		return "short unsigned int"
	case "long long", "signed long long", "long long signed int":
		return "long long int"
	case "unsigned long long", "long long unsigned":
		return "long long unsigned int"
	case "unsigned char":
		return "unsigned char"
	case "bool":
		return "_Bool"
	}
	return s
}

func (i *Info) indexTypeNames() {
	i.names.byName = map[string]dwarf.Offset{}
	i.mu.Lock()
	defer i.mu.Unlock()
	defer func() { _ = recover() }() // debug/dwarf on malformed input: keep what was read
	for _, u := range i.units {
		r := i.d.Reader()
		r.Seek(u.dieOff)
		cu, err := r.Next()
		if err != nil || cu == nil || !cu.Children {
			continue
		}
		for {
			e, err := r.Next()
			if err != nil || e == nil || e.Tag == 0 {
				break
			}
			if e.Children {
				r.SkipChildren()
			}
			name, _ := e.Val(dwarf.AttrName).(string)
			if name == "" {
				continue
			}
			if decl, _ := e.Val(dwarf.AttrDeclaration).(bool); decl {
				continue
			}
			key := ""
			switch e.Tag {
			case dwarf.TagStructType:
				key = "struct " + name
			case dwarf.TagUnionType:
				key = "union " + name
			case dwarf.TagEnumerationType:
				key = "enum " + name
			case dwarf.TagClassType, dwarf.TagTypedef, dwarf.TagBaseType:
				key = name
			default:
				continue
			}
			if _, ok := i.names.byName[key]; !ok {
				i.names.byName[key] = e.Offset
			}
			if e.Tag == dwarf.TagClassType || e.Tag == dwarf.TagStructType && i.isGo {
				if _, ok := i.names.byName[name]; !ok {
					i.names.byName[name] = e.Offset
				}
			}
		}
	}
}

// FunctionNames reports the names of every function the object's DWARF
// describes, inlined-only ones included (DW_AT_name of each subprogram).
// The first call reads every unit.
func (i *Info) FunctionNames() map[string]bool {
	i.fnNames.once.Do(func() {
		m := map[string]bool{}
		i.mu.Lock()
		defer i.mu.Unlock()
		defer func() { _ = recover() }() // debug/dwarf on malformed input: keep what was read
		r := i.d.Reader()
		for {
			e, err := r.Next()
			if err != nil || e == nil {
				break
			}
			if e.Tag == dwarf.TagSubprogram {
				if n, _ := e.Val(dwarf.AttrName).(string); n != "" {
					m[n] = true
				}
			}
		}
		i.fnNames.m = m
	})
	return i.fnNames.m
}

type nameSet struct {
	once sync.Once
	m    map[string]bool
}
