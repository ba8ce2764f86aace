// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/api/v1alpha1"
)

func TestBindTime(t *testing.T) {
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	r := &v1alpha1.QuantRun{Spec: v1alpha1.QuantRunSpec{NodeName: "n", GPUUUID: "GPU-n-0"}}
	if r.BindTime() != nil {
		t.Errorf("BindTime without annotation or status = %v, want nil", r.BindTime())
	}
	r.Annotations = map[string]string{v1alpha1.AnnotationBindTime: at.Format(time.RFC3339)}
	if got := r.BindTime(); got == nil || !got.Time.Equal(at) {
		t.Errorf("BindTime from the annotation = %v, want %s", got, at)
	}
	status := metav1.NewTime(at.Add(time.Minute))
	r.Status.BindTime = &status
	if got := r.BindTime(); got == nil || !got.Time.Equal(status.Time) {
		t.Errorf("BindTime with status set = %v, want the status's %s", got, status)
	}
}
