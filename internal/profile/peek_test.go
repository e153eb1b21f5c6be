package profile

import (
	"reflect"
	"regexp"
	"testing"
)

func TestPeeks(t *testing.T) {
	p := testProfile()
	peeks := p.Peeks(regexp.MustCompile(`^(worker|recurse|main)$`))
	if len(peeks) != 3 || peeks[0].Function != "main" || peeks[1].Function != "worker" || peeks[2].Function != "recurse" {
		t.Fatalf("peeks %+v, want main, worker, recurse (by total)", peeks)
	}
	m, w, r := peeks[0], peeks[1], peeks[2]
	if m.Total != 9 || m.Self != 0 || !reflect.DeepEqual(m.Callers, []Edge{{Name: RootCaller, Samples: 9}}) {
		t.Errorf("main: %+v", m)
	}
	wantMain := []Edge{{"dispatch_2", "app", 6}, {"entry_SYSCALL_64", "[kernel.kallsyms]", 1}, {"libc.so.6+0x1234", "libc.so.6", 1}, {"recurse", "app", 1}}
	if !reflect.DeepEqual(m.Callees, wantMain) {
		t.Errorf("main's callees %+v, want %+v", m.Callees, wantMain)
	}
	if w.Total != 6 || w.Self != 4 || !reflect.DeepEqual(w.Callers, []Edge{{"dispatch_2", "app", 6}}) ||
		!reflect.DeepEqual(w.Callees, []Edge{{"helper", "app", 1}, {"memcpy", "libc.so.6", 1}}) {
		t.Errorf("worker: %+v", w)
	}
	// Three frames of recurse in one sample: each edge counted once.
	if r.Total != 1 || r.Self != 1 || !reflect.DeepEqual(r.Callers, []Edge{{"main", "app", 1}, {"recurse", "app", 1}}) ||
		!reflect.DeepEqual(r.Callees, []Edge{{"recurse", "app", 1}}) {
		t.Errorf("recurse: %+v", r)
	}
	if got := p.Peeks(regexp.MustCompile("nothing")); len(got) != 0 {
		t.Errorf("no match gave %+v", got)
	}
}
