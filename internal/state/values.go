package state

import (
	"path/filepath"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Value sampling (vProf): at each sample, the value of every scalar
// variable of the main executable that is live at the sampled PC and at the
// call-site PCs of the Depth caller frames, and of its scalar globals
// (struct members included) when memory can be read at the sample.

type valueVar struct {
	v      *dwarfx.Variable
	member string // for a member of a struct global: its field name
	field  dwarfx.Field
}

type valueState struct {
	depth   int
	globals map[string][]valueVar // by executable path
	ids     map[valueKey]uint32
}

type valueKey struct {
	v      *dwarfx.Variable
	member string
}

// EnableValues turns on value sampling with depth caller frames (vProf's
// virtual stack unwinding; 3 by default). withGlobals samples globals,
// which needs memory as it is at the sample (a stopped thread).
func (s *Sampler) EnableValues(depth int, withGlobals bool) {
	if depth < 0 {
		depth = 3
	}
	s.values = &valueState{depth: depth, ids: map[valueKey]uint32{}}
	if withGlobals {
		s.values.globals = map[string][]valueVar{}
	}
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

func (s *Sampler) valueSource(vv valueVar, fn string) []recording.Record {
	k := valueKey{vv.v, vv.member}
	if _, ok := s.values.ids[k]; ok {
		return nil
	}
	id := s.nextID
	s.nextID++
	s.values.ids[k] = id
	t := vv.v.Type()
	name := vv.v.Name
	if vv.member != "" {
		name += "." + vv.member
		t = vv.field.Type
	}
	src := &recording.ValueSource{ID: id, Class: recording.SourceVariable, Name: name, Function: fn,
		File: vv.v.DeclFile, Line: vv.v.DeclLine, Type: t.Name, Tags: "none",
		Global: vv.v.IsGlobal, Pointer: t.Underlying().Kind == dwarfx.Pointer}
	if vv.v.IsGlobal {
		src.Function = "#global"
	}
	return []recording.Record{src}
}

// sampleValues appends the values of the thread's variables.
func (s *Sampler) sampleValues(th Thread, located []located, out []recording.Record) []recording.Record {
	exe := filepath.Clean(th.Exe)
	for _, at := range located {
		if at.depth > s.values.depth {
			break
		}
		if filepath.Clean(at.info.Path()) != exe && !sameFile(at.info.Path(), exe) {
			continue // only the main executable's variables
		}
		env := th.env(at)
		for _, v := range at.fn.Variables(at.pc) {
			if v.IsGlobal || v.Type() == nil || !v.Type().IsScalar() {
				continue
			}
			if _, ok := v.Location(at.pc); !ok {
				continue // not live here: not sampled (as vProf)
			}
			out = append(out, s.valueSource(valueVar{v: v}, at.fn.Name)...)
			o, err := env.Var(v.Name)
			var sc expr.Scalar
			if err == nil {
				sc, err = o.Scalar()
			}
			out = append(out, value(th, s.values.ids[valueKey{v, ""}], at.depth, sc, err))
		}
		if at.depth == 0 && s.values.globals != nil {
			gl, ok := s.values.globals[exe]
			if !ok {
				gl = scalarGlobals(at.info)
				s.values.globals[exe] = gl
			}
			for _, vv := range gl {
				out = append(out, s.valueSource(vv, at.fn.Name)...)
				sc, err := readGlobal(vv, env)
				out = append(out, value(th, s.values.ids[valueKey{vv.v, vv.member}], 0, sc, err))
			}
		}
	}
	return out
}

func readGlobal(vv valueVar, env *frameEnv) (expr.Scalar, error) {
	val, err := vv.v.Read(env.pc, env.frame)
	if err != nil {
		return expr.Scalar{}, missing("%s: %v", vv.v.Name, err)
	}
	o := &object{t: vv.v.Type(), bytes: val.Bytes, missing: val.Missing, addr: val.Addr, inMem: val.InMemory,
		mem: env.frame.Mem, name: vv.v.Name}
	if vv.member == "" {
		return o.Scalar()
	}
	m, err := o.Member(vv.member, false)
	if err != nil {
		return expr.Scalar{}, err
	}
	return m.Scalar()
}

// sameFile reports whether two paths name the same file.
func sameFile(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
