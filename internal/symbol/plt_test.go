package symbol

import (
	"debug/elf"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

var objdumpPLT = regexp.MustCompile(`(?m)^([0-9a-f]+) <([^>]+)@plt>:$`)

// A PLT stub is a frame of its own named after the function it reaches,
// as objdump names it: executables and shared libraries, lazy binding and
// -z now, with and without indirect-branch tracking (.plt.sec, where the
// lazy entries of .plt are named by their relocation's index).
func TestPLTStubFrames(t *testing.T) {
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skip("objdump (the oracle) is not installed")
	}
	ibt := []string{"-fcf-protection=full", "-Wl,-z,ibtplt"}
	for _, tc := range []struct {
		name  string
		src   string
		flags []string
		want  []string // stubs that must be among those named
	}{
		{"lib-lazy", "guard.c", []string{"-O2", "-g", "-shared", "-fPIC", "-Wl,-z,lazy"}, []string{"work", "over", "printf"}},
		{"lib-now", "guard.c", []string{"-O2", "-shared", "-fPIC", "-Wl,-z,now"}, []string{"work", "over", "printf"}},
		{"lib-ibt", "guard.c", append([]string{"-O2", "-shared", "-fPIC", "-Wl,-z,lazy"}, ibt...), []string{"work", "over", "printf"}},
		{"lib-ibt-now", "guard.c", append([]string{"-O2", "-shared", "-fPIC", "-Wl,-z,now"}, ibt...), []string{"work", "over"}},
		{"exe-lazy", "libcalls.c", []string{"-O2", "-g", "-Wl,-z,lazy"}, nil},
		{"exe-ibt-now", "libcalls.c", append([]string{"-O2", "-Wl,-z,now"}, ibt...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := testutil.C(t, "plt-"+tc.name, []string{tc.src}, tc.flags...)
			out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			o, err := New(Options{}).Object(bin, nil)
			if err != nil {
				t.Fatal(err)
			}
			named := map[string]bool{}
			for _, m := range objdumpPLT.FindAllStringSubmatch(string(out), -1) {
				addr, _ := strconv.ParseUint(m[1], 16, 64)
				want := m[2] + "@plt"
				named[m[2]] = true
				for _, a := range []uint64{addr, addr + 5} { // the entry and inside the stub
					fr := o.LookupAddr(a)
					if len(fr) != 1 || fr[0].Function != want || fr[0].Symbol != want {
						t.Errorf("0x%x: frames %+v; want one frame %s", a, fr, want)
					}
				}
			}
			if len(named) == 0 {
				t.Fatalf("objdump names no PLT stub in %s", bin)
			}
			for _, w := range tc.want {
				if !named[w] {
					t.Errorf("objdump names no %s@plt (names %v): the calls do not go through the PLT", w, named)
				}
			}
			// The first entry of .plt, the resolver's trampoline, reaches
			// no function.
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			plt := f.Section(".plt")
			if plt == nil {
				t.Fatal("no .plt")
			}
			if fr := o.LookupAddr(plt.Addr); len(fr) != 0 {
				t.Errorf("the first entry of .plt named %+v", fr)
			}
			// Under IBT the lazy entries of .plt (endbr64; push $i; jmp)
			// reach the function of .plt.sec's i-th stub.
			if sec := f.Section(".plt.sec"); sec != nil {
				for i := uint64(0); (i+1)*16 < plt.Size && i*16 < sec.Size; i++ {
					lazy, stub := o.LookupAddr(plt.Addr+(i+1)*16), o.LookupAddr(sec.Addr+i*16)
					if len(lazy) != 1 || len(stub) != 1 || lazy[0].Function != stub[0].Function || !strings.HasSuffix(lazy[0].Function, "@plt") {
						t.Errorf(".plt entry %d: %+v; .plt.sec stub %d: %+v; want the same f@plt", i+1, lazy, i, stub)
					}
				}
			}
		})
	}
}
