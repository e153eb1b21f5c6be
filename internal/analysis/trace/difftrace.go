package trace

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/schema"
)

// CFGMode is how diff tracing compares the basic blocks of a function
// whose control-flow graph kept its shape (Perun §7.2.4).
type CFGMode int

const (
	CFGSoft       CFGMode = iota // the same number of instructions
	CFGSemiStrict                // the same count of each mnemonic
	CFGStrict                    // the same instructions and operands (branch targets aside)
)

// Version is one build of a program as diff tracing reads it.
type Version struct {
	Callees map[string][]string                   // the static call graph
	Flow    func(name string) (schema.Flow, bool) // a function's control-flow graph
}

// Changed is a function diff tracing found changed, and why.
type Changed struct {
	Function string `json:"function"`
	// Reason: new (not in the older build), calls (its callees
	// differ), source (a git diff hunk names it), cfg (its control-flow
	// graph differs), code (a block's instructions differ).
	Reason string `json:"reason"`
	Was    string `json:"was,omitempty"` // the older name of a renamed function
}

// DiffTrace is Perun's diff tracing (§7.2.4): the functions of the newer
// build cur that changed against the older build old. Three comparisons,
// each on what the one before left: the call graphs (a function only in
// cur is new unless a function only in old had the same callers and
// callees: then it was renamed, and is compared as that one; with
// inspectAll, a function whose callees differ changed), the functions the
// hunks of a source diff name, and the control-flow graphs (a different
// shape, or a pair of blocks that differ as mode says).
func DiffTrace(old, cur Version, hunks map[string]bool, mode CFGMode, inspectAll bool) []Changed {
	callers := func(g map[string][]string) map[string][]string {
		out := map[string][]string{}
		for f, cs := range g {
			for _, c := range cs {
				out[c] = append(out[c], f)
			}
		}
		return out
	}
	oldCallers, curCallers := callers(old.Callees), callers(cur.Callees)
	var added, removed []string
	for f := range cur.Callees {
		if _, ok := old.Callees[f]; !ok {
			added = append(added, f)
		}
	}
	for f := range old.Callees {
		if _, ok := cur.Callees[f]; !ok {
			removed = append(removed, f)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	was := map[string]string{} // cur name → old name
	for f := range cur.Callees {
		if _, ok := old.Callees[f]; ok {
			was[f] = f
		}
	}
	// A renamed function: callers and callees the same, by the names of
	// the newer build (a renamed callee is matched first, if listed
	// first; one pass, as Perun's).
	rename := func(names []string) []string {
		out := make([]string, 0, len(names))
		back := map[string]string{}
		for n, o := range was {
			back[o] = n
		}
		for _, n := range names {
			if c, ok := back[n]; ok {
				out = append(out, c)
			} else {
				out = append(out, "\x00"+n)
			}
		}
		sort.Strings(out)
		return out
	}
	taken := map[string]bool{}
	var changes []Changed
	for _, n := range added {
		match := ""
		for _, o := range removed {
			if taken[o] {
				continue
			}
			if same(rename(old.Callees[o]), cur.Callees[n]) && same(rename(oldCallers[o]), curCallers[n]) {
				match = o
				break
			}
		}
		if match == "" {
			changes = append(changes, Changed{Function: n, Reason: "new"})
			continue
		}
		taken[match] = true
		was[n] = match
	}
	changed := map[string]bool{}
	for _, c := range changes {
		changed[c.Function] = true
	}
	var cands []string
	for n := range was {
		cands = append(cands, n)
	}
	sort.Strings(cands)
	wasName := func(n string) string {
		if was[n] != n {
			return was[n]
		}
		return ""
	}
	for _, n := range cands {
		if inspectAll && !same(rename(old.Callees[was[n]]), cur.Callees[n]) {
			changes = append(changes, Changed{Function: n, Reason: "calls", Was: wasName(n)})
			changed[n] = true
		}
	}
	for _, n := range cands {
		if !changed[n] && hunks[n] {
			changes = append(changes, Changed{Function: n, Reason: "source", Was: wasName(n)})
			changed[n] = true
		}
	}
	for _, n := range cands {
		if changed[n] {
			continue
		}
		fo, ok1 := old.Flow(was[n])
		fc, ok2 := cur.Flow(n)
		if !ok1 || !ok2 {
			continue
		}
		if r := compareFlows(fo, fc, mode); r != "" {
			changes = append(changes, Changed{Function: n, Reason: r, Was: wasName(n)})
			changed[n] = true
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Function < changes[j].Function })
	return changes
}

// compareFlows says how two control-flow graphs differ: "cfg" when their
// blocks or edges do not pair up, "code" when a pair of blocks differs as
// mode says, "" when they are the same.
func compareFlows(a, b schema.Flow, mode CFGMode) string {
	if len(a) != len(b) {
		return "cfg"
	}
	for i := range a {
		if !slices.Equal(a[i].Succ, b[i].Succ) {
			return "cfg"
		}
	}
	for i := range a {
		x, y := a[i], b[i]
		switch mode {
		case CFGSoft:
			if len(x.Ops) != len(y.Ops) {
				return "code"
			}
		case CFGSemiStrict:
			if !same(x.Ops, y.Ops) {
				return "code"
			}
		case CFGStrict:
			if !slices.Equal(x.Text, y.Text) {
				return "code"
			}
		}
	}
	return ""
}

// same reports whether two lists hold the same elements as many times.
func same(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

var ident = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// HunkFunctions reads a unified diff (git diff) and returns the
// identifiers its hunk headers name ("@@ -5091,9 +5091,8 @@ static int
// sock_initobj(...)": git writes there the line that opens the function
// the hunk is in) that are functions of known.
func HunkFunctions(diff io.Reader, known map[string][]string) map[string]bool {
	out := map[string]bool{}
	sc := bufio.NewScanner(diff)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "@@ ") {
			continue
		}
		rest := line[3:]
		i := strings.Index(rest, " @@")
		if i < 0 {
			continue
		}
		for _, id := range ident.FindAllString(rest[i+3:], -1) {
			if _, ok := known[id]; ok {
				out[id] = true
			}
		}
	}
	return out
}

// DiffSelect is diff tracing on its own (standalone): the probed
// functions kept are the changed ones and root, a changed leaf of the
// call graph only with keepLeaf (Perun: true iff 20 functions or fewer
// are probed).
func DiffSelect(probed []string, changes []Changed, callees map[string][]string, root string) map[string]bool {
	keepLeaf := len(probed) <= 20
	changed := map[string]bool{}
	for _, c := range changes {
		changed[c.Function] = true
	}
	keep := map[string]bool{}
	for _, f := range probed {
		if f == root || changed[f] && (keepLeaf || len(callees[f]) > 0) {
			keep[f] = true
		}
	}
	return keep
}
