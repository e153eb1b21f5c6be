package unwind

import "sync"

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
