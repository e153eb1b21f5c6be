package state

import (
	"encoding/hex"
	"github.com/culprit-dev/culprit/internal/elfx"
	"path/filepath"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/schema"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Value sampling (vProf): at each sample, the value of every schema
// variable that is live at the sampled PC and at the call-site PCs of the
// Depth caller frames, and of the executable's schema globals (struct
// members included) when memory can be read at the sample. The schema
// (package schema) says which variables and carries their tags into the
// ValueSource records. The objects sampled are the program's: the main
// executable and the shared libraries that carry their own DWARF (the
// program's own libraries and plug-ins, built with -g; a distribution's
// libraries have theirs stripped into separate files, and their variables
// are not the program's); with a given schema, the object it describes.

type valueVar struct {
	v      *dwarfx.Variable
	member string // for a member of a struct global: its field name
	field  dwarfx.Field
	tags   string // schema tags, "loop,cond" or "none"
	// addr is a global's ELF address when its location is a plain address
	// (evaluated once instead of at every sample); 0: evaluate.
	addr uint64
}

type valueState struct {
	depth   int
	schema  *schema.Schema        // given: only the executable it describes is sampled; nil: generated per executable
	exes    map[string]*exeSchema // by executable path; nil value: not sampled
	globals map[string][]valueVar // by object path; nil map: globals are not sampled
	ids     map[valueKey]uint32
	same    map[[2]string]bool // sameFile answers: it resolves symbolic links with system calls
	objs    map[string]bool    // sampled answers for objects other than the executable
}

// sampled reports whether the variables of the object at path are sampled
// in a process whose executable is exe.
func (v *valueState) sampled(path, exe string) bool {
	if filepath.Clean(path) == filepath.Clean(exe) || v.sameFile(path, exe) {
		return true
	}
	ok, seen := v.objs[path]
	if !seen {
		if v.schema != nil {
			ok = schemaFor(v.schema, path)
		} else {
			ok = elfx.FileHasDWARF(path)
		}
		if v.objs == nil {
			v.objs = map[string]bool{}
		}
		v.objs[path] = ok
	}
	return ok
}

// exeSchema is the schema of one executable, resolved against its DWARF.
type exeSchema struct {
	s      *schema.Schema
	id     string                      // s.ID(), carried by the ValueSource records
	locals map[*dwarfx.Variable]string // tags of a local in the schema ("" : not in it)
}

type valueKey struct {
	v      *dwarfx.Variable
	member string
}

// ValueOptions configure value sampling.
type ValueOptions struct {
	// Depth is the number of caller frames whose variables are sampled too
	// (vProf's virtual stack unwinding); negative: 3.
	Depth int
	// Globals samples globals, which needs memory as it is at the sample (a
	// stopped thread, or a snapshot taken with the sample).
	Globals bool
	// Schema lists the variables to sample and their tags; only the
	// executable it describes (by build-id, else by path) is sampled. nil:
	// each executable's schema is generated when it is first sampled
	// (schema.ForExecutable).
	Schema *schema.Schema
}

// EnableValues turns on value sampling.
func (s *Sampler) EnableValues(o ValueOptions) {
	if o.Depth < 0 {
		o.Depth = 3
	}
	s.values = &valueState{depth: o.Depth, schema: o.Schema, exes: map[string]*exeSchema{}, ids: map[valueKey]uint32{}}
	if o.Globals {
		s.values.globals = map[string][]valueVar{}
	}
}

// exeSchema returns the schema of an executable, nil when its variables are
// not sampled (another binary than the schema's, or no DWARF).
func (s *Sampler) exeSchema(exe string) *exeSchema {
	if es, ok := s.values.exes[exe]; ok {
		return es
	}
	// The same file under another name: its schema is made once (making
	// it takes seconds for a big program, while samples wait).
	real := resolved(exe)
	if es, ok := s.values.exes[real]; ok {
		s.values.exes[exe] = es
		return es
	}
	var sc *schema.Schema
	if s.values.schema != nil {
		if schemaFor(s.values.schema, exe) {
			sc = s.values.schema
		}
	} else if g, err := schema.ForExecutable(exe); err == nil {
		sc = g
	}
	var es *exeSchema
	if sc != nil {
		es = &exeSchema{s: sc, id: sc.ID(), locals: map[*dwarfx.Variable]string{}}
	}
	s.values.exes[exe], s.values.exes[real] = es, es
	return es
}

// schemaFor reports whether a given schema describes the executable: the
// same build-id, or the same file when the schema has none.
func schemaFor(sc *schema.Schema, exe string) bool {
	if sc.BuildID != "" {
		return hex.EncodeToString(elfx.FileBuildID(exe)) == sc.BuildID
	}
	return sc.Binary != "" && (filepath.Clean(sc.Binary) == filepath.Clean(exe) || sameFile(sc.Binary, exe))
}

// localTags returns the schema tags of a local of function fn, "" when the
// schema does not list it.
func (es *exeSchema) localTags(v *dwarfx.Variable, fn string) string {
	if t, ok := es.locals[v]; ok {
		return t
	}
	t := ""
	if e, ok := es.s.Lookup(schema.Key{Function: fn, Variable: v.Name, File: v.DeclFile, Line: v.DeclLine}); ok {
		t = e.Tags.Join(",")
	}
	es.locals[v] = t
	return t
}

// schemaGlobals returns the globals of an object that the schema lists.
func (es *exeSchema) schemaGlobals(in *dwarfx.Info) []valueVar {
	var out []valueVar
	for _, vv := range scalarGlobals(in) {
		name := vv.v.Name
		if vv.member != "" {
			name += "." + vv.member
		}
		if e, ok := es.s.Lookup(schema.Key{Function: schema.Global, Variable: name, File: vv.v.DeclFile, Line: vv.v.DeclLine}); ok {
			vv.tags = e.Tags.Join(",")
			vv.addr = globalAddr(vv.v)
			out = append(out, vv)
		}
	}
	return out
}

// scalarGlobals lists the globals of an object worth watching: scalars and
// pointers, and the scalar members of struct globals.
func scalarGlobals(in *dwarfx.Info) []valueVar {
	var out []valueVar
	for _, g := range in.Globals() {
		if g.Artificial || g.Type() == nil {
			continue
		}
		t := g.Type().Underlying()
		switch {
		case t.IsScalar():
			out = append(out, valueVar{v: g})
		case t.Kind == dwarfx.Struct:
			for _, f := range t.Fields {
				if f.Name != "" && f.Type != nil && f.Type.IsScalar() && f.BitSize == 0 {
					out = append(out, valueVar{v: g, member: f.Name, field: f})
				}
			}
		}
	}
	return out
}

func (s *Sampler) valueSource(es *exeSchema, vv valueVar, fn string) []recording.Record {
	k := valueKey{vv.v, vv.member}
	if _, ok := s.values.ids[k]; ok {
		return nil
	}
	id := s.nextID
	s.nextID++
	s.values.ids[k] = id
	t := vv.v.Type()
	name := vv.v.Name
	switch {
	case vv.member == derefMember:
		name = "*" + name
		t = pointee(t)
	case vv.member != "":
		name += "." + vv.member
		t = vv.field.Type
	}
	tags := vv.tags
	if tags == "" {
		tags = "none"
	}
	src := &recording.ValueSource{ID: id, Class: recording.SourceVariable, Name: name, Function: fn,
		File: vv.v.DeclFile, Line: vv.v.DeclLine, Type: t.Name, Tags: tags,
		Global: vv.v.IsGlobal, Pointer: t.Underlying().Kind == dwarfx.Pointer, Schema: es.id}
	if vv.v.IsGlobal {
		src.Function = "#global"
	}
	return []recording.Record{src}
}

// sampleValues appends the values of the thread's variables.
func (s *Sampler) sampleValues(st *stackEnv, out []recording.Record) []recording.Record {
	th := st.th
	exe := filepath.Clean(th.Exe)
	for _, at := range st.located {
		if at.depth > s.values.depth {
			break
		}
		isExe := filepath.Clean(at.obj) == exe || s.values.sameFile(at.obj, exe)
		if !isExe && !s.values.sampled(at.obj, exe) {
			continue // not one of the program's objects
		}
		es := s.exeSchema(at.obj)
		if es == nil {
			continue // not a binary of the schema, or no DWARF
		}
		env := st.env(at)
		for _, v := range at.fn.Variables(at.pc) {
			if v.IsGlobal || v.Type() == nil || !v.Type().IsScalar() {
				continue
			}
			tags := es.localTags(v, at.fn.Name)
			if tags == "" {
				continue // not in the schema
			}
			if _, ok := env.location(v); !ok {
				continue // not live here: not sampled (as vProf)
			}
			out = append(out, s.valueSource(es, valueVar{v: v, tags: tags}, at.fn.Name)...)
			o, err := env.Var(v.Name)
			var sc expr.Scalar
			if err == nil {
				sc, err = o.Scalar()
			}
			out = append(out, value(th, s.values.ids[valueKey{v, ""}], at.depth, sc, err))
			if pointee(v.Type()) != nil {
				// A pointer to a scalar: its target's value too (*p), as
				// vProf samples it; missing when the pointer is null, or
				// its target was not copied at the sample.
				out = append(out, s.valueSource(es, valueVar{v: v, member: derefMember, tags: tags}, at.fn.Name)...)
				var dv expr.Scalar
				derr := err
				if err == nil && o != nil {
					var d expr.Object
					if d, derr = o.Deref(); derr == nil {
						dv, derr = d.Scalar()
					}
				}
				out = append(out, value(th, s.values.ids[valueKey{v, derefMember}], at.depth, dv, derr))
			}
		}
		if at.depth == 0 && s.values.globals != nil {
			obj := filepath.Clean(at.obj)
			gl, ok := s.values.globals[obj]
			if !ok {
				gl = es.schemaGlobals(at.info)
				s.values.globals[obj] = gl
			}
			for _, vv := range gl {
				out = append(out, s.valueSource(es, vv, at.fn.Name)...)
				sc, err := readGlobal(vv, env)
				out = append(out, value(th, s.values.ids[valueKey{vv.v, vv.member}], 0, sc, err))
				if vv.member == "" && pointee(vv.v.Type()) != nil {
					d := valueVar{v: vv.v, member: derefMember, tags: vv.tags}
					out = append(out, s.valueSource(es, d, at.fn.Name)...)
					sc, err := readGlobal(d, env)
					out = append(out, value(th, s.values.ids[valueKey{vv.v, derefMember}], 0, sc, err))
				}
			}
		}
	}
	return out
}

// globalAddr returns a global's ELF address when its location is a plain
// address, 0 otherwise.
func globalAddr(v *dwarfx.Variable) uint64 {
	l, ok := v.Location(0)
	if !ok || l.Expr == nil {
		return 0
	}
	val, err := l.Eval(&dwarfx.Frame{}, 0)
	if err != nil || !val.InMemory {
		return 0
	}
	return val.Addr
}

func readGlobal(vv valueVar, env *frameEnv) (expr.Scalar, error) {
	var o *object
	if vv.addr != 0 && vv.v.Type().Size > 0 {
		// The object is in memory at a fixed address: read only what the
		// member (or the scalar) needs, through the object.
		o = &object{t: vv.v.Type(), addr: vv.addr + env.frame.Bias, inMem: true, mem: env.frame.Mem, name: vv.v.Name}
		if vv.member == "" || vv.member == derefMember {
			b, err := o.load(o.addr, vv.v.Type().Size)
			if err != nil {
				return expr.Scalar{}, missing("%s: %v", vv.v.Name, err)
			}
			o.bytes = b
		}
	} else {
		val, err := vv.v.Read(env.pc, env.frame)
		if err != nil {
			return expr.Scalar{}, missing("%s: %v", vv.v.Name, err)
		}
		o = &object{t: vv.v.Type(), bytes: val.Bytes, missing: val.Missing, addr: val.Addr, inMem: val.InMemory,
			mem: env.frame.Mem, name: vv.v.Name}
	}
	if vv.member == "" {
		return o.Scalar()
	}
	if vv.member == derefMember {
		d, err := o.Deref()
		if err != nil {
			return expr.Scalar{}, err
		}
		return d.Scalar()
	}
	m, err := o.Member(vv.member, false)
	if err != nil {
		return expr.Scalar{}, err
	}
	return m.Scalar()
}

// derefMember marks the value a pointer points to (*p).
const derefMember = "*"

// pointee returns the scalar type a pointer points to; nil when t is not a
// pointer to a scalar (void *, a pointer to a pointer or to a struct).
func pointee(t *dwarfx.Type) *dwarfx.Type {
	if t == nil {
		return nil
	}
	u := t.Underlying()
	if u.Kind != dwarfx.Pointer || u.Elem == nil || u.Elem.Size <= 0 {
		return nil
	}
	if e := u.Elem.Underlying(); !e.IsScalar() || e.Kind == dwarfx.Pointer {
		return nil
	}
	return u.Elem
}

// sameFile is the package's sameFile, remembered: value sampling asks it of
// every frame of every sample.
func (v *valueState) sameFile(a, b string) bool {
	k := [2]string{a, b}
	same, ok := v.same[k]
	if !ok {
		if v.same == nil || len(v.same) > 4096 {
			v.same = map[[2]string]bool{}
		}
		same = sameFile(a, b)
		v.same[k] = same
	}
	return same
}

// sameFile reports whether two paths name the same file.
func sameFile(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// clobbered returns, for each depth d up to max, the registers (bit i:
// DWARF register i) that the functions of frames 0..d−1 — and everything
// they call — may have written since frame d made its call. An object
// whose code cannot be read, or a PC outside its function symbols, may
// have written all of them.
func (s *Sampler) clobbered(th Thread, max int) []uint32 {
	out := make([]uint32, max+1)
	var acc uint32
	for d := 1; d <= max; d++ {
		k := d - 1
		if k >= len(th.Frames) || acc == ^uint32(0) {
			acc = ^uint32(0)
			out[d] = acc
			continue
		}
		pc := th.Frames[k].PC
		if !th.Frames[k].Exact {
			pc--
		}
		m := ^uint32(0)
		if path, bias, ok := th.Objects.Object(pc); ok {
			if c := s.code(path); c != nil {
				if cm, ok := c.Clobbers(pc - bias); ok {
					m = cm
				}
			}
		}
		acc |= m
		out[d] = acc
	}
	return out
}

func (s *Sampler) code(path string) *schema.Code {
	c, ok := s.codes[path]
	if !ok {
		c, _ = schema.OpenCode(path)
		s.codes[path] = c
	}
	return c
}

// restoreUnchanged gives a caller frame the innermost frame's value of
// each register that CFI does not restore (a caller-saved one) and no
// frame below may have changed: GCC's interprocedural register allocation
// (-fipa-ra, on at -O2) keeps variables in such registers across calls to
// functions it knows leave them alone, and DWARF then places the variable
// there for the whole call.
func restoreUnchanged(f *dwarfx.Frame, inner unwind.Frame, clobbered uint32) {
	for r := 0; r < 16; r++ {
		bit := uint32(1) << uint(r)
		if f.RegValid&bit != 0 || clobbered&bit != 0 || inner.Valid&bit == 0 {
			continue
		}
		f.SetReg(r, inner.Regs[r])
	}
}
