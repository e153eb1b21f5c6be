package schema

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/dwarfx"
)

// Tags are vProf's schema tags: how the program uses a variable.
type Tags uint8

const (
	Loop Tags = 1 << iota // a loop induction variable
	Cond                  // read by a branch condition
	Args                  // passed as a call argument
)

// TagSep joins tags in a schema file. It cannot clash with the CSV commas
// (vProf's own schema used it too: "cond|args").
const TagSep = "|"

var tagNames = []struct {
	t    Tags
	name string
}{{Loop, "loop"}, {Cond, "cond"}, {Args, "args"}}

// Join returns the tags joined by sep, or "none".
func (t Tags) Join(sep string) string {
	var parts []string
	for _, n := range tagNames {
		if t&n.t != 0 {
			parts = append(parts, n.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, sep)
}

// String returns the tags as written in a schema file: "loop|cond", "none".
func (t Tags) String() string { return t.Join(TagSep) }

// ParseTags reads tags separated by |, ; , or spaces; "none" or "" is no tag.
// "branch" is read as cond and "arg" as args, as vProf's paper spells them.
func ParseTags(s string) (Tags, error) {
	var t Tags
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == ';' || r == ',' || r == ' ' || r == '\t' }) {
		switch strings.ToLower(w) {
		case "loop":
			t |= Loop
		case "cond", "branch":
			t |= Cond
		case "args", "arg":
			t |= Args
		case "none":
		default:
			return 0, fmt.Errorf("unknown tag %q (tags are loop, cond, args or none, joined by %s)", w, TagSep)
		}
	}
	return t, nil
}

// Global is the function field of a global variable.
const Global = "#global"

// Entry is one variable of a schema: one line of the file.
type Entry struct {
	File     string // declaring file, as DWARF names it
	Function string // the function whose frame holds it, or Global
	Line     int    // declaring line
	Variable string // its name; a member of a global struct is "cfg.limit"
	Type     string // its C type, e.g. "long int", "struct job *"
	Tags     Tags
}

// IsGlobal reports whether the entry is a global (static storage).
func (e Entry) IsGlobal() bool { return e.Function == Global }

// Key identifies a variable: function, name, declaring file and line.
type Key struct {
	Function, Variable, File string
	Line                     int
}

// Key returns the entry's key.
func (e Entry) Key() Key {
	return Key{Function: e.Function, Variable: e.Variable, File: e.File, Line: e.Line}
}

func (e Entry) String() string {
	who := e.Variable
	if !e.IsGlobal() {
		who = e.Function + ":" + e.Variable
	}
	return fmt.Sprintf("%s (%s:%d)", who, filepath.Base(e.File), e.Line)
}

// Schema lists the variables worth watching in one binary.
type Schema struct {
	Binary    string // the binary it was made from (as given)
	BuildID   string // its GNU build-id, hex; "" when unknown (a hand-written schema)
	Component string // the --component prefix it was restricted to, if any
	Entries   []Entry

	byKey map[Key]int
}

// ID returns the schema's identity: a hash of its entries (file, function,
// line, variable, type and tags), in any order, as 32 hex digits. Two
// schemas with the same ID list the same variables with the same tags,
// whatever binary path, build-id or comments they carry, so a recording can
// say which schema its values were sampled with.
func (s *Schema) ID() string {
	lines := make([]string, len(s.Entries))
	for i, e := range s.Entries {
		lines[i] = strings.Join([]string{e.File, e.Function, strconv.Itoa(e.Line), e.Variable, e.Type, e.Tags.String()}, "\x00")
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		io.WriteString(h, l)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Len returns the number of variables.
func (s *Schema) Len() int { return len(s.Entries) }

// Lookup finds a variable's entry.
func (s *Schema) Lookup(k Key) (Entry, bool) {
	if s.byKey == nil {
		s.index()
	}
	i, ok := s.byKey[k]
	if !ok {
		return Entry{}, false
	}
	return s.Entries[i], true
}

func (s *Schema) index() {
	s.byKey = make(map[Key]int, len(s.Entries))
	for i, e := range s.Entries {
		if _, dup := s.byKey[e.Key()]; !dup {
			s.byKey[e.Key()] = i
		}
	}
}

// Counts returns how many globals and locals the schema lists, and how many
// carry each tag.
func (s *Schema) Counts() (globals, locals, loop, cond, args int) {
	for _, e := range s.Entries {
		if e.IsGlobal() {
			globals++
		} else {
			locals++
		}
		if e.Tags&Loop != 0 {
			loop++
		}
		if e.Tags&Cond != 0 {
			cond++
		}
		if e.Tags&Args != 0 {
			args++
		}
	}
	return
}

// Header lines: "# key: value" comments that Parse reads back.
const (
	magic     = "# culprit schema 1"
	hdrBinary = "binary"
	hdrBuild  = "build-id"
	hdrComp   = "component"
)

// Write writes the schema: header comments (format, binary, build-id), a
// comment naming the columns, then one CSV line per variable
// (file,function,line,variable,type,tags), quoted where a field holds a
// comma or a quote.
func (s *Schema) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, magic)
	fmt.Fprintf(bw, "# %s: %s\n", hdrBinary, s.Binary)
	if s.BuildID != "" {
		fmt.Fprintf(bw, "# %s: %s\n", hdrBuild, s.BuildID)
	}
	if s.Component != "" {
		fmt.Fprintf(bw, "# %s: %s\n", hdrComp, s.Component)
	}
	g, l, lo, c, a := s.Counts()
	fmt.Fprintf(bw, "# %d variables: %d globals, %d locals; tagged loop %d, cond %d, args %d\n", g+l, g, l, lo, c, a)
	fmt.Fprintf(bw, "# Lines starting with # are comments. Tags: loop, cond, args joined by %s, or none.\n", TagSep)
	fmt.Fprintln(bw, "# Delete lines to sample fewer variables; keep the build-id line to have the binary checked.")
	fmt.Fprintln(bw, "# file,function,line,variable,type,tags")
	cw := csv.NewWriter(bw)
	for _, e := range s.Entries {
		if err := cw.Write([]string{e.File, e.Function, strconv.Itoa(e.Line), e.Variable, e.Type, e.Tags.String()}); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return bw.Flush()
}

// Parse reads a schema. Lines starting with # are comments, except that
// "# binary:", "# build-id:" and "# component:" are read back. Each other
// line has six comma-separated fields (CSV quoting allowed).
func Parse(r io.Reader) (*Schema, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	s := &Schema{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case hdrBinary:
			s.Binary = v
		case hdrBuild:
			s.BuildID = strings.ToLower(v)
		case hdrComp:
			s.Component = v
		}
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	seen := map[Key]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a schema (lines file,function,line,variable,type,tags): %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != 6 {
			return nil, fmt.Errorf("line %d: %d fields, want 6: file,function,line,variable,type,tags", line, len(rec))
		}
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		n, err := strconv.Atoi(rec[2])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("line %d: declaring line %q is not a number", line, rec[2])
		}
		if rec[1] == "" || rec[3] == "" {
			return nil, fmt.Errorf("line %d: the function (or %s) and the variable name are required", line, Global)
		}
		t, err := ParseTags(rec[5])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		e := Entry{File: rec[0], Function: rec[1], Line: n, Variable: rec[3], Type: rec[4], Tags: t}
		if prev, dup := seen[e.Key()]; dup {
			return nil, fmt.Errorf("line %d: %s is listed twice (also line %d)", line, e, prev)
		}
		seen[e.Key()] = line
		s.Entries = append(s.Entries, e)
	}
	return s, nil
}

// ReadFile reads a schema file.
func ReadFile(path string) (*Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(s.Entries) == 0 {
		return nil, fmt.Errorf("%s: no variables (lines file,function,line,variable,type,tags); make one with culprit schema BINARY -o %s", path, path)
	}
	return s, nil
}

// sortEntries orders entries by file, function (globals first), line and
// name.
func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.IsGlobal() != b.IsGlobal() {
			return a.IsGlobal()
		}
		if a.Function != b.Function {
			return a.Function < b.Function
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Variable < b.Variable
	})
}

// MismatchError says that a schema does not describe a binary.
type MismatchError struct {
	Schema, Binary string // the schema file and the binary's path
	Want, Got      string // build-ids, when they differ
	Missing        []Entry
}

func (e *MismatchError) Error() string {
	regen := fmt.Sprintf("regenerate it with: culprit schema %s -o %s", e.Binary, e.Schema)
	if e.Want != "" {
		got := e.Got
		if got == "" {
			got = "none"
		}
		return fmt.Sprintf("schema %s does not match %s: it was made for build-id %s, the binary has build-id %s; %s "+
			"(or delete its build-id line to match variables by name)", e.Schema, e.Binary, e.Want, got, regen)
	}
	var names []string
	for i, m := range e.Missing {
		if i == 5 {
			names = append(names, fmt.Sprintf("… %d more", len(e.Missing)-5))
			break
		}
		names = append(names, m.String())
	}
	what := fmt.Sprintf("%d of its variables are", len(e.Missing))
	if len(e.Missing) == 1 {
		what = "1 of its variables is"
	}
	return fmt.Sprintf("schema %s does not match %s: %s not in the binary's DWARF (%s); %s",
		e.Schema, e.Binary, what, strings.Join(names, ", "), regen)
}

// ErrMismatch is matched by errors.Is for a *MismatchError.
var ErrMismatch = errors.New("schema does not match the binary")

func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// Check verifies that the schema describes the ELF binary at path: the
// same build-id when the schema records one, else every variable it lists
// present in the binary's DWARF. file names the schema in errors.
func (s *Schema) Check(path, file string) error {
	got := hex.EncodeToString(elfx.FileBuildID(path))
	if s.BuildID != "" {
		if got != s.BuildID {
			return &MismatchError{Schema: file, Binary: path, Want: s.BuildID, Got: got}
		}
		return nil
	}
	have, err := variablesOf(path)
	if err != nil {
		return err
	}
	var missing []Entry
	for _, e := range s.Entries {
		if !have[e.Key()] {
			missing = append(missing, e)
		}
	}
	if len(missing) > 0 {
		return &MismatchError{Schema: file, Binary: path, Missing: missing}
	}
	return nil
}

// variablesOf returns the keys of every scalar variable of a binary that a
// schema may list: globals (and members of global structs) and the locals
// and parameters of every function.
func variablesOf(path string) (map[Key]bool, error) {
	info, err := dwarfx.Open(path)
	if err != nil {
		if f, ferr := elf.Open(path); ferr == nil {
			defer f.Close()
			if !elfx.HasDWARF(f) {
				return nil, &NoDWARFError{Path: path}
			}
		}
		return nil, err
	}
	have := map[Key]bool{}
	for _, v := range info.Globals() {
		if v.Type() == nil {
			continue
		}
		have[Key{Function: Global, Variable: v.Name, File: v.DeclFile, Line: v.DeclLine}] = true
		if u := v.Type().Underlying(); u.Kind == dwarfx.Struct {
			for _, fl := range u.Fields {
				have[Key{Function: Global, Variable: v.Name + "." + fl.Name, File: v.DeclFile, Line: v.DeclLine}] = true
			}
		}
	}
	for _, fn := range info.Functions() {
		for _, v := range fn.AllVariables() {
			if !v.IsGlobal {
				have[Key{Function: fn.Name, Variable: v.Name, File: v.DeclFile, Line: v.DeclLine}] = true
			}
		}
	}
	return have, nil
}
