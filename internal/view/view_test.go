package view

import (
	"testing"
	"time"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		key      string
		from, to time.Duration
	}{
		{"", 0, 0},
		{"0ms-20ms", 0, 20 * time.Millisecond},
		{"1.5s-2s", 1500 * time.Millisecond, 2 * time.Second},
	} {
		from, to, err := parseRange(c.key)
		if err != nil || from != c.from || to != c.to {
			t.Errorf("parseRange(%q) = %v, %v, %v; want %v, %v", c.key, from, to, err, c.from, c.to)
		}
	}
	for _, key := range []string{"all", "2s-1s", "1s-1s", "-1s-2s", "1s", "1s-", "../etc", "1s-2s-3s", "1-2"} {
		if _, _, err := parseRange(key); err == nil {
			t.Errorf("parseRange(%q) accepted", key)
		}
	}
}
