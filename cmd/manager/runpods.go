// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kquant/kquant/controllers"
	"github.com/kquant/kquant/controllers/execution"
	"github.com/kquant/kquant/domain/runpod"
)

// runPodFlags are the run-pod settings the chart passes (gpuAllocation and
// runPods.* values).
type runPodFlags struct {
	allocation        string
	image             string
	imagePullPolicy   string
	serviceAccount    string
	clusterRole       string
	priorityClass     string
	idlePriorityClass string
	resourceName      string
	migPrefix         string
	deviceClass       string
	migDeviceClass    string
	uuidDomain        string
	allowShared       bool
	kueueQueue        string
	resourcesJSON     string
	tolerationsJSON   string
	extraArgs         stringList
	pullSecrets       stringList
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return fmt.Sprint([]string(*l)) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func (f *runPodFlags) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.allocation, "gpu-allocation", string(runpod.AllocationDevicePlugin),
		"how runs get their GPU: DevicePlugin (a run pod requests nvidia.com/gpu), DRA (a run pod with a ResourceClaim pinning the GPU) or None (the agent runs them itself; only for nodes drained of other GPU work)")
	fs.StringVar(&f.image, "run-image", "", "the agent image that run pods start in run mode (required unless --gpu-allocation=None)")
	fs.StringVar(&f.imagePullPolicy, "run-image-pull-policy", string(corev1.PullIfNotPresent), "run pods' image pull policy")
	fs.StringVar(&f.serviceAccount, "run-service-account", execution.DefaultServiceAccountName, "the run pods' ServiceAccount, created in each namespace with runs")
	fs.StringVar(&f.clusterRole, "run-cluster-role", execution.DefaultRunClusterRole, "the ClusterRole bound to the run ServiceAccount in each namespace (get QuantRuns, patch their status)")
	fs.StringVar(&f.priorityClass, "run-priority-class", runpod.DefaultPriorityClassName, "the run pods' PriorityClass (created with value -10 and preemptionPolicy Never when missing)")
	fs.StringVar(&f.idlePriorityClass, "idle-run-priority-class", runpod.DefaultIdlePriorityClassName, "the PriorityClass of idle validations' run pods (created with the lowest value and preemptionPolicy Never when missing)")
	fs.StringVar(&f.resourceName, "gpu-resource-name", runpod.DefaultGPUResourceName, "the device plugin's whole-GPU resource")
	fs.StringVar(&f.migPrefix, "mig-resource-prefix", runpod.DefaultMIGResourcePrefix, "the device plugin's MIG resources' prefix (mixed strategy)")
	fs.StringVar(&f.deviceClass, "dra-device-class", runpod.DefaultDeviceClassName, "the DRA DeviceClass of whole GPUs")
	fs.StringVar(&f.migDeviceClass, "dra-mig-device-class", runpod.DefaultMIGDeviceClassName, "the DRA DeviceClass of MIG devices")
	fs.StringVar(&f.uuidDomain, "dra-uuid-attribute-domain", runpod.DefaultUUIDAttributeDomain, "the domain of the DRA driver's uuid device attribute")
	fs.BoolVar(&f.allowShared, "allow-shared-gpus", false, "let runs onto shared GPUs (time-slicing or MPS replicas), where allocated does not mean exclusive; MIG slices are each job's choice (spec.placement.migSlices)")
	fs.StringVar(&f.kueueQueue, "kueue-queue-name", "", "the Kueue LocalQueue of run pods whose job names none (its kueue.x-k8s.io/queue-name label)")
	fs.StringVar(&f.resourcesJSON, "run-resources", "", `run pods' CPU and memory as JSON ResourceRequirements, e.g. {"requests":{"cpu":"500m"}}`)
	fs.StringVar(&f.tolerationsJSON, "run-tolerations", "", "run pods' tolerations as a JSON list")
	fs.Var(&f.pullSecrets, "run-image-pull-secret", "the name of a Secret in each tenant namespace that run pods pull their image with (repeatable): a private or air-gapped registry")
	fs.Var(&f.extraArgs, "run-extra-arg", "an argument appended to the run pods' command line (repeatable)")
}

// options turns the flags into the controllers' options.
func (f *runPodFlags) options() (controllers.Options, error) {
	alloc := runpod.Allocation(f.allocation)
	opts := controllers.Options{AllowSharedGPUs: f.allowShared}
	switch alloc {
	case "", runpod.AllocationNone:
		return opts, nil
	case runpod.AllocationDevicePlugin, runpod.AllocationDRA:
	default:
		return opts, fmt.Errorf("--gpu-allocation=%s: want DevicePlugin, DRA or None", f.allocation)
	}
	if f.image == "" {
		return opts, fmt.Errorf("--gpu-allocation=%s needs --run-image (the agent image)", alloc)
	}
	cfg := runpod.Config{
		Allocation: alloc, Image: f.image, ImagePullPolicy: corev1.PullPolicy(f.imagePullPolicy),
		ServiceAccountName: f.serviceAccount, PriorityClassName: f.priorityClass, IdlePriorityClassName: f.idlePriorityClass,
		GPUResourceName: f.resourceName, MIGResourcePrefix: f.migPrefix,
		DeviceClassName: f.deviceClass, MIGDeviceClassName: f.migDeviceClass, UUIDAttributeDomain: f.uuidDomain,
		KueueQueueName: f.kueueQueue, ExtraArgs: f.extraArgs, ImagePullSecrets: f.pullSecrets,
	}
	if f.resourcesJSON != "" {
		if err := json.Unmarshal([]byte(f.resourcesJSON), &cfg.Resources); err != nil {
			return opts, fmt.Errorf("--run-resources: %w", err)
		}
	}
	if f.tolerationsJSON != "" {
		if err := json.Unmarshal([]byte(f.tolerationsJSON), &cfg.Tolerations); err != nil {
			return opts, fmt.Errorf("--run-tolerations: %w", err)
		}
	}
	opts.Execution = execution.Options{RunPod: cfg, RunClusterRole: f.clusterRole}
	return opts, nil
}
