package profile

import "github.com/culprit-dev/culprit/internal/recording"

// Probe is a traced function of the model, merged across recordings by
// function and object.
type Probe struct {
	Function string
	Object   string
	Every    uint32   // every Every-th call was recorded (0, 1: all)
	Params   []string // "name:code:type" of the recorded arguments (see recording.Probe)
}

// Call is one traced call of the model.
type Call struct {
	Start, End uint64 // ns, sample clock
	Child      uint64 // ns in traced calls it made
	PID, TID   uint32
	Probe      int32 // index into Profile.Probes
	Caller     int32 // index into Profile.Probes of the traced call it was made from; -1: none
	Depth      uint32
	// Site is the index into Profile.Frames of the call site (the
	// function, or inlined function, that made the call); -1 when unknown.
	Site  int32
	Flags uint32 // recording.CallUnreturned
	Args  []uint64
	Ret   uint64
}

// Inclusive is the call's duration in ns.
func (c *Call) Inclusive() uint64 { return c.End - c.Start }

// Exclusive is the call's duration without the traced calls it made.
func (c *Call) Exclusive() uint64 {
	if c.Child > c.End-c.Start {
		return 0
	}
	return c.End - c.Start - c.Child
}

// Unreturned reports whether the call left without returning (longjmp,
// unwinding, exit): its end is an upper bound.
func (c *Call) Unreturned() bool { return c.Flags&recording.CallUnreturned != 0 }

// probeKey identifies a probe across recordings.
type probeKey struct{ fn, obj string }

// addProbe merges a Probe record into the model and returns its index.
func (l *loader) addProbe(v *recording.Probe) int32 {
	k := probeKey{v.Function, v.Object}
	if i, ok := l.probes[k]; ok {
		return i
	}
	i := int32(len(l.p.Probes))
	l.p.Probes = append(l.p.Probes, Probe{Function: v.Function, Object: v.Object, Every: v.Every, Params: v.Params})
	l.probes[k] = i
	return i
}

// addCall adds a Call record, its probes looked up in the file's map.
func (l *loader) addCall(v *recording.Call, probes map[uint32]int32) bool {
	pi, ok := probes[v.Probe]
	if !ok {
		return false // its probe's definition was lost to damage
	}
	ci := int32(-1)
	if v.Caller != 0 {
		if i, ok := probes[v.Caller]; ok {
			ci = i
		}
	}
	site := int32(-1)
	if v.Site != 0 {
		sp := l.spaces[v.PID]
		if sp == nil {
			sp = l.newSpace(nil)
			l.spaces[v.PID] = sp
		}
		if ids := l.userFrames(v.PID, sp, v.Site, true); len(ids) > 0 && l.p.Frames[ids[0]].Function != "" {
			site = ids[0]
		}
	}
	l.p.Calls = append(l.p.Calls, Call{Start: v.Start, End: v.End, Child: v.Child, PID: v.PID, TID: v.TID,
		Probe: pi, Caller: ci, Depth: v.Depth, Site: site, Flags: v.Flags, Args: v.Args, Ret: v.Ret})
	if _, ok := l.p.Threads[v.TID]; !ok && v.TID != 0 {
		l.p.Threads[v.TID] = Thread{PID: v.PID, TID: v.TID}
	}
	return true
}
