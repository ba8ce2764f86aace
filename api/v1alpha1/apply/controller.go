// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"github.com/kquant/kquant/api/v1alpha1"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// The apply configurations of the statuses only the controller writes.

func quantJobStatus(s *v1alpha1.QuantJobStatus) *ac.QuantJobStatusApplyConfiguration {
	return &ac.QuantJobStatusApplyConfiguration{
		ObservedGeneration: nz(s.ObservedGeneration),
		Phase:              nz(s.Phase),
		Total:              ptr(s.Total),
		Pending:            ptr(s.Pending),
		Running:            ptr(s.Running),
		Succeeded:          ptr(s.Succeeded),
		Failed:             ptr(s.Failed),
		Disruptions:        ptr(s.Disruptions),
		WaitingForGPU:      ptr(s.WaitingForGPU),
		Progress:           nz(s.Progress),
		Summary:            optional(s.Summary, jobSummary),
		StartTime:          Time(s.StartTime),
		CompletionTime:     Time(s.CompletionTime),
		Conditions:         Conditions(s.Conditions),
	}
}

func jobSummary(s *v1alpha1.JobSummary) *ac.JobSummaryApplyConfiguration {
	return &ac.JobSummaryApplyConfiguration{
		BandwidthGBps:   optional(s.BandwidthGBps, stat),
		GPUMicros:       optional(s.GPUMicros, stat),
		HostEagerMicros: optional(s.HostEagerMicros, stat),
		HostGraphMicros: optional(s.HostGraphMicros, stat),
		SNRdB:           optional(s.SNRdB, stat),
		// A struct is serialised even when zero (omitempty does not omit it).
		Verdicts: &ac.VerdictCountsApplyConfiguration{
			Pass: ptr(s.Verdicts.Pass), Fail: ptr(s.Verdicts.Fail), Warn: ptr(s.Verdicts.Warn), Skip: ptr(s.Verdicts.Skip),
		},
		Medians:  ResultNumbers(s.Medians),
		Outliers: each(s.Outliers, outlier),
	}
}

func stat(s *v1alpha1.Stat) *ac.StatApplyConfiguration {
	return &ac.StatApplyConfiguration{Min: nz(s.Min), Median: nz(s.Median), Max: nz(s.Max)}
}

func outlier(o v1alpha1.Outlier) ac.OutlierApplyConfiguration {
	return ac.OutlierApplyConfiguration{
		Run: ptr(o.Run), NodeName: nz(o.NodeName), GPUUUID: nz(o.GPUUUID), Product: nz(o.Product),
		Metric: ptr(o.Metric), Value: nz(o.Value), Median: nz(o.Median),
	}
}

func quantRecipeStatus(s *v1alpha1.QuantRecipeStatus) *ac.QuantRecipeStatusApplyConfiguration {
	return &ac.QuantRecipeStatusApplyConfiguration{
		ObservedGeneration: nz(s.ObservedGeneration),
		Key:                nz(s.Key),
		Format:             nz(s.Format),
		// Zero counts too, so that kubectl shows 0, not blank.
		Nodes:      &ac.RecipeNodeCountsApplyConfiguration{Native: ptr(s.Nodes.Native), Emulated: ptr(s.Nodes.Emulated)},
		Conditions: Conditions(s.Conditions),
	}
}

func quantGatePolicyStatus(s *v1alpha1.QuantGatePolicyStatus) *ac.QuantGatePolicyStatusApplyConfiguration {
	return &ac.QuantGatePolicyStatusApplyConfiguration{
		ObservedGeneration: nz(s.ObservedGeneration),
		JobNamespace:       nz(s.JobNamespace),
		CurrentJob:         nz(s.CurrentJob),
		LastJob:            nz(s.LastJob),
		LastValidationTime: Time(s.LastValidationTime),
		GatedCount:         ptr(s.GatedCount),
		GatedNodes:         each(s.GatedNodes, gatedNode),
		Conditions:         Conditions(s.Conditions),
	}
}

func gatedNode(g v1alpha1.GatedNode) ac.GatedNodeApplyConfiguration {
	return ac.GatedNodeApplyConfiguration{
		Node: ptr(g.Node), Family: ptr(g.Family), GPU: nz(g.GPU), Run: nz(g.Run), Since: Time(g.Since),
	}
}

func quantCronJobStatus(s *v1alpha1.QuantCronJobStatus) *ac.QuantCronJobStatusApplyConfiguration {
	return &ac.QuantCronJobStatusApplyConfiguration{
		Active:             s.Active,
		LastScheduleTime:   Time(s.LastScheduleTime),
		LastSuccessfulTime: Time(s.LastSuccessfulTime),
		NodeDrivers:        each(s.NodeDrivers, nodeDriver),
		Conditions:         Conditions(s.Conditions),
	}
}

func nodeDriver(d v1alpha1.NodeDriver) ac.NodeDriverApplyConfiguration {
	return ac.NodeDriverApplyConfiguration{
		NodeName: ptr(d.NodeName), DriverVersion: nz(d.DriverVersion), CUDADriverVersion: nz(d.CUDADriverVersion),
	}
}
