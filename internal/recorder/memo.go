package recorder

import (
	"slices"

	"github.com/culprit-dev/culprit/internal/bpfasm"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Chains memoized (bpfasm.Memos). Once an event's copy, or that of a
// CPU sample taken in the kernel (whose user registers are those of the
// thread's entry into it, a system call's), unwinds complete, the
// thread's entries, switches and CPU samples at the same user IP and SP
// get a memo: the words of the stack the chain depended on
// (unwind.Deps), and the chain, kept here under the memo's id. The
// programs then write such an event without a copy when the words hold
// their values, and the chain is the memo's: a server worker that enters
// sendmsg from the same place a thousand times a second costs a few reads
// of 8 bytes each, where it cost a copy of up to 24 KiB, its trip
// through the ring and its unwind. One use of a memo in 64 comes with its
// copy, one in 1,024 past its first 1,024 (bpfasm.MemoSteady): its unwind
// is compared with the memo's chain where its copy holds the memo's words
// (memoStats.checked; a difference, mismatched, drops the memo, and the
// tests require none).
//
// A thread keeps at most memosPerThread memos. Where its events come
// from more places than that, the places that repeat must win them, not
// those that came first: otherwise a server's worker whose first events
// came from places seen once (a preemption in its own code, a start-up
// path) keeps copying at its thousands of switches a second in
// epoll_wait, sendmsg and read. So a place refused for want of room is
// counted, and from its second refusal on it takes the room of the
// thread's memo used least, when that one was used fewer times than the
// place was refused. A memo whose words no longer hold is replaced at
// most memoSets times (then left: the thread's stack there changes too
// often for a memo to pay). A thread's exit or exec forgets its memos; an
// object unmapped and another mapped at the same addresses while the
// thread lives, with the same return addresses on its stack, is not
// followed.

const (
	memosPerThread = 16
	memoSets       = 8
	// maxRefused bounds the places counted for want of room (all
	// threads'); the count starts over when it is reached.
	maxRefused = 1 << 12
	// maxRetired bounds the chains kept of evicted memos (under every id
	// each had): records still in the ring may name them, read within a
	// drain or two; beyond the bound the oldest are let go.
	maxRetired = 1 << 12
)

type memoKey struct {
	tid    uint32
	ip, sp uint64
}

type memoEntry struct {
	id     uint32
	hits   uint64 // uses of its chains
	usedBP bool
	bp     uint64
	words  []unwind.Word
	user   []uint64
	sets   int
	ids    []uint32 // every id it had
	// dropped: an unwind differed from its chain; no memo there again
	dropped bool
}

// memoChain is a memo's chain, under its id.
type memoChain struct {
	user []uint64
	e    *memoEntry
}

type memoStats struct {
	hits, checked, mismatched, set, evicted uint64
}

type memos struct {
	ms        *bpfasm.Memos // the programs'
	byKey     map[memoKey]*memoEntry
	chains    map[uint32]memoChain // by id, the old ones too: records in flight name them
	perThread map[uint32][]memoKey
	refused   map[memoKey]uint64 // places refused for want of room, and how often
	retired   []uint32           // ids given up, oldest first (maxRetired)
	stats     memoStats
	deps      unwind.Deps // reused
}

func newMemos(ms *bpfasm.Memos) *memos {
	return &memos{ms: ms, byKey: map[memoKey]*memoEntry{}, chains: map[uint32]memoChain{}, perThread: map[uint32][]memoKey{},
		refused: map[memoKey]uint64{}}
}

// chain returns the chain of memo id.
func (m *memos) chain(id uint32) ([]uint64, bool) {
	c, ok := m.chains[id]
	if ok {
		m.stats.hits++
		c.e.hits++
	}
	return c.user, ok
}

// retire gives up ids, keeping their chains for the records in flight
// (at most maxRetired of them).
func (m *memos) retire(ids ...uint32) {
	m.retired = append(m.retired, ids...)
	if n := len(m.retired) - maxRetired; n > 0 {
		for _, id := range m.retired[:n] {
			delete(m.chains, id)
		}
		m.retired = append(m.retired[:0], m.retired[n:]...)
	}
}

// room makes room for a memo at k in thread k.tid's full set (see the
// package doc above): it says whether it evicted one.
func (m *memos) room(k memoKey) bool {
	if len(m.refused) >= maxRefused {
		clear(m.refused)
	}
	m.refused[k]++
	r := m.refused[k]
	if r < 2 {
		return false
	}
	keys := m.perThread[k.tid]
	victim := -1
	for i, vk := range keys {
		v := m.byKey[vk]
		if v.dropped || v.hits >= r {
			continue
		}
		if victim < 0 || v.hits < m.byKey[keys[victim]].hits {
			victim = i
		}
	}
	if victim < 0 {
		return false
	}
	vk := keys[victim]
	v := m.byKey[vk]
	m.ms.Forget(vk.tid, vk.ip, vk.sp)
	m.retire(v.ids...)
	delete(m.byKey, vk)
	m.perThread[k.tid] = slices.Delete(keys, victim, victim+1)
	delete(m.refused, k)
	m.stats.evicted++
	return true
}

// holds says whether the copy stack (from sp) holds e's words, and bp
// is e's where it used BP.
func (e *memoEntry) holds(sp, bp uint64, stack []byte) bool {
	if e.usedBP && e.bp != bp {
		return false
	}
	for _, w := range e.words {
		off := w.Addr - sp
		if w.Addr < sp || off+8 > uint64(len(stack)) {
			return false
		}
		if le64(stack[off:]) != w.Val {
			return false
		}
	}
	return true
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// learnMemo takes the complete unwind of an event of thread tid at ip, sp
// and bp (its copy stack; user its chain, deps what it depended on):
// compares it with the memo there when the copy holds its words, else
// gives the programs a memo.
func (s *session) learnMemo(tid uint32, ip, sp, bp uint64, stack []byte, user []uint64, deps *unwind.Deps) {
	m := s.memos
	if m == nil || m.ms == nil {
		return
	}
	k := memoKey{tid, ip, sp}
	e := m.byKey[k]
	if e != nil && e.dropped {
		return
	}
	if e != nil && e.holds(sp, bp, stack) {
		m.stats.checked++
		if !slices.Equal(e.user, user) {
			m.stats.mismatched++
			m.ms.Forget(tid, ip, sp)
			e.dropped = true
		}
		return
	}
	if deps.Unsure || len(deps.Words) > bpfasm.MemoWords {
		return
	}
	if e != nil && e.sets >= memoSets {
		return
	}
	if e == nil && len(m.perThread[tid]) >= memosPerThread && !m.room(k) {
		return
	}
	id, err := m.ms.Set(tid, ip, sp, bp, deps)
	if err != nil || id == 0 {
		return
	}
	m.stats.set++
	user = slices.Clone(user)
	if e == nil {
		e = &memoEntry{}
		m.byKey[k] = e
		m.perThread[tid] = append(m.perThread[tid], k)
	}
	m.chains[id] = memoChain{user: user, e: e}
	e.id, e.usedBP, e.bp, e.user = id, deps.UsedBP, bp, user
	e.ids = append(e.ids, id)
	e.words = append(e.words[:0], deps.Words...)
	e.sets++
}

// forgetMemos drops the memos of thread tid (it exited: another may take
// its id).
func (s *session) forgetMemos(tid uint32) {
	m := s.memos
	if m == nil || m.ms == nil {
		return
	}
	for _, k := range m.perThread[tid] {
		m.ms.Forget(k.tid, k.ip, k.sp)
		if e := m.byKey[k]; e != nil {
			for _, id := range e.ids {
				delete(m.chains, id)
			}
		}
		delete(m.byKey, k)
	}
	delete(m.perThread, tid)
}

// memoMap returns the programs' memos, made at the first call (nil when
// the map cannot be made: the programs then copy as before).
func (s *session) memoMap() *bpfasm.Memos {
	if s.memos == nil {
		ms, err := bpfasm.NewMemos()
		if err != nil {
			return nil
		}
		s.memos = newMemos(ms)
	}
	return s.memos.ms
}

// closeMemos frees the memos' map, once the programs are closed.
func (s *session) closeMemos() {
	if s.memos != nil {
		s.memos.ms.Close()
		s.memos.ms = nil
	}
}
