package symbol

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// elfSym returns the address and size of the named symbol in path's symbol
// table (or dynamic symbol table).
func elfSym(t testing.TB, path, name string) (uint64, uint64) {
	t.Helper()
	s := testutil.Symbol(t, path, name)
	return s.Value, s.Size
}

// fileOffset and progOffset convert virtual addresses to file offsets.
var (
	fileOffset = testutil.FileOffset
	progOffset = testutil.ProgOffset
)

// oracleFrame is one frame as addr2line reports it.
type oracleFrame struct {
	Function, File string
	Line           int
}

var discriminator = regexp.MustCompile(` \(discriminator \d+\)$`)

// addr2line runs binutils' addr2line -a -i -f on vaddrs and returns, per
// address, its frames innermost first.
func addr2line(t testing.TB, path string, vaddrs []uint64) map[uint64][]oracleFrame {
	t.Helper()
	testutil.NeedTool(t, "addr2line")
	out := map[uint64][]oracleFrame{}
	const chunk = 2000
	for len(vaddrs) > 0 {
		n := min(chunk, len(vaddrs))
		args := []string{"-a", "-i", "-f", "-e", path}
		for _, a := range vaddrs[:n] {
			args = append(args, fmt.Sprintf("%#x", a))
		}
		vaddrs = vaddrs[n:]
		b, err := exec.Command("addr2line", args...).Output()
		if err != nil {
			t.Fatalf("addr2line: %v", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		var cur uint64
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		for i := 0; i < len(lines); {
			l := lines[i]
			if strings.HasPrefix(l, "0x") {
				v, err := strconv.ParseUint(l[2:], 16, 64)
				if err != nil {
					t.Fatalf("addr2line output %q", l)
				}
				cur = v
				out[cur] = nil
				i++
				continue
			}
			if i+1 >= len(lines) {
				break
			}
			fn, loc := l, discriminator.ReplaceAllString(lines[i+1], "")
			i += 2
			fr := oracleFrame{Function: fn}
			if j := strings.LastIndexByte(loc, ':'); j >= 0 {
				fr.File = loc[:j]
				fr.Line, _ = strconv.Atoi(loc[j+1:])
			}
			if fr.File == "??" {
				fr.File = ""
			}
			if fr.Function == "??" {
				fr.Function = ""
			}
			out[cur] = append(out[cur], fr)
		}
	}
	return out
}

// compareOracle checks Lookup against addr2line for every vaddr and returns
// the number of addresses compared with a known function.
func compareOracle(t *testing.T, o *Object, path string, vaddrs []uint64) int {
	t.Helper()
	want := addr2line(t, path, vaddrs)
	compared := 0
	bad := 0
	for _, a := range vaddrs {
		w := want[a]
		if len(w) == 0 || w[0].Function == "" || w[len(w)-1].File == "" {
			continue
		}
		compared++
		got := o.Lookup(fileOffset(t, path, a))
		ok := len(got) == len(w)
		for i := 0; ok && i < len(w); i++ {
			g := got[i]
			if g.Function != w[i].Function || g.File != w[i].File || g.Line != w[i].Line || g.Inlined != (i < len(w)-1) {
				ok = false
			}
		}
		if !ok {
			bad++
			if bad <= 10 {
				t.Errorf("%s %#x: got %+v, addr2line %+v", filepath.Base(path), a, got, w)
			}
		}
	}
	t.Logf("%s: %d addresses compared with addr2line, %d mismatches", filepath.Base(path), compared, bad)
	if bad > 10 {
		t.Errorf("... %d mismatches in all", bad)
	}
	return compared
}

// rangeOf returns every byte address of the named function.
func rangeOf(t testing.TB, path, name string) []uint64 {
	t.Helper()
	start, size := elfSym(t, path, name)
	if size == 0 {
		t.Fatalf("%s: %s has no size", path, name)
	}
	var out []uint64
	for a := start; a < start+size; a++ {
		out = append(out, a)
	}
	return out
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

func buildIDFile(t testing.TB, path string) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := elfx.BuildID(f)
	if len(id) == 0 {
		t.Fatalf("%s has no build-id", path)
	}
	return id
}
