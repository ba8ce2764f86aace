// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kquantscheme "github.com/kquant/kquant/api/scheme"
	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/internal/gpulabels"
	"github.com/kquant/kquant/test/builders"
)

// The per-GPU series carry dcgm-exporter's labels as it spells them: a whole
// GPU by its UUID and index, a MIG device by its parent's UUID and index and
// its GPU instance's profile and ID; an older exporter's names when asked.
func TestGPUSeriesLabels(t *testing.T) {
	node := "n1"
	profile := builders.MakeGPUNodeProfile(node).GPUs(builders.H100, 2).MIG(1, "1g.10gb", "1c.2g.20gb").Obj()
	profile.Status.GPUs[1].MIGDevices[0].GPUInstanceID = ptr.To(int32(7))
	profile.Status.GPUs[1].MIGDevices[1].GPUInstanceID = ptr.To(int32(3))
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	whole := builders.MakeQuantRun("whole", "ns", "job").Bound(node, 0).Results("800", "10", "2", "30", kquantv1alpha1.VerdictPass).Completed(at).Obj()
	mig := builders.MakeQuantRun("mig", "ns", "job").Bound(node, 1).Results("100", "10", "2", "30", kquantv1alpha1.VerdictPass).Completed(at).Obj()
	mig.Spec.GPUUUID = builders.MIGUUID(node, 1, 1)
	mig.Status.AllocatedGPU = &kquantv1alpha1.AllocatedGPU{UUID: builders.GPUUUID(node, 1), Index: ptr.To(int32(1)), MIGDevice: builders.MIGUUID(node, 1, 1)}
	other := builders.MakeQuantRun("other-slice", "ns", "job").Bound(node, 1).Results("90", "10", "2", "30", kquantv1alpha1.VerdictPass).Completed(at).Obj()
	other.Spec.GPUUUID = builders.MIGUUID(node, 1, 0)

	tests := []struct {
		name   string
		labels gpulabels.Names
		want   []map[string]string
	}{
		{name: "current dcgm-exporter", labels: gpulabels.Default(), want: []map[string]string{
			{"hostname": node, "UUID": builders.GPUUUID(node, 0), "gpu": "0", "modelName": builders.H100.Name, "GPU_I_PROFILE": "", "GPU_I_ID": ""},
			{"hostname": node, "UUID": builders.GPUUUID(node, 1), "gpu": "1", "modelName": builders.H100.Name, "GPU_I_PROFILE": "1g.10gb", "GPU_I_ID": "7"},
			{"hostname": node, "UUID": builders.GPUUUID(node, 1), "gpu": "1", "modelName": builders.H100.Name, "GPU_I_PROFILE": "2g.20gb", "GPU_I_ID": "3"},
		}},
		{name: "an exporter before dcgm-exporter#655, old namespace", labels: gpulabels.Names{Hostname: "Hostname", UUID: "uuid"}, want: []map[string]string{
			{"Hostname": node, "uuid": builders.GPUUUID(node, 0), "gpu": "0", "modelName": builders.H100.Name, "GPU_I_PROFILE": "", "GPU_I_ID": ""},
			{"Hostname": node, "uuid": builders.GPUUUID(node, 1), "gpu": "1", "modelName": builders.H100.Name, "GPU_I_PROFILE": "1g.10gb", "GPU_I_ID": "7"},
			{"Hostname": node, "uuid": builders.GPUUUID(node, 1), "gpu": "1", "modelName": builders.H100.Name, "GPU_I_PROFILE": "2g.20gb", "GPU_I_ID": "3"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := kquantscheme.New()
			if err != nil {
				t.Fatal(err)
			}
			cache := fake.NewClientBuilder().WithScheme(s).
				WithIndex(&kquantv1alpha1.QuantRun{}, indexer.RunPhaseKey, indexer.RunPhase).
				WithObjects(profile.DeepCopy(), whole.DeepCopy(), mig.DeepCopy(), other.DeepCopy()).WithStatusSubresource().Build()
			ch := make(chan prometheus.Metric, 1024)
			newGPUDescs(tt.labels).collectGPUs(t.Context(), cache, ch)
			close(ch)
			var got []map[string]string
			for m := range ch {
				if m.Desc() != nil && m.Desc().String() != newGPUDescs(tt.labels).bandwidth.String() {
					continue
				}
				got = append(got, identityOf(t, m, tt.labels))
			}
			if diff := cmp.Diff(tt.want, got, sortMaps()); diff != "" {
				t.Errorf("bandwidth series' GPU labels (-want +got):\n%s", diff)
			}
		})
	}
}

// identityOf is m's GPU identity labels.
func identityOf(t *testing.T, m prometheus.Metric, l gpulabels.Names) map[string]string {
	t.Helper()
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, lp := range pb.GetLabel() {
		for _, name := range l.Labels() {
			if lp.GetName() == name {
				out[name] = lp.GetValue()
			}
		}
	}
	return out
}

// sortMaps orders label sets by their UUID, index and GPU instance ID.
func sortMaps() cmp.Option {
	return cmpopts.SortSlices(func(a, b map[string]string) bool {
		return fmt.Sprint(a) < fmt.Sprint(b)
	})
}
