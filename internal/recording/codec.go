package recording

import (
	"encoding/json"
	"fmt"
	"math"
)

// Flag bits of the records that have a bitfield.
const (
	commExec        = 1 << 0 // Comm.Exec
	sampleTruncated = 1 << 0 // Sample.Truncated
	sampleRunDelay  = 1 << 1 // Sample.HasRunDelay: field 10 is RunDelay
	sampleRuntime   = 1 << 2 // Sample.HasExecRuntime: field 11 is ExecRuntime (field 10 then written, 0 without HasRunDelay)
	sourceGlobal    = 1 << 0 // ValueSource.Global
	sourcePointer   = 1 << 1 // ValueSource.Pointer
)

// encodePayload appends r's payload to e. The field order is the declared
// order of the struct; docs/format.md lists it.
func encodePayload(e *enc, r Record) (Kind, error) {
	switch r := r.(type) {
	case *Sample:
		if r == nil {
			break
		}
		encodeSample(e, r)
		return KindSample, nil
	case *Stack:
		if r == nil {
			break
		}
		if r.ID == 0 {
			return 0, fmt.Errorf("writing stack record: ID 0 is reserved for samples without a stack")
		}
		e.u(r.ID)
		e.addrs(r.Kernel)
		e.addrs(r.User)
		return KindStack, nil
	case *Meta:
		if r == nil {
			break
		}
		j, err := json.Marshal(r)
		if err != nil {
			return 0, fmt.Errorf("encoding meta record: %w", err)
		}
		e.b = append(e.b, j...)
		e.mark = len(e.b)
		return KindMeta, nil
	case *Mmap:
		if r == nil {
			break
		}
		e.u(r.Time)
		e.u(uint64(r.PID))
		e.u(uint64(r.TID))
		e.u(r.Start)
		e.u(r.Len)
		e.u(r.Pgoff)
		e.u(uint64(r.Prot))
		e.u(uint64(r.Flags))
		e.bytes(r.BuildID)
		e.str(r.Path)
		return KindMmap, nil
	case *Comm:
		if r == nil {
			break
		}
		e.u(r.Time)
		e.u(uint64(r.PID))
		e.u(uint64(r.TID))
		var f uint64
		if r.Exec {
			f |= commExec
		}
		e.u(f)
		e.str(r.Name)
		return KindComm, nil
	case *Task:
		if r == nil {
			break
		}
		// Exit is carried by the kind, not the payload.
		e.u(r.Time)
		e.u(uint64(r.PID))
		e.u(uint64(r.PPID))
		e.u(uint64(r.TID))
		e.u(uint64(r.PTID))
		return r.Kind(), nil
	case *Lost:
		if r == nil {
			break
		}
		e.u(r.Time)
		e.u(uint64(r.Reason))
		e.u(r.Count)
		if r.Since != 0 {
			e.u(r.Since)
			e.u(uint64(r.CPU))
		}
		return KindLost, nil
	case *KernelSymbol:
		if r == nil {
			break
		}
		e.u(r.Addr)
		e.u(r.Size)
		e.str(r.Name)
		e.str(r.Module)
		return KindKernelSymbol, nil
	case *Object:
		if r == nil {
			break
		}
		e.str(r.Name)
		e.bytes(r.BuildID)
		e.bytes(r.Data)
		return KindObject, nil
	case *End:
		if r == nil {
			break
		}
		e.u(r.Time)
		e.u(r.Samples)
		e.u(r.Lost)
		e.u(r.Throttled)
		e.i(int64(r.ExitCode))
		e.u(r.Calls)
		return KindEnd, nil
	case *Symbol:
		if r == nil {
			break
		}
		e.u(uint64(r.PID))
		e.u(r.Addr)
		e.u(r.Size)
		e.str(r.Name)
		e.str(r.Object)
		return KindSymbol, nil
	case *ValueSource:
		if r == nil {
			break
		}
		e.u(uint64(r.ID))
		e.u(uint64(r.Class))
		e.str(r.Name)
		e.str(r.Function)
		e.str(r.File)
		e.u(uint64(r.Line))
		e.str(r.Type)
		e.str(r.Tags)
		var f uint64
		if r.Global {
			f |= sourceGlobal
		}
		if r.Pointer {
			f |= sourcePointer
		}
		e.u(f)
		e.str(r.Enum)
		e.str(r.Schema)
		return KindValueSource, nil
	case *Value:
		if r == nil {
			break
		}
		e.u(r.Time)
		e.u(uint64(r.PID))
		e.u(uint64(r.TID))
		e.u(uint64(r.Source))
		e.u(uint64(r.Depth))
		e.u(uint64(r.Type))
		e.u(r.PC)
		e.u(r.Bits)
		return KindValue, nil
	case *Probe:
		if r == nil {
			break
		}
		if r.ID == 0 {
			return 0, fmt.Errorf("writing probe record: ID 0 is reserved for calls without a traced caller")
		}
		e.u(uint64(r.ID))
		e.str(r.Function)
		e.str(r.Object)
		e.bytes(r.BuildID)
		e.u(r.Offset)
		e.u(uint64(r.Every))
		e.u(uint64(len(r.Params)))
		for _, p := range r.Params {
			e.str(p)
		}
		e.str(r.Ret)
		e.u(r.Since)
		return KindProbe, nil
	case *Call:
		if r == nil {
			break
		}
		e.u(r.Start)
		e.u(r.End - r.Start)
		e.u(r.Child)
		e.u(uint64(r.PID))
		e.u(uint64(r.TID))
		e.u(uint64(r.Probe))
		e.u(uint64(r.Caller))
		e.u(uint64(r.Depth))
		e.u(r.Site)
		e.u(uint64(r.Flags))
		e.u(uint64(len(r.Args)))
		for _, a := range r.Args {
			e.u(a)
		}
		e.u(r.Ret)
		if len(r.Strs) > 0 || r.Flags&CallCPU != 0 || r.Goroutine != 0 {
			e.u(uint64(len(r.Strs)))
			for _, x := range r.Strs {
				e.str(x)
			}
		}
		if r.Flags&CallCPU != 0 || r.Goroutine != 0 {
			e.u(r.Off)
			e.u(r.ChildOff)
		}
		if r.Goroutine != 0 {
			e.u(r.Goroutine)
		}
		return KindCall, nil
	case *ProbesOff:
		if r == nil {
			break
		}
		if r.End < r.Start {
			return 0, fmt.Errorf("writing probes-off record: it ends before it starts")
		}
		e.u(r.Start)
		e.u(r.End - r.Start)
		return KindProbesOff, nil
	case *SyscallWindow:
		if r == nil {
			break
		}
		if r.End < r.Start {
			return 0, fmt.Errorf("writing system call window record: it ends before it starts")
		}
		e.u(r.Start)
		e.u(r.End - r.Start)
		e.u(r.On)
		e.u(r.Period)
		return KindSyscallWindow, nil
	case *ValueIndex:
		return 0, fmt.Errorf("writing value index record: a Writer writes them itself, before the values they index")
	case nil:
		return 0, fmt.Errorf("writing a nil record")
	default:
		return 0, fmt.Errorf("writing record of unsupported type %T", r)
	}
	return 0, fmt.Errorf("writing a nil %T record", r)
}

func encodeSample(e *enc, s *Sample) {
	e.u(s.Time)
	e.u(uint64(s.PID))
	e.u(uint64(s.TID))
	e.u(uint64(s.CPU))
	e.u(s.Period)
	e.u(s.StackID)
	var f uint64
	if s.Truncated {
		f |= sampleTruncated
	}
	if s.HasRunDelay {
		f |= sampleRunDelay
	}
	if s.HasExecRuntime {
		f |= sampleRuntime
	}
	e.u(f)
	e.u(uint64(s.Event))
	e.u(s.Arg)
	switch {
	case s.HasExecRuntime && s.HasRunDelay:
		e.u(s.RunDelay)
		e.u(s.ExecRuntime)
	case s.HasExecRuntime:
		e.u(0)
		e.u(s.ExecRuntime)
	case s.HasRunDelay:
		e.u(s.RunDelay)
	}
}

// decodePayload decodes the payload p of a record of kind k, which must be a
// known kind. It copies what it keeps, so p may be reused afterwards. ok is
// false when the payload is malformed.
//
// Samples are carved out of slab, a block allocated a few hundred at a time,
// to save an allocation per sample. A Stack is decoded into stack, reusing
// its address slices, when stack is not nil; a Call into call, when not
// nil (its Args and Strs freshly made, as a record's own).
func decodePayload(k Kind, p []byte, slab *[]Sample, stack *Stack, value *Value, call *Call) (r Record, ok bool) {
	d := dec{b: p}
	switch k {
	case KindSample:
		var v [11]uint64
		d.uvarints(v[:])
		if d.bad || v[1]|v[2]|v[3] > math.MaxUint32 || v[7] > math.MaxUint8 {
			return nil, false
		}
		if len(*slab) == 0 {
			*slab = make([]Sample, 256)
		}
		s := &(*slab)[0]
		*slab = (*slab)[1:]
		*s = Sample{Time: v[0], PID: uint32(v[1]), TID: uint32(v[2]), CPU: uint32(v[3]),
			Period: v[4], StackID: v[5], Truncated: v[6]&sampleTruncated != 0,
			Event: Event(v[7]), Arg: v[8], HasRunDelay: v[6]&sampleRunDelay != 0}
		if s.HasRunDelay {
			s.RunDelay = v[9]
		}
		if v[6]&sampleRuntime != 0 {
			s.ExecRuntime, s.HasExecRuntime = v[10], true
		}
		return s, true
	case KindStack:
		s := stack
		if s == nil {
			s = new(Stack)
		}
		s.ID = d.u()
		if s.ID == 0 {
			return nil, false
		}
		s.Kernel = d.addrs(s.Kernel[:0])
		s.User = d.addrs(s.User[:0])
		r = s
	case KindMeta:
		m := new(Meta)
		if err := json.Unmarshal(p, m); err != nil {
			return nil, false
		}
		return m, true
	case KindMmap:
		m := new(Mmap)
		m.Time = d.u()
		m.PID = d.u32()
		m.TID = d.u32()
		m.Start = d.u()
		m.Len = d.u()
		m.Pgoff = d.u()
		m.Prot = d.u32()
		m.Flags = d.u32()
		m.BuildID = d.bytes()
		m.Path = d.str()
		r = m
	case KindComm:
		c := new(Comm)
		c.Time = d.u()
		c.PID = d.u32()
		c.TID = d.u32()
		c.Exec = d.u()&commExec != 0
		c.Name = d.str()
		r = c
	case KindFork, KindExit:
		t := &Task{Exit: k == KindExit}
		t.Time = d.u()
		t.PID = d.u32()
		t.PPID = d.u32()
		t.TID = d.u32()
		t.PTID = d.u32()
		r = t
	case KindLost:
		l := new(Lost)
		l.Time = d.u()
		reason := d.u()
		if reason > math.MaxUint8 {
			return nil, false
		}
		l.Reason = LostReason(reason)
		l.Count = d.u()
		l.Since = d.u()
		l.CPU = d.u32()
		r = l
	case KindKernelSymbol:
		s := new(KernelSymbol)
		s.Addr = d.u()
		s.Size = d.u()
		s.Name = d.str()
		s.Module = d.str()
		r = s
	case KindObject:
		o := new(Object)
		o.Name = d.str()
		o.BuildID = d.bytes()
		o.Data = d.bytes()
		r = o
	case KindEnd:
		e := new(End)
		e.Time = d.u()
		e.Samples = d.u()
		e.Lost = d.u()
		e.Throttled = d.u()
		e.ExitCode = d.i32()
		e.Calls = d.u()
		r = e
	case KindValueSource:
		v := new(ValueSource)
		v.ID = d.u32()
		k := d.u()
		if k > math.MaxUint8 {
			return nil, false
		}
		v.Class = SourceKind(k)
		v.Name = d.str()
		v.Function = d.str()
		v.File = d.str()
		line := d.u()
		if line > math.MaxInt32 {
			return nil, false
		}
		v.Line = int(line)
		v.Type = d.str()
		v.Tags = d.str()
		f := d.u()
		v.Global, v.Pointer = f&sourceGlobal != 0, f&sourcePointer != 0
		v.Enum = d.str()
		v.Schema = d.str()
		r = v
	case KindValue:
		var a [8]uint64
		d.uvarints(a[:])
		if d.bad || a[1]|a[2]|a[3] > math.MaxUint32 || a[4]|a[5] > math.MaxUint8 {
			return nil, false
		}
		if value == nil {
			value = new(Value)
		}
		*value = Value{Time: a[0], PID: uint32(a[1]), TID: uint32(a[2]), Source: uint32(a[3]),
			Depth: uint8(a[4]), Type: ValueKind(a[5]), PC: a[6], Bits: a[7]}
		r = value
	case KindProbe:
		p := new(Probe)
		p.ID = d.u32()
		if p.ID == 0 {
			return nil, false
		}
		p.Function = d.str()
		p.Object = d.str()
		p.BuildID = d.bytes()
		p.Offset = d.u()
		p.Every = d.u32()
		n := d.u()
		if n > uint64(len(p.Function)+len(d.b)) {
			return nil, false
		}
		for range n {
			p.Params = append(p.Params, d.str())
		}
		p.Ret = d.str()
		p.Since = d.u()
		r = p
	case KindCall:
		var v [11]uint64
		d.uvarints(v[:])
		if d.bad || v[3]|v[4]|v[5]|v[6]|v[7]|v[9] > math.MaxUint32 || v[10] > uint64(len(d.b)) {
			return nil, false
		}
		c := call
		if c == nil {
			c = &Call{}
		}
		*c = Call{Start: v[0], End: v[0] + v[1], Child: v[2], PID: uint32(v[3]), TID: uint32(v[4]),
			Probe: uint32(v[5]), Caller: uint32(v[6]), Depth: uint32(v[7]), Site: v[8], Flags: uint32(v[9])}
		if v[10] > 0 {
			c.Args = make([]uint64, v[10])
			d.uvarints(c.Args)
		}
		c.Ret = d.u()
		if n := d.u(); n > 0 {
			if n > uint64(len(d.b)) {
				return nil, false
			}
			for range n {
				c.Strs = append(c.Strs, d.str())
			}
		}
		c.Off, c.ChildOff = d.u(), d.u()
		c.Goroutine = d.u()
		r = c
	case KindProbesOff:
		var v [2]uint64
		d.uvarints(v[:])
		if d.bad || v[0]+v[1] < v[0] {
			return nil, false
		}
		r = &ProbesOff{Start: v[0], End: v[0] + v[1]}
	case KindSyscallWindow:
		var v [4]uint64
		d.uvarints(v[:])
		if d.bad || v[0]+v[1] < v[0] {
			return nil, false
		}
		r = &SyscallWindow{Start: v[0], End: v[0] + v[1], On: v[2], Period: v[3]}
	case KindValueIndex:
		x, ok := decodeValueIndex(&d)
		if !ok {
			return nil, false
		}
		r = x
	case KindSymbol:
		y := new(Symbol)
		y.PID = d.u32()
		y.Addr = d.u()
		y.Size = d.u()
		y.Name = d.str()
		y.Object = d.str()
		r = y
	default:
		return nil, false
	}
	if d.bad {
		return nil, false
	}
	return r, true
}

// encodeValueIndex appends x's payload to e (docs/format.md §4.18).
func encodeValueIndex(e *enc, x *ValueIndex) {
	e.u(x.Size)
	e.u(x.Count)
	e.u(x.MinTime)
	e.u(x.MaxTime - x.MinTime)
	e.u(x.Late)
	e.u(uint64(len(x.Sources)))
	for _, s := range x.Sources {
		e.u(uint64(s.ID))
		e.u(s.All)
		e.u(s.Present)
	}
	e.u(uint64(len(x.PCs)))
	for _, p := range x.PCs {
		e.u(uint64(p.PID))
		flags := uint64(0)
		if p.Caller {
			flags = 1
		}
		e.u(flags)
		e.u(p.PC)
		e.u(p.First)
	}
	e.mark = len(e.b) // the lists' counts are not trailing zeros to leave out
}

// decodeValueIndex reads a ValueIndex payload; false when it is malformed
// or contradicts itself (a count beyond the run, a time range that wraps).
func decodeValueIndex(d *dec) (*ValueIndex, bool) {
	x := &ValueIndex{Size: d.u(), Count: d.u(), MinTime: d.u()}
	span := d.u()
	x.MaxTime = x.MinTime + span
	x.Late = d.u()
	if x.MaxTime < x.MinTime || x.Count == 0 || x.Size < x.Count || d.bad {
		return nil, false
	}
	n := d.u()
	if n > uint64(len(d.b)-d.i)/3 || n > x.Count {
		return nil, false
	}
	x.Sources = make([]IndexedSource, n)
	for i := range x.Sources {
		s := &x.Sources[i]
		s.ID, s.All, s.Present = d.u32(), d.u(), d.u()
		if s.Present > s.All || s.All > x.Count {
			return nil, false
		}
	}
	n = d.u()
	if n > uint64(len(d.b)-d.i)/4 || n > x.Count {
		return nil, false
	}
	x.PCs = make([]IndexedPC, n)
	for i := range x.PCs {
		p := &x.PCs[i]
		p.PID = d.u32()
		p.Caller = d.u()&1 != 0
		p.PC, p.First = d.u(), d.u()
		if p.First >= x.Count {
			return nil, false
		}
	}
	return x, !d.bad
}
