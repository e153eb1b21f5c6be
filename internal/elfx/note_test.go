package elfx

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// note builds one ELF note with the given header sizes and contents.
func note(namesz, descsz, typ uint32, name, desc []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, [3]uint32{namesz, descsz, typ})
	b.Write(name)
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
	b.Write(desc)
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
	return b.Bytes()
}

var testID = []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

func TestNoteBuildID(t *testing.T) {
	good := note(4, uint32(len(testID)), ntGNUBuildID, []byte("GNU\x00"), testID)
	other := note(4, 16, 1, []byte("GNU\x00"), make([]byte, 16)) // NT_GNU_ABI_TAG
	cases := []struct {
		name string
		b    []byte
		want []byte
	}{
		{"build-id", good, testID},
		{"after another note", append(append([]byte{}, other...), good...), testID},
		{"wrong type", note(4, 4, 1, []byte("GNU\x00"), []byte{1, 2, 3, 4}), nil},
		{"wrong owner", note(4, 4, ntGNUBuildID, []byte("Go\x00\x00"), []byte{1, 2, 3, 4}), nil},
		{"empty descriptor", note(4, 0, ntGNUBuildID, []byte("GNU\x00"), nil), nil},
		// Sizes that wrap around in 32-bit arithmetic: (0xFFFFFFFE+3)&^3
		// is 0 in uint32, and slicing the name panicked.
		{"namesz 0xFFFFFFFE", note(0xFFFFFFFE, 20, ntGNUBuildID, []byte("GNU\x00"), testID), nil},
		{"namesz 0xFFFFFFFF", note(0xFFFFFFFF, 20, ntGNUBuildID, []byte("GNU\x00"), testID), nil},
		{"descsz 0xFFFFFFFE", note(4, 0xFFFFFFFE, ntGNUBuildID, []byte("GNU\x00"), testID), nil},
		{"descsz past the end", note(4, 64, ntGNUBuildID, []byte("GNU\x00"), testID), nil},
		{"next note's sizes wrap", append(append([]byte{}, other...), note(0xFFFFFFFE, 0xFFFFFFFE, ntGNUBuildID, nil, nil)...), nil},
		{"truncated header", good[:11], nil},
		{"nothing", nil, nil},
	}
	for _, c := range cases {
		if got := NoteBuildID(c.b, binary.LittleEndian, 4); !bytes.Equal(got, c.want) {
			t.Errorf("%s: got %x, want %x", c.name, got, c.want)
		}
	}
	// 8-aligned notes pad names and descriptors to 8 bytes.
	var b8 bytes.Buffer
	binary.Write(&b8, binary.LittleEndian, [3]uint32{4, 20, ntGNUBuildID})
	b8.Write([]byte("GNU\x00\x00\x00\x00\x00"))
	b8.Write(testID)
	if got := NoteBuildID(b8.Bytes(), binary.LittleEndian, 8); !bytes.Equal(got, testID) {
		t.Errorf("8-aligned: got %x", got)
	}
	// The result is a copy: the caller may keep it.
	id := NoteBuildID(good, binary.LittleEndian, 4)
	id[0] = 0
	if good[16] != 0xde {
		t.Error("NoteBuildID returned a slice of its input")
	}
}

// buildProgram compiles a C program with a build-id and returns its path and
// its build-id as its note section holds it.
func buildProgram(t *testing.T) (string, []byte) {
	t.Helper()
	bin := testutil.C(t, "notes", []string{"sleeper.c"}, "-O2", "-Wl,--build-id=sha1")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		t.Fatalf("%s: no .note.gnu.build-id", bin)
	}
	data, err := s.Data()
	if err != nil || len(data) != 16+20 {
		t.Fatalf("%s: build-id note of %d bytes: %v", bin, len(data), err)
	}
	return bin, data[16:]
}

// patch copies bin into dir with fn applied to its bytes.
func patch(t *testing.T, bin string, fn func(b []byte)) string {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	fn(b)
	out := filepath.Join(t.TempDir(), filepath.Base(bin))
	if err := os.WriteFile(out, b, 0o700); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBuildIDWithoutSectionHeaders: a program whose section headers were
// removed (as sstrip does; the kernel runs it from its program headers)
// still has its build-id, found through PT_NOTE.
func TestBuildIDWithoutSectionHeaders(t *testing.T) {
	bin, want := buildProgram(t)
	if got := FileBuildID(bin); !bytes.Equal(got, want) {
		t.Fatalf("from sections: %x, want %x", got, want)
	}
	stripped := patch(t, bin, func(b []byte) {
		// ELF64 header: e_shoff at 0x28, e_shnum at 0x3c, e_shstrndx at 0x3e.
		binary.LittleEndian.PutUint64(b[0x28:], 0)
		binary.LittleEndian.PutUint16(b[0x3c:], 0)
		binary.LittleEndian.PutUint16(b[0x3e:], 0)
	})
	f, err := elf.Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Sections) != 0 {
		t.Fatalf("%d sections left", len(f.Sections))
	}
	if got := BuildID(f); !bytes.Equal(got, want) {
		t.Errorf("without section headers: %x, want %x", got, want)
	}
	// It is a real program: it runs.
	if out, err := exec.Command(stripped, "0").CombinedOutput(); err != nil {
		t.Errorf("%s: %v\n%s", stripped, err, out)
	}
}

// TestBuildIDCraftedFile: an executable whose build-id note claims a name
// of 0xFFFFFFFE bytes has no build-id; it does not crash the reader.
func TestBuildIDCraftedFile(t *testing.T) {
	bin, want := buildProgram(t)
	for _, field := range []int{0, 4} { // namesz, descsz
		crafted := patch(t, bin, func(b []byte) {
			i := bytes.Index(b, append([]byte("GNU\x00"), want...))
			if i < 12 {
				t.Fatal("build-id note not found in the file")
			}
			binary.LittleEndian.PutUint32(b[i-12+field:], 0xFFFFFFFE)
		})
		if got := FileBuildID(crafted); got != nil {
			t.Errorf("field %d = 0xFFFFFFFE: build-id %x", field, got)
		}
	}
}

func TestLEB128(t *testing.T) {
	cases := []struct {
		b    []byte
		u    uint64
		s    int64
		size int
	}{
		{[]byte{0x02}, 2, 2, 1},
		{[]byte{0x7e}, 126, -2, 1},
		{[]byte{0xff, 0x00}, 127, 127, 2},
		{[]byte{0x80, 0x7f}, 16256, -128, 2},
		{[]byte{0xe5, 0x8e, 0x26}, 624485, 624485, 3},
		{[]byte{0xc0, 0xbb, 0x78}, 1973696, -123456, 3},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 1<<64 - 1, -1, 10},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, 1 << 63, -1 << 63, 10},
	}
	for _, c := range cases {
		r := NewReader(c.b)
		if u := r.ULEB(); u != c.u || r.Off != c.size || r.Bad {
			t.Errorf("ULEB % x = %d (%d bytes, bad %v), want %d", c.b, u, r.Off, r.Bad, c.u)
		}
		r = NewReader(c.b)
		if s := r.SLEB(); s != c.s || r.Off != c.size || r.Bad {
			t.Errorf("SLEB % x = %d (%d bytes, bad %v), want %d", c.b, s, r.Off, r.Bad, c.s)
		}
		if n := LEBLen(c.b); n != c.size {
			t.Errorf("LEBLen % x = %d, want %d", c.b, n, c.size)
		}
	}
	r := NewReader([]byte{0x80, 0x80})
	if v := r.SLEB(); v != 0 || !r.Bad || !r.Done() {
		t.Errorf("unterminated SLEB: %d, bad %v, done %v", v, r.Bad, r.Done())
	}
}
