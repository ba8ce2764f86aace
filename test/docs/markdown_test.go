// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseBlocks(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    []Block
		wantErr string
	}{{
		name: "blocks with their info strings and lines",
		doc:  "# t\n\n```sh\nmake demo\n```\n\ntext\n```console\n$ kubectl get qj\nNAME\n```\n",
		want: []Block{
			{File: "d.md", Line: 3, Info: "sh", Text: "make demo"},
			{File: "d.md", Line: 8, Info: "console", Text: "$ kubectl get qj\nNAME"},
		},
	}, {
		name: "a skip marker right before the fence",
		doc:  "<!-- docs-test: skip: needs a GPU node -->\n```sh\nnvidia-smi\n```\n",
		want: []Block{{File: "d.md", Line: 2, Info: "sh", Text: "nvidia-smi", Skip: "needs a GPU node"}},
	}, {
		name: "a longer fence holds a shorter one",
		doc:  "````md\n```sh\nx\n```\n````\n",
		want: []Block{{File: "d.md", Line: 1, Info: "md", Text: "```sh\nx\n```"}},
	}, {
		name: "an indented marker is an example, not a marker",
		doc:  "    <!-- docs-test: skip: needs a GPU node -->\n\n```sh\nx\n```\n",
		want: []Block{{File: "d.md", Line: 3, Info: "sh", Text: "x"}},
	}, {
		name:    "a marker without a reason",
		doc:     "<!-- docs-test: skip -->\n```sh\nx\n```\n",
		wantErr: `d.md:1: docs-test marker "skip": want "skip: <reason>"`,
	}, {
		name:    "a misspelt marker",
		doc:     "<!-- docs-test: skipp: gpu -->\n```sh\nx\n```\n",
		wantErr: `want "skip: <reason>"`,
	}, {
		name:    "a marker away from its fence",
		doc:     "<!-- docs-test: skip: gpu -->\n\n```sh\nx\n```\n",
		wantErr: "d.md:1: docs-test marker not followed by a code fence",
	}, {
		name:    "an unclosed block",
		doc:     "```sh\nx\n",
		wantErr: "d.md:1: code block never closed",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBlocks("d.md", strings.NewReader(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBlockKinds(t *testing.T) {
	tests := []struct {
		block                     Block
		wantShell, wantTranscript bool
	}{
		{Block{Info: "sh", Text: "make demo"}, true, false},
		{Block{Info: "bash", Text: "make demo"}, true, false},
		{Block{Info: "console", Text: "$ kubectl get qj"}, true, true},
		{Block{Info: "text", Text: "$ helm upgrade"}, true, true},
		{Block{Info: "yaml", Text: "kind: QuantJob"}, false, false},
		{Block{Info: "", Text: "0/2 nodes: 1 have no Hopper GPU"}, false, false},
	}
	for _, tt := range tests {
		if got := tt.block.Shell(); got != tt.wantShell {
			t.Errorf("%+v: Shell() = %v, want %v", tt.block, got, tt.wantShell)
		}
		if got := tt.block.Transcript(); got != tt.wantTranscript {
			t.Errorf("%+v: Transcript() = %v, want %v", tt.block, got, tt.wantTranscript)
		}
	}
}

func TestParseTranscript(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    []Step
		wantErr string
	}{{
		name: "commands and their output",
		text: "$ kubectl get qj\nNAME   PHASE\nj      Succeeded\n$ kubectl get qr\nNAME",
		want: []Step{
			{Command: "kubectl get qj", Want: "NAME   PHASE\nj      Succeeded\n"},
			{Command: "kubectl get qr", Want: "NAME\n"},
		},
	}, {
		name: "a here-document belongs to its command",
		text: "$ kubectl apply -f - <<EOF\nkind: QuantRecipe\nEOF\nThe QuantRecipe \"bad\" is invalid",
		want: []Step{{Command: "kubectl apply -f - <<EOF\nkind: QuantRecipe\nEOF", Want: "The QuantRecipe \"bad\" is invalid\n"}},
	}, {
		name: "continued lines",
		text: "$ kubectl get qj \\\n  -o wide\nNAME",
		want: []Step{{Command: "kubectl get qj \\\n  -o wide", Want: "NAME\n"}},
	}, {
		name:    "output before any command",
		text:    "NAME\n$ kubectl get qj",
		wantErr: `line 1: output before the first "$ " command`,
	}, {
		name:    "an unterminated here-document",
		text:    "$ cat <<EOF\nx",
		wantErr: "here-document EOF never ends",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTranscript(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}
