package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

// listSource is a 40-line C file: spin() declared at line 3, sampled at 5
// and 30, a blank line after its closing brace at 32.
func listSource() []string {
	src := make([]string, 40)
	for i := range src {
		src[i] = fmt.Sprintf("\tstmt_%d();", i+1)
	}
	src[0], src[1] = "#include <x.h>", "int other(void) { return 1; }"
	src[2] = "void spin(long n) {"
	src[31], src[32] = "}", ""
	return src
}

func TestListingText(t *testing.T) {
	ls := []profile.Listing{
		{Function: "spin", Object: "app", Path: "/usr/bin/app", Self: 60, Total: 80, Lines: []profile.LineCount{
			{File: "/src/spin.c", Line: 5, Self: 50, Total: 50},
			{File: "/src/spin.c", Line: 30, Self: 10, Total: 30},
			{File: "/gone/util.h", Line: 7, Self: 0, Total: 5},
		}, Addresses: []profile.AddrCount{{Offset: 0x1a2b, Self: 3, Total: 3}}},
		{Function: "ns::Foo<int>::bar", Object: "app", Self: 1, Total: 1},
	}
	read := func(file, object string) *SourceFile {
		if file == "/src/spin.c" && object == "/usr/bin/app" {
			return &SourceFile{Lines: listSource(), FoundAt: "/elsewhere/spin.c", Note: "modified after app was built"}
		}
		return nil
	}
	var buf bytes.Buffer
	if err := ListingText(&buf, ls, 200, read, nil, 1); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"ROUTINE spin in app: self 30.0% (60), total 40.0% (80) of 200 samples\n/src/spin.c\n(read from /elsewhere/spin.c)\n(modified after app was built)\n",
		"                     3  void spin(long n) {\n", // from the declaration
		"  25.0%   25.0%      5  \tstmt_5();\n",
		"                     8  \tstmt_8();\n                   ...\n                    27  \tstmt_27();\n", // folded between
		"   5.0%   15.0%     30  \tstmt_30();\n",
		"                    32  }\n/gone/util.h\n(source not found", // stops at the function's end
		"      .    2.5%      7  \n",
		"samples without line information, by address:\n  self%  total%  address\n   1.5%    1.5%  app+0x1a2b\n",
		"(1 more functions match, not shown",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "other(void)") || strings.Contains(out, "stmt_33") || strings.Contains(out, "stmt_12") {
		t.Errorf("listing shows lines outside the function or unfolded:\n%s", out)
	}

	buf.Reset()
	if err := ListingJSON(&buf, ls, 200, read, nil, JSONExtra{}); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Samples  int `json:"samples"`
		Listings []struct {
			Function     string `json:"function"`
			TotalSamples int    `json:"total_samples"`
			Files        []struct {
				File    string `json:"file"`
				FoundAt string `json:"found_at"`
				Lines   []struct {
					Line         int     `json:"line"`
					Source       *string `json:"source"`
					SelfSamples  int     `json:"self_samples"`
					TotalSamples int     `json:"total_samples"`
					Total        float64 `json:"total"`
				} `json:"lines"`
			} `json:"files"`
			Addresses []struct {
				Offset uint64 `json:"offset"`
			} `json:"addresses"`
		} `json:"listings"`
	}
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if j.Samples != 200 || len(j.Listings) != 2 || j.Listings[1].Function != "ns::Foo<int>::bar" {
		t.Fatalf("JSON listings: %+v", j)
	}
	f := j.Listings[0].Files
	if len(f) != 2 || f[0].FoundAt != "/elsewhere/spin.c" || f[1].FoundAt != "" || len(f[1].Lines) != 1 || f[1].Lines[0].Source != nil {
		t.Fatalf("JSON files: %+v", f)
	}
	var sampled int
	for _, l := range f[0].Lines {
		if l.Source == nil {
			t.Errorf("line %d has no source", l.Line)
		}
		if l.Line == 30 && (l.TotalSamples != 30 || l.SelfSamples != 10 || l.Total != 0.15) {
			t.Errorf("line 30: %+v", l)
		}
		sampled += l.TotalSamples
	}
	if sampled != 80 || j.Listings[0].Addresses[0].Offset != 0x1a2b {
		t.Errorf("JSON counts: sampled lines sum to %d, want 80; addresses %+v", sampled, j.Listings[0].Addresses)
	}

	// Kernel code is listed by address, not as an offset in a file.
	buf.Reset()
	k := []profile.Listing{{Function: "vfs_write", Object: "[kernel.kallsyms]", Path: "[kernel.kallsyms]", Self: 2, Total: 2,
		Addresses: []profile.AddrCount{{Offset: 0xffffffff816d5cd5, Self: 2, Total: 2}}}}
	if err := ListingText(&buf, k, 10, read, nil, 0); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "(kernel code: ") || !strings.Contains(out, "  20.0%   20.0%  0xffffffff816d5cd5\n") {
		t.Errorf("kernel listing:\n%s", out)
	}

	buf.Reset()
	if err := ListingText(&buf, nil, 0, read, nil, 0); err != nil || !strings.Contains(buf.String(), "no samples") {
		t.Errorf("empty listing: %v %q", err, buf.String())
	}
}
