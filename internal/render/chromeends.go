package render

import (
	"encoding/binary"
	"fmt"
)

// endRecs is how many samples' records a block of an endList holds.
const endRecs = 1024

// endRecBytes is the size of one sample's record: how many root frames it
// shares with the sample before (int32) and where an event ending at it
// ends (uint64).
const endRecBytes = 12

// endList is a Chrome timeline's record per sample of the thread it
// writes (chromeTimeline.write), made in a first pass and looked ahead
// into by the second to find where each event ends. It is kept in blocks
// of endRecs records, like the sample lists: past heldBytes, full blocks
// go to the timeline's temporary file (spill) and each reader (one per
// frame depth, as the look-ahead of each depth moves on by itself) reads
// them back a block at a time, so that the memory does not grow with the
// thread's samples.
type endList struct {
	blocks [][]byte
	out    []spilled // per block; where a block written out went
	n      int
	held   int // bytes of full blocks kept in memory (spill.held)
	spill  *spill
	err    error
}

// endCursor reads an endList: the block it last read.
type endCursor struct {
	base int    // the block's first record; noBlock: none yet
	buf  []byte // the block, in memory or read back into own
	own  []byte
}

// reset empties l for the next thread, giving back to the spill the
// memory its blocks held.
func (l *endList) reset(s *spill) {
	if l.spill != nil {
		l.spill.held -= l.held
	}
	for i := range l.blocks {
		l.blocks[i] = nil
	}
	*l = endList{blocks: l.blocks[:0], out: l.out[:0], spill: s}
}

// add appends a sample's record.
func (l *endList) add(shared int32, endAt uint64) {
	nb := len(l.blocks)
	if nb == 0 || len(l.blocks[nb-1]) == endRecs*endRecBytes {
		if nb > 0 && l.spill != nil {
			kept, off, n := l.spill.keep(l.blocks[nb-1])
			if kept == nil {
				for len(l.out) < nb {
					l.out = append(l.out, spilled{})
				}
				l.blocks[nb-1], l.out[nb-1] = nil, spilled{off, n}
			} else {
				l.held += len(kept)
			}
		}
		var b []byte
		if l.spill != nil {
			b = l.spill.newBlock(endRecs * endRecBytes)
		} else {
			b = make([]byte, 0, endRecs*endRecBytes)
		}
		l.blocks = append(l.blocks, b)
		nb++
	}
	b := l.blocks[nb-1]
	b = binary.LittleEndian.AppendUint32(b, uint32(shared))
	l.blocks[nb-1] = binary.LittleEndian.AppendUint64(b, endAt)
	l.n++
}

// sharedAt and endAt return record k's numbers through cursor c. A block
// that cannot be read back reads as zeros, the error kept in l.err.
func (l *endList) sharedAt(c *endCursor, k int) int32 {
	if uint(k-c.base) >= endRecs {
		l.load(c, k)
	}
	return int32(binary.LittleEndian.Uint32(c.buf[(k-c.base)*endRecBytes:]))
}

func (l *endList) endAt(c *endCursor, k int) uint64 {
	if uint(k-c.base) >= endRecs {
		l.load(c, k)
	}
	return binary.LittleEndian.Uint64(c.buf[(k-c.base)*endRecBytes+4:])
}

// next returns the first record from k on, before n, whose shared is at
// most d (n: none), read through c a block at a time.
func (l *endList) next(c *endCursor, k, n int, d int32) int {
	for k < n {
		if uint(k-c.base) >= endRecs {
			l.load(c, k)
		}
		b := c.buf[(k-c.base)*endRecBytes:]
		m := min(n-k, len(b)/endRecBytes)
		for j := 0; j < m; j++ {
			if int32(binary.LittleEndian.Uint32(b[j*endRecBytes:])) <= d {
				return k + j
			}
		}
		k += m
	}
	return n
}

// load points c at the block of record k, reading it back if it was
// written out.
func (l *endList) load(c *endCursor, k int) {
	bi := k / endRecs
	c.base = bi * endRecs
	if b := l.blocks[bi]; b != nil {
		c.buf = b
		return
	}
	o := l.out[bi]
	if cap(c.own) < o.n {
		c.own = make([]byte, o.n)
	}
	c.buf = c.own[:o.n]
	if _, err := l.spill.f.ReadAt(c.buf, o.off); err != nil {
		if l.err == nil {
			l.err = fmt.Errorf("reading the timeline's events from a temporary file: %w", err)
		}
		clear(c.buf)
	}
}

// noBlock is an endCursor's base before it reads a block.
const noBlock = -endRecs
