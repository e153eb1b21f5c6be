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
}

// funcTable names the functions of the traced executable by address,
// from its symbol table.
type funcTable struct {
	path  string
	info  os.FileInfo
	funcs []funcSym // sorted by value
	loads []elf.ProgHeader
	same  map[string]bool // mapping path → it is the executable
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
		t.funcs = append(t.funcs, funcSym{s.Name, s.Value, s.Value + s.Size})
	}
	sort.Slice(t.funcs, func(i, j int) bool { return t.funcs[i].value < t.funcs[j].value })
	return t
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
		va := off - p.Off + p.Vaddr
		i := sort.Search(len(t.funcs), func(i int) bool { return t.funcs[i].end > va })
		if i < len(t.funcs) && t.funcs[i].value <= va {
			return t.funcs[i].name
		}
		return ""
	}
	return ""
}

// wakerFuncs names the executable's functions on a wake-up's user chain
// (innermost first; return addresses are looked up one byte back, in the
// call instruction).
func (s *session) wakerFuncs(user []uint64) []string {
	if s.funcs == nil {
		s.funcs = newFuncTable(s.exe)
	}
	var out []string
	for i, pc := range user {
		if i > 0 {
			pc--
		}
		m, ok := s.maps.Find(pc)
		if !ok {
			s.readMaps()
			if m, ok = s.maps.Find(pc); !ok {
				s.maps.Add(proc.Mapping{Start: pc, End: pc + 1}) // unknown: do not read again for it
				continue
			}
		}
		if !s.funcs.isExe(m.Path) {
			continue
		}
		if n := s.funcs.name(pc - m.Start + m.Offset); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// onSched keeps the scheduler events of the current round for Refine.
func (s *session) onSched(smp recording.Sample, user []uint64) {
	if s.o.Refine == nil {
		return
	}
	e := SchedEvent{Sample: smp}
	if smp.Event == recording.EventWakeup && smp.Arg&recording.WakeupInterrupt == 0 {
		e.Funcs = s.wakerFuncs(user)
	}
	s.schedRound = append(s.schedRound, e)
}
