// Package vprof implements vProf's value-assisted cost profiling (Weng et
// al., EuroSys '23, §5; docs/vprof.md): it compares the program variables
// sampled in normal runs with those sampled in buggy runs and recalibrates
// the cost of each function, so that a cheap function whose variables behave
// abnormally rises above costly functions whose variables look normal.
//
// It owns, for runs given as profile.Profile values (one per recording):
//   - the PC cost (self CPU time) and the variable-based cost (value samples
//     at distinct PCs per tick) of each function, and the raw cost, the larger;
//   - per variable, discount ratios in three dimensions (value, delta between
//     consecutive samples, duration = run lengths of equal values) from the
//     k-sample Anderson–Darling test and the Hellinger distance
//     (internal/stats), the lowest of which is the variable's;
//   - the function discount (its most anomalous variable's), the calibrated
//     cost (1 − r)·raw and the ranking, with the hist-discounter for functions
//     without variables when several runs of each kind are given;
//   - bug-pattern inference (missing constraint, scalability, wrong
//     constraint) and localisation: the normal range of the most anomalous
//     variable, the buggy samples outside it, the source lines they were
//     read at and — through a BlockFunc the caller supplies (SetBlocks; the
//     CLI uses package schema's disassembly) — the basic blocks;
//   - the differential method (the default): the growth of each function's
//     share of CPU time over complete call stacks, weighted by evidence
//     from its variables, its own time and the inputs that differ it reads
//     (through a ReadsFunc, SetReads), with a why line per function.
//
// Package render draws the result (DiagnoseText, DiagnoseJSON).
//
// It reads only profile.Profile (values, their symbolized PCs, CPU samples
// and stacks). It does not read recordings, ELF or DWARF, does not talk to
// the kernel, and prints only through the writers it is given.
package vprof
