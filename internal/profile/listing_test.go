package profile

import (
	"reflect"
	"regexp"
	"testing"
)

func TestListings(t *testing.T) {
	p := testProfile()
	ls := p.Listings(regexp.MustCompile(`^(worker|main|recurse|helper)$|libc`))
	var names []string
	byName := map[string]Listing{}
	for _, l := range ls {
		names = append(names, l.Function)
		byName[l.Function] = l
	}
	// Self first (worker 4, then helper, libc+0x1234, recurse with 1; ties by
	// total then name), main last with no self samples.
	want := []string{"worker", "helper", "libc.so.6+0x1234", "recurse", "main"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("listed %v, want %v", names, want)
	}
	w := byName["worker"]
	if w.Self != 4 || w.Total != 6 || w.Object != "app" {
		t.Errorf("worker: self %d total %d object %q, want 4 6 app", w.Self, w.Total, w.Object)
	}
	// worker's frame is at work.c:30 in all 6 samples: 4 as the leaf, and as
	// the caller of the inlined helper and of memcpy.
	if want := []LineCount{{File: "/src/app/work.c", Line: 30, Self: 4, Total: 6}}; !reflect.DeepEqual(w.Lines, want) {
		t.Errorf("worker lines %+v, want %+v", w.Lines, want)
	}
	// All of worker's frames are at offset 0x1300: 4 leaf samples, 6 in all.
	if want := []AddrCount{{Offset: 0x1300, Self: 4, Total: 6}}; !reflect.DeepEqual(w.Offsets, want) {
		t.Errorf("worker offsets %+v, want %+v", w.Offsets, want)
	}
	if h := byName["helper"]; h.Self != 1 || h.Total != 1 || len(h.Lines) != 1 || h.Lines[0].File != "/src/app/work.h" {
		t.Errorf("helper %+v", h)
	}
	// recurse is three frames deep in one sample: counted once, its line once.
	if r := byName["recurse"]; r.Self != 1 || r.Total != 1 || len(r.Lines) != 1 || r.Lines[0].Total != 1 || r.Lines[0].Self != 1 {
		t.Errorf("recurse %+v", r)
	}
	// main calls everything but the kernel thread's sample.
	if m := byName["main"]; m.Self != 0 || m.Total != 9 || m.Lines[0].Total != 9 || m.Lines[0].Self != 0 {
		t.Errorf("main %+v", m)
	}
	// An unnamed frame without a line is listed by address.
	a := byName["libc.so.6+0x1234"]
	if len(a.Lines) != 0 || !reflect.DeepEqual(a.Addresses, []AddrCount{{Offset: 0x1234, Self: 1, Total: 1}}) {
		t.Errorf("anonymous frame %+v", a)
	}
	if got := p.Listings(regexp.MustCompile("no_such")); len(got) != 0 {
		t.Errorf("no match gave %+v", got)
	}
}

func TestListingsAfterFilter(t *testing.T) {
	// Kernel frames dropped: the sample in ksys_write is charged to main,
	// which then has a self sample at its line.
	p := testProfile().Apply(Filter{Kernel: KernelExclude})
	ls := p.Listings(regexp.MustCompile(`^main$`))
	if len(ls) != 1 || ls[0].Self != 1 || ls[0].Lines[0].Self != 1 {
		t.Fatalf("main after KernelExclude: %+v", ls)
	}
}
