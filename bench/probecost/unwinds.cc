// Linked into probecalls-unwinds (bench/probecost.sh): a C++ unit that
// throws, so that the executable calls the C++ unwinder and culprit trace
// puts its return probes on RET instructions rather than uretprobes. It
// is never called.
extern "C" void probecalls_unwinds(int v) {
	if (v) throw v;
}
