package symbol

import "sort"

// Symbol returns the whole symbol containing addr: its start, its size (up to
// the next symbol when the table has none), name and module. Recorders use it
// to store just the kernel functions a recording needs.
func (k *KernelTable) Symbol(addr uint64) (start, size uint64, name, module string, ok bool) {
	if k == nil {
		return 0, 0, "", "", false
	}
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].Addr > addr }) - 1
	if i < 0 {
		return 0, 0, "", "", false
	}
	s := k.syms[i]
	size = s.Size
	if size == 0 && i+1 < len(k.syms) {
		size = k.syms[i+1].Addr - s.Addr
	}
	if size != 0 && addr-s.Addr >= size {
		return 0, 0, "", "", false
	}
	return s.Addr, size, s.Name, s.Module, true
}
