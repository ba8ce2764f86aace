package kernels

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

//go:embed *.ptx
var ptxFS embed.FS

// StampPrefix starts the first line of every generated PTX file; the sha256
// of the source follows it.
const StampPrefix = "// kquant-source-sha256: "

// Module names (the .cu file each PTX came from, without extension).
const (
	// ModuleQuantize holds the quantize, scale and dequantize kernels.
	ModuleQuantize = "quantize"
)

// PTXDirEnv, when set, names a directory whose <module>.ptx files are used
// instead of the embedded ones: for trying freshly generated PTX on a GPU
// machine without rebuilding.
const PTXDirEnv = "KQUANT_PTX_DIR"

// PTX returns the PTX text of a module.
func PTX(module string) ([]byte, error) {
	if dir := os.Getenv(PTXDirEnv); dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, module+".ptx"))
		if err != nil {
			return nil, fmt.Errorf("reading PTX of %s from %s: %w", module, PTXDirEnv, err)
		}
		return b, nil
	}
	b, err := ptxFS.ReadFile(module + ".ptx")
	if err != nil {
		return nil, fmt.Errorf("no embedded PTX for module %q: %w", module, err)
	}
	return b, nil
}

// SourceHash returns the source sha256 stamped on a PTX text, or "" if the
// text has no stamp.
func SourceHash(ptx []byte) string {
	line, _, _ := bufio.NewReader(bytes.NewReader(ptx)).ReadLine()
	s := string(line)
	if !strings.HasPrefix(s, StampPrefix) {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(s, StampPrefix))
}
