package traceprog

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// Every variant of the programs passes the kernel's verifier.
func TestLoads(t *testing.T) {
	testutil.NeedRoot(t)
	for _, o := range []Options{{Probes: 1}, {Args: true, Probes: 3}, {Go: true, Probes: 2}, {Go: true, Args: true, Probes: 5000}, {Sampling: true, Probes: 4}, {Go: true, Sampling: true, Args: true, Probes: 4}, {TimedHz: 5, Sampling: true, Probes: 2}, {MaxDepth: 3, Probes: 2}, {Go: true, MaxDepth: 1, Args: true, Probes: 2}, {Args: true, Reads: true, Probes: 3}, {Args: true, Reads: true, Strings: true, Sampling: true, Probes: 3}, {CPU: true, Probes: 2}, {CPU: true, Go: true, Args: true, GoidOff: 152, Probes: 2}, {CPU: true, Args: true, Reads: true, Strings: true, Probes: 3}} {
		tr, err := New(o)
		if err != nil {
			t.Errorf("%+v: %v", o, err)
			continue
		}
		if s := tr.Stats(); s != (Stats{}) {
			t.Errorf("%+v: fresh counters %+v", o, s)
		}
		// The programs of USDT begin/end pairs, loaded when one is set;
		// with --args, an entry program that reads the begins' operands
		// (a register, memory at base+index·scale+offset, a constant).
		// The point probes' program, with a USDT point's arguments
		// (recorded with or without --args).
		for _, pt := range []Probe{{ID: 1, Point: true, Args: []ArgSpec{{Kind: ArgReg, Reg: 112, Size: 4}, {Kind: ArgConst, Off: 3, Size: 4}}}, {ID: 1, Point: true}} {
			hit, err := tr.loadHit([]Probe{pt})
			if err != nil {
				t.Errorf("%+v: point program (arguments %v): %v", o, pt.Args, err)
				continue
			}
			hit.Close()
		}
		if _, _, err := tr.loadPair(nil); err != nil {
			t.Errorf("%+v: pair programs: %v", o, err)
		}
		// Native code's probes on RET instructions and at the unwinder's
		// landing pads, loaded when an object that unwinds is traced.
		if !o.Go {
			if err := tr.loadNative(); err != nil || tr.retNative == nil || tr.tailJump == nil || tr.unwound == nil {
				t.Errorf("%+v: RET-instruction programs: %v", o, err)
			}
			// The uprobe session program of calls with uretprobes
			// (Linux 6.13 and later, as on the machines culprit is
			// tested on).
			if err := tr.loadSession(); err != nil || tr.session == nil {
				t.Errorf("%+v: uprobe session program: %v (kernel without uprobe sessions: %v)", o, err, tr.noSession)
			}
		}
		pairs := []Probe{{ID: 1, Begins: []uint64{0x20}, BeginArgs: [][]ArgSpec{
			{{Kind: ArgReg, Reg: 112, Size: 4}, {Kind: ArgMem, Reg: 152, Index: 88, Scale: 8, Off: -8, Size: 8}},
			{{Kind: ArgConst, Off: 5, Size: 4}, {Kind: ArgMem, Reg: -1, Off: 0x1000, Size: 2}},
		}}}
		if _, _, err := tr.loadPair(pairs); err != nil {
			t.Errorf("%+v: pair programs with arguments: %v", o, err)
		}
		// Pairs matched by an id: the begins' and ends' first operands.
		pairs[0].BeginID = []ArgSpec{{Kind: ArgReg, Reg: 112, Size: 4}, {Kind: ArgMem, Reg: 152, Off: 16, Size: 8}}
		pairs[0].EndID = []ArgSpec{{Kind: ArgMem, Reg: -1, Off: 0x1000, Size: 4}}
		if _, _, err := tr.loadPair(pairs); err != nil {
			t.Errorf("%+v: pair programs with ids: %v", o, err)
		}
		tr.Close()
	}
}

// A record decodes field by field at the offsets the program writes, for
// every set of parts a program can write; the part bits do not reach the
// call's flags, and a record shorter than its parts is refused.
func TestDecode(t *testing.T) {
	for _, parts := range [][3]bool{{}, {true}, {false, true}, {false, false, true}, {true, true}, {true, false, true}, {false, true, true}, {true, true, true}} {
		l := recLayout(parts[0], parts[1], parts[2])
		if l.size == StrRecordSize || l.size > MaxRecordSize {
			t.Fatalf("parts %v: a call record of %d bytes (string records are %d, the largest call record %d)", parts, l.size, StrRecordSize, MaxRecordSize)
		}
		b := make([]byte, l.size)
		put := func(off int16, v uint64, n int) {
			for i := 0; i < n; i++ {
				b[int(off)+i] = byte(v >> (8 * i))
			}
		}
		put(rStart, 100, 8)
		put(rEnd, 250, 8)
		put(rChild, 40, 8)
		put(rSite, 0x401234, 8)
		put(rPidTgid, 7<<32|9, 8)
		put(rProbe, 3, 4)
		put(rCaller, 2, 4)
		put(rDepth, 1, 4)
		put(rFlags, uint64(Unreturned|CPU|l.bits), 4)
		want := Call{Start: 100, End: 250, Child: 40, Site: 0x401234, PID: 7, TID: 9, Probe: 3, Caller: 2, Depth: 1, Flags: Unreturned | CPU}
		if parts[0] {
			put(l.cpu+pOff, 30, 8)
			put(l.cpu+pChildOff, 20, 8)
			want.Off, want.ChildOff = 30, 20
		}
		if parts[1] {
			put(l.g+pG, 0xc000102000, 8)
			put(l.g+pGoid, 18, 8)
			want.G, want.Goid = 0xc000102000, 18
		}
		if parts[2] {
			put(l.args+pArgs+8*5, 66, 8)
			put(l.args+pRet, 5, 8)
			put(l.args+pMem+8, 77, 8)
			want.Args[5], want.Ret, want.Mem[1] = 66, 5, 77
		}
		var c Call
		if !decode(b, &c) {
			t.Errorf("parts %v: record of %d bytes refused", parts, len(b))
			continue
		}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("parts %v: decoded %+v, want %+v", parts, c, want)
		}
		if decode(b[:len(b)-1], &c) {
			t.Errorf("parts %v: a record one byte short decoded", parts)
		}
	}
}

// Writing the ring's pages once (touchRing, which New also runs) works on
// this kernel and leaves nothing for the reader: the records it reserves
// are discarded and skipped.
func TestTouchRing(t *testing.T) {
	testutil.NeedRoot(t)
	tr, err := New(Options{Probes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.touchRing(); err != nil {
		t.Fatalf("touching the ring's pages: %v", err)
	}
	n := 0
	if err := tr.Read(0, 0, func(*Call) { n++ }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d calls read from a ring only touched", n)
	}
}

// The #N counter is taken with one atomic fetch-and-add whose encoded
// immediate carries BPF_FETCH: without it the kernel runs a plain atomic
// add, the call's number is never read, and every call is skipped (or,
// read back separately, two threads can get the same number). A free
// slot is taken with a compare-and-exchange, which needs BPF_FETCH too.
func TestSamplingFetchesAtomically(t *testing.T) {
	ins := entryProgram(maps{}, progOptions{Sampling: true})
	want := map[asm.AtomicOp]uint32{
		asm.FetchAdd: 0x01, // BPF_ADD | BPF_FETCH
		asm.CmpXchg:  0xf1, // BPF_CMPXCHG (with BPF_FETCH)
	}
	got := map[asm.AtomicOp]int{}
	for _, in := range ins {
		op := in.OpCode.AtomicOp()
		if op == asm.InvalidAtomic {
			continue
		}
		var buf bytes.Buffer
		if _, err := in.Marshal(&buf, binary.LittleEndian); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		if imm := binary.LittleEndian.Uint32(b[4:8]); imm != want[op] {
			t.Errorf("%v encodes immediate %#x, want %#x", in, imm, want[op])
		}
		got[op]++
	}
	if got[asm.FetchAdd] != 1 || got[asm.CmpXchg] != 1 {
		t.Errorf("atomic instructions in the sampling entry program: %v, want one fetch-and-add and one compare-and-exchange", got)
	}
}

// AllHits reads every probe's counter in one go, as Hits reads one.
func TestAllHits(t *testing.T) {
	testutil.NeedRoot(t)
	tr, err := New(Options{Probes: 700, Sampling: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, id := range []uint32{1, 3, 699, 700} {
		var v [16]byte
		binary.LittleEndian.PutUint64(v[:], uint64(id)*10)
		if err := tr.counts.Put(id, v[:]); err != nil {
			t.Fatal(err)
		}
	}
	all := tr.AllHits()
	if len(all) != 701 {
		t.Fatalf("%d counters, want 701", len(all))
	}
	for id, n := range all {
		if n != tr.Hits(uint32(id)) {
			t.Errorf("probe %d: AllHits %d, Hits %d", id, n, tr.Hits(uint32(id)))
		}
	}
	if all[699] != 6990 || all[2] != 0 {
		t.Errorf("probe 699: %d, probe 2: %d", all[699], all[2])
	}
}

// A thread's batch is its calls' records side by side, each as long as
// its own parts make it: the reader splits a ring record of several
// records of different sizes, and the shadow stack's batch left in the
// map (eachBatched) reads the same way, up to its length.
func TestBatchSplits(t *testing.T) {
	var batch []byte
	var want []Call
	for i, parts := range [][3]bool{{true}, {true, false, true}, {}, {false, true}, {true, true, true}, {true}} {
		l := recLayout(parts[0], parts[1], parts[2])
		r := make([]byte, l.size)
		binary.LittleEndian.PutUint64(r[rStart:], uint64(100*i))
		binary.LittleEndian.PutUint64(r[rEnd:], uint64(100*i+50))
		binary.LittleEndian.PutUint32(r[rProbe:], uint32(i+1))
		binary.LittleEndian.PutUint32(r[rFlags:], uint32(l.bits))
		batch = append(batch, r...)
		want = append(want, Call{Start: uint64(100 * i), End: uint64(100*i + 50), Probe: uint32(i + 1)})
	}
	var got []Call
	eachCall(batch, func(c *Call) { got = append(got, *c) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("split %d bytes into %+v, want %+v", len(batch), got, want)
	}
	if len(batch) > batchCap {
		t.Fatalf("test batch of %d bytes is over the batch's %d", len(batch), batchCap)
	}
	val := make([]byte, threadSize)
	copy(val[bData:], batch)
	binary.LittleEndian.PutUint32(val[bLen:], uint32(len(batch)))
	got = nil
	eachBatched(val, func(c *Call) { got = append(got, *c) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the batch in a shadow stack read as %+v, want %+v", got, want)
	}
	// A batch cut short in its last record gives the whole ones before.
	got = nil
	eachCall(batch[:len(batch)-8], func(c *Call) { got = append(got, *c) })
	if !reflect.DeepEqual(got, want[:len(want)-1]) {
		t.Errorf("a batch cut short read as %d calls, want %d", len(got), len(want)-1)
	}
}
