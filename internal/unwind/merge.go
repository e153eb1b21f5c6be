package unwind

// Merge splices a CFI-unwound chain with the kernel's frame-pointer chain of
// the same sample (both innermost first, fp[0] == cfi[0] normally) and
// returns the best full chain. The result is a new slice; neither input is
// modified.
//
// Trust model. Every frame of the CFI chain is real: CFI describes each
// function exactly, so the chain is right as far as it goes, but it stops
// early when a return address lies beyond the stack copy (2 KiB in
// frame-pointer mode) or a module has no CFI. The frame-pointer chain is
// walked by the kernel over the whole stack, so it goes further, but it
// skips every function that does not set up rbp (a frameless leaf, -O2 code
// without frame pointers such as Debian's libc) and may contain junk where
// rbp held data. Junk from a frameless leaf is the common case: the leaf
// leaves its caller's rbp in place, so fp[1] is the caller's caller's
// return address and the leaf's caller is missing (fp = [worker, main+y]
// where the truth is [worker, dispatch_2+x, main+y]).
//
// Rule:
//  1. If cfi has fewer than 2 frames it adds nothing: return fp (or cfi if fp
//     is empty).
//  2. If cfiComplete, CFI reached the outermost frame: return cfi.
//  3. Align the chains: walk cfi[1:] in order and match each address to its
//     first occurrence in fp after the previous match (at index >= 1). This
//     monotone, greedy alignment skips fp junk and the frames fp lacks, and
//     pairs recursive frames (equal addresses) in order. Let (j, p) be the
//     deepest matched pair: cfi[j] == fp[p].
//  4. With a match, return cfi + fp[p+1:]. All CFI frames are kept; fp frames
//     up to p are either the same frames or junk; fp frames past p are the
//     callers beyond where CFI stopped. No CFI frame after j occurs in
//     fp[p+1:] (else it would have matched), so nothing is duplicated: those
//     CFI frames are frames fp skipped.
//  5. Without a match, fp[1:] shares no frame with cfi. Then fp[1:] is either
//     entirely above the point where CFI stopped (CFI stopped within frames
//     fp skipped; fp[1] is then a caller of cfi's last frame) or junk; return
//     cfi + fp[1:] — unless fp[0] differs from cfi[0] (the chains are not of
//     the same sample state), in which case return cfi alone.
//
// This differs from splicing at the deepest common frame and dropping the CFI
// frames after it (cfi[:j+1] + fp[p+1:]): when CFI went past the last common
// frame, those frames are real and fp skipped them, so they are kept.
func Merge(cfi, fp []uint64, cfiComplete bool) []uint64 {
	if len(cfi) < 2 {
		if len(fp) == 0 {
			return append([]uint64(nil), cfi...)
		}
		return append([]uint64(nil), fp...)
	}
	if cfiComplete || len(fp) < 2 {
		return append([]uint64(nil), cfi...)
	}
	p := -1 // fp index of the deepest match
	next := 1
	for j := 1; j < len(cfi) && next < len(fp); j++ {
		for k := next; k < len(fp); k++ {
			if fp[k] == cfi[j] {
				p = k
				next = k + 1
				break
			}
		}
	}
	out := make([]uint64, 0, len(cfi)+len(fp))
	out = append(out, cfi...)
	switch {
	case p >= 0:
		out = append(out, fp[p+1:]...)
	case fp[0] == cfi[0]:
		out = append(out, fp[1:]...)
	}
	return out
}
