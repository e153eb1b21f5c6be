package dwarfx

import (
	"fmt"
	"strings"
)

// Describe renders what is known at pc: the function, the inlined calls
// and each variable in scope with its type and location there, one per
// line. For tests and debugging.
func (i *Info) Describe(pc uint64) string {
	fn, ok := i.Function(pc)
	if !ok {
		return fmt.Sprintf("%#x: no function\n", pc)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%#x: %s (entry %#x, unit %s)\n", pc, fn.Name, fn.Entry, fn.Unit)
	for _, in := range fn.Inlines(pc) {
		fmt.Fprintf(&sb, "  inlined: %s\n", in)
	}
	for _, v := range fn.Variables(pc) {
		where := "optimized out"
		if l, ok := v.Location(pc); ok {
			where = l.String()
			if v.HasLocationList() {
				where += fmt.Sprintf(" [%#x,%#x)", l.Lo, l.Hi)
			}
		}
		fmt.Fprintf(&sb, "  %s %s: %s\n", v.Type().Name, v, where)
	}
	return sb.String()
}
