package state

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/schema"
	"github.com/culprit-dev/culprit/internal/testutil"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// fixedObject maps every PC to one object with no load bias: the test's
// PCs are the binary's ELF addresses.
type fixedObject string

func (o fixedObject) Object(pc uint64) (string, uint64, bool) { return string(o), 0, true }

// valuesBinary builds schema.c at -O2 and returns it with the address of
// consume and the return address of filter's call of consume.
func valuesBinary(t *testing.T) (bin string, consume, ret, mainAddr uint64) {
	t.Helper()
	bin = testutil.C(t, "schema-O2", []string{"schema.c"}, "-O2", "-g")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	var filter elf.Symbol
	for _, s := range syms {
		switch s.Name {
		case "consume":
			consume = s.Value
		case "filter":
			filter = s
		case "main":
			mainAddr = s.Value
		}
	}
	text := f.Section(".text")
	code, _ := text.Data()
	body := code[filter.Value-text.Addr : filter.Value-text.Addr+filter.Size]
	for i := 0; i+5 <= len(body); i++ {
		if body[i] != 0xe8 {
			continue
		}
		next := filter.Value + uint64(i) + 5
		if next+uint64(int64(int32(binary.LittleEndian.Uint32(body[i+1:])))) == consume {
			ret = next
		}
	}
	if consume == 0 || ret == 0 || mainAddr == 0 {
		t.Fatalf("consume %#x, call return %#x, main %#x", consume, ret, mainAddr)
	}
	return
}

// thread is a sample in frame0pc with filter's frame (at its call of
// consume) above it; rsi holds 42 and rcx 77 in the innermost frame, and CFI
// restores only the callee-saved registers in the caller.
func thread(bin string, frame0pc, ret uint64) Thread {
	var regs unwind.Regs
	for i := range regs {
		regs[i] = uint64(1000 + i)
	}
	regs[4], regs[2] = 42, 77 // rsi: filter's i; rcx: filter's x
	inner := unwind.Frame{PC: frame0pc, Exact: true, Regs: regs, Valid: 1<<17 - 1, CFA: 0x7ff000}
	caller := unwind.Frame{PC: ret, Regs: regs, Valid: 1<<3 | 1<<6 | 1<<7 | 0xf<<12 | 1<<16, CFA: 0x7ff100}
	return Thread{PID: 1, TID: 1, Time: 5, Exe: bin, Frames: []unwind.Frame{inner, caller}, Objects: fixedObject(bin)}
}

type sampled struct {
	src   *recording.ValueSource
	value *recording.Value
}

func byName(recs []recording.Record) map[string]sampled {
	srcs := map[uint32]*recording.ValueSource{}
	out := map[string]sampled{}
	for _, r := range recs {
		switch r := r.(type) {
		case *recording.ValueSource:
			srcs[r.ID] = r
		case *recording.Value:
			s := srcs[r.Source]
			out[s.Function+":"+s.Name] = sampled{s, r}
		}
	}
	return out
}

// Value sampling with the schema made on the fly: only schema variables,
// with their tags; a caller frame reads a caller-saved register that the
// functions below it never write (GCC's -fipa-ra keeps filter's i and x in
// rsi and rcx across its call of consume).
func TestValuesSchemaAndCallerRegisters(t *testing.T) {
	bin, consume, ret, mainAddr := valuesBinary(t)
	s := NewSampler(nil, nil, 1)
	s.EnableValues(ValueOptions{Depth: 3})
	got := byName(s.Apply(thread(bin, consume+3, ret)).Records)
	i, ok := got["filter:i"]
	if !ok || i.src.Tags == "none" || i.value.Depth != 1 {
		t.Fatalf("filter:i not sampled in the caller frame: %+v", got)
	}
	if i.value.Type != recording.ValueInt || int64(i.value.Bits) != 42 {
		t.Errorf("filter:i = %+v, want 42 from rsi (consume never writes it)", i.value)
	}
	if x := got["filter:x"]; x.value == nil || x.value.Type != recording.ValueInt || x.value.Bits != 77 || x.src.Tags != "cond,args" {
		t.Errorf("filter:x = %+v %+v, want 77 tagged cond,args", x.value, x.src)
	}
	if _, ok := got["consume:value"]; ok {
		t.Errorf("consume:value sampled: not in the schema (no loop, branch or call use)")
	}

	// Frames below that may write rsi (main calls printf through the PLT):
	// the caller's i is missing, not read from the wrong register.
	s = NewSampler(nil, nil, 1)
	s.EnableValues(ValueOptions{Depth: 3})
	got = byName(s.Apply(thread(bin, mainAddr, ret)).Records)
	if i := got["filter:i"]; i.value == nil || i.value.Type != recording.ValueMissing {
		t.Errorf("filter:i under a clobbering frame = %+v, want missing", i.value)
	}
}

// A given schema restricts sampling to its variables, with its tags, in the
// binary it describes only.
func TestValuesGivenSchema(t *testing.T) {
	bin, consume, ret, _ := valuesBinary(t)
	full, err := schema.Generate(bin, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	one := &schema.Schema{Binary: bin, BuildID: full.BuildID}
	for _, e := range full.Entries {
		if e.Function == "filter" && e.Variable == "i" {
			e.Tags = schema.Args
			one.Entries = append(one.Entries, e)
		}
	}
	s := NewSampler(nil, nil, 1)
	s.EnableValues(ValueOptions{Depth: 3, Schema: one})
	got := byName(s.Apply(thread(bin, consume+3, ret)).Records)
	if len(got) != 1 || got["filter:i"].src == nil || got["filter:i"].src.Tags != "args" {
		t.Errorf("sampled %+v, want filter:i alone with the schema's tags (args)", got)
	}
	other := *one
	other.Entries = one.Entries
	other.BuildID = "00"
	s = NewSampler(nil, nil, 1)
	s.EnableValues(ValueOptions{Depth: 3, Schema: &other})
	if recs := s.Apply(thread(bin, consume+3, ret)).Records; len(recs) != 0 {
		t.Errorf("a schema of another build sampled %d records", len(recs))
	}
}

// A pointer to a scalar is sampled twice: the pointer, and the scalar it
// points to (*hits), read from the memory of the sample; a null pointer
// gives a missing *hits, never a guess.
func TestValuesDereferencePointers(t *testing.T) {
	bin, consume, ret, _ := valuesBinary(t)
	hits := testutil.Symbol(t, bin, "hits").Value
	for _, target := range []uint64{0x5000, 0} {
		th := thread(bin, consume+3, ret)
		th.Mem = func(addr uint64, buf []byte) error {
			switch {
			case addr == hits && len(buf) == 8:
				binary.LittleEndian.PutUint64(buf, target)
			case addr == 0x5000 && len(buf) == 4:
				binary.LittleEndian.PutUint32(buf, 7)
			default:
				return errors.New("not in the memory copied at the sample")
			}
			return nil
		}
		s := NewSampler(nil, nil, 1)
		s.EnableValues(ValueOptions{Depth: 3, Globals: true})
		got := byName(s.Apply(th).Records)
		p, d := got["#global:hits"], got["#global:*hits"]
		if p.value == nil || !p.src.Pointer || p.value.Bits != target {
			t.Errorf("hits = %+v %+v, want the pointer %#x", p.src, p.value, target)
		}
		switch {
		case d.value == nil || d.src.Pointer || d.src.Type != "int":
			t.Errorf("*hits not sampled as an int: %+v %+v", d.src, d.value)
		case target != 0 && (d.value.Type != recording.ValueInt || d.value.Bits != 7):
			t.Errorf("*hits = %+v, want 7", d.value)
		case target == 0 && d.value.Type != recording.ValueMissing:
			t.Errorf("*hits through a null pointer = %+v, want missing", d.value)
		}
	}
}

// The executable under two names, the path it was launched by (through a
// symbolic link) and the one the kernel maps, has one DWARF reading and
// one schema: making them again took seconds for a big program while the
// samples waited, and the memory snapshots of that time were lost.
func TestSchemaOncePerFile(t *testing.T) {
	bin, _, _, _ := valuesBinary(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "build")
	if err := os.Symlink(filepath.Dir(bin), link); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(link, filepath.Base(bin))
	s := NewSampler(nil, nil, 1)
	s.EnableValues(ValueOptions{Depth: 3})
	a, b := s.exeSchema(alias), s.exeSchema(bin)
	if a == nil || a != b {
		t.Errorf("schemas of %s and %s: %p, %p; want one", alias, bin, a, b)
	}
	if s.info(alias) == nil || s.info(alias) != s.info(bin) {
		t.Errorf("DWARF of %s and %s read twice", alias, bin)
	}
}
