package unwind

import (
	"bytes"
	"debug/elf"
	"sync"
)

// TableCache loads the Table of each file once, keyed by path. Errors are
// cached too, so a missing or CFI-less file is tried only once. The zero
// value is ready to use and safe for concurrent use.
type TableCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
}

type cacheEntry struct {
	once sync.Once
	t    *Table
	err  error
}

// Get returns the table of the file at path, loading it on first use.
// Concurrent callers asking for the same path wait for a single load.
func (c *TableCache) Get(path string) (*Table, error) {
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*cacheEntry{}
	}
	e, ok := c.entries[path]
	if !ok {
		e = &cacheEntry{}
		c.entries[path] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.t, e.err = LoadTable(path) })
	return e.t, e.err
}

// Len returns the number of paths tried so far.
func (c *TableCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Put registers the table of a pseudo-object, such as "[vdso]", that has no
// file to load from.
func (c *TableCache) Put(name string, t *Table) {
	e := &cacheEntry{t: t}
	e.once.Do(func() {})
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*cacheEntry{}
	}
	c.entries[name] = e
	c.mu.Unlock()
}

// Lookup returns the table of an object: one registered with Put, or the
// file's at an absolute path, loaded on first use. It is nil when the
// object has no CFI or no file to read it from.
func (c *TableCache) Lookup(path string) *Table {
	c.mu.Lock()
	_, known := c.entries[path]
	c.mu.Unlock()
	if !known && (len(path) == 0 || path[0] != '/') {
		return nil
	}
	t, _ := c.Get(path)
	return t
}

// TableFromImage reads the CFI of an ELF image held in memory, such as the
// vDSO.
func TableFromImage(img []byte) (*Table, error) {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, err
	}
	return TableFromELF(f)
}
