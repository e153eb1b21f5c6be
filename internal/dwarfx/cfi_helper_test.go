package dwarfx

// A test-only unwinder over the CFI rows printed by `readelf -wF`: enough
// to know the CFA of a stopped frame and the registers of its caller, which
// production code gets from package unwind.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var cfiRegIndex = map[string]int{"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7,
	"r8": 8, "r9": 9, "r10": 10, "r11": 11, "r12": 12, "r13": 13, "r14": 14, "r15": 15, "ra": 16}

type cfiRow struct {
	loc    uint64
	cfaReg int // -1: expression (unsupported)
	cfaOff int64
	saved  map[int]int64 // register -> CFA offset where it is saved
}

type cfiFDE struct {
	lo, hi uint64
	rows   []cfiRow
}

type cfiTable struct{ fdes []cfiFDE }

var (
	reFDE   = regexp.MustCompile(`^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+)`)
	reCIE   = regexp.MustCompile(`^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE`)
	reRow   = regexp.MustCompile(`^([0-9a-f]{16}) +(\S+)(.*)$`)
	reCFA   = regexp.MustCompile(`^(r[a-z0-9]+)([+-]\d+)$`)
	reSaved = regexp.MustCompile(`^c([+-]\d+)$`)
)

func loadCFI(t testing.TB, bin string) *cfiTable {
	t.Helper()
	out, err := exec.Command("readelf", "-wF", bin).Output()
	if err != nil && len(out) == 0 { // readelf exits 1 on some shared objects, output complete
		t.Fatalf("readelf -wF %s: %v", bin, err)
	}
	tab := &cfiTable{}
	cieRows := map[string][]cfiRow{}
	var cols []string
	var cur *cfiFDE
	var curCIE string
	inCIE := false
	flush := func() {
		if cur != nil {
			if len(cur.rows) == 0 {
				for _, r := range cieRows[curCIE] {
					r.loc = cur.lo
					cur.rows = append(cur.rows, r)
				}
			}
			tab.fdes = append(tab.fdes, *cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := reCIE.FindStringSubmatch(line); m != nil {
			flush()
			curCIE, inCIE = m[1], true
			continue
		}
		if m := reFDE.FindStringSubmatch(line); m != nil {
			flush()
			lo, _ := strconv.ParseUint(m[2], 16, 64)
			hi, _ := strconv.ParseUint(m[3], 16, 64)
			cur = &cfiFDE{lo: lo, hi: hi}
			curCIE, inCIE = m[1], false // cie= is the CIE's offset
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "LOC") {
			cols = strings.Fields(line)[2:]
			continue
		}
		m := reRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		loc, _ := strconv.ParseUint(m[1], 16, 64)
		r := cfiRow{loc: loc, cfaReg: -1, saved: map[int]int64{}}
		if c := reCFA.FindStringSubmatch(m[2]); c != nil {
			if n, ok := cfiRegIndex[c[1]]; ok {
				r.cfaReg = n
				r.cfaOff, _ = strconv.ParseInt(c[2], 10, 64)
			}
		}
		for k, v := range strings.Fields(m[3]) {
			if k >= len(cols) {
				break
			}
			if s := reSaved.FindStringSubmatch(v); s != nil {
				off, _ := strconv.ParseInt(s[1], 10, 64)
				r.saved[cfiRegIndex[cols[k]]] = off
			} else if v != "u" && v != "s" {
				r.saved[cfiRegIndex[cols[k]]] = 1 << 40 // unsupported rule: unknown
			}
		}
		if inCIE {
			cieRows[curCIE] = append(cieRows[curCIE], r)
		} else if cur != nil {
			cur.rows = append(cur.rows, r)
		}
	}
	flush()
	sort.Slice(tab.fdes, func(a, b int) bool { return tab.fdes[a].lo < tab.fdes[b].lo })
	return tab
}

func (t *cfiTable) row(pc uint64) (cfiRow, bool) {
	for _, f := range t.fdes {
		if f.lo <= pc && pc < f.hi {
			var best cfiRow
			found := false
			for _, r := range f.rows {
				if r.loc <= pc {
					best, found = r, true
				}
			}
			return best, found
		}
	}
	return cfiRow{}, false
}

// callee-saved registers keep their values in the caller unless CFI says
// where they were saved.
var calleeSavedRegs = []int{RegRBX, RegRBP, 12, 13, 14, 15}

// frames computes frame 0's CFA and the caller frame (registers restored by
// CFI, CFA, and the call-site PC as an ELF address: return address - 1)
// from a stopped thread's registers.
func (t *cfiTable) frames(f0 *Frame, bias uint64, read func(addr uint64, b []byte) error) (caller *Frame, callerPC uint64, ok bool) {
	pc := f0.Regs[RegRIP] - bias
	r, found := t.row(pc)
	if !found || r.cfaReg < 0 {
		return nil, 0, false
	}
	base, valid := f0.Reg(r.cfaReg)
	if !valid {
		return nil, 0, false
	}
	f0.CFA = base + uint64(r.cfaOff)
	word := func(a uint64) (uint64, bool) {
		var b [8]byte
		if read(a, b[:]) != nil {
			return 0, false
		}
		return binary.LittleEndian.Uint64(b[:]), true
	}
	f1 := &Frame{Bias: f0.Bias, Mem: f0.Mem}
	for _, n := range calleeSavedRegs {
		if v, ok := f0.Reg(n); ok {
			f1.SetReg(n, v)
		}
	}
	for n, off := range r.saved {
		if off == 1<<40 {
			f1.RegValid &^= 1 << uint(n)
			continue
		}
		v, ok := word(f0.CFA + uint64(off))
		if !ok {
			return nil, 0, false
		}
		f1.SetReg(n, v)
	}
	f1.SetReg(RegRSP, f0.CFA)
	ra, ok := f1.Reg(RegRIP)
	if !ok || ra == 0 {
		return nil, 0, false
	}
	r1, found := t.row(ra - 1 - bias)
	if found && r1.cfaReg >= 0 {
		if b, ok := f1.Reg(r1.cfaReg); ok {
			f1.CFA = b + uint64(r1.cfaOff)
		}
	}
	return f1, ra - 1 - bias, true
}
