// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// stage is what the image builder takes from a Dockerfile's final stage: the
// Dockerfile is the one source of the image's user, entrypoint, environment
// and binary path, so that `make images` and `docker build` cannot drift apart.
type stage struct {
	// From is the final stage's base image.
	From string
	// Binary is where the final `COPY --from=<stage>` puts the binary.
	Binary string
	// Env holds ENV assignments in order, as KEY=VALUE.
	Env []string
	// User is the USER instruction's value.
	User string
	// Entrypoint is the exec form of ENTRYPOINT.
	Entrypoint []string
	// WorkingDir is WORKDIR's value in the final stage, if any.
	WorkingDir string
	// runs counts RUN instructions: a final stage may have none, since this
	// builder runs no commands.
	runs int
}

// parseFinalStage reads a Dockerfile and returns its last stage. It knows the
// instructions kquant's Dockerfiles use in a final stage (FROM, COPY --from,
// ENV, USER, ENTRYPOINT in exec form, WORKDIR, ARG, LABEL) and refuses any
// other there, so that a new instruction is noticed instead of silently
// missing from the images built here.
func parseFinalStage(r io.Reader) (*stage, error) {
	var st *stage
	lines, err := logicalLines(r)
	if err != nil {
		return nil, err
	}
	for _, line := range lines {
		word, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		instr := strings.ToUpper(word)
		if instr == "FROM" {
			from, _, _ := strings.Cut(rest, " ")
			st = &stage{From: from}
			continue
		}
		if st == nil {
			if instr == "ARG" {
				continue
			}
			return nil, fmt.Errorf("instruction %s before the first FROM", instr)
		}
		switch instr {
		case "ARG", "LABEL":
			// Neither changes what the image does when it runs.
		case "RUN":
			st.runs++
		case "WORKDIR":
			st.WorkingDir = rest
		case "COPY":
			fields := strings.Fields(rest)
			if len(fields) == 3 && strings.HasPrefix(fields[0], "--from=") {
				st.Binary = fields[2]
			}
		case "ENV":
			env, err := parseEnv(rest)
			if err != nil {
				return nil, fmt.Errorf("ENV %s: %w", rest, err)
			}
			st.Env = append(st.Env, env...)
		case "USER":
			st.User = rest
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &st.Entrypoint); err != nil {
				return nil, fmt.Errorf("ENTRYPOINT must be in exec (JSON) form: %w", err)
			}
		default:
			return nil, fmt.Errorf("instruction %s in a stage: the image builder does not know it", instr)
		}
	}
	if st == nil {
		return nil, fmt.Errorf("no FROM")
	}
	if st.runs > 0 {
		return nil, fmt.Errorf("RUN in the final stage: the image builder runs no commands")
	}
	if st.Binary == "" || len(st.Entrypoint) == 0 {
		return nil, fmt.Errorf("the final stage needs a COPY --from=<stage> <src> <dst> and an ENTRYPOINT")
	}
	return st, nil
}

// logicalLines joins continuation lines and drops comments and blanks.
func logicalLines(r io.Reader) ([]string, error) {
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, strings.Join(strings.Fields(cur.String()), " "))
		cur.Reset()
	}
	return out, sc.Err()
}

// parseEnv reads `KEY=VALUE [KEY=VALUE...]` (values without spaces) or the
// legacy `KEY VALUE` form.
func parseEnv(s string) ([]string, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty")
	}
	if !strings.Contains(fields[0], "=") {
		return []string{fields[0] + "=" + strings.Join(fields[1:], " ")}, nil
	}
	for _, f := range fields {
		if !strings.Contains(f, "=") {
			return nil, fmt.Errorf("%q is not KEY=VALUE", f)
		}
	}
	return fields, nil
}
