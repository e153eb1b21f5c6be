package recorder

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/symbol"
	"github.com/culprit-dev/culprit/internal/userfile"
)

// Kernel symbols are cached on disk: formatting /proc/kallsyms costs the
// kernel ~100 ms of CPU, which would land while the profiled program runs.
// The cache key is the boot id, the kernel release and the list of loaded
// modules, so a reboot or a module (un)load makes a new cache. The file is a
// serialized symbol.KernelTable (sorted addresses, names in one text): it is
// mapped read-only and used in place, so loading it costs a few system calls
// and no decoding, whatever its size (5 MB for 120k symbols).

// kcachePath returns the cache file of the running kernel.
func kcachePath() (string, bool) {
	boot, err1 := os.ReadFile("/proc/sys/kernel/random/boot_id")
	rel, err2 := os.ReadFile("/proc/sys/kernel/osrelease")
	mods, _ := os.ReadFile("/proc/modules")
	if err1 != nil || err2 != nil {
		return "", false
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", false
	}
	h := sha256.New()
	h.Write(boot)
	h.Write(rel)
	h.Write(mods)
	// "ktab-": the format of symbol.KernelTable.AppendBinary ("kallsyms-"
	// files were an earlier format, which older culprits still read).
	return filepath.Join(dir, "culprit", "ktab-"+hex.EncodeToString(h.Sum(nil)[:12])), true
}

// loadKcache maps a cached table. The mapping is never unmapped: the table's
// names point into it.
func loadKcache(path string) (*symbol.KernelTable, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Size <= 0 || st.Size > 1<<30 {
		return nil, errors.New("not a kernel symbol cache")
	}
	// Private and read-only: a cache is replaced by renaming a new file over
	// it, never rewritten in place, so the mapped bytes cannot change.
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	t, err := symbol.KernelTableFromBinary(mem)
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	return t, nil
}

// saveKcache writes a table atomically; failures are ignored (it is a cache).
func saveKcache(path string, t *symbol.KernelTable) {
	// Kernel addresses: 0600, and under sudo the user's; written whole or
	// not at all, and nothing left if culprit exits meanwhile (userfile).
	if err := userfile.MkdirAll(filepath.Dir(path)); err != nil {
		return
	}
	userfile.Replace(path, func(f *os.File) error {
		_, err := f.Write(t.AppendBinary(nil))
		return err
	})
}

// startKernelSymbols loads the kernel's symbols in the background, once the
// command runs: from the cache it takes tens of microseconds, but without one
// (the first recording after a boot, or no cache directory) reading
// /proc/kallsyms takes 0.1–0.3 s, which must not delay the start and should
// not hold up draining either (kernelSymbols).
func (s *session) startKernelSymbols() {
	if s.kready != nil {
		return
	}
	ready := make(chan struct{})
	s.kready = ready
	userOnly := s.o.UserOnly
	go func() {
		defer close(ready)
		defer func() {
			if r := recover(); r != nil {
				s.ktab, s.kwarn = nil, fmt.Sprintf("kernel frames will be unnamed: loading kernel symbols failed: %v", r)
			}
		}()
		s.ktab, s.kwarn = loadKernelSymbols(userOnly)
	}()
}

// kernelSymbols notes the kernel addresses of a sample. The function of each
// is written once, as a KernelSymbol record, as soon as the table is loaded;
// until then (a few tenths of a second without a cache) the addresses wait,
// so that draining the rings is never held up.
func (s *session) kernelSymbols(addrs []uint64) {
	if len(addrs) == 0 {
		return
	}
	s.startKernelSymbols()
	for _, a := range addrs {
		if !s.kaddr[a] {
			s.kaddr[a] = true
			s.kpending = append(s.kpending, a)
		}
	}
}

// writeKernelSymbols writes the functions of the waiting kernel addresses if
// the table is loaded, or with wait once it is (at the end of a recording).
func (s *session) writeKernelSymbols(wait bool) {
	if len(s.kpending) == 0 {
		return
	}
	if !s.kloaded {
		if !wait {
			select {
			case <-s.kready:
			default:
				return
			}
		}
		<-s.kready
		s.kloaded = true
		if s.kwarn != "" {
			s.warn("%s", s.kwarn)
		}
	}
	if s.ktab != nil {
		for _, a := range s.kpending {
			start, size, name, module, ok := s.ktab.Symbol(a)
			if !ok || s.kseen[start] {
				continue
			}
			s.kseen[start] = true
			s.write(&recording.KernelSymbol{Addr: start, Size: size, Name: name, Module: module})
		}
	}
	s.kpending = s.kpending[:0]
	if len(s.kaddr) > 1<<20 { // bound memory; re-resolving is cheap
		s.kaddr = map[uint64]bool{}
	}
}

// loadKernelSymbols reads the kernel's symbols from the on-disk cache, or
// from /proc/kallsyms (then caches them); it returns a warning instead when
// kernel frames cannot be named.
func loadKernelSymbols(userOnly bool) (*symbol.KernelTable, string) {
	if userOnly {
		return nil, ""
	}
	cache, cacheable := kcachePath()
	if cacheable {
		if t, err := loadKcache(cache); err == nil && t.Len() > 0 {
			return t, ""
		}
	}
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, fmt.Sprintf("kernel frames will be unnamed: %v", err)
	}
	defer f.Close()
	syms, err := symbol.ParseKallsyms(f)
	if err != nil {
		return nil, fmt.Sprintf("kernel frames will be unnamed: reading /proc/kallsyms: %v", err)
	}
	t := symbol.NewKernelTable(syms)
	if t.Len() == 0 {
		return nil, fmt.Sprintf("kernel frames will be unnamed: /proc/kallsyms hides addresses (kernel.kptr_restrict is %s; run as root or set it to 0)", perf.ReadSysctl("kernel/kptr_restrict"))
	}
	if cacheable {
		saveKcache(cache, t)
	}
	return t, ""
}
