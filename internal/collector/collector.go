// Package collector is what culprit's collectors share: starting a command
// stopped at its exec or taking a running process (launch.go), the objects
// mapped in traced processes (their CFI, build-ids and the vDSO), the
// signals relayed to a launched command, and the hook through which program
// state (expressions, rules, values) is sampled.
//
// A collector (internal/recorder's perf events, internal/ptracer's stops,
// an uprobe tracer) owns how samples are taken and what they carry; it
// keeps one Objects for the run, one proc.Space per process, and calls the
// State hook, which internal/cli wires, at each sample it can read state
// at. No collector imports the packages that evaluate state.
package collector

import (
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Objects are the object files mapped in a collector's processes: their CFI
// tables, loaded once per path, and their build-ids. Safe for concurrent
// use.
type Objects struct {
	Tables   unwind.TableCache
	BuildIDs proc.BuildIDs
}

// AddVDSO stores the vDSO image in the recording (records carry it so that
// vDSO frames can be named and unwound on another machine) and its CFI and
// build-id under the name "[vdso]". A kernel without a vDSO is no error.
func (o *Objects) AddVDSO(w *recording.Writer) error {
	img, bid, err := proc.VDSOImage()
	if err != nil {
		return nil
	}
	if t, err := unwind.TableFromImage(img); err == nil {
		o.Tables.Put("[vdso]", t)
	}
	o.BuildIDs.Put("[vdso]", bid)
	return w.Write(&recording.Object{Name: "[vdso]", BuildID: bid, Data: img})
}

// In returns the resolver of one process's address space.
func (o *Objects) In(sp *proc.Space) Resolver {
	return Resolver{o: o, sp: sp}
}

// Resolver finds the object mapped at a PC of one process: its CFI for
// unwinding (unwind.Resolver) and its path and load bias for reading
// variables (Object).
type Resolver struct {
	o  *Objects
	sp *proc.Space
	// Miss is set when a PC lay outside every known mapping: the process
	// may have mapped something the collector has not seen yet.
	Miss bool
}

// Resolve implements unwind.Resolver.
func (r *Resolver) Resolve(pc uint64) (unwind.Module, bool) {
	m, ok := r.sp.Find(pc)
	if !ok {
		r.Miss = true
		return unwind.Module{}, false
	}
	t := r.o.Tables.Lookup(m.Path)
	if t == nil {
		return unwind.Module{}, false
	}
	bias, ok := t.Bias(m.Start, m.Offset)
	if !ok {
		return unwind.Module{}, false
	}
	return unwind.Module{Table: t, Bias: bias}, true
}

// Object says which object file is mapped at pc and its load bias (runtime
// address = ELF address + bias).
func (r *Resolver) Object(pc uint64) (path string, bias uint64, ok bool) {
	if r.sp == nil {
		return "", 0, false
	}
	m, ok := r.sp.Find(pc)
	if !ok || len(m.Path) == 0 || m.Path[0] != '/' {
		return "", 0, false
	}
	t := r.o.Tables.Lookup(m.Path)
	if t == nil {
		return "", 0, false
	}
	bias, ok = t.Bias(m.Start, m.Offset)
	return m.Path, bias, ok
}
