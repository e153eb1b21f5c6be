// Package interval marks where a semantic interval (a request, a
// transaction) of a Go program starts and ends, for culprit variance:
//
//	interval.Start(req.ID)
//	... the work, on this goroutine or another ...
//	interval.End(req.ID)
//
//	culprit variance --start github.com/culprit-dev/culprit/interval.Start \
//	    --end github.com/culprit-dev/culprit/interval.End --key id \
//	    --functions 'main.handle*' -- ./server
//
// C programs use include/culprit/interval.h, which emits USDT probes
// (SystemTap's .note.stapsdt). Go cannot: its assembler writes no ELF
// note sections and the toolchain has no sys/sdt.h, so a note would need
// cgo and a C compiler at the user's build. Instead Start and End are
// empty functions the compiler never inlines; culprit sets its uprobes on
// them by name and reads the id from the register Go's ABI passes it in
// (AX), as it reads any traced function's integer parameters. While not
// traced each costs a call and a return.
package interval

// Start marks the start of the interval id.
//
//go:noinline
func Start(id uint64) { _ = id }

// End marks the end of the interval id, on any goroutine.
//
//go:noinline
func End(id uint64) { _ = id }
