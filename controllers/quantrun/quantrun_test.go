package quantrun

import (
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	cases := map[string]struct {
		job           string
		slot, attempt int
		want          string
	}{
		"short name":    {job: "bench", slot: 3, attempt: 1, want: "bench-3-1"},
		"first attempt": {job: "bench", slot: 0, attempt: 0, want: "bench-0-0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Name(tc.job, tc.slot, tc.attempt); got != tc.want {
				t.Errorf("Name() = %q, want %q", got, tc.want)
			}
		})
	}
	long := strings.Repeat("a", 260)
	a, b := Name(long, 1, 0), Name(long+"b", 1, 0)
	if len(a) > maxNameLength || !strings.HasSuffix(a, "-1-0") || a == b {
		t.Errorf("Name(long) = %q (len %d), Name(long+b) = %q: want <= 253, suffix -1-0, distinct", a, len(a), b)
	}
	if v := JobLabelValue(long); len(v) > 63 {
		t.Errorf("JobLabelValue(long) has %d characters, want <= 63", len(v))
	}
}
