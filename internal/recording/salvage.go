package recording

import (
	"fmt"
	"strings"
)

// Salvage reports what a Reader made of a recording so far.
type Salvage struct {
	Records        int64 // records returned by Next
	Unknown        int64 // well-formed records of kinds this version does not know, skipped
	Bytes          int64 // bytes of the file consumed, header and skipped bytes included
	SkippedBytes   int64 // bytes skipped as damaged
	DamagedRegions int   // separate damaged regions skipped
	IncompleteTail bool  // the data ends in the middle of a record
	TailBytes      int64 // bytes of that incomplete last record
	End            bool  // an End record was read: the recorder finished cleanly
}

// Salvage reports what has been read so far. A damaged region that reaches
// the end of the data read so far is counted as if it ended there.
func (r *Reader) Salvage() Salvage {
	s := Salvage{
		Records:        r.records,
		Unknown:        r.unknown,
		Bytes:          r.pos,
		SkippedBytes:   r.skipped,
		DamagedRegions: r.regions,
		IncompleteTail: r.tail,
		End:            r.sawEnd,
	}
	if r.resync && r.pos > r.dstart {
		s.SkippedBytes += r.pos - r.dstart
		s.DamagedRegions++
	}
	if r.tail {
		s.TailBytes = r.off + int64(len(r.buf)) - r.pendTail
	}
	return s
}

// Intact reports whether nothing was skipped and the data ends on a record
// boundary. It says nothing about whether an End record was seen.
func (s Salvage) Intact() bool { return s.SkippedBytes == 0 && !s.IncompleteTail }

// String summarizes the salvage in one line for a human, e.g. "salvaged 1234
// records; skipped 57 damaged bytes in 1 place; file ends mid-record (recorder
// killed or still writing)". It is "" when the data is intact.
func (s Salvage) String() string {
	if s.Intact() {
		return ""
	}
	parts := []string{"salvaged " + plural(s.Records, "record", "records")}
	if s.SkippedBytes > 0 {
		parts = append(parts, fmt.Sprintf("skipped %s in %s",
			plural(s.SkippedBytes, "damaged byte", "damaged bytes"),
			plural(int64(s.DamagedRegions), "place", "places")))
	}
	if s.IncompleteTail {
		if s.End {
			parts = append(parts, fmt.Sprintf("ignored %s of an incomplete record after the end record", plural(s.TailBytes, "byte", "bytes")))
		} else {
			parts = append(parts, "file ends mid-record (recorder killed or still writing)")
		}
	}
	return strings.Join(parts, "; ")
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
