package tracer

import (
	"reflect"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
	"github.com/culprit-dev/culprit/internal/traceprog"
)

// Reads through pointers get DWARF's offsets: j->req->hdr.id is the req
// pointer at offset 8 of struct job, then id at 16 (hdr, after char tag[12]) + 8 of struct req.
func TestPlanReads(t *testing.T) {
	bin := testutil.C(t, "varfields", []string{"varfields.c"}, "-O2", "-g", "-pthread")
	ts, _, err := Resolve(bin, 0, []Pattern{{Glob: "begin"}, {Glob: "finish"}, {Glob: "main"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := PlanReads(ts, []string{"j->req->hdr.id", "j->prio * 2"}); err != nil {
		t.Fatal(err)
	}
	want := []traceprog.Read{{Arg: 0, Offs: []int32{8, 24}, Size: 8}, {Arg: 0, Offs: []int32{0}, Size: 4}}
	for _, tg := range ts {
		switch tg.Function {
		case "begin", "finish":
			if !reflect.DeepEqual(tg.Reads, want) || !reflect.DeepEqual(tg.ReadParams, []string{"j->req->hdr.id:i8:long int", "j->prio:i4:int"}) {
				t.Errorf("%s: reads %+v named %q", tg.Function, tg.Reads, tg.ReadParams)
			}
		case "main":
			if len(tg.Reads) != 0 {
				t.Errorf("main has no j, but reads %+v", tg.Reads)
			}
		}
	}
	for _, bad := range []struct{ expr, msg string }{
		{"j->req->nosuch", "no member nosuch"},
		{"j->prio->x", "not a pointer"},
		{"j->req->tag", "reads an integer"},
		{"k->id", "no traced function has"},
	} {
		if err := PlanReads(ts, []string{bad.expr}); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: %v, want an error saying %q", bad.expr, err, bad.msg)
		}
	}
}
