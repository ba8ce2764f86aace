// Command pause is the local cluster's pod sandbox process, built here so that
// nothing is pulled: it holds the pod's namespaces, reaps the zombies of
// containers that share its PID namespace, and exits 0 on SIGINT or SIGTERM,
// as the upstream pause container does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child; several may end for one SIGCHLD.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
