// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepositoryDockerfiles parses the Dockerfiles `make images` builds from:
// the run-time image they describe is the one the images must have.
func TestRepositoryDockerfiles(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, tc := range []struct {
		file, wantFrom, wantBinary, wantUser string
		wantEnv                              []string
	}{
		{file: "Dockerfile.manager", wantFrom: "gcr.io/distroless/static-debian12:nonroot", wantBinary: "/manager", wantUser: "65532:65532"},
		{file: "Dockerfile.agent", wantFrom: "gcr.io/distroless/base-debian12:nonroot", wantBinary: "/agent", wantUser: "65532:65532",
			wantEnv: []string{"NVIDIA_DRIVER_CAPABILITIES=compute,utility"}},
		{file: "hack/pause/Dockerfile", wantFrom: "gcr.io/distroless/static-debian12:nonroot", wantBinary: "/pause", wantUser: "65535:65535"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(root, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, err := parseFinalStage(f)
			if err != nil {
				t.Fatal(err)
			}
			if st.From != tc.wantFrom || st.Binary != tc.wantBinary || st.User != tc.wantUser {
				t.Errorf("final stage FROM %q, binary %q, user %q; want %q, %q, %q", st.From, st.Binary, st.User, tc.wantFrom, tc.wantBinary, tc.wantUser)
			}
			if !slices.Equal(st.Entrypoint, []string{tc.wantBinary}) {
				t.Errorf("entrypoint %q, want [%s]", st.Entrypoint, tc.wantBinary)
			}
			for _, e := range tc.wantEnv {
				if !slices.Contains(st.Env, e) {
					t.Errorf("env %q lacks %s", st.Env, e)
				}
			}
		})
	}
}

func TestParseFinalStageRefuses(t *testing.T) {
	for name, dockerfile := range map[string]string{
		"RUN in the final stage": "FROM a AS build\nRUN true\nFROM b\nCOPY --from=build /x /x\nRUN chmod 1 /x\nENTRYPOINT [\"/x\"]\n",
		"unknown instruction":    "FROM b\nCOPY --from=build /x /x\nVOLUME /data\nENTRYPOINT [\"/x\"]\n",
		"shell-form entrypoint":  "FROM b\nCOPY --from=build /x /x\nENTRYPOINT /x\n",
		"no binary":              "FROM b\nENTRYPOINT [\"/x\"]\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseFinalStage(strings.NewReader(dockerfile)); err == nil {
				t.Error("parsed; want an error")
			}
		})
	}
}

func TestParseEnvForms(t *testing.T) {
	st, err := parseFinalStage(strings.NewReader("FROM b\nENV A=1 B=2\nENV C three\nCOPY --from=x /a /a\nENTRYPOINT [\"/a\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A=1", "B=2", "C=three"}; !slices.Equal(st.Env, want) {
		t.Errorf("env %q, want %q", st.Env, want)
	}
}

func TestMergeEnv(t *testing.T) {
	got := mergeEnv([]string{"PATH=/bin", "SSL_CERT_FILE=/a"}, []string{"SSL_CERT_FILE=/b", "A=1"})
	if want := []string{"PATH=/bin", "SSL_CERT_FILE=/b", "A=1"}; !slices.Equal(got, want) {
		t.Errorf("mergeEnv = %q, want %q", got, want)
	}
}
