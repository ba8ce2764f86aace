// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// startHandoff runs a handoff's owner loop on its own OS-thread-locked
// goroutine, as Device does, and returns a function that closes it and
// waits for the loop to end.
func startHandoff(t *testing.T) (*handoff, func()) {
	t.Helper()
	h := newHandoff()
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		h.loop()
	}()
	return h, func() {
		h.close()
		<-done
	}
}

func TestHandoffRunsOnOwnerOneAtATime(t *testing.T) {
	h, stop := startHandoff(t)
	defer stop()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		running int
		total   int
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				err := h.do(func() error {
					mu.Lock()
					running++
					if running != 1 {
						mu.Unlock()
						return errors.New("two functions ran at once")
					}
					mu.Unlock()
					if i%50 == 0 {
						// Outlast both spin windows now and then, so that the
						// owner sleeps and the caller blocks.
						time.Sleep(200 * time.Microsecond)
					}
					mu.Lock()
					running--
					total++
					mu.Unlock()
					return nil
				})
				if err != nil {
					t.Errorf("goroutine %d call %d: %v", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if total != 8*200 {
		t.Errorf("%d functions ran, want %d", total, 8*200)
	}
}

func TestHandoffWakesSleepingOwner(t *testing.T) {
	h, stop := startHandoff(t)
	defer stop()
	for i := range 5 {
		time.Sleep(2 * ownerSpin) // the owner is asleep by now
		want := errors.New("from the owner")
		if err := h.do(func() error { return want }); err != want {
			t.Fatalf("call %d: %v, want the function's error", i, err)
		}
	}
}

func TestHandoffPanicAndClose(t *testing.T) {
	h, stop := startHandoff(t)
	err := h.do(func() error { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "panic on device thread: boom") {
		t.Errorf("panic: %v", err)
	}
	if err := h.do(func() error { return nil }); err != nil {
		t.Errorf("after a panic: %v", err)
	}
	stop()
	if err := h.do(func() error { t.Error("ran after close"); return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("after close: %v, want ErrClosed", err)
	}
	h.close() // twice is fine
}

// chanHandoff is the plain channel hand-off Device used before handoff
// (both sides park), kept here as the benchmarks' baseline.
type chanHandoff struct {
	work chan func()
	quit chan struct{}
}

func (h *chanHandoff) do(fn func() error) error {
	errc := make(chan error, 1)
	h.work <- func() { errc <- fn() }
	return <-errc
}

func startChanHandoff() (*chanHandoff, func()) {
	h := &chanHandoff{work: make(chan func()), quit: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		for {
			select {
			case fn := <-h.work:
				fn()
			case <-h.quit:
				return
			}
		}
	}()
	return h, func() { close(h.quit); <-done }
}

// BenchmarkHandoff measures one empty hand-off to a locked owner thread,
// back to back ("hot") and after the owner went idle ("idle": a 1 ms
// pause, not timed), for handoff and the channel baseline.
func BenchmarkHandoff(b *testing.B) {
	nop := func() error { return nil }
	h, stopH := startHandoff(&testing.T{})
	defer stopH()
	c, stopC := startChanHandoff()
	defer stopC()
	for _, v := range []struct {
		name string
		do   func(func() error) error
	}{{"spin", h.do}, {"channel", c.do}} {
		b.Run(v.name+"/hot", func(b *testing.B) {
			for b.Loop() {
				_ = v.do(nop)
			}
		})
		b.Run(v.name+"/idle", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				time.Sleep(time.Millisecond)
				b.StartTimer()
				_ = v.do(nop)
			}
		})
	}
}
