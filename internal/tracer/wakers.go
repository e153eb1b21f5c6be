package tracer

import (
	"debug/elf"
	"os"
	"slices"
	"sort"

	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
)

// SchedEvent is a scheduler event of the traced process as Refine sees it
// (Options.Sched): a switch onto a CPU, a switch away (Arg the
// prev_state) or a wake-up (Arg the woken thread, with
// recording.WakeupInterrupt).
type SchedEvent struct {
	recording.Sample
	// Funcs are, for a wake-up, the functions of the executable on the
	// waker's user stack at that moment, innermost first (each once):
	// what the thread that ended a wait was doing when it ended it.
	Funcs []string
	// Base is, when the stack was unwound to the thread's first frame,
	// the function of the executable the thread runs in, entered from
	// outside it (a thread's start routine, called by the C library, or
	// main): it returns only when the thread ends, so a probe on it
	// times nothing of an interval.
	Base string
}

// funcTable names the functions of the traced executable by address,
// from its symbol table.
type funcTable struct {
	path  string
	info  os.FileInfo
	funcs []funcSym // sorted by value
	loads []elf.ProgHeader
	same  map[string]bool // mapping path → it is the executable
	entry string          // the function at the ELF entry point (_start)
}

func newFuncTable(path string) *funcTable {
	t := &funcTable{path: path, same: map[string]bool{}}
	t.info, _ = os.Stat(path)
	f, err := elf.Open(path)
	if err != nil {
		return t
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			t.loads = append(t.loads, p.ProgHeader)
		}
	}
	syms, _ := f.Symbols()
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Value == 0 || s.Size == 0 {
			continue
		}
		t.funcs = append(t.funcs, funcSym{name: s.Name, value: s.Value, end: s.Value + s.Size})
	}
	nameFuncs(t.funcs)
	sort.Slice(t.funcs, func(i, j int) bool { return t.funcs[i].value < t.funcs[j].value })
	t.entry = t.byAddr(f.Entry)
	return t
}

// byAddr returns the function of the executable at virtual address va.
func (t *funcTable) byAddr(va uint64) string {
	i := sort.Search(len(t.funcs), func(i int) bool { return t.funcs[i].end > va })
	if i < len(t.funcs) && t.funcs[i].value <= va {
		return t.funcs[i].name
	}
	return ""
}

// isExe reports whether a mapping's file is the executable.
func (t *funcTable) isExe(path string) bool {
	if path == "" || path[0] != '/' || t.info == nil {
		return false
	}
	same, ok := t.same[path]
	if !ok {
		fi, err := os.Stat(path)
		same = err == nil && os.SameFile(fi, t.info)
		t.same[path] = same
	}
	return same
}

// name returns the function of the executable at file offset off.
func (t *funcTable) name(off uint64) string {
	for _, p := range t.loads {
		if off < p.Off || off >= p.Off+p.Filesz {
			continue
		}
		return t.byAddr(off - p.Off + p.Vaddr)
	}
	return ""
}

// wakerFuncs names the executable's functions on a wake-up's user chain
// (innermost first; return addresses are looked up one byte back, in the
// call instruction), and the thread's base function when the chain
// reaches the thread's first frame: the outermost function of the
// executable called from another object (the C library's thread start,
// or its start of main), with nothing but other objects' frames and the
// executable's entry point outside it.
func (s *session) wakerFuncs(user []uint64) (out []string, base string) {
	if s.funcs == nil {
		s.funcs = newFuncTable(s.exe)
	}
	last := "" // the executable's function of the frame before
	outside := false
	for i, pc := range user {
		if i > 0 {
			pc--
		}
		m, ok := s.maps.Find(pc)
		if !ok {
			s.readMaps()
			if m, ok = s.maps.Find(pc); !ok {
				s.maps.Add(proc.Mapping{Start: pc, End: pc + 1}) // unknown: do not read again for it
			}
		}
		if !ok || m.Path == "" || m.Path[0] != '/' {
			// Not a file's code (a probe's return trampoline, an unknown
			// address): the chain is cut here.
			last, outside = "", false
			continue
		}
		if !s.funcs.isExe(m.Path) {
			if last != "" && !outside {
				base, outside = last, true
			}
			continue
		}
		n := s.funcs.name(pc - m.Start + m.Offset)
		if n == s.funcs.entry && outside {
			continue // the entry point, below main
		}
		last, outside, base = n, false, ""
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if !outside {
		base = ""
	}
	return out, base
}

// onSched keeps the scheduler events of the current round for Refine.
func (s *session) onSched(smp recording.Sample, user []uint64) {
	if s.o.Refine == nil {
		return
	}
	e := SchedEvent{Sample: smp}
	if smp.Event == recording.EventWakeup && smp.Arg&recording.WakeupInterrupt == 0 {
		e.Funcs, e.Base = s.wakerFuncs(user)
		if smp.Truncated {
			e.Base = "" // the chain lost callers: its outermost frame is not the thread's first
		}
	}
	s.schedRound = append(s.schedRound, e)
}

// FuncAt names the function of the executable a return address in it
// (a virtual address of the file, as a non-PIE executable runs) is in:
// the caller that made the call. "" when none.
func FuncAt(exe string) func(ret uint64) string {
	t := newFuncTable(exe)
	return func(ret uint64) string {
		if ret == 0 {
			return ""
		}
		return t.byAddr(ret - 1)
	}
}
