package variance

import (
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// The calls of the Go scheduler's probes are parks and wake-ups, not
// nodes of the tree: a park by the goroutine that made it, a wake-up from
// that goroutine to the one whose id the probe read.
func TestGoSchedCalls(t *testing.T) {
	probes := []recording.Probe{
		{ID: 1, Function: "main.handle"},
		{ID: 2, Function: "runtime.gopark", Params: []string{"unlockf:p8:func()", "lock:p8:void *", "reason:u1:runtime.waitReason"}},
		{ID: 3, Function: "runtime.send", Params: []string{"c:p8:runtime.hchan *", "sg:p8:runtime.sudog *", "ep:p8:void *", "sg->g->goid:u8:uint64"}},
		{ID: 4, Function: "runtime.readyWithTime", Params: []string{"s:p8:runtime.sudog *", "traceskip:i8:int", "s->g->goid:u8:uint64"}},
	}
	calls := []recording.Call{
		{Start: 10, End: 300, Probe: 1, Goroutine: 7, TID: 100},
		{Start: 100, End: 160, Probe: 2, Goroutine: 7, TID: 100, Args: []uint64{1, 2, 14}},
		{Start: 150, End: 151, Probe: 3, Goroutine: 9, TID: 101, Args: []uint64{1, 2, 3, 7}},
		{Start: 170, End: 171, Probe: 4, Goroutine: 9, TID: 101, Args: []uint64{1, 4, 0}}, // the read faulted
	}
	in := FromRecords(Spec{Start: "main.handle", End: "main.handle"}, calls, probes, nil, nil)
	if len(in.Calls) != 1 || in.Probes[in.Calls[0].Probe].Function != "main.handle" {
		t.Fatalf("calls %+v", in.Calls)
	}
	a := in.Calls[0].TID
	if in.Go == nil || len(in.Go.Parks) != 1 || len(in.Go.Wakes) != 1 {
		t.Fatalf("go %+v", in.Go)
	}
	if p := in.Go.Parks[0]; p.Lane != a || p.Start != 100 || p.End != 160 || p.Reason != 14 {
		t.Errorf("park %+v", p)
	}
	w := in.Go.Wakes[0]
	if w.Wakee != a || w.Waker == a || w.Waker&GoroutineLane == 0 || w.Time != 150 {
		t.Errorf("wake %+v", w)
	}
	if in.Go.Goids[a] != 7 || in.Go.Goids[w.Waker] != 9 {
		t.Errorf("goids %v", in.Go.Goids)
	}
}

// Wake-ups the runtime makes on its scheduler's stack: runtime.ready's
// waker is the call of its thread it was made inside (a goroutine's
// closechan; a timer's goroutineReady; send's, already its own wake-up;
// none: the runtime), and the network poller's readiness wakes the
// goroutine parked on the descriptor's word the mode names.
func TestGoRuntimeWakeups(t *testing.T) {
	probes := []recording.Probe{
		{ID: 1, Function: "main.handle"},
		{ID: 2, Function: "runtime.gopark", Params: []string{"unlockf:p8:func()", "lock:p8:void *", "reason:u1:runtime.waitReason"}},
		{ID: 3, Function: "runtime.send", Params: []string{"c:p8:runtime.hchan *", "sg:p8:runtime.sudog *", "ep:p8:void *", "sg->g->goid:u8:uint64"}},
		{ID: 4, Function: "runtime.ready", Params: []string{"gp:p8:runtime.g *", "traceskip:i8:int", "next:u1:bool", "gp->goid:u8:uint64"}},
		{ID: 5, Function: "runtime.closechan", Params: []string{"c:p8:runtime.hchan *"}},
		{ID: 6, Function: "runtime.goroutineReady", Params: []string{"arg:p8:interface {}"}},
		{ID: 7, Function: "runtime.netpollready", Params: []string{"toRun:p8:runtime.gList *", "pd:p8:runtime.pollDesc *", "mode:i4:int32"}},
		{ID: 8, Function: "runtime.chansend1", Params: []string{"c:p8:runtime.hchan *", "elem:p8:void *"}},
	}
	const g0 = 0xc000001000 // a scheduler's g: its address names it
	calls := []recording.Call{
		{Start: 10, End: 900, Probe: 1, Goroutine: 7, TID: 100},
		// Goroutine 9 closes a channel on thread 101: ready on g0 inside.
		{Start: 100, End: 130, Probe: 5, Goroutine: 9, TID: 101, Site: 0x401234},
		{Start: 110, End: 112, Probe: 4, Goroutine: g0, TID: 101, Args: []uint64{1, 0, 1, 7}},
		// The same thread later, in none of the calls: the runtime's.
		{Start: 200, End: 202, Probe: 4, Goroutine: g0, TID: 101, Args: []uint64{1, 0, 1, 11}},
		// A timer fires on thread 102.
		{Start: 300, End: 320, Probe: 6, Goroutine: g0, TID: 102},
		{Start: 305, End: 306, Probe: 4, Goroutine: g0, TID: 102, Args: []uint64{1, 0, 1, 12}},
		// A send on 102 readies 13 itself: ready inside it is not another.
		// The program's code called chansend1 (at its return address
		// 0x405678), the runtime send.
		{Start: 395, End: 425, Probe: 8, Goroutine: 9, TID: 102, Site: 0x405678},
		{Start: 400, End: 420, Probe: 3, Goroutine: 9, TID: 102, Args: []uint64{1, 2, 3, 13}},
		{Start: 410, End: 411, Probe: 4, Goroutine: g0, TID: 102, Args: []uint64{1, 0, 1, 13}},
		// Goroutines 14 and 15 wait to read and to write descriptor
		// 0x5000 (rg at 16, wg at 24); it becomes readable at 600.
		{Start: 500, End: 700, Probe: 2, Goroutine: 14, TID: 103, Args: []uint64{1, 0x5010, 2}},
		{Start: 500, End: 800, Probe: 2, Goroutine: 15, TID: 104, Args: []uint64{1, 0x5018, 2}},
		{Start: 600, End: 601, Probe: 7, Goroutine: g0, TID: 105, Args: []uint64{1, 0x5000, 'r'}},
	}
	in := FromRecords(Spec{Start: "main.handle", End: "main.handle"}, calls, probes, nil, nil)
	if len(in.Calls) != 1 || in.Go == nil {
		t.Fatalf("calls %+v, go %+v", in.Calls, in.Go)
	}
	lane := map[uint64]uint32{}
	for l, g := range in.Go.Goids {
		lane[g] = l
	}
	got := in.Go.Wakeups(GoRuntime{PollRG: 16, PollWG: 24})
	for i := range got {
		got[i].tid = 0
	}
	want := []GoWake{
		{Time: 110, Waker: lane[9], Wakee: lane[7], Site: 0x401234},
		{Time: 200, Waker: LaneRuntime, Wakee: lane[11]},
		{Time: 305, Waker: LaneTimer, Wakee: lane[12]},
		{Time: 400, Waker: lane[9], Wakee: lane[13], Site: 0x405678},
		{Time: 600, Waker: LaneNetpoll, Wakee: lane[14], Poller: 105},
	}
	if !slices.Equal(got, want) {
		t.Errorf("wake-ups\n%+v, want\n%+v", got, want)
	}
	// Without pollDesc's layout the poller's wake-up is not told.
	if got := in.Go.Wakeups(GoRuntime{PollRG: -1, PollWG: -1}); len(got) != len(want)-1 {
		t.Errorf("wake-ups without the poller's layout %+v", got)
	}
	if LaneName(LaneTimer) != "(timer)" || !IsRuntimeLane(LaneNetpoll) || IsRuntimeLane(lane[9]) {
		t.Errorf("runtime lanes")
	}
}

// A timer's wake-ups: a channel send made inside the timer's run is the
// timer's, not the goroutine's that ran it; armed by the goroutine whose
// arming of that timer came last before it fired. A descriptor's
// readiness names the descriptor (pd->fd read).
func TestGoTimerWakeups(t *testing.T) {
	probes := []recording.Probe{
		{ID: 1, Function: "main.handle"},
		{ID: 2, Function: "runtime.gopark", Params: []string{"unlockf:p8:func()", "lock:p8:void *", "reason:u1:runtime.waitReason"}},
		{ID: 3, Function: "runtime.send", Params: []string{"c:p8:runtime.hchan *", "sg:p8:runtime.sudog *", "ep:p8:void *", "sg->g->goid:u8:uint64"}},
		{ID: 4, Function: "runtime.(*timer).modify", Params: []string{"t:p8:runtime.timer *", "when:i8:int64"}},
		{ID: 5, Function: "runtime.(*timer).unlockAndRun", Params: []string{"t:p8:runtime.timer *", "now:i8:int64"}},
		{ID: 6, Function: "runtime.netpollready", Params: []string{"toRun:p8:runtime.gList *", "pd:p8:runtime.pollDesc *", "mode:i4:int32", "pd->fd:u8:uintptr"}},
	}
	const g0 = 0xc000001000
	const tm, other = 0x7000, 0x8000 // two timers
	calls := []recording.Call{
		{Start: 10, End: 900, Probe: 1, Goroutine: 7, TID: 100},
		// Goroutine 7 arms tm at 20 and waits from 50; goroutine 9 arms
		// it again at 80 and another timer at 90; tm fires at 200 on
		// thread 102's scheduler stack, sending on its channel.
		{Start: 20, End: 21, Probe: 4, Goroutine: 7, TID: 100, Args: []uint64{tm, 1000}},
		{Start: 50, End: 210, Probe: 2, Goroutine: 7, TID: 100, Args: []uint64{1, 0x9000, 2}},
		{Start: 80, End: 81, Probe: 4, Goroutine: 9, TID: 101, Args: []uint64{tm, 1000}},
		{Start: 90, End: 91, Probe: 4, Goroutine: 9, TID: 101, Args: []uint64{other, 1000}},
		{Start: 200, End: 205, Probe: 5, Goroutine: g0, TID: 102, Args: []uint64{tm, 200}},
		{Start: 201, End: 202, Probe: 3, Goroutine: g0, TID: 102, Args: []uint64{1, 2, 3, 7}},
		// A send of the same scheduler's stack after the run: not the timer's.
		{Start: 300, End: 301, Probe: 3, Goroutine: g0, TID: 102, Args: []uint64{1, 2, 3, 7}},
		// Descriptor 9 (pollDesc 0x5000, rg at 16) readies goroutine 14.
		{Start: 500, End: 700, Probe: 2, Goroutine: 14, TID: 103, Args: []uint64{1, 0x5010, 2}},
		{Start: 600, End: 601, Probe: 6, Goroutine: g0, TID: 105, Args: []uint64{1, 0x5000, 'r', 9}},
	}
	in := FromRecords(Spec{Start: "main.handle", End: "main.handle"}, calls, probes, nil, nil)
	if len(in.Calls) != 1 || in.Go == nil {
		t.Fatalf("calls %+v, go %+v", in.Calls, in.Go)
	}
	lane := map[uint64]uint32{}
	for l, g := range in.Go.Goids {
		lane[g] = l
	}
	got := in.Go.Wakeups(GoRuntime{PollRG: 16, PollWG: 24})
	for i := range got {
		got[i].tid = 0
	}
	want := []GoWake{
		{Time: 201, Waker: LaneTimer, Wakee: lane[7], Armed: lane[9], ArmedAt: 80},
		{Time: 300, Waker: lane[g0], Wakee: lane[7]},
		{Time: 600, Waker: NetpollLane(9), Wakee: lane[14], Poller: 105},
	}
	if !slices.Equal(got, want) {
		t.Errorf("wake-ups\n%+v, want\n%+v", got, want)
	}
	if LaneFD(NetpollLane(9)) != 9 || LaneName(NetpollLane(9)) != "(netpoll)" || !IsRuntimeLane(NetpollLane(9)) ||
		LaneFD(LaneNetpoll) != -1 || NetpollLane(-1) != LaneNetpoll || LaneFD(lane[9]) != -1 {
		t.Errorf("netpoll lanes")
	}
}

// A goroutine time.AfterFunc's timer started (a runqput inside
// time.goFunc inside the timer's run) was created by the goroutine that
// armed the timer; a network deadline's wake-up is the timer's inside a
// timer's run, and outside one the goroutine's that set the deadline; a
// wake-up the runtime made inside the collector's functions, or inside
// none of the probed calls ending one of the collector's waits, is the
// garbage collector's.
func TestGoAfterFuncDeadlinesGC(t *testing.T) {
	probes := []recording.Probe{
		{ID: 1, Function: "main.handle"},
		{ID: 2, Function: "runtime.gopark", Params: []string{"unlockf:p8:func()", "lock:p8:void *", "reason:u1:runtime.waitReason"}},
		{ID: 3, Function: "runtime.ready", Params: []string{"gp:p8:runtime.g *", "traceskip:i8:int", "next:u1:bool", "gp->goid:u8:uint64"}},
		{ID: 4, Function: "runtime.(*timer).modify", Params: []string{"t:p8:runtime.timer *", "when:i8:int64"}},
		{ID: 5, Function: "runtime.(*timer).unlockAndRun", Params: []string{"t:p8:runtime.timer *", "now:i8:int64"}},
		{ID: 6, Function: "time.goFunc", Params: []string{"arg:p8:interface {}", "seq:u8:uintptr", "delta:i8:int64"}},
		{ID: 7, Function: "runtime.runqput", Params: []string{"pp:p8:runtime.p *", "gp:p8:runtime.g *", "next:u1:bool", "gp->goid:u8:uint64"}},
		{ID: 8, Function: "runtime.netpollgoready", Params: []string{"gp:p8:runtime.g *", "traceskip:i8:int"}},
		{ID: 9, Function: "runtime.markroot", Params: []string{"gcw:p8:runtime.gcWork *", "i:u4:uint32", "flushBgCredit:u1:bool"}},
	}
	reasons := []string{"", "chan receive", "IO wait", "GC assist wait"}
	const g0 = 0xc000001000
	const tm, dl = 0x7000, 0x7100 // an AfterFunc's timer, a deadline's
	calls := []recording.Call{
		{Start: 10, End: 900, Probe: 1, Goroutine: 7, TID: 100},
		// Goroutine 7 arms tm at 20 (AfterFunc); tm fires at 200 on
		// thread 102, whose goFunc queues the new goroutine 20 at 210.
		{Start: 20, End: 21, Probe: 4, Goroutine: 7, TID: 100, Args: []uint64{tm, 1000}},
		{Start: 200, End: 230, Probe: 5, Goroutine: g0, TID: 102, Args: []uint64{tm, 200}},
		{Start: 205, End: 225, Probe: 6, Goroutine: g0, TID: 102, Args: []uint64{1, 0, 0}},
		{Start: 210, End: 211, Probe: 7, Goroutine: g0, TID: 102, Args: []uint64{1, 2, 1, 20}},
		// A runqput outside a goFunc (a ready's) creates nothing.
		{Start: 250, End: 251, Probe: 7, Goroutine: g0, TID: 102, Args: []uint64{1, 2, 1, 21}},
		// Goroutine 9 sets a deadline already past at 500: its
		// netpollgoready readies goroutine 14, parked on the network.
		{Start: 400, End: 520, Probe: 2, Goroutine: 14, TID: 103, Args: []uint64{1, 0x5010, 2}},
		{Start: 500, End: 510, Probe: 8, Goroutine: 9, TID: 104, Args: []uint64{1, 0}},
		{Start: 505, End: 506, Probe: 3, Goroutine: g0, TID: 104, Args: []uint64{1, 0, 1, 14}},
		// Deadline dl's timer fires at 600: the wake-up of 15 is the timer's.
		{Start: 550, End: 640, Probe: 2, Goroutine: 15, TID: 105, Args: []uint64{1, 0x6010, 2}},
		{Start: 600, End: 620, Probe: 5, Goroutine: g0, TID: 102, Args: []uint64{dl, 600}},
		{Start: 605, End: 610, Probe: 8, Goroutine: g0, TID: 102, Args: []uint64{1, 0}},
		{Start: 606, End: 607, Probe: 3, Goroutine: g0, TID: 102, Args: []uint64{1, 0, 1, 15}},
		// Goroutine 16's allocation waits for the collector's credit;
		// goroutine 17 waits on a channel; both readied in no probed call.
		{Start: 650, End: 720, Probe: 2, Goroutine: 16, TID: 106, Args: []uint64{1, 0, 3}},
		{Start: 650, End: 730, Probe: 2, Goroutine: 17, TID: 107, Args: []uint64{1, 0, 1}},
		{Start: 700, End: 701, Probe: 3, Goroutine: g0, TID: 108, Args: []uint64{1, 0, 1, 16}},
		{Start: 710, End: 711, Probe: 3, Goroutine: g0, TID: 108, Args: []uint64{1, 0, 1, 17}},
		// A root's scan resumes goroutine 18, stopped to scan its stack.
		{Start: 800, End: 850, Probe: 2, Goroutine: 18, TID: 109, Args: []uint64{1, 0, 1}},
		{Start: 820, End: 830, Probe: 9, Goroutine: g0, TID: 110, Args: []uint64{1, 5, 0}},
		{Start: 825, End: 826, Probe: 3, Goroutine: g0, TID: 110, Args: []uint64{1, 0, 1, 18}},
	}
	in := FromRecords(Spec{Start: "main.handle", End: "main.handle"}, calls, probes, nil, nil)
	if len(in.Calls) != 1 || in.Go == nil {
		t.Fatalf("calls %+v, go %+v", in.Calls, in.Go)
	}
	lane := map[uint64]uint32{}
	for l, g := range in.Go.Goids {
		lane[g] = l
	}
	if got, want := in.Go.Created(), []GoCreate{{Lane: lane[20], At: 210, Fired: 200, Armed: lane[7], ArmedAt: 20}}; !slices.Equal(got, want) {
		t.Errorf("created %+v, want %+v", got, want)
	}
	got := in.Go.Wakeups(GoRuntime{Reasons: reasons, PollRG: -1, PollWG: -1})
	for i := range got {
		got[i].tid = 0
	}
	want := []GoWake{
		{Time: 505, Waker: lane[9], Wakee: lane[14]},
		{Time: 606, Waker: LaneTimer, Wakee: lane[15]},
		{Time: 700, Waker: LaneGC, Wakee: lane[16]},
		{Time: 710, Waker: LaneRuntime, Wakee: lane[17]},
		{Time: 825, Waker: LaneGC, Wakee: lane[18]},
	}
	if !slices.Equal(got, want) {
		t.Errorf("wake-ups\n%+v, want\n%+v", got, want)
	}
	if LaneName(LaneGC) != "(GC)" || !IsRuntimeLane(LaneGC) {
		t.Errorf("the GC's lane")
	}
	for r, gc := range map[string]bool{"GC assist wait": true, "garbage collection scan": true, "force gc (idle)": true,
		"finalizer wait": true, "GC worker (idle)": true, "chan receive": false, "sync.Mutex.Lock": false, "IO wait": false} {
		if gcReason(r) != gc {
			t.Errorf("gcReason(%q) = %v", r, !gc)
		}
	}
}
