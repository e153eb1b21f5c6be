package variance

import (
	"fmt"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// The Meta.Extra keys that hold a recording's interval definition.
const (
	ExtraStart  = "interval_start"
	ExtraEnd    = "interval_end"
	ExtraKey    = "interval_key"
	ExtraAttach = "interval_attach"
	// ExtraQueue is "ENQ:DEQ", ExtraQueueKey the queue's key.
	ExtraQueue    = "interval_queue"
	ExtraQueueKey = "interval_queue_key"
)

// SpecOf reads the interval definition a recording made by culprit
// variance carries.
func SpecOf(metas []recording.Meta) (Spec, bool) {
	for _, m := range metas {
		if m.Extra[ExtraStart] != "" {
			s := Spec{Start: m.Extra[ExtraStart], End: m.Extra[ExtraEnd], Key: m.Extra[ExtraKey], Attach: m.Extra[ExtraAttach], QueueKey: m.Extra[ExtraQueueKey]}
			s.Enqueue, s.Dequeue, _ = strings.Cut(m.Extra[ExtraQueue], ":")
			return s, true
		}
	}
	return Spec{}, false
}

// FromProfile makes the analysis's input from a loaded recording's probes
// and calls; call sites are named by the frame that made the call.
func FromProfile(p *profile.Profile, spec Spec) Input {
	in := Input{Spec: spec, Off: p.ProbesOff, Lost: p.CallsLost}
	for _, pr := range p.Probes {
		in.Probes = append(in.Probes, Probe{Function: pr.Function, Since: pr.Since, Params: pr.Params, Ret: pr.Ret})
	}
	in.Calls = make([]Call, 0, len(p.Calls))
	ls := lanes{}
	for _, c := range p.Calls {
		call := Call{Start: c.Start, End: c.End, TID: ls.of(c.Goroutine, c.TID), Probe: int(c.Probe), Site: int64(c.Site) + 1, Args: c.Args, Ret: c.Ret, Strs: c.Strs, Unreturned: c.Unreturned(), Point: IsMark(p.Probes[c.Probe].Function, c.Flags&recording.CallPoint != 0)}
		if pr := p.Probes[c.Probe]; c.Goroutine != 0 && isGoSched(pr.Function) {
			in.goSched(pr.Function, call, c.TID, pr.Params, ls)
			continue
		}
		in.Calls = append(in.Calls, call)
	}
	in.Goroutines = len(ls) > 0
	in.nameLanes(ls)
	in.SiteName = func(s int64) string {
		i := s - 1
		if i < 0 || int(i) >= len(p.Frames) {
			return ""
		}
		f := p.Frames[i]
		if f.File == "" {
			return f.Function
		}
		return fmt.Sprintf("%s:%d", baseName(f.File), f.Line)
	}
	return in
}

// FromRecords makes the analysis's input from call and probe records as a
// collector holds them (with the spans it dropped calls in, Lost records
// with Since); call sites are their return addresses.
func FromRecords(spec Spec, calls []recording.Call, probes []recording.Probe, off []recording.ProbesOff, lost []recording.Lost) Input {
	in := Input{Spec: spec}
	for _, o := range off {
		in.Off = append(in.Off, [2]uint64{o.Start, o.End})
	}
	for _, l := range lost {
		if l.Since != 0 {
			in.Lost = append(in.Lost, [2]uint64{l.Since, l.Time})
		}
	}
	ids := map[uint32]int{}
	for _, p := range probes {
		ids[p.ID] = len(in.Probes)
		in.Probes = append(in.Probes, Probe{Function: p.Function, Since: p.Since, Params: p.Params, Ret: p.Ret})
	}
	in.Calls = make([]Call, 0, len(calls))
	ls := lanes{}
	for _, c := range calls {
		i, ok := ids[c.Probe]
		if !ok {
			continue
		}
		call := Call{Start: c.Start, End: c.End, TID: ls.of(c.Goroutine, c.TID), Probe: i, Site: int64(c.Site), Args: c.Args, Ret: c.Ret, Strs: c.Strs, Unreturned: c.Flags&recording.CallUnreturned != 0, Point: IsMark(in.Probes[i].Function, c.Flags&recording.CallPoint != 0)}
		if pr := in.Probes[i]; c.Goroutine != 0 && isGoSched(pr.Function) {
			in.goSched(pr.Function, call, c.TID, pr.Params, ls)
			continue
		}
		in.Calls = append(in.Calls, call)
	}
	in.Goroutines = len(ls) > 0
	in.nameLanes(ls)
	return in
}

// GoroutineLane marks the number a goroutine of a Go program is given in
// the place of a thread (Call.TID): Linux thread IDs stay below 2^22.
const GoroutineLane = 1 << 31

// lanes numbers the goroutines of a Go program's calls, in the order
// their first calls come: a goroutine that blocks in a call and goes on
// on another thread is one lane, and goroutines that took turns on a
// thread are not mixed.
type lanes map[uint64]uint32

// of is the lane of a call made by goroutine g (its thread tid when g is
// 0: not a Go program).
func (l lanes) of(g uint64, tid uint32) uint32 {
	if g == 0 {
		return tid
	}
	id, ok := l[g]
	if !ok {
		id = GoroutineLane | uint32(len(l)+1)
		l[g] = id
	}
	return id
}

// goSched keeps a call of the Go scheduler's probes as a park or a
// wake-up (Input.Go), not as a node of the tree.
func (in *Input) goSched(fn string, c Call, tid uint32, params []string, ls lanes) {
	if in.Go == nil {
		in.Go = &GoSched{}
	}
	in.Go.add(fn, c.TID, tid, c, params, ls)
}

// nameLanes records each goroutine lane's goroutine (Input.Go.Goids).
func (in *Input) nameLanes(ls lanes) {
	if in.Go == nil {
		return
	}
	in.Go.Goids = map[uint32]uint64{}
	for g, lane := range ls {
		in.Go.Goids[lane] = g
	}
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// Queue renders the spec's queue as ExtraQueue holds it ("" when none).
func (s Spec) Queue() string {
	if s.Enqueue == "" {
		return ""
	}
	return s.Enqueue + ":" + s.Dequeue
}
