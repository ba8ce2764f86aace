//go:build !kquant_nocode

package kernels

import "embed"

// codeFS is the generated code: the PTX of both targets and the cubins.
//
//go:embed *.ptx ptx80/*.ptx.gz sass/*/*.cubin.gz
var codeFS embed.FS
