// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"net"
	"strconv"
	"testing"
)

// FreeLocalAddr returns a loopback address ("127.0.0.1:port") whose port
// was free a moment ago, for a process the test starts to listen on.
func FreeLocalAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// FreeLocalPort is the port of a FreeLocalAddr.
func FreeLocalPort(t testing.TB) int {
	t.Helper()
	_, port, err := net.SplitHostPort(FreeLocalAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
