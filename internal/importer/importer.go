// Package importer converts other tools' stack traces into culprit
// recordings, so that culprit's analyses can read profiles taken elsewhere.
// It reads text and writes records through package recording; it never
// touches the kernel and does not read the profiled program's files: the
// functions keep the names the other tool gave them, carried by KernelSymbol
// and Symbol records.
package importer

// Stats describes an import.
type Stats struct {
	Samples int            // samples imported
	Skipped int            // lines that could not be parsed and were skipped
	Events  map[string]int // imported samples per event, named as the other tool names it
	// Ignored counts, per event, the samples of events culprit has no kind
	// for (e.g. instructions, page-faults, other tracepoints): they are left out.
	Ignored map[string]int
	// Truncated is set when the input ends in the middle of a sample (a
	// file cut short); that sample is left out.
	Truncated bool
}
