package render

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Timelines whose samples go to the temporary file past heldBytes are the
// same, byte for byte, as those kept in memory: many blocks in several
// threads, out-of-order blocks of times, periods that change.
func TestTimelineSpill(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	p := &profile.Profile{
		Frames: []profile.Frame{
			{Function: "main", Object: "/bin/a"},
			{Function: "run", Object: "/bin/a", File: "a.c", Line: 3},
			{Function: "leaf", Object: "/bin/a"},
			{Function: "write", Object: "/lib/libc.so.6"},
			{Function: "sys_write", Object: "[kernel.kallsyms]", Kernel: true},
		},
		Metas:     []recording.Meta{{Frequency: 1000}},
		StartTime: 1000,
	}
	for range 20 {
		st := make([]int32, 1+r.Intn(5))
		for i := range st {
			st[i] = int32(r.Intn(len(p.Frames)))
		}
		p.Stacks = append(p.Stacks, st)
	}
	tm := uint64(1000)
	for range 120000 {
		tm += uint64(r.Intn(3)) * 1000
		if r.Intn(50) == 0 {
			tm += uint64(r.Intn(1 << 30))
		}
		tid := uint32(100 + r.Intn(3))
		p.Samples = append(p.Samples, profile.Sample{Time: tm, PID: 100, TID: tid, Period: uint64(1000 + r.Intn(3)),
			Stack: int32(r.Intn(len(p.Stacks))), Event: recording.EventCPU})
	}
	write := func() (ss, ch []byte) {
		var a, b bytes.Buffer
		if err := WriteSpeedscope(&a, p); err != nil {
			t.Fatal(err)
		}
		if err := WriteChrome(&b, p); err != nil {
			t.Fatal(err)
		}
		return a.Bytes(), b.Bytes()
	}
	ss, ch := write()
	defer func(h int) { heldBytes = h }(heldBytes)
	heldBytes = 3 * listBlock
	ts, err := byThread(p, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts.spill.f == nil || ts.spill.size < 3*listBlock || ts.spill.held > heldBytes {
		t.Fatalf("spilled %d bytes, held %d", ts.spill.size, ts.spill.held)
	}
	n := 0
	for _, l := range ts.lists {
		if err := l.each(func(tsample) { n++ }); err != nil {
			t.Fatal(err)
		}
	}
	ts.close()
	if n != len(p.Samples) {
		t.Fatalf("read back %d samples of %d", n, len(p.Samples))
	}
	ss2, ch2 := write()
	if !bytes.Equal(ss, ss2) {
		t.Error("speedscope differs when spilled")
	}
	if !bytes.Equal(ch, ch2) {
		t.Error("Chrome differs when spilled")
	}
	// No temporary file to be had: the samples stay in memory.
	t.Setenv("TMPDIR", t.TempDir()+"/missing")
	ts, err = byThread(p, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts.spill.f != nil || !ts.spill.off {
		t.Errorf("spilled without a temporary directory")
	}
	ts.close()
	if ss3, ch3 := write(); !bytes.Equal(ss, ss3) || !bytes.Equal(ch, ch3) {
		t.Error("timelines differ without a temporary file")
	}
}

// A Chrome timeline's per-sample records read back through cursors that
// move on by themselves, from blocks kept in memory and written out, and
// give their memory back to the spill when the next thread starts.
func TestEndListSpill(t *testing.T) {
	defer func(h int) { heldBytes = h }(heldBytes)
	heldBytes = 2 * endRecs * endRecBytes
	r := rand.New(rand.NewSource(9))
	s := &spill{}
	defer s.close()
	var l endList
	l.reset(s)
	n := 10*endRecs + 17
	shared := make([]int32, n)
	ends := make([]uint64, n)
	for k := range n {
		shared[k], ends[k] = int32(r.Intn(40))-1, r.Uint64()
		l.add(shared[k], ends[k])
	}
	if s.f == nil || len(l.out) < 7 || l.held != heldBytes || s.held != heldBytes {
		t.Fatalf("file %v, %d blocks out, %d held (spill %d)", s.f != nil, len(l.out), l.held, s.held)
	}
	cs := make([]endCursor, 3)
	for i := range cs {
		cs[i].base = noBlock
	}
	at := make([]int, len(cs))
	for step := 0; step < 3*n; step++ {
		i := r.Intn(len(cs))
		if at[i] >= n {
			continue
		}
		if sh, e := l.sharedAt(&cs[i], at[i]), l.endAt(&cs[i], at[i]); sh != shared[at[i]] || e != ends[at[i]] {
			t.Fatalf("record %d: %d %d, want %d %d", at[i], sh, e, shared[at[i]], ends[at[i]])
		}
		d := int32(r.Intn(5)) - 1
		want := at[i]
		for want < n && shared[want] > d {
			want++
		}
		if got := l.next(&cs[i], at[i], n, d); got != want {
			t.Fatalf("next from %d at most %d: %d, want %d", at[i], d, got, want)
		}
		at[i] += 1 + r.Intn(3*endRecs/2)
	}
	if l.err != nil {
		t.Fatal(l.err)
	}
	l.reset(s)
	if s.held != 0 || l.n != 0 {
		t.Errorf("after reset: spill holds %d, %d records", s.held, l.n)
	}
	// A block that cannot be read back is an error.
	for k := range 4 * endRecs {
		l.add(1, uint64(k))
	}
	if l.blocks[2] != nil {
		t.Fatalf("the third block is held")
	}
	s.f.Close()
	c := endCursor{base: noBlock}
	if l.sharedAt(&c, 2*endRecs); l.err == nil {
		t.Errorf("no error reading a closed file")
	}
	s.f = nil
}
