package render

import (
	"bufio"
	"fmt"
	"io"

	"github.com/culprit-dev/culprit/internal/profile"
)

// treeRoots are the nodes a tree report starts from: the processes when
// there are several, else the outermost frames of the one process.
func treeRoots(root *profile.TreeNode) []*profile.TreeNode {
	top := root.BySamples()
	if len(top) == 1 && top[0].Process {
		return top[0].BySamples()
	}
	return top
}

// TreeText writes the call tree top-down, as perf report's caller graph and
// pprof -tree show it: per line the total and self share of all samples
// and the function, indented under its caller, children by samples; a
// function in another object than its caller is followed by that object.
// Nodes under minShare (a fraction) are left out, and counted at the end.
func TreeText(w io.Writer, root *profile.TreeNode, lost, throttled uint64, minShare float64) error {
	bw := bufio.NewWriter(w)
	if err := Summary(bw, root.Samples, lost, throttled); err != nil {
		return err
	}
	if root.Samples == 0 {
		return bw.Flush()
	}
	fmt.Fprintf(bw, "%7s %7s  %s\n", "total%", "self%", "function")
	hidden := 0
	var walk func(n, parent *profile.TreeNode, prefix, branch string)
	walk = func(n, parent *profile.TreeNode, prefix, branch string) {
		name := n.Name
		if parent != nil && n.Object != parent.Object && n.Object != "" && n.Object != n.Name && !parent.Process {
			name = withObject(name, n.Object)
		}
		fmt.Fprintf(bw, "%7s %7s  %s%s%s\n", pct(fraction(n.Samples, root.Samples)), pct(fraction(n.Self(), root.Samples)), prefix, branch, name)
		var shown []*profile.TreeNode
		for _, c := range n.BySamples() {
			if fraction(c.Samples, root.Samples) < minShare {
				hidden += c.Size()
				continue
			}
			shown = append(shown, c)
		}
		next := prefix
		switch branch {
		case "├─ ":
			next += "│  "
		case "└─ ":
			next += "   "
		}
		for i, c := range shown {
			b := "├─ "
			if i == len(shown)-1 {
				b = "└─ "
			}
			walk(c, n, next, b)
		}
	}
	for _, r := range treeRoots(root) {
		if fraction(r.Samples, root.Samples) < minShare {
			hidden += r.Size()
			continue
		}
		walk(r, nil, "", "")
	}
	if hidden > 0 {
		fmt.Fprintf(bw, "(%d frames under %.1f%% not shown: lower --min-share)\n", hidden, 100*minShare)
	}
	return bw.Flush()
}

type treeNodeJSON struct {
	Name    string `json:"name"`
	Object  string `json:"object"`
	Kernel  bool   `json:"kernel,omitempty"`
	Process bool   `json:"process,omitempty"`
	countsJSON
	Children []treeNodeJSON `json:"children"`
}

type treeJSON struct {
	Samples   int            `json:"samples"`
	Lost      uint64         `json:"lost"`
	Throttled uint64         `json:"throttled"`
	MinShare  float64        `json:"min_share"`
	Hidden    int            `json:"hidden"`
	Tree      []treeNodeJSON `json:"tree"`
	Sources   []jsonSource   `json:"sources"`
	Warnings  []string       `json:"warnings"`
}

// TreeJSON writes the call tree as nested JSON (docs/report-json.md), the
// same nodes TreeText shows.
func TreeJSON(w io.Writer, root *profile.TreeNode, minShare float64, extra JSONExtra) error {
	out := treeJSON{Samples: root.Samples, Lost: extra.Lost, Throttled: extra.Throttled, MinShare: minShare,
		Tree: []treeNodeJSON{}, Sources: jsonSources(extra.Sources), Warnings: jsonWarnings(extra.Warnings)}
	var conv func(n *profile.TreeNode) treeNodeJSON
	conv = func(n *profile.TreeNode) treeNodeJSON {
		j := treeNodeJSON{Name: n.Name, Object: n.Object, Kernel: n.Kernel, Process: n.Process,
			countsJSON: counts(n.Self(), n.Samples, root.Samples), Children: []treeNodeJSON{}}
		for _, c := range n.BySamples() {
			if fraction(c.Samples, root.Samples) < minShare {
				out.Hidden += c.Size()
				continue
			}
			j.Children = append(j.Children, conv(c))
		}
		return j
	}
	for _, r := range treeRoots(root) {
		if fraction(r.Samples, root.Samples) < minShare {
			out.Hidden += r.Size()
			continue
		}
		out.Tree = append(out.Tree, conv(r))
	}
	return writeJSON(w, out)
}
