// Command kquantctl runs kquant's quantization engine without a cluster: on the
// local GPU or on the pure-Go reference backend.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	a := newApp(os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
	code := a.main(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
