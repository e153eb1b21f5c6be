package traceprog

import (
	"errors"
	"slices"
	"testing"

	"github.com/cilium/ebpf/link"
)

// fakeLink stands for a link attachSplit made.
type fakeLink struct {
	link.Link
	offs []uint64
}

func TestAttachSplitFindsRefusedProbes(t *testing.T) {
	bad := map[uint64]bool{7: true, 30: true}
	calls := 0
	try := func(offs, cookies []uint64) (link.Link, error) {
		calls++
		for _, o := range offs {
			if bad[o] {
				return nil, errors.New("operation not supported")
			}
		}
		return fakeLink{offs: slices.Clone(offs)}, nil
	}
	var offs, ids []uint64
	for i := uint64(0); i < 40; i++ {
		offs, ids = append(offs, i), append(ids, 100+i)
	}
	links, refused, err := attachSplit(offs, ids, try)
	if err == nil || !slices.Equal(refused, []uint64{107, 130}) {
		t.Fatalf("refused %v, err %v; want [107 130] and the error", refused, err)
	}
	var set []uint64
	for _, l := range links {
		set = append(set, l.(fakeLink).offs...)
	}
	slices.Sort(set)
	if len(set) != 38 || slices.Contains(set, 7) || slices.Contains(set, 30) {
		t.Errorf("attached %v", set)
	}
	// Without a refusal: one call.
	calls = 0
	if links, refused, err := attachSplit(offs[8:30], ids[8:30], try); err != nil || len(refused) != 0 || len(links) != 1 || calls != 1 {
		t.Errorf("clean set: %d links, refused %v, err %v, %d calls", len(links), refused, err, calls)
	}
}
