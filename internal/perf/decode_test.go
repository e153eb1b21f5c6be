package perf

import (
	"encoding/binary"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// These tests build records byte by byte as perf_event.h lays them out for
// the sample_type this package requests; the live kernel path is covered by
// the e2e tests.

type rb struct{ b []byte }

func (r *rb) u64(v ...uint64) {
	for _, x := range v {
		r.b = binary.LittleEndian.AppendUint64(r.b, x)
	}
}
func (r *rb) u32(v ...uint32) {
	for _, x := range v {
		r.b = binary.LittleEndian.AppendUint32(r.b, x)
	}
}

func record(typ uint32, misc uint16, body []byte) []byte {
	h := make([]byte, 8)
	binary.LittleEndian.PutUint32(h, typ)
	binary.LittleEndian.PutUint16(h[4:], misc)
	binary.LittleEndian.PutUint16(h[6:], uint16(8+len(body)))
	return append(h, body...)
}

func sampleBody(l Layout, stack []byte, raw []byte) []byte {
	var r rb
	r.u64(0x401000)  // IP
	r.u32(100, 101)  // pid, tid
	r.u64(123456789) // time
	r.u32(1, 0)      // cpu, res
	if l.Period == 0 {
		r.u64(1001001) // period
	}
	r.u64(6, contextKernel, 0xffffffff81000010, 0xffffffff81000020, contextUser, 0x401000, 0x401100)
	if l.Raw {
		r.u32(uint32(len(raw)))
		r.b = append(r.b, raw...)
	}
	r.u64(2) // ABI 64
	mask := l.Regs
	if mask == 0 {
		mask = RegsMask
	}
	for i := 0; i < NumRegs; i++ { // register i (RegIndex) holds i+1
		bit := i
		if i > RegIP {
			bit += 16 - RegR8
		}
		if mask&(1<<bit) != 0 {
			r.u64(uint64(i + 1))
		}
	}
	r.u64(uint64(len(stack)))
	r.b = append(r.b, stack...)
	r.u64(uint64(len(stack) / 2)) // dyn_size
	return r.b
}

func TestDecodeSample(t *testing.T) {
	stack := make([]byte, 64)
	for i := range stack {
		stack[i] = byte(i)
	}
	for _, l := range []Layout{{}, {Raw: true, Period: 7}, {Regs: RegsUnwind}} {
		raw := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
		rec := record(RecordSample, miscUser, sampleBody(l, stack, raw))
		v, err := Decode(rec, l)
		if err != nil {
			t.Fatalf("layout %+v: %v", l, err)
		}
		s := v.(*Sample)
		if s.PID != 100 || s.TID != 101 || s.Time != 123456789 || s.CPU != 1 || !s.UserMode {
			t.Errorf("header fields: %+v", s.Header)
		}
		wantPeriod := uint64(1001001)
		if l.Period != 0 {
			wantPeriod = l.Period
		}
		if s.Period != wantPeriod {
			t.Errorf("period %d, want %d", s.Period, wantPeriod)
		}
		if len(s.Kernel) != 2 || s.Kernel[1] != 0xffffffff81000020 || len(s.User) != 2 || s.User[1] != 0x401100 {
			t.Errorf("call chains: kernel %x user %x", s.Kernel, s.User)
		}
		if len(s.Regs) != NumRegs || s.Regs[RegSP] != RegSP+1 || s.StackSP != RegSP+1 {
			t.Errorf("registers %v", s.Regs)
		}
		for i, v := range s.Regs {
			want := uint64(i + 1)
			if l.Regs != 0 && l.Regs&(1<<i) == 0 {
				want = 0 // not sampled
			}
			if v != want {
				t.Errorf("layout %+v: register %d is %d, want %d", l, i, v, want)
			}
		}
		if wantMask := map[bool]uint64{true: l.Regs, false: RegsMask}[l.Regs != 0]; s.RegsSampled != wantMask {
			t.Errorf("layout %+v: registers sampled %#x, want %#x", l, s.RegsSampled, wantMask)
		}
		if len(s.Stack) != 32 || s.Stack[31] != 31 {
			t.Errorf("stack copy of %d bytes, want dyn_size 32", len(s.Stack))
		}
		if l.Raw && string(s.Raw) != string(raw) {
			t.Errorf("raw %v", s.Raw)
		}
		// Every truncation is an error, never a panic.
		for n := 8; n < len(rec); n++ {
			cut := append([]byte(nil), rec[:n]...)
			binary.LittleEndian.PutUint16(cut[6:], uint16(n))
			Decode(cut, l)
		}
	}
}

func TestDecodeSideband(t *testing.T) {
	trailer := func(r *rb) { r.u32(100, 101); r.u64(555); r.u32(1, 0) }
	var m rb
	m.u32(100, 101)
	m.u64(0x400000, 0x2000, 0x1000)
	m.b = append(m.b, 20, 0, 0, 0)                       // build-id size, reserved
	m.b = append(m.b, []byte("0123456789abcdefghij")...) // 20 bytes of build-id
	m.u32(unix.PROT_READ|unix.PROT_EXEC, 2)
	m.b = append(m.b, []byte("/usr/bin/x\x00\x00\x00\x00\x00\x00")...)
	trailer(&m)
	v, err := Decode(record(RecordMmap2, miscMmapBuildID, m.b), Layout{})
	if err != nil {
		t.Fatal(err)
	}
	mm := v.(*Mmap)
	if mm.Path != "/usr/bin/x" || mm.Start != 0x400000 || mm.Pgoff != 0x1000 || string(mm.BuildID) != "0123456789abcdefghij" || mm.Time != 555 || mm.Prot&unix.PROT_EXEC == 0 {
		t.Errorf("mmap2: %+v", mm)
	}

	var c rb
	c.u32(100, 101)
	c.b = append(c.b, []byte("worker\x00\x00")...)
	trailer(&c)
	v, _ = Decode(record(RecordComm, miscCommExec, c.b), Layout{})
	if cm := v.(*Comm); cm.Name != "worker" || !cm.Exec {
		t.Errorf("comm: %+v", cm)
	}

	var f rb
	f.u32(200, 100, 201, 101)
	f.u64(777)
	trailer(&f)
	v, _ = Decode(record(RecordFork, 0, f.b), Layout{})
	if tk := v.(*Task); tk.PID != 200 || tk.PPID != 100 || tk.TID != 201 || tk.Time != 777 {
		t.Errorf("fork: %+v", tk)
	}

	var l rb
	l.u64(9, 42)
	trailer(&l)
	v, _ = Decode(record(RecordLost, 0, l.b), Layout{})
	if lo := v.(*Lost); lo.Count != 42 {
		t.Errorf("lost: %+v", lo)
	}
	for _, c := range []struct {
		misc         uint16
		out, preempt bool
	}{{0, false, false}, {miscSwitchOut, true, false}, {miscSwitchOut | miscPreempt, true, true}} {
		var sw rb
		trailer(&sw)
		v, _ = Decode(record(RecordSwitch, c.misc, sw.b), Layout{})
		if s, ok := v.(*Switch); !ok || s.TID != 101 || s.Time != 555 || s.Out != c.out || s.Preempt != c.preempt {
			t.Errorf("switch misc %#x: %+v", c.misc, v)
		}
	}
	if _, err := Decode([]byte{1, 2, 3}, Layout{}); err == nil {
		t.Error("a 3-byte record decoded")
	}
}

// A Decoder decodes samples exactly as Decode does, into memory it reuses
// after Reset, and leaves the samples of before a Reset intact while it
// grows.
func TestDecoderReuses(t *testing.T) {
	stack := make([]byte, 64)
	l := Layout{Regs: RegsUnwind}
	rec := record(RecordSample, miscUser, sampleBody(l, stack, nil))
	want, err := Decode(rec, l)
	if err != nil {
		t.Fatal(err)
	}
	var d Decoder
	var first []*Sample
	for i := 0; i < 200; i++ { // more than one block of samples and words
		v, err := d.Decode(rec, l)
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, v.(*Sample))
	}
	for i, s := range first {
		if !reflect.DeepEqual(s, want) {
			t.Fatalf("sample %d decoded as %+v, want %+v", i, s, want)
		}
	}
	d.Reset()
	v, _ := d.Decode(rec, l)
	if again := v.(*Sample); !reflect.DeepEqual(again, want) {
		t.Errorf("after Reset: %+v, want %+v", again, want)
	}
	reused := false
	for _, s := range first {
		reused = reused || s == v.(*Sample)
	}
	if !reused {
		t.Errorf("after Reset the decoder allocated a new sample instead of reusing one")
	}
	side := record(RecordComm, 0, append([]byte{1, 0, 0, 0, 1, 0, 0, 0, 'x', 0, 0, 0, 0, 0, 0, 0}, make([]byte, idTrailer)...))
	if _, err := d.Decode(side, l); err != nil {
		t.Errorf("a side-band record through the Decoder: %v", err)
	}
}

// TestAttrExcludeIdle: only events asked to leave the idle task out carry
// exclude_idle, and it leaves the other bits as they were.
func TestAttrExcludeIdle(t *testing.T) {
	c := Config{Frequency: 999}
	plain := c.attr()
	c.ExcludeIdle = true
	idle := c.attr()
	if plain.Bits&unix.PerfBitExcludeIdle != 0 {
		t.Errorf("exclude_idle set without ExcludeIdle")
	}
	if idle.Bits&unix.PerfBitExcludeIdle == 0 {
		t.Errorf("exclude_idle not set with ExcludeIdle")
	}
	if idle.Bits&^unix.PerfBitExcludeIdle != plain.Bits {
		t.Errorf("ExcludeIdle changed other bits: %#x vs %#x", idle.Bits, plain.Bits)
	}
}
