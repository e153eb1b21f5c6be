package loader

import (
	"slices"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// probeKey identifies a probe across recordings.
type probeKey struct{ fn, obj string }

// addProbe merges a Probe record into the model and returns its index.
func (l *loader) addProbe(v *recording.Probe) int32 {
	k := probeKey{v.Function, v.Object}
	if i, ok := l.probes[k]; ok {
		return i
	}
	i := int32(len(l.p.Probes))
	l.p.Probes = append(l.p.Probes, profile.Probe{Function: v.Function, Object: v.Object, Offset: v.Offset, Every: v.Every, Params: v.Params, Ret: v.Ret, Since: v.Since})
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
	if len(l.p.Calls) == cap(l.p.Calls) {
		// Doubled, not grown by append's quarter for large slices: a
		// trace of millions of calls spent most of its load copying
		// them as they grew.
		l.p.Calls = slices.Grow(l.p.Calls, max(len(l.p.Calls), 1024))
	}
	flags := v.Flags
	if flags&recording.CallCPU != 0 && v.End >= v.Start && v.Off >= v.End-v.Start {
		// Off the CPU for all its duration: no call is, its probes ran
		// on the CPU. Its time on the CPU is not known, not 0.
		flags = flags&^recording.CallCPU | recording.CallCPULost
	}
	l.p.Calls = append(l.p.Calls, profile.Call{Start: v.Start, End: v.End, Child: v.Child, PID: v.PID, TID: v.TID,
		Probe: pi, Caller: ci, Depth: v.Depth, Site: site, Flags: flags, Args: v.Args, Ret: v.Ret, Strs: v.Strs,
		Off: v.Off, ChildOff: v.ChildOff, Goroutine: v.Goroutine})
	if _, ok := l.p.Threads[v.TID]; !ok && v.TID != 0 {
		l.p.Threads[v.TID] = profile.Thread{PID: v.PID, TID: v.TID}
	}
	return true
}
