package symbol

import "encoding/binary"

// Symbol returns the whole symbol containing addr: its start, its size (up to
// the next symbol when the table has none), name and module. Recorders use it
// to store just the kernel functions a recording needs.
func (k *KernelTable) Symbol(addr uint64) (start, size uint64, name, module string, ok bool) {
	if k == nil {
		return 0, 0, "", "", false
	}
	i := k.find(addr)
	if i < 0 {
		return 0, 0, "", "", false
	}
	start, size, name, module, ok = k.at(i)
	if !ok {
		return 0, 0, "", "", false
	}
	if size == 0 && i+1 < k.n {
		size = binary.LittleEndian.Uint64(k.addrs[8*(i+1):]) - start
	}
	if size != 0 && addr-start >= size {
		return 0, 0, "", "", false
	}
	return start, size, name, module, true
}
