package recorder

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"github.com/culprit-dev/culprit/internal/symbol"
)

// Kernel symbols are cached on disk: formatting /proc/kallsyms costs the
// kernel ~100 ms of CPU, which would land while the profiled program runs.
// The cache key is the boot id, the kernel release and the list of loaded
// modules, so a reboot or a module (un)load makes a new cache. Written by
// hand (a flat binary file) because decoding must take milliseconds.

const kcacheMagic = "culprit-kallsyms-1\n"

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
	return filepath.Join(dir, "culprit", "kallsyms-"+hex.EncodeToString(h.Sum(nil)[:12])), true
}

// loadKcache reads a cached table.
func loadKcache(path string) ([]symbol.KernelSymbol, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < len(kcacheMagic)+8 || string(b[:len(kcacheMagic)]) != kcacheMagic {
		return nil, errors.New("not a kallsyms cache")
	}
	b = b[len(kcacheMagic):]
	n := binary.LittleEndian.Uint64(b)
	b = b[8:]
	if n > uint64(len(b))/20 {
		return nil, errors.New("damaged kallsyms cache")
	}
	fixed := b[:n*20] // per symbol: addr u64, size u64, name len u16, module len u16
	text := string(b[n*20:])
	syms := make([]symbol.KernelSymbol, n)
	for i := range syms {
		r := fixed[i*20:]
		nl, ml := int(binary.LittleEndian.Uint16(r[16:])), int(binary.LittleEndian.Uint16(r[18:]))
		if nl+ml > len(text) {
			return nil, errors.New("damaged kallsyms cache")
		}
		syms[i] = symbol.KernelSymbol{Addr: binary.LittleEndian.Uint64(r), Size: binary.LittleEndian.Uint64(r[8:]),
			Name: text[:nl], Module: text[nl : nl+ml]}
		text = text[nl+ml:]
	}
	return syms, nil
}

// saveKcache writes a table atomically; failures are ignored (it is a cache).
func saveKcache(path string, syms []symbol.KernelSymbol) {
	var fixed, text []byte
	fixed = append(fixed, kcacheMagic...)
	fixed = binary.LittleEndian.AppendUint64(fixed, uint64(len(syms)))
	for _, s := range syms {
		if len(s.Name) > 0xffff || len(s.Module) > 0xffff {
			return
		}
		fixed = binary.LittleEndian.AppendUint64(fixed, s.Addr)
		fixed = binary.LittleEndian.AppendUint64(fixed, s.Size)
		fixed = binary.LittleEndian.AppendUint16(fixed, uint16(len(s.Name)))
		fixed = binary.LittleEndian.AppendUint16(fixed, uint16(len(s.Module)))
		text = append(text, s.Name...)
		text = append(text, s.Module...)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(fixed, text...), 0o644); err != nil {
		return
	}
	os.Rename(tmp, path)
}
