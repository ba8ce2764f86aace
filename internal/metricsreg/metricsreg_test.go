// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package metricsreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegister(t *testing.T) {
	tests := []struct {
		name      string
		names     []string
		wantErr   bool
		wantNames []string
	}{
		{name: "every collector is registered", names: []string{"a_total", "b_total"}, wantNames: []string{"a_total", "b_total"}},
		{name: "a second collector of the same name is refused", names: []string{"a_total", "a_total"}, wantErr: true, wantNames: []string{"a_total"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			var cs []prometheus.Collector
			for _, n := range tt.names {
				c := PhaseCounter(n, "Runs by phase.")
				c.WithLabelValues("Running").Inc()
				cs = append(cs, c)
			}
			err := Register(reg, cs...)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("Register() error = %v, want error %v", err, tt.wantErr)
			}
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range families {
				got = append(got, f.GetName())
				for _, m := range f.GetMetric() {
					if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != Phase || l[0].GetValue() != "Running" {
						t.Errorf("%s labels %v, want only %s=Running", f.GetName(), l, Phase)
					}
				}
			}
			if len(got) != len(tt.wantNames) {
				t.Fatalf("gathered %v, want %v", got, tt.wantNames)
			}
			for i := range got {
				if got[i] != tt.wantNames[i] {
					t.Errorf("gathered %v, want %v", got, tt.wantNames)
				}
			}
		})
	}
}
