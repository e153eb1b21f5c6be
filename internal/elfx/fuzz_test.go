package elfx

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// FuzzNoteBuildID: any note section or segment gives a build-id that lies
// inside it, or none; never a panic. The recorder reads the notes of every
// program it sees.
func FuzzNoteBuildID(f *testing.F) {
	f.Add(note(4, 20, ntGNUBuildID, []byte("GNU\x00"), testID), uint8(4))
	f.Add(note(0xFFFFFFFE, 20, ntGNUBuildID, []byte("GNU\x00"), testID), uint8(4))
	f.Add(note(4, 0xFFFFFFFE, ntGNUBuildID, []byte("GNU\x00"), testID), uint8(8))
	f.Fuzz(func(t *testing.T, b []byte, align uint8) {
		id := NoteBuildID(b, binary.LittleEndian, uint64(align))
		if id != nil && (len(id) == 0 || !bytes.Contains(b, id)) {
			t.Fatalf("build-id %x is not in the notes", id)
		}
	})
}

// FuzzELFBuildID: BuildID on any file debug/elf accepts, with or without
// section headers.
func FuzzELFBuildID(f *testing.F) {
	bin := testutil.C(f, "notes", []string{"sleeper.c"}, "-O2", "-Wl,--build-id=sha1")
	b, err := os.ReadFile(bin)
	if err != nil {
		f.Fatal(err)
	}
	// The seed: the headers and notes of a real program (the first 4 KiB)
	// with its section headers dropped, so that PT_NOTE is read.
	seed := append([]byte{}, b[:min(len(b), 4096)]...)
	binary.LittleEndian.PutUint64(seed[0x28:], 0)
	binary.LittleEndian.PutUint16(seed[0x3c:], 0)
	binary.LittleEndian.PutUint16(seed[0x3e:], 0)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		BuildID(ef)
	})
}

// FuzzReader runs a program of reads, chosen by ops, over data: every read
// stays inside the data, an overrun sets Bad and leaves nothing to read, and
// LEB128 numbers decode as encoding/binary's varints (the same encoding).
func FuzzReader(f *testing.F) {
	f.Add([]byte{0x80, 0x01, 0x7f, 0xe5, 0x8e, 0x26, 'a', 0, 1, 2, 3, 4, 5, 6, 7, 8}, []byte{6, 7, 7, 8, 0, 1, 2, 3})
	f.Add(bytes.Repeat([]byte{0xff}, 12), []byte{6, 7})
	f.Add([]byte{1, 2, 3}, []byte{4, 4, 5, 9})
	f.Fuzz(func(t *testing.T, data, ops []byte) {
		end := len(data)
		if len(ops) > 0 {
			end = int(ops[0]) % (len(data) + 2) // sometimes past B
		}
		r := Reader{B: data, End: end}
		for _, op := range ops {
			before := r.Off
			bad := r.Bad
			switch op % 10 {
			case 0:
				r.U8()
			case 1:
				r.U16()
			case 2:
				r.U32()
			case 3:
				r.U64()
			case 4:
				r.UN(int(op>>4) % 10)
			case 5:
				r.SN(int(op>>4) % 10)
			case 6:
				var want uint64
				n := 0
				if r.Left() > 0 {
					want, n = binary.Uvarint(data[r.Off : r.Off+r.Left()])
				}
				got := r.ULEB()
				if n > 0 && !r.Bad && (got != want || r.Off != before+n) {
					t.Fatalf("ULEB % x = %d (%d bytes), Uvarint %d (%d bytes)", data[before:r.Off], got, r.Off-before, want, n)
				}
			case 7:
				r.SLEB()
			case 8:
				r.CStr()
			case 9:
				r.Bytes(uint64(op >> 4))
			}
			if r.Off < 0 || r.Off > max(r.End, 0) && r.Off != before {
				t.Fatalf("offset %d outside [0, %d]", r.Off, r.End)
			}
			if r.Bad && !bad && r.Left() != 0 {
				t.Fatalf("overrun left %d bytes to read", r.Left())
			}
		}
		LEBLen(data)
	})
}

// FuzzPLTStubs: PLTStubs on any file debug/elf accepts returns stubs of
// positive extent, sorted, each inside a PLT section, and never panics.
func FuzzPLTStubs(f *testing.F) {
	lib := testutil.C(f, "plt-fuzz.so", []string{"guard.c"}, "-O2", "-shared", "-fPIC", "-fcf-protection=full", "-Wl,-z,ibtplt")
	b, err := os.ReadFile(lib)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		stubs := PLTStubs(ef)
		for i, s := range stubs {
			if s.End <= s.Addr || i > 0 && s.Addr < stubs[i-1].Addr {
				t.Fatalf("stub %d: %+v (previous %+v)", i, s, stubs[max(i-1, 0)])
			}
			in := false
			for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
				if sec := ef.Section(name); sec != nil && sec.Addr <= s.Addr && s.End <= sec.Addr+sec.Size {
					in = true
				}
			}
			if !in {
				t.Fatalf("stub %+v is outside the PLT sections", s)
			}
		}
	})
}
