package cli

import (
	"github.com/culprit-dev/culprit/internal/collector"
	"github.com/culprit-dev/culprit/internal/state"
)

// stateHook is the program-state hook both collectors call at their
// samples (collector.MemoryState), made of internal/state's sampler.
type stateHook struct{ *state.Sampler }

func (h stateHook) Sample(t collector.Thread) collector.Verdict {
	var objs state.Resolver
	if t.Objects != nil {
		objs = t.Objects
	}
	r := h.Apply(state.Thread{PID: t.PID, TID: t.TID, Time: t.Time, Exe: t.Exe,
		Frames: t.Frames, Mem: t.Mem, Objects: objs})
	return collector.Verdict{Records: r.Records, Drop: r.Drop, Keep: r.Keep}
}

func (h stateHook) GlobalMemory(exe, obj string) []collector.MemoryRange {
	in := h.Sampler.GlobalMemory(exe, obj)
	out := make([]collector.MemoryRange, len(in))
	for i, r := range in {
		out[i] = collector.MemoryRange{Addr: r.Addr, Len: r.Len, From: r.From, PtrOff: r.PtrOff, Names: r.Names}
	}
	return out
}
