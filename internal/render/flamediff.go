package render

import (
	"fmt"
	"io"
	"math"

	"github.com/culprit-dev/culprit/internal/profile"
)

// WriteFlameDiffSVG draws a differential flame graph (Brendan Gregg's): the
// flame graph of cur, each frame coloured by how its self share (the
// samples in which it is the innermost frame, of all samples of the run)
// changed from base: red grew, blue shrank, the deeper the colour the larger
// the change against the largest one; white is unchanged. Frames are matched
// by their path of names from the root; a run of one process is matched
// with a base run of one process whatever their names (a program rebuilt
// under another name). Shares are of each
// run's own samples, so runs of different lengths compare. Frames found
// only in base are not drawn (culprit diff lists them).
func WriteFlameDiffSVG(w io.Writer, base, cur *profile.Profile) error {
	bt, ct := base.CallTree(true), cur.CallTree(true)
	type change struct {
		self, total       float64 // share points: cur − base
		baseSelf, baseTot int
		known             bool // the path exists in base
	}
	changes := map[*profile.TreeNode]change{}
	maxSelf := 0.0
	var walk func(c, b *profile.TreeNode)
	walk = func(c, b *profile.TreeNode) {
		ch := change{self: fraction(c.Self(), ct.Samples), total: fraction(c.Samples, ct.Samples)}
		if b != nil {
			ch.known, ch.baseSelf, ch.baseTot = true, b.Self(), b.Samples
			ch.self -= fraction(b.Self(), bt.Samples)
			ch.total -= fraction(b.Samples, bt.Samples)
		}
		changes[c] = ch
		maxSelf = max(maxSelf, math.Abs(ch.self))
		for k, cc := range c.Children {
			var bc *profile.TreeNode
			if b != nil {
				bc = b.Children[k]
				if bc == nil && c == ct && len(c.Children) == 1 && len(b.Children) == 1 {
					// One process in each run, renamed (a rebuilt
					// program under another name): the same one.
					for _, only := range b.Children {
						bc = only
					}
				}
			}
			walk(cc, bc)
		}
	}
	walk(ct, bt)
	color := func(n *profile.TreeNode) string {
		d := 0.0
		if maxSelf > 0 {
			d = changes[n].self / maxSelf
		}
		// White to red or blue; the faintest change stays visibly tinted.
		v := 0.0
		if math.Abs(d) > 1e-9 {
			v = 0.15 + 0.85*math.Abs(d)
		}
		fade := int(255 * (1 - 0.8*v))
		if d < 0 {
			return fmt.Sprintf("rgb(%d,%d,255)", fade, fade)
		}
		return fmt.Sprintf("rgb(255,%d,%d)", fade, fade)
	}
	tip := func(n *profile.TreeNode) string {
		ch := changes[n]
		if !ch.known {
			return fmt.Sprintf("%s — new: %d samples (%.2f%%), not in base", flameName(n), n.Samples, 100*fraction(n.Samples, ct.Samples))
		}
		return fmt.Sprintf("%s — %d → %d samples; total %.2f%% → %.2f%% (%+.2f), self %.2f%% → %.2f%% (%+.2f)",
			flameName(n), ch.baseTot, n.Samples,
			100*fraction(ch.baseTot, bt.Samples), 100*fraction(n.Samples, ct.Samples), 100*ch.total,
			100*fraction(ch.baseSelf, bt.Samples), 100*fraction(n.Self(), ct.Samples), 100*ch.self)
	}
	sub := fmt.Sprintf("%d samples (base %d)", ct.Samples, bt.Samples)
	title := commandName(base) + " → " + commandName(cur)
	if commandName(base) == commandName(cur) {
		title = commandName(cur) + ", against its base run"
	}
	return writeFlame(w, ct, title, sub, "widths: new run; red: self share grew, blue: shrank", color, tip)
}
