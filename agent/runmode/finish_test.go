// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runmode_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kquant/kquant/agent/runmode"
	"github.com/kquant/kquant/api/v1alpha1"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
	"github.com/kquant/kquant/internal/runoutcome"
)

// connectionRefused is the error client-go returns while nothing listens on
// the API server's address (a restart, a failover).
func connectionRefused() error {
	return &url.Error{Op: "Patch", URL: "https://kube-apiserver:6443/apis/kquant.dev/v1alpha1/quantruns",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
}

// failingFinal is a client whose first failures writes of a run's end
// (a status apply of phase Succeeded or Failed) fail with fail() before
// reaching the API server behind it; failures < 0 fails them all.
type failingFinal struct {
	mu       sync.Mutex
	failures int
	fail     func() error
	tries    int
}

func (f *failingFinal) client(c client.WithWatch) client.Client {
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if run, ok := obj.(*ac.QuantRunApplyConfiguration); ok && run.Status != nil && run.Status.Phase != nil && run.Status.Phase.IsTerminal() {
				f.mu.Lock()
				f.tries++
				fail := f.failures < 0 || f.tries <= f.failures
				f.mu.Unlock()
				if fail {
					return f.fail()
				}
			}
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}

func TestFinalWriteRetriesUntilItLands(t *testing.T) {
	conflict := func() error {
		return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "quantruns"}, "run-1", errors.New("the object has been modified"))
	}
	forbidden := func() error {
		return apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "quantruns"}, "run-1", errors.New("the run finished"))
	}
	tests := []struct {
		name     string
		failures int
		fail     func() error
		// wantTries is how many final writes are made; 0 skips the count.
		wantTries int
		wantPhase v1alpha1.RunPhase
		wantErr   error
	}{
		{name: "connection refused 5 times", failures: 5, fail: connectionRefused, wantTries: 6, wantPhase: v1alpha1.RunPhaseSucceeded},
		{name: "conflicts", failures: 3, fail: conflict, wantTries: 4, wantPhase: v1alpha1.RunPhaseSucceeded},
		{name: "forbidden is final", failures: 1, fail: forbidden, wantTries: 1, wantPhase: v1alpha1.RunPhaseRunning, wantErr: errForbidden},
		{name: "refused past the time limit", failures: -1, fail: connectionRefused, wantPhase: v1alpha1.RunPhaseRunning, wantErr: syscall.ECONNREFUSED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "H100:1", func(run *v1alpha1.QuantRun) {
				run.Spec.Execution.RunTimeoutSeconds = ptr.To[int64](1)
			})
			wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			failing := &failingFinal{failures: tt.failures, fail: tt.fail}
			opts := f.options(t, referenceRunner())
			opts.Client = failing.client(wc)
			opts.FinishTimeout = 100 * time.Millisecond
			opts.FinishBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 50 * time.Millisecond, Steps: 1 << 20}
			out, err := runmode.Execute(t.Context(), opts)
			switch {
			case tt.wantErr == errForbidden && !apierrors.IsForbidden(err),
				tt.wantErr != nil && tt.wantErr != errForbidden && !errors.Is(err, tt.wantErr),
				tt.wantErr == nil && err != nil:
				t.Fatalf("Execute() error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantTries > 0 && failing.tries != tt.wantTries {
				t.Errorf("%d final writes, want %d", failing.tries, tt.wantTries)
			}
			if run := f.get(t); run.Status.Phase != tt.wantPhase {
				t.Errorf("run phase = %s, want %s", run.Status.Phase, tt.wantPhase)
			}
			// Landed or not, the outcome is the pod's to leave in its
			// termination message.
			doc, err := runoutcome.Decode(out.TerminationMessage())
			if err != nil || doc.Phase != v1alpha1.RunPhaseSucceeded || doc.Results == nil || doc.CompletionTime == nil {
				t.Errorf("termination message %q: %+v, %v; want Succeeded with results", out.TerminationMessage(), doc, err)
			}
		})
	}
}

// errForbidden stands for any Forbidden API error in wantErr.
var errForbidden = errors.New("forbidden")
