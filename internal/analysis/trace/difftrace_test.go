package trace

import (
	"reflect"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/schema"
)

func flowOf(m map[string]schema.Flow) func(string) (schema.Flow, bool) {
	return func(n string) (schema.Flow, bool) { f, ok := m[n]; return f, ok }
}

func block(text ...string) schema.FlowBlock {
	b := schema.FlowBlock{Text: text}
	for _, t := range text {
		op, _, _ := strings.Cut(t, " ")
		b.Ops = append(b.Ops, op)
	}
	return b
}

// The older build has main → {old_name, same, tweak, body}; the newer one
// renames old_name to new_name (same callers, callees and code), adds
// added (called by main), changes an operand of tweak and a block of body.
func TestDiffTrace(t *testing.T) {
	old := Version{
		Callees: map[string][]string{"main": {"old_name", "same", "tweak", "body"}, "old_name": {"same"}, "same": nil, "tweak": nil, "body": nil},
		Flow: flowOf(map[string]schema.Flow{
			"main": {block("call old_name", "ret ")}, "old_name": {block("call same", "ret ")}, "same": {block("mov eax,1", "ret ")},
			"tweak": {block("lea eax,[rdi+7]", "ret ")}, "body": {block("add eax,1", "ret ")},
		}),
	}
	cur := Version{
		Callees: map[string][]string{"main": {"new_name", "same", "tweak", "body", "added"}, "new_name": {"same"}, "same": nil, "tweak": nil, "body": nil, "added": nil},
		Flow: flowOf(map[string]schema.Flow{
			"main": {block("call new_name", "ret ")}, "new_name": {block("call same", "ret ")}, "same": {block("mov eax,1", "ret ")},
			"tweak": {block("lea eax,[rdi+9]", "ret ")}, "body": {block("add eax,1", "add eax,2", "ret ")}, "added": {block("ret ")},
		}),
	}
	got := func(mode CFGMode, hunks map[string]bool) map[string]string {
		out := map[string]string{}
		for _, c := range DiffTrace(old, cur, hunks, mode, true) {
			out[c.Function] = c.Reason
		}
		return out
	}
	for _, tc := range []struct {
		mode CFGMode
		want map[string]string
	}{
		{CFGSoft, map[string]string{"added": "new", "main": "calls", "body": "code"}},
		{CFGSemiStrict, map[string]string{"added": "new", "main": "calls", "body": "code"}},
		{CFGStrict, map[string]string{"added": "new", "main": "calls", "body": "code", "tweak": "code"}},
	} {
		if g := got(tc.mode, nil); !reflect.DeepEqual(g, tc.want) {
			t.Errorf("mode %d: %v, want %v", tc.mode, g, tc.want)
		}
	}
	if g := got(CFGSoft, map[string]bool{"same": true}); g["same"] != "source" {
		t.Errorf("a hunk naming same: %v", g)
	}
	// Standalone: the changed functions and main; a changed leaf goes
	// only when more than 20 functions are probed.
	probed := []string{"main", "new_name", "same", "tweak", "body", "added"}
	keep := DiffSelect(probed, DiffTrace(old, cur, nil, CFGStrict, true), cur.Callees, "main")
	if want := map[string]bool{"main": true, "tweak": true, "body": true, "added": true}; !reflect.DeepEqual(keep, want) {
		t.Errorf("standalone keeps %v, want %v", keep, want)
	}
}

func TestHunkFunctions(t *testing.T) {
	diff := `diff --git a/x.c b/x.c
@@ -10,7 +10,7 @@ static long tweak(long a)
-	return a + 7;
+	return a + 9;
@@ -30,3 +30,4 @@ int main(int argc, char **argv)
@@ -50 +51 @@
`
	got := HunkFunctions(strings.NewReader(diff), map[string][]string{"tweak": nil, "main": nil, "argc": nil})
	// argc is in the header too: a name of the call graph is taken
	// wherever it appears there, as Perun does.
	if want := map[string]bool{"tweak": true, "main": true, "argc": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

// Classes: loop nesting, plus a callee's class under the loops around
// the call; unknown for a call without a symbol and for recursion.
func TestClassesAndStaticBaseline(t *testing.T) {
	shapes := map[string]schema.Shape{
		"main":   {Loops: 1, Calls: []schema.Call{{Callee: "row", LoopDepth: 1}, {Callee: "add"}}},
		"row":    {Loops: 1, Calls: []schema.Call{{Callee: "add", LoopDepth: 1}}},
		"add":    {},
		"getter": {Calls: []schema.Call{{Callee: "add"}}},
		"plt":    {Calls: []schema.Call{{Callee: ""}}},
		"rec":    {Calls: []schema.Call{{Callee: "rec"}}},
	}
	shape := func(n string) (schema.Shape, bool) { s, ok := shapes[n]; return s, ok }
	funcs := []string{"main", "row", "add", "getter", "plt", "rec", "missing"}
	got := Classes(shape, funcs)
	want := map[string]int{"main": 2, "row": 1, "add": 0, "getter": 0, "plt": -1, "rec": -1, "missing": -1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("classes %v, want %v", got, want)
	}
	levels := map[string]int{"main": 0, "row": 1, "getter": 1, "add": 2}
	if ex := StaticBaseline(funcs, got, levels, 0, map[string]bool{"getter": true}); !reflect.DeepEqual(ex, []string{"add"}) {
		t.Errorf("constant: leaves out %v, want [add] (getter changed)", ex)
	}
	if ex := StaticBaseline(funcs, got, levels, 1, nil); !reflect.DeepEqual(ex, []string{"add", "getter", "row"}) {
		t.Errorf("linear: leaves out %v", ex)
	}
}
