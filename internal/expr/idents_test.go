package expr

import (
	"strings"
	"testing"
)

func TestIdents(t *testing.T) {
	n, err := Parse("list->head->len + cfg.limits[i] * n - list->n")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(Idents(n), ","); got != "list,cfg,i,n" {
		t.Errorf("Idents = %s, want list,cfg,i,n", got)
	}
}
