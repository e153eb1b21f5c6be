package tracer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/traceprog"
)

// PlanReads gives each target the memory reads that the expressions need
// at its entry: wherever an expression goes through one of the function's
// pointer parameters (c->id, c->req->id, *p, p[2], c->hdr.len), the
// probe reads the value there, at the offsets DWARF gives its members.
// Each read is named by its path (expr.PathMember...) and recorded after
// the registers: Target.ReadParams ("c->id:i4:int") name the values the
// call record carries beyond the parameters. A function without the
// expression's parameters is left alone; an expression no target can
// read is an error.
func PlanReads(targets []Target, exprs []string) error {
	if len(exprs) == 0 {
		return nil
	}
	var nodes []expr.Node
	for _, s := range exprs {
		n, err := expr.Parse(s)
		if err != nil {
			return fmt.Errorf("%q: %w", s, err)
		}
		nodes = append(nodes, n)
	}
	infos := map[string]*dwarfx.Info{}
	planned := make([]bool, len(exprs))
	lastErr := make([]error, len(exprs))
	for ti := range targets {
		t := &targets[ti]
		if t.Point || len(t.Params) == 0 {
			continue
		}
		info, ok := infos[t.Object]
		if !ok {
			info, _ = dwarfx.Open(t.Object)
			infos[t.Object] = info
		}
		if info == nil {
			continue
		}
		fn, ok := info.Function(t.Entry)
		if !ok {
			continue
		}
		env := &planEnv{fn: t.Function, params: fn.Params(), n: len(t.Params)}
		for i, n := range nodes {
			before := len(env.reads)
			if _, err := expr.Eval(n, env); err != nil {
				env.reads = env.reads[:before]
				if !errors.Is(err, errNoParam) {
					lastErr[i] = fmt.Errorf("%s: %w", t.Function, err)
				}
				continue
			}
			planned[i] = true
		}
		if len(env.reads) > traceprog.MaxReads {
			return fmt.Errorf("%s: the expressions read %d values of memory at its entry (%s); a probe reads at most %d", t.Function, len(env.reads), strings.Join(env.names(), ", "), traceprog.MaxReads)
		}
		t.Reads, t.ReadParams = nil, nil
		for _, r := range env.reads {
			t.Reads = append(t.Reads, r.read)
			t.ReadParams = append(t.ReadParams, r.param)
		}
	}
	for i, ok := range planned {
		if ok {
			continue
		}
		if lastErr[i] != nil {
			return fmt.Errorf("%q: %w", exprs[i], lastErr[i])
		}
		return fmt.Errorf("%q: no traced function has the parameters it names, with DWARF types", exprs[i])
	}
	return nil
}

// errNoParam: the function has no such parameter (the expression is for
// another function).
var errNoParam = errors.New("no such parameter")

// planEnv evaluates an expression over a function's parameters as types
// only, collecting the memory reads it would need.
type planEnv struct {
	fn     string
	params []*dwarfx.Variable
	n      int // parameters in registers (Target.Params)
	reads  []plannedRead
}

type plannedRead struct {
	path  string
	read  traceprog.Read
	param string
}

func (e *planEnv) names() []string {
	var out []string
	for _, r := range e.reads {
		out = append(out, r.path)
	}
	return out
}

func (e *planEnv) Var(name string) (expr.Object, error) {
	for i, v := range e.params {
		if i >= e.n {
			break
		}
		if v.Name == name {
			return &planObj{env: e, path: name, arg: i, t: v.Type()}, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", name, errNoParam)
}

// planObj is a parameter, or memory reached from one: offs are the hops'
// offsets (none: the register itself).
type planObj struct {
	env  *planEnv
	path string
	arg  int
	t    *dwarfx.Type
	offs []int64
}

func (o *planObj) with(path string, t *dwarfx.Type, offs []int64) *planObj {
	return &planObj{env: o.env, path: path, arg: o.arg, t: t, offs: offs}
}

func (o *planObj) Member(name string, arrow bool) (expr.Object, error) {
	t := o.t.Underlying()
	offs := append([]int64(nil), o.offs...)
	if arrow {
		if t.Kind != dwarfx.Pointer || t.Elem == nil {
			return nil, &expr.TypeError{Msg: fmt.Sprintf("%s is a %s, not a pointer: -> needs one", o.path, o.t.Name)}
		}
		t = t.Elem.Underlying()
		offs = append(offs, 0)
	} else if len(offs) == 0 {
		return nil, &expr.TypeError{Msg: fmt.Sprintf("%s is passed in registers, not in memory the probe can read: name a pointer's member (->)", o.path)}
	}
	switch t.Kind {
	case dwarfx.Struct, dwarfx.Union, dwarfx.Class:
	default:
		return nil, &expr.TypeError{Msg: fmt.Sprintf("%s is not a struct or union: it has no member %s", o.path, name)}
	}
	f, ok := t.Field(name)
	if !ok {
		return nil, &expr.TypeError{Msg: fmt.Sprintf("%s has no member %s", t.Name, name)}
	}
	if f.BitSize != 0 {
		return nil, &expr.TypeError{Msg: fmt.Sprintf("%s.%s is a bitfield: the probe reads whole bytes", t.Name, name)}
	}
	offs[len(offs)-1] += f.Offset
	return o.with(expr.PathMember(o.path, name, arrow), f.Type, offs), nil
}

func (o *planObj) Index(i int64) (expr.Object, error) {
	t := o.t.Underlying()
	offs := append([]int64(nil), o.offs...)
	switch {
	case t.Kind == dwarfx.Array && len(offs) > 0 && t.Elem != nil:
	case t.Kind == dwarfx.Pointer && t.Elem != nil:
		offs = append(offs, 0)
	default:
		return nil, &expr.TypeError{Msg: fmt.Sprintf("%s is a %s: [] needs a pointer or an array in memory", o.path, o.t.Name)}
	}
	if t.Elem.Size <= 0 {
		return nil, &expr.TypeError{Msg: fmt.Sprintf("the elements of %s have no known size", o.path)}
	}
	offs[len(offs)-1] += i * t.Elem.Size
	return o.with(expr.PathIndex(o.path, i), t.Elem, offs), nil
}

func (o *planObj) Deref() (expr.Object, error) {
	t := o.t.Underlying()
	if t.Kind != dwarfx.Pointer || t.Elem == nil {
		return nil, &expr.TypeError{Msg: fmt.Sprintf("%s is a %s, not a pointer", o.path, o.t.Name)}
	}
	return o.with(expr.PathDeref(o.path), t.Elem, append(append([]int64(nil), o.offs...), 0)), nil
}

// Scalar plans the read of the value (a parameter itself needs none) and
// stands for it with 1, which no arithmetic of the expression minds.
func (o *planObj) Scalar() (expr.Scalar, error) {
	if len(o.offs) == 0 {
		return expr.IntValue(1), nil
	}
	code := paramCode(o.t)
	size := o.t.Underlying().Size
	if code == "" || size < 1 || size > 8 {
		return expr.Scalar{}, &expr.TypeError{Msg: fmt.Sprintf("%s is a %s: a key or argument reads an integer, enum or pointer", o.path, o.t.Name)}
	}
	if code == "s8" {
		code = "p8" // a char * in memory: its address, not its string
	}
	if len(o.offs) > traceprog.MaxHops {
		return expr.Scalar{}, &expr.TypeError{Msg: fmt.Sprintf("%s goes through %d pointers; a probe follows at most %d", o.path, len(o.offs), traceprog.MaxHops)}
	}
	for _, r := range o.env.reads {
		if r.path == o.path {
			return expr.IntValue(1), nil
		}
	}
	var offs []int32
	for _, off := range o.offs {
		if off != int64(int32(off)) {
			return expr.Scalar{}, &expr.TypeError{Msg: fmt.Sprintf("%s is too far from its pointer", o.path)}
		}
		offs = append(offs, int32(off))
	}
	o.env.reads = append(o.env.reads, plannedRead{path: o.path, read: traceprog.Read{Arg: o.arg, Offs: offs, Size: int(size)},
		param: o.path + ":" + code + ":" + o.t.Name})
	return expr.IntValue(1), nil
}
