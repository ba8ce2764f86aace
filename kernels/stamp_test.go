package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPTXStamps fails when a kernel source or a header it includes changed
// and its PTX, for either target, was not regenerated with
// hack/gen-kernels.sh (which needs nvcc, so CI cannot do it: it can only
// notice).
func TestPTXStamps(t *testing.T) {
	if _, err := os.Stat("kernels.go"); err != nil {
		// A compiled test binary run elsewhere (the GPU machine runs
		// them from the repository root) cannot see the sources.
		t.Skip("not running in the kernels package directory")
	}
	sources, err := filepath.Glob("*.cu")
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) == 0 {
		t.Fatal("no kernel sources found")
	}
	headers, err := filepath.Glob("*.cuh") // in byte order of the names, as gen-kernels.sh (LC_ALL=C)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range sources {
		module := strings.TrimSuffix(src, ".cu")
		t.Run(module, func(t *testing.T) {
			h := sha256.New()
			for _, f := range append([]string{src}, headers...) {
				text, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				h.Write(text)
			}
			want := hex.EncodeToString(h.Sum(nil))
			for _, target := range []Target{TargetHopper, TargetAmpere} {
				if strings.HasSuffix(module, "_sm100a") && target == TargetAmpere {
					continue
				}
				ptx, err := PTX(module, target)
				if err != nil {
					t.Fatalf("%s has no embedded %s PTX: run hack/gen-kernels.sh on a machine with nvcc", src, target)
				}
				if got := SourceHash(ptx); got != want {
					t.Errorf("%s PTX of %s was generated from source sha256 %q, %s and the headers are now %s: run hack/gen-kernels.sh", target, module, got, src, want)
				}
			}
		})
	}
	// Every embedded PTX must still have its source.
	for _, dir := range []string{".", "ptx80"} {
		entries, err := ptxFS.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			src := strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".gz"), ".ptx") + ".cu"
			if _, err := os.Stat(src); err != nil {
				t.Errorf("%s/%s has no source %s", dir, e.Name(), src)
			}
		}
	}
}

func TestTargetFor(t *testing.T) {
	cases := []struct {
		major, minor int
		want         Target
	}{
		{8, 0, TargetAmpere}, {8, 6, TargetAmpere}, {8, 9, TargetAmpere},
		{9, 0, TargetHopper}, {10, 0, TargetHopper}, {12, 0, TargetHopper},
	}
	for _, tc := range cases {
		if got, err := TargetFor(tc.major, tc.minor); err != nil || got != tc.want {
			t.Errorf("TargetFor(%d, %d) = %q, %v; want %q", tc.major, tc.minor, got, err, tc.want)
		}
	}
	if _, err := TargetFor(7, 5); err == nil {
		t.Error("TargetFor(7, 5) found a target; the kernels need 8.0")
	}
}
