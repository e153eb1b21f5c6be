// Package introperf owns culprit's implementation of IntroPerf (Kim et al.,
// SIGMETRICS'14): context-sensitive latency inference from the system stack
// traces that the kernel attaches to events (system call entry and exit,
// context switches, CPU-clock ticks).
//
// It owns three things:
//
//   - Calling context trees: one tree per run, built by dynamic calling-context
//     indexing (Algorithm 1: PathToID, IDToPath, map_path and map_node), with
//     frames identified by function (name and object), never by address.
//   - Latency inference (Algorithm 2, with the corrections of
//     docs/introperf.md): per thread, over the time-ordered stacks of all
//     events, the continuity of each frame's calling context gives function
//     instances with a conservative latency (first to last event in which the
//     context was seen) and an aggressive one (first event to the event that
//     broke the context). Everything still open is closed at the thread's
//     last event.
//   - Context ranking (Algorithm 3): the performance-annotated CCT (instance
//     counts, mean latencies), top-down normalisation that subtracts the
//     children's total latency from each node's so own time is never
//     negative, and the differential ranking of the buggy run's root-to-leaf
//     paths by latency increase over a base run, with per-frame ranks, the
//     distance from the hottest frame and the layer (main program, library,
//     dlopen'ed plug-in, kernel) of the root-cause candidate's binary.
//
// The package reads only the model of package profile (profile.Profile and,
// for the plug-in verdict, profile.ObjectLoad); it does not read recordings,
// ELF files or the kernel, and it does not print: package render draws its
// results (Result, Comparison) as text, JSON, Chrome trace, DOT and HTML.
package introperf
