package perf

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"golang.org/x/sys/unix"
)

// Record types this package decodes (from perf_event.h).
const (
	RecordMmap        = unix.PERF_RECORD_MMAP
	RecordLost        = unix.PERF_RECORD_LOST
	RecordComm        = unix.PERF_RECORD_COMM
	RecordExit        = unix.PERF_RECORD_EXIT
	RecordThrottle    = unix.PERF_RECORD_THROTTLE
	RecordUnthrottle  = unix.PERF_RECORD_UNTHROTTLE
	RecordFork        = unix.PERF_RECORD_FORK
	RecordSample      = unix.PERF_RECORD_SAMPLE
	RecordMmap2       = unix.PERF_RECORD_MMAP2
	RecordLostSamples = unix.PERF_RECORD_LOST_SAMPLES
	RecordSwitch      = unix.PERF_RECORD_SWITCH

	miscCommExec    = 1 << 13
	miscSwitchOut   = 1 << 13 // PERF_RECORD_MISC_SWITCH_OUT
	miscPreempt     = 1 << 14 // PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (Linux 4.17+)
	miscMmapBuildID = 1 << 14
	miscCPUModeMask = 7
	miscUser        = 2

	contextKernel = ^uint64(0x80) + 1 // (u64)-128
	contextUser   = ^uint64(0x200) + 1
	contextMax    = ^uint64(0xfff) + 1
)

// idTrailer is the size of the sample_id trailer of non-sample records:
// TID (8) + TIME (8) + CPU (8), matching sampleType.
const idTrailer = 24

// Header is the common record header plus the sample_id fields.
type Header struct {
	Type uint32
	Misc uint16
	PID  uint32
	TID  uint32
	Time uint64
	CPU  uint32
}

// Sample is a decoded PERF_RECORD_SAMPLE. Slices alias the record buffer.
type Sample struct {
	Header
	IP       uint64
	Period   uint64
	Kernel   []uint64 // kernel call chain, innermost first, context markers removed
	User     []uint64 // user call chain (frame pointers), innermost first
	UserMode bool     // the sample was taken in user mode
	ABI      uint64   // registers ABI: 0 none (kernel thread), 2 = 64-bit
	Regs     []uint64 // user registers in RegsMask order (NumRegs; 0 when not sampled, see Layout.Regs)
	Raw      []byte   // raw tracepoint data (PERF_SAMPLE_RAW), nil for cpu-clock
	StackSP  uint64   // Regs' SP: where Stack starts
	Stack    []byte   // copy of the user stack
	// StackHoles are Stack's pages that were not in memory
	// (unwind.StackCopy.Holes).
	StackHoles uint8
	// RegsSampled are the registers Regs holds, perf_regs.h bits
	// (Layout.Regs within RegsMask): the others are not the thread's.
	RegsSampled uint64
}

// Mmap is a decoded MMAP or MMAP2 record.
type Mmap struct {
	Header
	Start, Len, Pgoff uint64
	Prot, Flags       uint32
	BuildID           []byte
	Path              string
}

// Comm is a decoded COMM record.
type Comm struct {
	Header
	Exec bool
	Name string
}

// Task is a decoded FORK or EXIT record.
type Task struct {
	Header
	PPID, PTID uint32
}

// Switch is a decoded SWITCH record: the thread of its Header entered the
// CPU, or left it (Out), preempted while still runnable (Preempt).
type Switch struct {
	Header
	Out, Preempt bool
}

// Lost is a decoded LOST, LOST_SAMPLES or THROTTLE record.
type Lost struct {
	Header
	Count uint64
}

// RegIndex gives the position of a register in Sample.Regs.
const (
	RegAX = iota
	RegBX
	RegCX
	RegDX
	RegSI
	RegDI
	RegBP
	RegSP
	RegIP
	RegR8
	RegR9
	RegR10
	RegR11
	RegR12
	RegR13
	RegR14
	RegR15
	NumRegs
)

var le = binary.LittleEndian

// Decoder decodes records as Decode does, but takes the samples and their
// call chains and registers from memory it reuses: a recorder decodes
// thousands of samples a second and drops them after each drain. A sample
// it returns is valid until the next Reset. A nil *Decoder allocates each
// sample, as Decode does.
type Decoder struct {
	samples []Sample
	n       int
	words   []uint64
	w       int
}

// Reset makes the memory of every sample decoded so far available again.
func (d *Decoder) Reset() { d.n, d.w = 0, 0 }

func (d *Decoder) sample() *Sample {
	if d == nil {
		return new(Sample)
	}
	if d.n == len(d.samples) {
		// Earlier samples keep the old array; the new one is reused after Reset.
		d.samples = make([]Sample, max(64, 2*len(d.samples)))
		d.n = 0
	}
	s := &d.samples[d.n]
	d.n++
	*s = Sample{}
	return s
}

func (d *Decoder) uint64s(n int) []uint64 {
	if d == nil {
		return make([]uint64, n)
	}
	if d.w+n > len(d.words) {
		d.words = make([]uint64, max(4096, 2*len(d.words), n))
		d.w = 0
	}
	b := d.words[d.w : d.w+n : d.w+n]
	d.w += n
	clear(b)
	return b
}

// Decode decodes one raw record of an event opened by Open, whose samples are
// laid out as l (Event.Layout). It returns *Sample, *Mmap, *Comm, *Task,
// *Lost, *Switch, or nil for records culprit does not use.
func Decode(rec []byte, l Layout) (any, error) { return (*Decoder)(nil).Decode(rec, l) }

// Decode is Decode with samples from d.
func (d *Decoder) Decode(rec []byte, l Layout) (any, error) {
	if len(rec) < 8 {
		return nil, fmt.Errorf("perf record of %d bytes is too short", len(rec))
	}
	h := Header{Type: le.Uint32(rec), Misc: le.Uint16(rec[4:])}
	body := rec[8:]
	if h.Type == RecordSample {
		return decodeSample(h, body, l, d)
	}
	if len(body) < idTrailer {
		return nil, nil
	}
	tr := body[len(body)-idTrailer:]
	h.PID, h.TID, h.Time, h.CPU = le.Uint32(tr), le.Uint32(tr[4:]), le.Uint64(tr[8:]), le.Uint32(tr[16:])
	body = body[:len(body)-idTrailer]
	switch h.Type {
	case RecordMmap2, RecordMmap:
		return decodeMmap(h, body)
	case RecordComm:
		if len(body) < 8 {
			return nil, errShort(h.Type)
		}
		return &Comm{Header: h, Exec: h.Misc&miscCommExec != 0, Name: cstring(body[8:])}, nil
	case RecordFork, RecordExit:
		if len(body) < 24 {
			return nil, errShort(h.Type)
		}
		t := &Task{Header: h}
		t.PID, t.PPID, t.TID, t.PTID = le.Uint32(body), le.Uint32(body[4:]), le.Uint32(body[8:]), le.Uint32(body[12:])
		t.Time = le.Uint64(body[16:])
		return t, nil
	case RecordLost:
		if len(body) < 16 {
			return nil, errShort(h.Type)
		}
		return &Lost{Header: h, Count: le.Uint64(body[8:])}, nil
	case RecordLostSamples:
		if len(body) < 8 {
			return nil, errShort(h.Type)
		}
		return &Lost{Header: h, Count: le.Uint64(body)}, nil
	case RecordThrottle:
		return &Lost{Header: h, Count: 1}, nil
	case RecordSwitch:
		return &Switch{Header: h, Out: h.Misc&miscSwitchOut != 0, Preempt: h.Misc&miscPreempt != 0}, nil
	}
	return nil, nil
}

func errShort(t uint32) error { return fmt.Errorf("perf record type %d is truncated", t) }

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func decodeMmap(h Header, b []byte) (any, error) {
	m := &Mmap{Header: h}
	if len(b) < 32 {
		return nil, errShort(h.Type)
	}
	m.PID, m.TID = le.Uint32(b), le.Uint32(b[4:])
	m.Start, m.Len, m.Pgoff = le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])
	b = b[32:]
	if h.Type == RecordMmap {
		m.Path = cstring(b)
		m.Prot = unix.PROT_EXEC
		return m, nil
	}
	if len(b) < 32 {
		return nil, errShort(h.Type)
	}
	if h.Misc&miscMmapBuildID != 0 {
		n := int(b[0])
		if n > 20 {
			n = 20
		}
		m.BuildID = append([]byte(nil), b[4:4+n]...)
	}
	m.Prot, m.Flags = le.Uint32(b[24:]), le.Uint32(b[28:])
	m.Path = cstring(b[32:])
	return m, nil
}

func decodeSample(h Header, b []byte, l Layout, d *Decoder) (*Sample, error) {
	s := d.sample()
	s.Header, s.UserMode = h, h.Misc&miscCPUModeMask == miscUser
	need := func(n int) error {
		if len(b) < n {
			return fmt.Errorf("perf sample record is truncated")
		}
		return nil
	}
	if err := need(32); err != nil {
		return nil, err
	}
	s.IP = le.Uint64(b)
	s.PID, s.TID = le.Uint32(b[8:]), le.Uint32(b[12:])
	s.Time = le.Uint64(b[16:])
	s.CPU = le.Uint32(b[24:])
	b = b[32:]
	if l.Period != 0 {
		s.Period = l.Period
	} else {
		if err := need(8); err != nil {
			return nil, err
		}
		s.Period = le.Uint64(b)
		b = b[8:]
	}
	if err := need(8); err != nil {
		return nil, err
	}
	nr := le.Uint64(b)
	b = b[8:]
	if nr > uint64(len(b)/8) {
		return nil, fmt.Errorf("perf sample call chain of %d entries overruns the record", nr)
	}
	chain := d.uint64s(int(nr))
	for i := range chain {
		chain[i] = le.Uint64(b[8*i:])
	}
	b = b[8*nr:]
	ctx := uint64(0)
	start := 0
	flush := func(end int) {
		switch ctx {
		case contextKernel:
			s.Kernel = chain[start:end]
		case contextUser:
			s.User = chain[start:end]
		}
	}
	for i, ip := range chain {
		if ip >= contextMax {
			flush(i)
			ctx, start = ip, i+1
		}
	}
	flush(len(chain))
	if l.Raw {
		if err := need(4); err != nil {
			return nil, err
		}
		n := int(le.Uint32(b))
		if err := need(4 + n); err != nil {
			return nil, err
		}
		s.Raw = b[4 : 4+n]
		b = b[4+n:]
	}
	if err := need(8); err != nil {
		return nil, err
	}
	s.ABI = le.Uint64(b)
	b = b[8:]
	if s.ABI != 0 {
		mask := l.Regs & RegsMask
		if mask == 0 {
			mask = RegsMask
		}
		n := bits.OnesCount64(mask)
		if err := need(8 * n); err != nil {
			return nil, err
		}
		s.Regs = d.uint64s(NumRegs)
		s.RegsSampled = mask
		k := 0
		for i := range s.Regs {
			bit := i // AX..IP are bits 0–8, R8..R15 bits 16–23
			if i > RegIP {
				bit += 16 - RegR8
			}
			if mask&(1<<bit) != 0 {
				s.Regs[i] = le.Uint64(b[8*k:])
				k++
			}
		}
		b = b[8*n:]
		s.StackSP = s.Regs[RegSP]
	}
	if len(b) >= 8 {
		size := le.Uint64(b)
		b = b[8:]
		if size > 0 {
			if size > uint64(len(b)) {
				return nil, fmt.Errorf("perf sample stack copy overruns the record")
			}
			data := b[:size]
			b = b[size:]
			if len(b) >= 8 {
				if dyn := le.Uint64(b); dyn < size {
					data = data[:dyn]
				}
			}
			s.Stack = data
		}
	}
	return s, nil
}
