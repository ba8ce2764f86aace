package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPTXStamps fails when a kernel source changed and its PTX was not
// regenerated with hack/gen-kernels.sh (which needs nvcc, so CI cannot do
// it: it can only notice).
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
	for _, src := range sources {
		module := strings.TrimSuffix(src, ".cu")
		t.Run(module, func(t *testing.T) {
			text, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(text)
			want := hex.EncodeToString(sum[:])
			ptx, err := ptxFS.ReadFile(module + ".ptx")
			if err != nil {
				t.Fatalf("%s has no embedded %s.ptx: run hack/gen-kernels.sh on a machine with nvcc", src, module)
			}
			if got := SourceHash(ptx); got != want {
				t.Errorf("%s.ptx was generated from source sha256 %q, %s is now %s: run hack/gen-kernels.sh", module, got, src, want)
			}
		})
	}
	// Every embedded PTX must still have its source.
	entries, err := ptxFS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		src := strings.TrimSuffix(e.Name(), ".ptx") + ".cu"
		if _, err := os.Stat(src); err != nil {
			t.Errorf("%s has no source %s", e.Name(), src)
		}
	}
}
