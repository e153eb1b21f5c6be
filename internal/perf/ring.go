package perf

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring is the mmap'ed ring buffer of an event.
type Ring struct {
	Event  *Event
	mem    []byte
	meta   *unix.PerfEventMmapPage
	data   []byte
	peeked uint64   // where Peek stopped; Release gives the ring up to it back
	held   bool     // records were peeked and not released
	ends   []uint64 // where each record peeked since the last release ends
}

// MapRing maps a ring of pages data pages (a power of two) for e and sets the
// wake-up watermark to a quarter of it.
func MapRing(e *Event, pages int) (*Ring, error) {
	ps := os.Getpagesize()
	mem, err := unix.Mmap(e.FD, 0, (pages+1)*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping perf ring buffer (%d KiB) on cpu %d: %w (raise kernel.perf_event_mlock_kb or use a smaller buffer)", pages*ps/1024, e.CPU, err)
	}
	meta := (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
	off, size := meta.Data_offset, meta.Data_size
	if off == 0 { // kernels before 4.1 leave these zero
		off, size = uint64(ps), uint64(pages*ps)
	}
	return &Ring{Event: e, mem: mem, meta: meta, data: mem[off : off+size]}, nil
}

// MapRingAtMost maps the largest ring of at most pages data pages (a power
// of two), and at least minPages, that the locked-memory limits allow: an
// unprivileged user's rings are charged to kernel.perf_event_mlock_kb and
// then to RLIMIT_MEMLOCK, which large rings exceed. Other errors are
// returned at once.
func MapRingAtMost(e *Event, pages, minPages int) (*Ring, error) {
	for {
		r, err := MapRing(e, pages)
		if err == nil || pages/2 < minPages || !(errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM)) {
			return r, err
		}
		pages /= 2
	}
}

// Pages returns the ring's size in data pages.
func (r *Ring) Pages() int { return len(r.data) / os.Getpagesize() }

// Pending returns how many unread bytes are in the ring.
func (r *Ring) Pending() uint64 {
	head := atomic.LoadUint64(&r.meta.Data_head)
	return head - r.meta.Data_tail
}

// Peek appends every complete record in the ring that Peek has not
// returned yet to recs (header included), without copying it where it lies
// in one piece in the ring: the slice is then the ring's own memory, valid
// until Release. A record that wraps around the ring's end is copied to
// the end of buf. The kernel does not write over peeked records until
// Release gives their space back, so a reader that handles records soon
// after reading them need not copy them all first.
func (r *Ring) Peek(buf []byte, recs [][]byte) ([]byte, [][]byte) {
	head := atomic.LoadUint64(&r.meta.Data_head)
	tail := r.meta.Data_tail
	if r.held {
		tail = r.peeked
	}
	size := uint64(len(r.data))
	for tail+8 <= head {
		var hdr [8]byte
		copyRing(hdr[:], r.data, tail%size)
		n := uint64(uint16(hdr[6]) | uint16(hdr[7])<<8)
		if n < 8 || tail+n > head {
			break
		}
		if pos := tail % size; pos+n <= size {
			recs = append(recs, r.data[pos:pos+n:pos+n])
		} else {
			start := len(buf)
			buf = append(buf, make([]byte, n)...)
			copyRing(buf[start:], r.data, pos)
			recs = append(recs, buf[start:len(buf):len(buf)])
		}
		tail += n
		r.ends = append(r.ends, tail)
	}
	r.peeked, r.held = tail, true
	return buf, recs
}

// Release gives the space of the records Peek returned back to the
// kernel; their slices of the ring must not be used after.
func (r *Ring) Release() { r.ReleaseFirst(len(r.ends)) }

// ReleaseFirst gives the space of the first n records Peek returned since
// the last release back to the kernel, and leaves the others in the ring:
// the next Peek returns them again, with those written since. No slice of
// the ring Peek returned may be used after.
func (r *Ring) ReleaseFirst(n int) {
	if !r.held {
		return
	}
	if n > 0 {
		atomic.StoreUint64(&r.meta.Data_tail, r.ends[min(n, len(r.ends))-1])
	}
	r.ends, r.held = r.ends[:0], false
}

func copyRing(dst, ring []byte, pos uint64) {
	n := copy(dst, ring[pos:])
	if n < len(dst) {
		copy(dst[n:], ring)
	}
}

// Close unmaps the ring (the event is closed separately).
func (r *Ring) Close() error { return unix.Munmap(r.mem) }
