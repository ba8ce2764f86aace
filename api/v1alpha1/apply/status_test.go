// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// statusRecorder is a client.StatusClient that records the one apply made
// through it and its field manager.
type statusRecorder struct {
	client.SubResourceWriter
	applied map[string]any
	manager string
}

func (r *statusRecorder) Status() client.SubResourceWriter { return r }

func (r *statusRecorder) Apply(_ context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	o := &client.SubResourceApplyOptions{}
	o.ApplyOpts(opts)
	if o.FieldManager != "" {
		r.manager = o.FieldManager
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, &r.applied)
}

// TestStatusWritersApplyUnderTheirManagerOnTheVersionRead checks what every
// writer sends: its kind's field manager, and the resourceVersion read as a
// precondition when there is one.
func TestStatusWritersApplyUnderTheirManagerOnTheVersionRead(t *testing.T) {
	meta := func(rv string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "o", Namespace: "ns", ResourceVersion: rv}
	}
	writers := map[string]struct {
		write       func(c client.StatusClient, rv string) error
		wantManager string
	}{
		"QuantRun": {func(c client.StatusClient, rv string) error {
			_, err := QuantRunStatus(context.Background(), c, ManagerRunPod, &v1alpha1.QuantRun{ObjectMeta: meta(rv)}, &ac.QuantRunStatusApplyConfiguration{})
			return err
		}, ManagerRunPod},
		"QuantJob": {func(c client.StatusClient, rv string) error {
			_, err := QuantJobStatus(context.Background(), c, &v1alpha1.QuantJob{ObjectMeta: meta(rv)}, &v1alpha1.QuantJobStatus{})
			return err
		}, ManagerController},
		"QuantRecipe": {func(c client.StatusClient, rv string) error {
			_, err := QuantRecipeStatus(context.Background(), c, &v1alpha1.QuantRecipe{ObjectMeta: meta(rv)}, &v1alpha1.QuantRecipeStatus{})
			return err
		}, ManagerController},
		"ClusterQuantRecipe": {func(c client.StatusClient, rv string) error {
			_, err := ClusterQuantRecipeStatus(context.Background(), c, &v1alpha1.ClusterQuantRecipe{ObjectMeta: meta(rv)}, &v1alpha1.QuantRecipeStatus{})
			return err
		}, ManagerController},
		"QuantGatePolicy": {func(c client.StatusClient, rv string) error {
			_, err := QuantGatePolicyStatus(context.Background(), c, &v1alpha1.QuantGatePolicy{ObjectMeta: meta(rv)}, &v1alpha1.QuantGatePolicyStatus{})
			return err
		}, ManagerController},
		"QuantCronJob": {func(c client.StatusClient, rv string) error {
			_, err := QuantCronJobStatus(context.Background(), c, &v1alpha1.QuantCronJob{ObjectMeta: meta(rv)}, &v1alpha1.QuantCronJobStatus{})
			return err
		}, ManagerController},
		"GPUNodeProfile": {func(c client.StatusClient, rv string) error {
			_, err := GPUNodeProfileStatus(context.Background(), c, &v1alpha1.GPUNodeProfile{ObjectMeta: meta(rv)}, &v1alpha1.GPUNodeProfileStatus{})
			return err
		}, ManagerAgent},
	}
	for kind, w := range writers {
		for _, rv := range []string{"", "7"} {
			t.Run(kind+"/resourceVersion "+rv, func(t *testing.T) {
				rec := &statusRecorder{}
				if err := w.write(rec, rv); err != nil {
					t.Fatal(err)
				}
				if rec.manager != w.wantManager {
					t.Errorf("field manager = %q, want %q", rec.manager, w.wantManager)
				}
				md, _ := rec.applied["metadata"].(map[string]any)
				if got, _ := md["resourceVersion"].(string); got != rv {
					t.Errorf("resourceVersion precondition = %q, want %q", got, rv)
				}
				if kind, _ := rec.applied["kind"].(string); kind == "" {
					t.Errorf("apply has no kind: %v", rec.applied)
				}
				if _, ok := rec.applied["status"]; !ok {
					t.Errorf("apply has no status: %v", rec.applied)
				}
			})
		}
	}
}
