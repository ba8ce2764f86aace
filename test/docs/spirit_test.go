// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"strings"
	"testing"
)

func TestAlike(t *testing.T) {
	const docsTable = `NAME                  RECIPE   PHASE       WAITING-GPU   PASSED   GB/S    AGE
validation-quantize   mxfp8    Succeeded   0             Pass     810.5   1s
`
	tests := []struct {
		name    string
		want    string
		got     string
		wantErr string
	}{{
		name: "measured numbers and ages differ, columns move and grow",
		want: docsTable,
		got: `NAME                  RECIPE   MODE         PHASE       WAITING-GPU   PASSED   GB/S   AGE
other                 fp8      Benchmark    Running     2                      1.5    3m
validation-quantize   mxfp8    Validation   Succeeded   0             Pass     12     2m10s
`,
	}, {
		name:    "a column renamed",
		want:    docsTable,
		got:     "NAME                  RECIPE   PHASE       WAITING-GPU   PASSED   GBPS    AGE\nvalidation-quantize   mxfp8    Succeeded   0             Pass     810.5   1s\n",
		wantErr: "the table has no column GB/S",
	}, {
		name:    "a value changed",
		want:    docsTable,
		got:     "NAME                  RECIPE   PHASE       WAITING-GPU   PASSED   GB/S    AGE\nvalidation-quantize   mxfp8    Succeeded   0             Fail     810.5   1s\n",
		wantErr: `column PASSED: the docs show "Pass", the command printed "Fail"`,
	}, {
		name:    "an empty cell where the docs show a number",
		want:    docsTable,
		got:     "NAME                  RECIPE   PHASE       WAITING-GPU   PASSED   GB/S    AGE\nvalidation-quantize   mxfp8    Succeeded                 Pass     810.5   1s\n",
		wantErr: `column WAITING-GPU: the docs show "0", the command printed ""`,
	}, {
		name: "a cell the docs cut short",
		want: "NAME    KEY\nmxfp8   MXFP8BlockScaling/E4M3;scaleRounding=TE;...\n",
		got:  "NAME    KEY\nmxfp8   MXFP8BlockScaling/E4M3;scaleRounding=TE;twoDimensionalWeights=false\n",
	}, {
		name:    "a cell cut short that starts otherwise",
		want:    "NAME    KEY\nmxfp8   MXFP8BlockScaling/E4M3;scaleRounding=OCP;...\n",
		got:     "NAME    KEY\nmxfp8   MXFP8BlockScaling/E4M3;scaleRounding=TE;twoDimensionalWeights=false\n",
		wantErr: "column KEY",
	}, {
		name:    "a row missing",
		want:    docsTable,
		got:     "NAME    RECIPE   PHASE       WAITING-GPU   PASSED   GB/S    AGE\nother   mxfp8    Succeeded   0             Pass     810.5   1s\n",
		wantErr: `no row with NAME "validation-quantize"`,
	}, {
		name: "two tables, one per kind",
		want: "NAME   PHASE\nqj/a   Succeeded\n\nNAME     VERDICT\nqrun/b   Pass\n",
		got:  "NAME   PHASE\nqj/a   Succeeded\n\nNAME     VERDICT   AGE\nqrun/b   Pass      3s\n",
	}, {
		name: "a message with other numbers",
		want: "0/2 nodes: 1 have no Hopper GPU, 1 lack native MXFP8 (compute capability 9.0 < 10.0)\n",
		got:  "0/3 nodes: 2 have no Hopper GPU, 1 lack native MXFP8 (compute capability 9.0 < 10.0)",
	}, {
		name:    "a message with other words",
		want:    "0/2 nodes: 1 have no Hopper GPU\n",
		got:     "0/2 nodes: 2 do not match nodeSelector",
		wantErr: `no line like "0/2 nodes: 1 have no Hopper GPU"`,
	}, {
		name: "an ellipsis stands for any words",
		want: "The QuantRecipe \"bad\" is invalid: ... use E4M3 or HYBRID\n",
		got:  "The QuantRecipe \"bad\" is invalid: spec.format: Invalid value: \"E5M2\": not supported; use E4M3 or HYBRID\n",
	}, {
		name: "lines in order among others, whitespace aside",
		want: "a   b\nc\n",
		got:  "warning: x\na b\nd\n  c  \n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Alike(tt.want, tt.got)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Alike: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Alike error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
