// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// handoff passes functions to one owner goroutine (a device's
// OS-thread-locked goroutine) and waits for them, one at a time.
//
// A channel hand-off parks both sides: the owner sleeps in its receive,
// the caller in its wait for the reply, and each wake-up of a parked
// thread is a futex round trip through the OS scheduler (about 18 µs per
// Device.Do on the H200 host's VM, more than the four kernel launches of
// a quantize step). So both sides spin for a short while first: the owner
// polls a one-job slot for ownerSpin after its last job before it sleeps,
// and the caller polls its job's completion for callerSpin before it
// blocks. Steps issued back to back then never reach the OS scheduler;
// an idle device costs nothing after ownerSpin, and its first call then
// pays the owner's wake-up (65 µs after an idle millisecond on the H200
// host's VM; 1.6-2.0 µs per call back to back, 17.8 µs with a plain
// channel hand-off).
type handoff struct {
	// mu admits one caller at a time (the slot holds one job) and guards
	// closed.
	mu     sync.Mutex
	closed bool
	slot   atomic.Pointer[hjob]
	// sleeping is set by the owner before it blocks on wake; a caller that
	// sees it after filling the slot sends a wake-up. Both sides store
	// then load (sequentially consistent atomics), so one of them always
	// sees the other: no lost wake-up.
	sleeping atomic.Bool
	wake     chan struct{}
	quit     chan struct{}
}

// Spin windows: long enough to cover the gap between the steps of a
// benchmark loop or a training step's quantizes, short enough that an idle
// agent burns no CPU to speak of.
const (
	ownerSpin  = 50 * time.Microsecond
	callerSpin = 100 * time.Microsecond
)

type hjob struct {
	fn   func()
	err  error
	done atomic.Bool
	// finished is closed after done is set, for a caller that stopped
	// spinning.
	finished chan struct{}
}

func newHandoff() *handoff {
	return &handoff{wake: make(chan struct{}, 1), quit: make(chan struct{})}
}

// do runs fn on the owner goroutine and returns when it has run. A panic
// in fn is returned as an error. It returns ErrClosed once close was
// called.
func (h *handoff) do(fn func() error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	j := &hjob{finished: make(chan struct{})}
	j.fn = func() { j.err = fn() }
	h.slot.Store(j)
	if h.sleeping.Load() {
		select {
		case h.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
		// The caller spins here too. Blocking instead (commit b132d9a)
		// was measured slower on the H200 host's VM after an idle
		// millisecond: 123.7 µs per call against 65.5 µs spinning, as
		// the parked caller needs one more idle thread woken to take it
		// off the owner's processor. Either way the first call after an
		// idle period pays the wake-up of the owner's parked OS thread.
	}
	deadline := time.Now().Add(callerSpin)
	for !j.done.Load() {
		if time.Now().After(deadline) {
			<-j.finished
			break
		}
		runtime.Gosched()
	}
	return j.err
}

// close makes later calls of do return ErrClosed and stops the owner loop
// (after the call in progress, if any).
func (h *handoff) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.quit)
	}
}

// loop runs the submitted functions until close; call it on the owner
// goroutine.
func (h *handoff) loop() {
	last := time.Now()
	for {
		if j := h.slot.Swap(nil); j != nil {
			last = h.run(j)
			continue
		}
		if time.Since(last) < ownerSpin {
			select {
			case <-h.quit:
				return
			default:
			}
			continue
		}
		h.sleeping.Store(true)
		if j := h.slot.Swap(nil); j != nil {
			h.sleeping.Store(false)
			last = h.run(j)
			continue
		}
		select {
		case <-h.wake:
		case <-h.quit:
			return
		}
		h.sleeping.Store(false)
		last = time.Now()
	}
}

// run runs j and returns the time it finished, when the owner's spin
// window starts.
func (h *handoff) run(j *hjob) time.Time {
	func() {
		defer func() {
			if p := recover(); p != nil {
				j.err = fmt.Errorf("cuda: panic on device thread: %v", p)
			}
		}()
		j.fn()
	}()
	j.done.Store(true)
	close(j.finished)
	return time.Now()
}
