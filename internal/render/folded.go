package render

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// foldedName makes a name safe for a folded line: ';' separates frames and a
// newline separates lines.
var foldedName = strings.NewReplacer(";", ":", "\n", " ", "\r", " ")

// WriteFolded writes Brendan Gregg's folded stacks, the input of
// flamegraph.pl and many flame graph tools: one line per distinct stack,
// "comm;outer;...;inner count", root first, lines sorted, count in samples.
// The first element is the process name (the comm of the process's main
// thread), kernel frames carry the suffix "_[k]" as perf's
// stackcollapse-perf.pl --kernel writes them, and an empty stack is
// "[unknown]". Zero samples write nothing.
func WriteFolded(w io.Writer, p *profile.Profile) error {
	type key struct {
		stack    int32
		pid, tid uint32
	}
	lines := map[string]int{}
	cache := map[key]string{}
	for _, s := range p.Samples {
		k := key{s.Stack, s.PID, s.TID}
		line, ok := cache[k]
		if !ok {
			frames := stackFrames(p, s.Stack)
			parts := make([]string, 0, len(frames)+1)
			parts = append(parts, foldedName.Replace(p.ProcessNameAt(s.PID, s.TID, s.Time)))
			for i := len(frames) - 1; i >= 0; i-- {
				name := foldedName.Replace(frames[i].Name())
				if frames[i].Kernel {
					name += "_[k]"
				}
				parts = append(parts, name)
			}
			line = strings.Join(parts, ";")
			cache[k] = line
		}
		lines[line] += s.N()
	}
	keys := make([]string, 0, len(lines))
	for l := range lines {
		keys = append(keys, l)
	}
	sort.Strings(keys)
	bw := bufio.NewWriter(w)
	for _, l := range keys {
		fmt.Fprintf(bw, "%s %d\n", l, lines[l])
	}
	return bw.Flush()
}
