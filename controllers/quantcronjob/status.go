// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantcronjob

import (
	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// statusApply is status as the apply configuration of cj's status, with cj's
// resourceVersion as a precondition.
func statusApply(cj *kquantv1alpha1.QuantCronJob, status *kquantv1alpha1.QuantCronJobStatus) *ac.QuantCronJobApplyConfiguration {
	st := ac.QuantCronJobStatus().WithActive(status.Active...)
	if t := apply.Time(status.LastScheduleTime); t != nil {
		st.WithLastScheduleTime(*t)
	}
	if t := apply.Time(status.LastSuccessfulTime); t != nil {
		st.WithLastSuccessfulTime(*t)
	}
	for _, d := range status.NodeDrivers {
		nd := ac.NodeDriver().WithNodeName(d.NodeName)
		if d.DriverVersion != "" {
			nd.WithDriverVersion(d.DriverVersion)
		}
		if d.CUDADriverVersion != "" {
			nd.WithCUDADriverVersion(d.CUDADriverVersion)
		}
		st.WithNodeDrivers(nd)
	}
	conditions := apply.Conditions(status.Conditions)
	for i := range conditions {
		st.WithConditions(&conditions[i])
	}
	obj := ac.QuantCronJob(cj.Name, cj.Namespace).WithStatus(st)
	if cj.ResourceVersion != "" {
		obj.WithResourceVersion(cj.ResourceVersion)
	}
	return obj
}
