package schema

import (
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// Which checks decide to rewrite the state a loop is bounded by, on
// repair.c at -O2 (at -O0 a pointer parameter reaches its uses through
// the frame, which the analysis does not follow).
func TestRepair(t *testing.T) {
	bin := testutil.C(t, "repairO2", []string{"repair.c"}, "-O2", "-g")
	c := mustOpenCode(t, bin)
	at := func(fn string) uint64 { a, _ := symbolAddr(t, bin, fn); return a + 1 }
	r, ok := c.Repair(at("ring_find"), at("ring_maybe_rehome"))
	if !ok {
		t.Fatal("ring_maybe_rehome: no repair of ring_find's bounds; want ring_rehome")
	}
	if r.Callee != "ring_rehome" || !r.Ordered || r.LoopFunc != "ring_find" {
		t.Errorf("ring_maybe_rehome: %+v; want ring_rehome on a threshold", r)
	}
	// ring_find's exits read r->used and the slots through r->slot;
	// ring_rehome stores r->used (and the slots, not the pointer).
	if !slices.Equal(r.Bounds, []string{"r->used"}) {
		t.Errorf("bounds %v; want [r->used], which ring_find's exit tests read and ring_rehome stores", r.Bounds)
	}
	if !slices.Equal(r.Tests, []string{"r->dead", "r->limit"}) {
		t.Errorf("tests %v; want [r->dead r->limit]", r.Tests)
	}
	for _, tc := range []struct{ loop, pred, why string }{
		{"ring_find", "ring_rehome_if", "its test is of a flag it was passed, not of the ring"},
		{"ring_find", "ring_report", "what it calls on its test only reads the ring"},
		{"ring_find", "ring_each_rehome", "its test is made in every iteration of a loop"},
		{"ring_find", "log_trim", "its object is of another type"},
		{"ring_find", "ring_rehome", "it calls no rewrite, it is one"},
		{"ring_find", "ring_find", "the loop itself"},
		{"log_shrink", "log_trim", "log_shrink has no loop"},
		{"main", "ring_maybe_rehome", "main takes no ring"},
		{"cur_spaces", "cur_item", "it tests the character under the cursor, reached through c->p, not a member"},
	} {
		if r, ok := c.Repair(at(tc.loop), at(tc.pred)); ok {
			t.Errorf("%s for %s: %+v; want none (%s)", tc.pred, tc.loop, r, tc.why)
		}
	}
	// Of every function of the program, only ring_maybe_rehome checks
	// ring_find's bounds.
	rs := c.RepairsOf(at("ring_find"))
	if len(rs) != 1 || rs[0].Check != "ring_maybe_rehome" || rs[0].Callee != "ring_rehome" {
		t.Errorf("RepairsOf(ring_find) = %+v; want ring_maybe_rehome's call of ring_rehome alone", rs)
	}
	if rs := c.RepairsOf(at("log_shrink")); len(rs) != 0 {
		t.Errorf("RepairsOf(log_shrink) = %+v; want none (no loop)", rs)
	}
	if _, ok := c.Repair(1, at("ring_maybe_rehome")); ok {
		t.Error("an address outside every function has a repair")
	}
}
