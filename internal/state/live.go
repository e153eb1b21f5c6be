package state

import (
	"sort"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Live resolves the mappings of running processes from /proc/PID/maps,
// read again when a PC falls outside the known ones (dlopen, exec). It is
// for collectors that stop the process (ptrace), where /proc is current.
type Live struct {
	tables unwind.TableCache
	maps   map[int][]proc.Mapping
}

// NewLive makes a resolver of live processes.
func NewLive() *Live { return &Live{maps: map[int][]proc.Mapping{}} }

// Forget drops what is known of pid (after an exec or exit).
func (l *Live) Forget(pid int) { delete(l.maps, pid) }

func (l *Live) find(pid int, pc uint64) (proc.Mapping, bool) {
	for try := 0; try < 2; try++ {
		ms, ok := l.maps[pid]
		if !ok || try == 1 {
			all, err := proc.Maps(pid)
			if err != nil {
				return proc.Mapping{}, false
			}
			ms = ms[:0:0]
			for _, m := range all {
				if m.Exec() {
					ms = append(ms, m)
				}
			}
			l.maps[pid] = ms
		}
		i := sort.Search(len(ms), func(i int) bool { return ms[i].End > pc })
		if i < len(ms) && ms[i].Start <= pc {
			return ms[i], true
		}
	}
	return proc.Mapping{}, false
}

// Process is the view of one process, implementing both unwind.Resolver
// and this package's Resolver.
type Process struct {
	l   *Live
	pid int
}

// Process returns the view of pid.
func (l *Live) Process(pid int) *Process { return &Process{l: l, pid: pid} }

func (p *Process) module(pc uint64) (string, *unwind.Table, uint64, bool) {
	m, ok := p.l.find(p.pid, pc)
	if !ok || len(m.Path) == 0 || m.Path[0] != '/' {
		return "", nil, 0, false
	}
	t, err := p.l.tables.Get(m.Path)
	if err != nil {
		return "", nil, 0, false
	}
	bias, ok := t.Bias(m.Start, m.Offset)
	return m.Path, t, bias, ok
}

// Resolve implements unwind.Resolver.
func (p *Process) Resolve(pc uint64) (unwind.Module, bool) {
	_, t, bias, ok := p.module(pc)
	return unwind.Module{Table: t, Bias: bias}, ok
}

// Object implements Resolver.
func (p *Process) Object(pc uint64) (string, uint64, bool) {
	path, _, bias, ok := p.module(pc)
	return path, bias, ok
}

// Memory reads memory of a stopped thread, as it is now.
func Memory(tid int) func(addr uint64, buf []byte) error {
	return func(addr uint64, buf []byte) error {
		local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
		n, err := unix.ProcessVMReadv(tid, local, remote, 0)
		if err != nil {
			return err
		}
		if n != len(buf) {
			return unix.EFAULT
		}
		return nil
	}
}
